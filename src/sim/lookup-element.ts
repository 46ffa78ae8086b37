// Set and map lookups: the first element whose key matches a value, as a scan of the elements in
// order finds it, but through an index built once per element list, so that a kube-proxy map of
// tens of thousands of `ip . proto . port : verdict` elements costs a hash lookup.
//
// The index holds the exact elements (a value, or a concatenation of values) in a Map keyed by
// a canonical form of the value, the one-dimensional intervals (prefixes and ranges) in a sorted
// array searched by bisection, and leaves every other element (wildcards, `eth*`, concatenations
// with intervals, anything that cannot be evaluated ahead) to the scan, in order. The result is
// the matching element of lowest position among the three, so it is the one the scan finds;
// where the scan could throw (an element nftsim cannot evaluate, a value of another type than
// the exact elements) the elements are scanned as before.

import type { ElementExpr, Expr, SetLiteral, SetRef } from '../model/ast.js';
import { prefixMask } from './address.js';
import { areIndexesOn } from './chain-index.js';
import { isEqual, literalValue, matchesKey, namedSet, type RtValue } from './evaluate-expr.js';
import { NotModelled, type SimContext } from './sim-context.js';

/** The first element of a set or map whose key matches `value` (elements of interval sets do not
 * overlap, so the first is the one), including elements added during the run. */
export function lookupElement(set: SetLiteral | SetRef, value: RtValue, lhs: Expr, ctx: SimContext): ElementExpr | undefined {
  if (set.kind === 'set') return findElement(set.elements, value, lhs, ctx);
  const named = namedSet(set.name, ctx);
  const found = findElement(named.elements ?? NO_ELEMENTS, value, lhs, ctx);
  if (found) return found;
  const added = ctx.dynamicSets.get(named) ?? [];
  return added.some((v) => isEqual(value, v as RtValue)) ? { kind: 'element', span: set.span, key: set } : undefined;
}

const NO_ELEMENTS: readonly ElementExpr[] = [];

function findElement(elements: readonly ElementExpr[], value: RtValue, lhs: Expr, ctx: SimContext): ElementExpr | undefined {
  if (!areIndexesOn()) return elements.find((e) => matchesKey(value, e.key, lhs, ctx));
  let index = setIndexes.get(elements);
  if (!index) {
    index = buildSetIndex(elements);
    setIndexes.set(elements, index);
  }
  const position = findPosition(index, elements, value, lhs, ctx);
  return position < elements.length ? elements[position] : undefined;
}

interface Interval {
  readonly low: bigint;
  readonly high: bigint;
  readonly position: number;
}

interface SetIndex {
  /** The type of the exact elements' keys (shapeOf), undefined when there are none. */
  readonly exactShape?: string;
  /** Canonical key → the first position holding it. */
  readonly exact: ReadonlyMap<bigint | string, number>;
  /** Non-overlapping, by ascending `low`. */
  readonly intervals: readonly Interval[];
  /** A value at or above this has bits a prefix element's mask ignores: scanned instead. */
  readonly intervalLimit?: bigint;
  /** Positions of the elements only the scan can test, ascending. */
  readonly rest: readonly number[];
}

// Built on first use, once per element list of a parsed ruleset.
const setIndexes = new WeakMap<readonly ElementExpr[], SetIndex>();

function findPosition(index: SetIndex, elements: readonly ElementExpr[], value: RtValue, lhs: Expr, ctx: SimContext): number {
  const scan = (): number => {
    const i = elements.findIndex((e) => matchesKey(value, e.key, lhs, ctx));
    return i < 0 ? elements.length : i;
  };
  let best = elements.length;
  if (index.exactShape !== undefined) {
    // Comparing a value with an element of another type may throw (an interface name with an
    // index): let the scan do it.
    if (shapeOf(value) !== index.exactShape) return scan();
    best = index.exact.get(canonicalOf(value)!) ?? best;
  }
  if (typeof value === 'bigint' && index.intervals.length > 0) {
    if (index.intervalLimit !== undefined && value >= index.intervalLimit) return scan();
    const hit = findInterval(index.intervals, value);
    if (hit !== undefined && hit.position < best) best = hit.position;
  }
  for (const position of index.rest) {
    if (position >= best) break;
    if (matchesKey(value, elements[position]!.key, lhs, ctx)) return position;
  }
  return best;
}

/** The interval holding `value`: the last one starting at or below it, if it reaches it. */
function findInterval(intervals: readonly Interval[], value: bigint): Interval | undefined {
  let low = 0;
  let high = intervals.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (intervals[mid]!.low <= value) low = mid + 1;
    else high = mid;
  }
  const candidate = intervals[low - 1];
  return candidate && value <= candidate.high ? candidate : undefined;
}

/** `b` for an integer, `s` for a string, `(b s)` for a concatenation of them. */
function shapeOf(value: RtValue): string {
  if (typeof value === 'bigint') return 'b';
  if (typeof value === 'string') return 's';
  return `(${value.map(shapeOf).join(' ')})`;
}

/** A Map key equal for equal values of one shape: the value itself, or for a concatenation its
 * parts in text (strings JSON-quoted, so a separator cannot occur inside one). */
function canonicalOf(value: RtValue): bigint | string | undefined {
  if (!Array.isArray(value)) return value as bigint | string;
  const parts: string[] = [];
  for (const part of value) {
    if (typeof part === 'bigint') parts.push(part.toString(16));
    else if (typeof part === 'string') parts.push(JSON.stringify(part));
    else return undefined;
  }
  return parts.join(' ');
}

/** The value an element key compares equal to, when it is a plain value or a concatenation of
 * them (not a wildcard string `eth*`, which compares a prefix). */
function exactValueOf(key: Expr): RtValue | undefined {
  if (key.kind === 'element') return exactValueOf(key.key);
  if (key.kind === 'concat') {
    const parts: RtValue[] = [];
    for (const part of key.parts) {
      const v = exactValueOf(part);
      if (v === undefined || Array.isArray(v)) return undefined;
      parts.push(v);
    }
    return parts;
  }
  if (key.kind !== 'literal') return undefined;
  const v = constantOf(key);
  if (typeof v === 'string') return v.endsWith('*') && !v.endsWith('\\*') ? undefined : v.replace(/\\\*$/, '*');
  return v;
}

/** A prefix or range key as the interval of values it matches (for a prefix, of values below
 * `limit`; its mask ignores higher bits). */
function intervalOf(key: Expr): { low: bigint; high: bigint; limit?: bigint } | undefined {
  if (key.kind === 'element') return intervalOf(key.key);
  if (key.kind === 'range') {
    const low = key.low.kind === 'literal' ? constantOf(key.low) : undefined;
    const high = key.high.kind === 'literal' ? constantOf(key.high) : undefined;
    return typeof low === 'bigint' && typeof high === 'bigint' ? { low, high } : undefined;
  }
  if (key.kind !== 'prefix' || key.expr.kind !== 'literal') return undefined;
  // As matchesKey's prefixBits: only an address literal fixes the width without the lhs.
  const type = key.expr.value?.type;
  const bits = type === 'ipv4' ? 32 : type === 'ipv6' ? 128 : undefined;
  const base = constantOf(key.expr);
  if (bits === undefined || typeof base !== 'bigint') return undefined;
  const mask = prefixMask(bits, key.length);
  const low = base & mask;
  return { low, high: low | (((1n << BigInt(bits)) - 1n) ^ mask), limit: 1n << BigInt(bits) };
}

/** A literal's value, undefined when nftsim cannot evaluate it (the scan reports that). */
function constantOf(literal: Extract<Expr, { kind: 'literal' }>): RtValue | undefined {
  try {
    return literalValue(literal);
  } catch (error) {
    if (error instanceof NotModelled) return undefined;
    throw error;
  }
}

function buildSetIndex(elements: readonly ElementExpr[]): SetIndex {
  let exactShape: string | undefined;
  const exact = new Map<bigint | string, number>();
  let intervals: Interval[] = [];
  let intervalLimit: bigint | undefined;
  const rest: number[] = [];
  elements.forEach((element, position) => {
    const value = exactValueOf(element.key);
    const canonical = value === undefined ? undefined : canonicalOf(value);
    if (value !== undefined && canonical !== undefined && (exactShape ?? shapeOf(value)) === shapeOf(value)) {
      exactShape = shapeOf(value);
      if (!exact.has(canonical)) exact.set(canonical, position);
      return;
    }
    const interval = intervalOf(element.key);
    // An empty range (low above high) matches nothing and evaluates without error: left out.
    if (interval && interval.low > interval.high) return;
    if (interval) {
      intervals.push({ low: interval.low, high: interval.high, position });
      if (interval.limit !== undefined && (intervalLimit === undefined || interval.limit < intervalLimit)) intervalLimit = interval.limit;
      return;
    }
    rest.push(position);
  });
  intervals.sort((a, b) => (a.low < b.low ? -1 : a.low > b.low ? 1 : 0));
  if (intervals.some((interval, i) => i > 0 && interval.low <= intervals[i - 1]!.high)) {
    // Overlapping intervals (nft merges or refuses them, a model may still hold them): scanned.
    rest.push(...intervals.map((interval) => interval.position));
    rest.sort((a, b) => a - b);
    intervals = [];
    intervalLimit = undefined;
  }
  return { ...(exactShape !== undefined && { exactShape }), exact, intervals, ...(intervalLimit !== undefined && { intervalLimit }), rest };
}
