// Skipping the rules of a chain that cannot match the packet, so that a kube-proxy chain of
// thousands of `ip daddr X tcp dport P jump …` rules costs a map lookup instead of a scan.
//
// A rule opens with a few tests of the packet. When those tests are exact comparisons of a header
// field or a meta key with a literal (`meta l4proto tcp`, `ip daddr 10.0.0.1`, `tcp dport 80`),
// evaluating them has no effect on anything: a packet whose field differs fails the rule there,
// with nothing traced, exactly as if the rule were skipped. A run of consecutive such rules is
// indexed by one of those tests per rule (the most selective field of the run): value → rule
// positions. Evaluation then goes from one candidate to the next in chain order; the rules
// between them are the ones the scan would have found not matching. Rules without such a test
// stay in their place and are run as before.
//
// The fields are read for the packet as it is when the next rule is picked (a rule may change
// it), every field the run's leading tests read, not only the keys: when one of them cannot be
// read (evaluateExpr throws NotModelled, which the scan would report) or has another type than
// the run's literals (the comparison could throw), the next rule is run as the scan would.

import type { Chain, Expr, Rule, Stmt } from '../model/ast.js';
import { isBitmaskType } from '../model/datatypes.js';
import { evaluateExpr, literalValue } from './evaluate-expr.js';
import type { Loc } from './outcome.js';
import { NotModelled, type SimContext } from './sim-context.js';

let indexesOn = true;

/** Runs `body` with chains and sets scanned element by element, without their indexes: the
 * reference the indexes are checked against (test/sim/chain-index.test.ts). */
export function withoutIndexes<T>(body: () => T): T {
  const was = indexesOn;
  indexesOn = false;
  try {
    return body();
  } finally {
    indexesOn = was;
  }
}

/** False inside withoutIndexes (lookup-element.ts asks). */
export function areIndexesOn(): boolean {
  return indexesOn;
}

type KeyValue = bigint | string;

/** A leading test of a rule: `field == literal`. */
interface KeyTest {
  /** What the field evaluation depends on: the expression without its span. */
  readonly field: string;
  readonly expr: Expr;
  readonly value: KeyValue;
}

/** A field a run's leading tests read, with the type of the run's literals for it. */
interface Probe {
  readonly expr: Expr;
  readonly type: 'bigint' | 'string';
}

interface IndexedRun {
  readonly end: number;
  /** Every field read by a rule's tests up to its key, evaluated before picking a rule. */
  readonly probes: readonly Probe[];
  /** For each key field (by its position in `probes`): value → positions, ascending. */
  readonly keys: readonly { readonly probe: number; readonly positions: ReadonlyMap<KeyValue, readonly number[]> }[];
}

export interface ChainIndex {
  readonly chain: Chain;
  /** The indexed run a rule position belongs to, -1 for a rule run on its own; null when no
   * run is long enough to index. */
  readonly runAt: Int32Array | null;
  readonly runs: readonly IndexedRun[];
  /** By rule position, the chain the rule last jumped or went to, so that a jump does not look
   * its target up by name every time (filled by evaluate-chain.ts). */
  readonly targets: (JumpTarget | undefined)[];
  /** By rule position, the rule's location, and at `chain.rules.length` the chain's own (for its
   * policy and return events): made once, not for every trace event (filled by
   * evaluate-chain.ts). */
  readonly locs: (Loc | undefined)[];
}

/** A jump's target chain as `name` (the rule's own string, so that checking it again is a
 * pointer comparison, not a comparison of two equal names) resolved, with its index. */
export interface JumpTarget {
  readonly name: string;
  readonly chain: Chain;
  readonly index: ChainIndex | null;
}

// Built on first use, once per chain of a parsed ruleset.
const chainIndexes = new WeakMap<Chain, ChainIndex>();

/** The chain's index, null when indexes are off. */
export function chainIndexOf(chain: Chain): ChainIndex | null {
  if (!indexesOn) return null;
  let index = chainIndexes.get(chain);
  if (index === undefined) {
    index = buildChainIndex(chain);
    chainIndexes.set(chain, index);
  }
  return index;
}

/** The position of the first rule from `from` on that the packet may match, as the chain's rules
 * would be evaluated; past the last rule when none is left. */
export function findNextRule(index: ChainIndex, from: number, ctx: SimContext): number {
  const runAt = index.runAt;
  if (!runAt) return from;
  let position = from;
  while (position < runAt.length) {
    const run = runAt[position]!;
    if (run < 0) return position;
    const next = nextCandidate(index.runs[run]!, position, ctx);
    if (next < index.runs[run]!.end) return next;
    position = next;
  }
  return position;
}

/** The first candidate position from `from` in the run, `run.end` when none. */
function nextCandidate(run: IndexedRun, from: number, ctx: SimContext): number {
  const values: (KeyValue | undefined)[] = [];
  for (const probe of run.probes) {
    let value;
    try {
      value = evaluateExpr(probe.expr, ctx);
    } catch (error) {
      if (error instanceof NotModelled) return from;
      throw error;
    }
    if (value !== undefined && typeof value !== probe.type) return from;
    values.push(value as KeyValue | undefined);
  }
  let best = run.end;
  for (const key of run.keys) {
    const value = values[key.probe];
    if (value === undefined) continue;
    const positions = key.positions.get(value);
    if (!positions) continue;
    const at = firstAtLeast(positions, from);
    if (at < best) best = at;
  }
  return best;
}

/** The first element of an ascending list that is >= `from`, Infinity when none. */
function firstAtLeast(positions: readonly number[], from: number): number {
  let low = 0;
  let high = positions.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (positions[mid]! < from) low = mid + 1;
    else high = mid;
  }
  return low < positions.length ? positions[low]! : Infinity;
}

/** A field whose evaluation reads the packet and the host and has no effect: header fields,
 * meta keys (not `meta random`, which draws a branch), fib lookups. Named by the expression's
 * structure, so two tests of one field share it. */
function fieldOf(expr: Expr): string | undefined {
  if (expr.kind !== 'payload' && expr.kind !== 'fib' && (expr.kind !== 'meta' || expr.key === 'random')) return undefined;
  // These kinds hold no node below them (no span but their own): the expression without its
  // span, stringified without a replacer, which called back for every key of every rule of a
  // long chain when it is first met.
  const { span: _span, ...rest } = expr;
  return JSON.stringify(rest);
}

/** `field == literal` as matchRelational compares it: plain equality (not a bitmask's implicit
 * `&`, not an interface-name wildcard `eth*`). */
function keyTestOf(stmt: Stmt): KeyTest | undefined {
  if (stmt.kind !== 'match') return undefined;
  const { op, left, right } = stmt.expr;
  if ((op !== 'implicit' && op !== '==') || right.kind !== 'literal') return undefined;
  if (right.dtype && isBitmaskType(right.dtype)) return undefined;
  const field = fieldOf(left);
  if (!field) return undefined;
  let value;
  try {
    value = literalValue(right);
  } catch (error) {
    if (error instanceof NotModelled) return undefined;
    throw error;
  }
  if (typeof value === 'string') {
    if (value.endsWith('*') && !value.endsWith('\\*')) return undefined;
    value = value.replace(/\\\*$/, '*');
  }
  if (typeof value !== 'bigint' && typeof value !== 'string') return undefined;
  return { field, expr: left, value };
}

/** The tests a rule opens with, before anything that is not such a test (a counter has no
 * effect and is passed over). */
function leadingTests(rule: Rule): KeyTest[] {
  const tests: KeyTest[] = [];
  for (const stmt of rule.stmts) {
    if (stmt.kind === 'counter') continue;
    const test = keyTestOf(stmt);
    if (!test) break;
    tests.push(test);
  }
  return tests;
}

/** Shorter runs are scanned: probing their fields costs about what evaluating them does. */
const MIN_RUN = 8;
function buildChainIndex(chain: Chain): ChainIndex {
  const rules = chain.rules;
  const runAt = new Int32Array(rules.length).fill(-1);
  const runs: IndexedRun[] = [];
  let start = 0;
  while (rules.length >= MIN_RUN && start < rules.length) {
    // A run: consecutive rules with leading tests whose literals agree in type per field.
    const tests: KeyTest[][] = [];
    const types = new Map<string, 'bigint' | 'string'>();
    let end = start;
    for (; end < rules.length; end++) {
      const ruleTests = leadingTests(rules[end]!);
      // Checked test by test, so that one rule testing a field against both an integer and a
      // name (`meta iif 2 meta iif "eth0"`) ends the run too.
      const ruleTypes = new Map(types);
      const agree = ruleTests.every((t) => {
        const type = typeof t.value as 'bigint' | 'string';
        if ((ruleTypes.get(t.field) ?? type) !== type) return false;
        ruleTypes.set(t.field, type);
        return true;
      });
      if (ruleTests.length === 0 || !agree) break;
      for (const [field, type] of ruleTypes) types.set(field, type);
      tests.push(ruleTests);
    }
    if (end - start >= MIN_RUN) {
      runs.push(buildRun(start, end, tests, types));
      runAt.fill(runs.length - 1, start, end);
      start = end;
    } else {
      start = Math.max(end, start + 1);
    }
  }
  return { chain, runAt: runs.length > 0 ? runAt : null, runs, targets: new Array<JumpTarget | undefined>(rules.length), locs: new Array<Loc | undefined>(rules.length + 1) };
}

function buildRun(start: number, end: number, tests: readonly KeyTest[][], types: ReadonlyMap<string, 'bigint' | 'string'>): IndexedRun {
  // The most selective field: the one with the most distinct values in the run.
  const distinct = new Map<string, Set<KeyValue>>();
  for (const ruleTests of tests) {
    for (const t of ruleTests) {
      const values = distinct.get(t.field) ?? new Set();
      values.add(t.value);
      distinct.set(t.field, values);
    }
  }
  const probes: Probe[] = [];
  const probeOf = new Map<string, number>();
  const probeFor = (t: KeyTest): number => {
    let i = probeOf.get(t.field);
    if (i === undefined) {
      i = probes.length;
      probes.push({ expr: t.expr, type: types.get(t.field)! });
      probeOf.set(t.field, i);
    }
    return i;
  };
  const keys = new Map<number, Map<KeyValue, number[]>>();
  tests.forEach((ruleTests, i) => {
    let key = 0;
    for (let j = 1; j < ruleTests.length; j++) {
      if (distinct.get(ruleTests[j]!.field)!.size > distinct.get(ruleTests[key]!.field)!.size) key = j;
    }
    // The tests before the key are evaluated on the way to it: their fields are probed too.
    for (let j = 0; j < key; j++) probeFor(ruleTests[j]!);
    const probe = probeFor(ruleTests[key]!);
    const positions = keys.get(probe) ?? new Map<KeyValue, number[]>();
    keys.set(probe, positions);
    const list = positions.get(ruleTests[key]!.value) ?? [];
    list.push(start + i);
    positions.set(ruleTests[key]!.value, list);
  });
  return { end, probes, keys: [...keys].map(([probe, positions]) => ({ probe, positions })) };
}
