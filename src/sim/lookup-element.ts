// Set and map lookups: the first element whose key matches a value, as a scan of the elements in
// order finds it, but through an index built once per element list, so that a kube-proxy map of
// tens of thousands of `ip . proto . port : verdict` elements costs a hash lookup.
//
// The index holds the exact elements (a value, or a concatenation of values) in Maps keyed by
// the values (for concatenations of integers below 2^32, by a hash of the parts), the
// one-dimensional intervals (prefixes and ranges) in a sorted array searched by bisection, and
// leaves every other element (wildcards, `eth*`, concatenations with intervals, anything that
// cannot be evaluated ahead) to the scan, in order. The result is
// the matching element of lowest position among the three, so it is the one the scan finds;
// where the scan could throw (an element nftsim cannot evaluate, a value of another type than
// the exact elements) the elements are scanned as before.

import type { ElementExpr, Expr, NamedSet, SetLiteral, SetRef, Table } from '../model/ast.js';
import { prefixMask } from './address.js';
import { areIndexesOn } from './chain-index.js';
import { constantOf, evaluateExpr, isEqual, matchesKey, namedSet, type RtValue } from './evaluate-expr.js';
import type { RuleResult } from './evaluate-stmt.js';
import { memoByObject } from './memo-by-object.js';
import { PositionTable } from './position-table.js';
import { RandomPick, type SimContext } from './sim-context.js';

/** A value to look up: an RtValue, or as compiled rules read it (compile-rule.ts) an integer
 * below 2^32 as a number, or a concatenation of such numbers. */
export type LookupValue = RtValue | number | readonly number[];

/** The first element of a set or map whose key matches `value` (elements of interval sets do not
 * overlap, so the first is the one), as the run left the set: without the elements `delete @set`
 * took out, with those `add @set` / `update @set` put in (dynset.ts). */
export function lookupElement(set: SetLiteral | SetRef, value: RtValue, lhs: Expr, ctx: SimContext): ElementExpr | undefined {
  if (!areIndexesOn()) {
    if (set.kind === 'set') return set.elements.find((e) => matchesKey(value, e.key, lhs, ctx));
    const named = namedSet(set.name, ctx);
    const found = (named.elements ?? NO_ELEMENTS).find((e) => matchesKey(value, e.key, lhs, ctx));
    return found && !isDeleted(named, found, ctx) ? found : findAdded(named, value, ctx);
  }
  return findResolved(resolveLookup(set, lhs, ctx), value, ctx);
}

/** Whether a lookup of the concatenation `key` in `set` misses whatever the parts of it NAT
 * picked at random are (their reads throw RandomPick): every element of the set has a part the
 * packet's known value for it is not, so the kernel's lookup misses whatever its pick. False
 * where that cannot be told: a part with no value (the rule breaks there anyway), an element
 * key of another shape, elements the run added. */
export function missesWhateverThePick(set: SetLiteral | SetRef, key: Expr, ctx: SimContext): boolean {
  if (key.kind !== 'concat') return false;
  const known: (RtValue | typeof UNKNOWN)[] = [];
  for (const part of key.parts) {
    let value: RtValue | undefined;
    try {
      value = evaluateExpr(part, ctx);
    } catch (error) {
      if (!(error instanceof RandomPick)) throw error;
      known.push(UNKNOWN);
      continue;
    }
    if (value === undefined) return false;
    known.push(value);
  }
  let elements = set.kind === 'set' ? set.elements : undefined;
  if (set.kind === 'set-ref') {
    const named = namedSet(set.name, ctx);
    if ((dynamicSetOf(named, ctx)?.added.length ?? 0) > 0) return false;
    elements = named.elements ?? NO_ELEMENTS;
  }
  return elements!.every((element) => {
    const parts = unwrapElement(element.key);
    if (parts.kind !== 'concat' || parts.parts.length !== known.length) return false;
    return known.some((value, i) => value !== UNKNOWN && isOutside(value, parts.parts[i]!));
  });
}

const UNKNOWN = Symbol('unknown');

/** What lookupKey gives for a key that misses whatever NAT's random pick was. */
export const MISSES = Symbol('misses');

/** The key of a lookup in `set` as the interpreter reads it (undefined for NFT_BREAK); MISSES
 * where a part NAT picked at random is unknown but the rest rules out every element
 * (missesWhateverThePick, which the compiled rules ask where their read throws). */
export function lookupKey(set: SetLiteral | SetRef, key: Expr, ctx: SimContext): RtValue | undefined | typeof MISSES {
  try {
    return evaluateExpr(key, ctx);
  } catch (error) {
    if (error instanceof RandomPick && missesWhateverThePick(set, key, ctx)) return MISSES;
    throw error;
  }
}

function unwrapElement(key: Expr): Expr {
  return key.kind === 'element' ? unwrapElement(key.key) : key;
}

/** The value is not one the element's part matches; false where that is not plain (a wildcard
 * name, a part of another form). */
function isOutside(value: RtValue, part: Expr): boolean {
  const exact = exactValueOf(part);
  if (exact !== undefined) return !isEqual(value, exact);
  const interval = intervalOf(part);
  if (interval === undefined || typeof value !== 'bigint' || (interval.limit !== undefined && value >= interval.limit)) return false;
  return value < interval.low || value > interval.high;
}

/** What the packets of a run changed in a named set (nft_dynset.c): the elements they added, in
 * order, each with the key it was added for, the set's own elements they deleted, and how many
 * they deleted in all (`dead`: the kernel only marks an element dead, and it holds its slot
 * against the set's size until the set's garbage collection frees it). Kept in the
 * run's state (SimState.dynamicSets) under the set, and replaced, never changed, so that a
 * branch of the run can copy the state by copying the map. */
export interface DynamicSet {
  readonly added: readonly { readonly key: RtValue; readonly element: ElementExpr }[];
  readonly deleted: ReadonlySet<ElementExpr>;
  readonly dead: number;
}

export function dynamicSetOf(named: NamedSet, ctx: SimContext): DynamicSet | undefined {
  return ctx.dynamicSets.size === 0 ? undefined : (ctx.dynamicSets.get(named)?.[0] as DynamicSet | undefined);
}

/** Whether `delete @set` took the set's own `element` out during the run. */
export function isDeleted(named: NamedSet, element: ElementExpr, ctx: SimContext): boolean {
  return dynamicSetOf(named, ctx)?.deleted.has(element) === true;
}

/** A set or map resolved in the table being evaluated: its elements and their index (a compiled
 * rule keeps it, compile-rule.ts). */
export interface ResolvedLookup {
  readonly table: Table;
  readonly set: SetLiteral | SetRef;
  readonly lhs: Expr;
  readonly named: NamedSet | undefined;
  readonly elements: readonly ElementExpr[];
  readonly index: SetIndex;
  /** A verdict map's results by element position, as a compiled rule resolves them
   * (compile-rule.ts VMAP). */
  results?: (RuleResult | undefined)[];
}

/** Resolves `set` (a named one in the table being evaluated: NotModelled when it is not there). */
export function resolveLookup(set: SetLiteral | SetRef, lhs: Expr, ctx: SimContext): ResolvedLookup {
  const named = set.kind === 'set-ref' ? namedSet(set.name, ctx) : undefined;
  const elements = set.kind === 'set' ? set.elements : (named!.elements ?? NO_ELEMENTS);
  return { table: ctx.table, set, lhs, named, elements, index: setIndexOf(elements) };
}

export function findResolved(resolved: ResolvedLookup, value: LookupValue, ctx: SimContext): ElementExpr | undefined {
  const position = positionOf(resolved, value, ctx);
  return position < resolved.elements.length ? resolved.elements[position] : findAddedTo(resolved, value, ctx);
}

/** The position of the first of the resolved elements whose key matches `value`, past the last
 * when none does or the run deleted it (findAddedTo looks among those added during the run). */
export function positionOf(resolved: ResolvedLookup, value: LookupValue, ctx: SimContext): number {
  const position = findPosition(resolved.index, resolved.elements, value, resolved.lhs, ctx);
  const named = resolved.named;
  if (named && position < resolved.elements.length && isDeleted(named, resolved.elements[position]!, ctx)) return resolved.elements.length;
  return position;
}

/** An element `add @set` / `update @set` put in the resolved set during the run. */
export function findAddedTo(resolved: ResolvedLookup, value: LookupValue, ctx: SimContext): ElementExpr | undefined {
  const { set, named } = resolved;
  return named && set.kind === 'set-ref' ? findAdded(named, value, ctx) : undefined;
}

function findAdded(named: NamedSet, value: LookupValue, ctx: SimContext): ElementExpr | undefined {
  const dynamic = dynamicSetOf(named, ctx);
  if (!dynamic || dynamic.added.length === 0) return undefined;
  const rt = toRtValue(value);
  return dynamic.added.find((a) => isEqual(rt, a.key))?.element;
}

const NO_ELEMENTS: readonly ElementExpr[] = [];

// Built on first use, once per element list of a parsed ruleset.
const setIndexOf = memoByObject(buildSetIndex);

/** The RtValue of a lookup value: numbers become BigInts again. */
function toRtValue(value: LookupValue): RtValue {
  if (typeof value === 'number') return BigInt(value);
  if (typeof value === 'object') return (value as readonly (RtValue | number)[]).map((part) => (typeof part === 'number' ? BigInt(part) : part));
  return value;
}

interface Interval {
  readonly low: bigint;
  readonly high: bigint;
  readonly position: number;
}

/** The exact elements by value: for a scalar value, value → first position; for a
 * concatenation, one level per part (nested Maps: a text key per lookup cost more than the rest
 * of a kube-proxy vmap lookup). Integers are keyed as BigInts. */
type ExactMap = Map<number | bigint | string, number | ExactMap>;

/** Concatenations of integers below 2^32 (kube-proxy's `ip . proto . port`): by a hash of their
 * parts (one table lookup, no Map per part), each candidate checked part by part. */
interface TupleIndex {
  readonly width: number;
  /** The parts of the i-th tuple at i × width. */
  readonly parts: Float64Array;
  /** The i-th tuple's position among the elements. */
  readonly positions: Int32Array;
  /** Hash → the tuples (i) with it, ascending. */
  readonly byHash: PositionTable;
}

/** Every field present, for one shape: the lookups of a packet read several sets' indexes. */
interface SetIndex {
  /** The type of the exact elements' keys (shapeOf), undefined when there are none. */
  readonly exactShape: string | undefined;
  readonly exact: ExactMap;
  /** Instead of `exact`, when every exact element is an integer below 2^32: value → first
   * position, in one array (a Map of a kube-proxy set's ten thousand addresses read three places
   * in memory per lookup, position-table.ts). */
  readonly numbers: PositionTable | undefined;
  /** Instead of `exact`, when every exact element is a concatenation of such integers. */
  readonly tuples: TupleIndex | undefined;
  /** Non-overlapping, by ascending `low`. */
  readonly intervals: readonly Interval[];
  /** A value at or above this has bits a prefix element's mask ignores: scanned instead. */
  readonly intervalLimit: bigint | undefined;
  /** Positions of the elements only the scan can test, ascending. */
  readonly rest: readonly number[];
}

function findPosition(index: SetIndex, elements: readonly ElementExpr[], value: LookupValue, lhs: Expr, ctx: SimContext): number {
  let best = elements.length;
  if (index.exactShape !== undefined) {
    // Comparing a value with an element of another type may throw (an interface name with an
    // index): let the scan do it.
    if (!hasShape(value, index.exactShape)) return scanPosition(elements, value, lhs, ctx);
    best = findExact(index, value) ?? best;
  }
  if ((typeof value === 'bigint' || typeof value === 'number') && index.intervals.length > 0) {
    // A number and a bigint compare exactly.
    if (index.intervalLimit !== undefined && value >= index.intervalLimit) return scanPosition(elements, value, lhs, ctx);
    const hit = findInterval(index.intervals, value);
    if (hit !== undefined && hit.position < best) best = hit.position;
  }
  const rest = index.rest;
  if (rest.length === 0 || rest[0]! >= best) return best;
  const rt = toRtValue(value);
  for (const position of rest) {
    if (position >= best) break;
    if (matchesKey(rt, elements[position]!.key, lhs, ctx)) return position;
  }
  return best;
}

/** The position of the first element matching `value` by the scan, past the last when none. */
function scanPosition(elements: readonly ElementExpr[], value: LookupValue, lhs: Expr, ctx: SimContext): number {
  const rt = toRtValue(value);
  const i = elements.findIndex((e) => matchesKey(rt, e.key, lhs, ctx));
  return i < 0 ? elements.length : i;
}

/** The interval holding `value`: the last one starting at or below it, if it reaches it. */
function findInterval(intervals: readonly Interval[], value: bigint | number): Interval | undefined {
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
function shapeOf(value: LookupValue): string {
  if (typeof value === 'bigint' || typeof value === 'number') return 'b';
  if (typeof value === 'string') return 's';
  return `(${(value as readonly LookupValue[]).map(shapeOf).join(' ')})`;
}

/** shapeOf(value) === shape, without making the text for a concatenation of integers. */
function hasShape(value: LookupValue, shape: string): boolean {
  if (typeof value !== 'object') return shapeOf(value) === shape;
  const parts = value as readonly LookupValue[];
  if (shape.length !== 2 * parts.length + 1 || parts.some((part) => typeof part !== 'bigint' && typeof part !== 'number')) return shapeOf(value) === shape;
  // `(b b … b)`, character by character.
  if (shape[0] !== '(' || shape[shape.length - 1] !== ')') return false;
  for (let i = 1; i < shape.length - 1; i++) if (shape[i] !== (i % 2 === 1 ? 'b' : ' ')) return false;
  return true;
}

/** An exact map's key for a scalar value or part: an integer below 2^32 as a number (the form
 * compiled rules read), any other integer as a BigInt, a string as itself. */
function keyOf(value: LookupValue): number | bigint | string | undefined {
  if (typeof value === 'bigint') return value >= 0n && value < 0x100000000n ? Number(value) : value;
  if (typeof value === 'number' || typeof value === 'string') return value;
  return undefined;
}

function hashParts(parts: ArrayLike<number>, from: number, width: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < width; i++) {
    h = Math.imul(h ^ parts[from + i]!, 0x01000193);
    h ^= h >>> 15;
  }
  return h >>> 0;
}

/** The tuple's parts as numbers, undefined when one is not an integer below 2^32 (no tuple of
 * the index has it). */
function numericParts(value: readonly LookupValue[]): number[] | undefined {
  const parts: number[] = [];
  for (const part of value) {
    const key = keyOf(part);
    if (typeof key !== 'number') return undefined;
    parts.push(key);
  }
  return parts;
}

function findTuple(tuples: TupleIndex, value: readonly LookupValue[]): number | undefined {
  const width = tuples.width;
  if (value.length !== width) return undefined;
  // Compiled rules look up numbers already (keyOf gives a number as itself).
  const key = areNumbers(value) ? value : numericParts(value);
  if (!key) return undefined;
  const found = tuples.byHash.get(hashParts(key, 0, width));
  if (found === undefined) return undefined;
  if (typeof found === 'number') return isTuple(tuples, found, key) ? tuples.positions[found] : undefined;
  for (const i of found) if (isTuple(tuples, i, key)) return tuples.positions[i];
  return undefined;
}

function areNumbers(value: readonly LookupValue[]): value is readonly number[] {
  for (const part of value) if (typeof part !== 'number') return false;
  return true;
}

/** Whether the i-th tuple of the index has the parts of `key`. */
function isTuple(tuples: TupleIndex, i: number, key: readonly number[]): boolean {
  const { width, parts } = tuples;
  for (let j = 0; j < width; j++) if (parts[i * width + j] !== key[j]) return false;
  return true;
}

/** The tuple index of the exact elements (in order), when all of them are concatenations of
 * integers below 2^32 (all of one width: they have one shape). */
function buildTupleIndex(values: readonly (readonly RtValue[])[], positions: readonly number[]): TupleIndex | undefined {
  const width = values[0]?.length ?? 0;
  if (width === 0) return undefined;
  const parts = new Float64Array(values.length * width);
  for (let i = 0; i < values.length; i++) {
    for (let j = 0; j < width; j++) {
      const key = keyOf(values[i]![j]!);
      if (typeof key !== 'number') return undefined;
      parts[i * width + j] = key;
    }
  }
  const byHash = new Map<number, number | number[]>();
  const isSame = (a: number, b: number): boolean => {
    for (let j = 0; j < width; j++) if (parts[a * width + j] !== parts[b * width + j]) return false;
    return true;
  };
  for (let i = 0; i < values.length; i++) {
    const h = hashParts(parts, i * width, width);
    const known = byHash.get(h);
    // A value written again is found at its first position: the later ones are left out.
    if (known === undefined) byHash.set(h, i);
    else if (typeof known === 'number') {
      if (!isSame(known, i)) byHash.set(h, [known, i]);
    } else if (!known.some((k) => isSame(k, i))) known.push(i);
  }
  return { width, parts, positions: Int32Array.from(positions), byHash: new PositionTable(byHash) };
}

function findExact(index: SetIndex, value: LookupValue): number | undefined {
  if (index.tuples) return typeof value === 'object' ? findTuple(index.tuples, value as readonly LookupValue[]) : undefined;
  if (index.numbers) {
    const key = typeof value === 'number' ? value : keyOf(value);
    return typeof key === 'number' ? (index.numbers.get(key) as number | undefined) : undefined;
  }
  const exact = index.exact;
  if (typeof value !== 'object') {
    const found = exact.get(keyOf(value)!);
    return typeof found === 'number' ? found : undefined;
  }
  let level: number | ExactMap | undefined = exact;
  for (const part of value as readonly LookupValue[]) {
    const key = keyOf(part);
    if (key === undefined || typeof level !== 'object') return undefined;
    level = level.get(key);
  }
  return typeof level === 'number' ? level : undefined;
}

/** Records the first position of an exact value (a scalar or a concatenation of scalars). */
function addExact(exact: ExactMap, value: RtValue, position: number): void {
  const parts = Array.isArray(value) ? (value as readonly RtValue[]) : [value];
  let level = exact;
  parts.forEach((part, i) => {
    const key = keyOf(part)!;
    if (!Array.isArray(value) || i === parts.length - 1) {
      if (!level.has(key)) level.set(key, position);
      return;
    }
    let next = level.get(key);
    if (next === undefined) {
      next = new Map();
      level.set(key, next);
    }
    level = next as ExactMap;
  });
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
function buildSetIndex(elements: readonly ElementExpr[]): SetIndex {
  let exactShape: string | undefined;
  const exact: ExactMap = new Map();
  let intervals: Interval[] = [];
  let intervalLimit: bigint | undefined;
  const rest: number[] = [];
  const exactValues: RtValue[] = [];
  const exactPositions: number[] = [];
  elements.forEach((element, position) => {
    const value = exactValueOf(element.key);
    // A concatenation of plain values (not of concatenations, and not empty) is keyed part by part.
    const keyable = value !== undefined && (!Array.isArray(value) || (value.length > 0 && value.every((part) => !Array.isArray(part))));
    if (value !== undefined && keyable && (exactShape ?? shapeOf(value)) === shapeOf(value)) {
      exactShape = shapeOf(value);
      exactValues.push(value);
      exactPositions.push(position);
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
  const tuples = exactValues.every((value) => Array.isArray(value)) ? buildTupleIndex(exactValues as (readonly RtValue[])[], exactPositions) : undefined;
  const numbers = tuples ? undefined : buildNumberIndex(exactValues, exactPositions);
  if (!tuples && !numbers) exactValues.forEach((value, i) => addExact(exact, value, exactPositions[i]!));
  return { exactShape, exact, numbers, tuples, intervals, intervalLimit, rest };
}

/** The first position of each exact value, when all of them are integers below 2^32. */
function buildNumberIndex(values: readonly RtValue[], positions: readonly number[]): PositionTable | undefined {
  if (values.length === 0) return undefined;
  const first = new Map<number, number>();
  for (let i = 0; i < values.length; i++) {
    const key = keyOf(values[i]!);
    if (typeof key !== 'number') return undefined;
    if (!first.has(key)) first.set(key, positions[i]!);
  }
  return new PositionTable(first);
}
