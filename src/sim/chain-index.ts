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
// the run's literals (the comparison could throw), the next rule is run as the scan would. A
// field of integers is read as the compiled rules read it (packet-field.ts readField) and keyed by
// numbers.
//
// The index of a chain also numbers its rules among the ruleset's, by which HookIndex.compiled
// says where their compiled code is (compile-rule.ts) once they are compiled: the indexes and the
// compiled rules go together, on or off (withoutIndexes), and are kept per HookIndex, that is per
// parsed ruleset.

import type { Chain, Expr, Rule, Stmt, Table } from '../model/ast.js';
import { isBitmaskType } from '../model/datatypes.js';
import { constantOf, evaluateExpr, type RtValue } from './evaluate-expr.js';
import { fieldRefOf, readField, type FieldRef } from './packet-field.js';
import { isAddrtypeMatch } from './match-addrtype.js';
import { PositionTable } from './position-table.js';
import type { RuleResult } from './evaluate-stmt.js';
import type { HookIndex } from './pipeline.js';
import type { Loc, TraceEvent } from './outcome.js';
import { NotModelled, type SimContext } from './sim-context.js';

let indexesOn = true;

/** Runs `body` with chains and sets scanned element by element, without their indexes, and
 * every rule interpreted: the reference the indexes and the compiled rules are checked against
 * (test/sim/chain-index.test.ts, test/sim/compile-rule.test.ts). */
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

/** A key of the index: a literal's value, as a number where the field's reader gives numbers. */
type KeyValue = number | bigint | string;

/** A leading test of a rule: `field == literal`. */
interface KeyTest {
  /** What the field evaluation depends on: the expression without its span. */
  readonly field: string;
  readonly expr: Expr;
  readonly value: bigint | string;
  /** Whether the test may be the rule's key: iptables' addrtype is probed but never a key (for
   * an IPv6 packet it is not fib's type, match-addrtype.ts). */
  readonly keyable: boolean;
}

/** A field a run's leading tests read, with the type its values have when they are of the type
 * of the run's literals for it: read by readField as a number (`ref`), else by evaluateExpr. */
interface Probe {
  readonly expr: Expr;
  readonly ref?: FieldRef;
  readonly type: 'number' | 'bigint' | 'string';
}

interface PositionsByKey {
  get(key: KeyValue): number | readonly number[] | undefined;
}

interface IndexedRun {
  readonly end: number;
  /** Every field read by a rule's tests up to its key, evaluated before picking a rule. */
  readonly probes: readonly Probe[];
  /** For each key field (by its position in `probes`): value → its rule's position, or the
   * positions ascending when several rules have it (one array per value cost a kube-proxy
   * chain's index tens of thousands of objects). A field read as numbers has a PositionTable. */
  readonly keys: readonly { readonly probe: number; readonly positions: PositionsByKey }[];
  /** The probes' values for the packet, filled anew for each pick (one array per run). */
  readonly values: (KeyValue | RtValue | undefined)[];
}

/** A chain of the ruleset as packets meet it, made when a packet first enters it or a rule
 * first jumps to it (chainIndexNamed), and kept by name in its table's TableChains: a jump finds
 * everything about its target here, and its long runs' index once a packet entered it. */
export interface ChainIndex {
  readonly chain: Chain;
  /** The number of the chain's first rule among the ruleset's (HookIndex.compiled). */
  readonly first: number;
  /** The chain's rule count: a compiled rule's run reads nothing of the chain's rules. */
  readonly count: number;
  /** Whether the runs below are built (at the first entry with indexes on). */
  indexed: boolean;
  /** The indexed run a rule position belongs to, -1 for a rule run on its own; null when no
   * run is long enough to index. */
  runAt: Int32Array | null;
  runs: readonly IndexedRun[];
  /** The chain's location (its policy and return events), made when first needed. */
  loc: Loc | undefined;
  /** The chain's last return and (for a base chain) policy events, shared with the next packet
   * that makes the same one (evaluate-chain.ts). */
  returned: TraceEvent | undefined;
  policy: TraceEvent | undefined;
  /** The results of the jumps and gotos to this chain, one each, made when a packet first
   * takes one (evaluate-stmt.ts verdictResult). */
  jump: RuleResult | undefined;
  goto: RuleResult | undefined;
}

/** The index of the chain of `table` named `name` (a jump's target); undefined when the table
 * has none. Made when first asked for: most chains of a big ruleset are never entered by a
 * packet, and making an index for each of a 50,000-service ruleset's 300,000 chains cost a
 * quarter of a second. */
export function chainIndexNamed(hooks: HookIndex, table: Table, name: string): ChainIndex | undefined {
  const chains = hooks.chains.get(table)!;
  const known = chains.indexes.get(name);
  if (known) return known;
  const chain = chains.byName.get(name);
  if (!chain) return undefined;
  const index = createChainIndex(hooks, chain);
  chains.indexes.set(name, index);
  return index;
}

/** The index of a base chain: the one of its name, unless another chain of the table has the
 * name too. */
export function baseChainIndex(hooks: HookIndex, table: Table, chain: Chain): ChainIndex {
  const named = chainIndexNamed(hooks, table, chain.name);
  return named?.chain === chain ? named : createChainIndex(hooks, chain);
}

/** A new index, its rules numbered after those of the indexes made before it. */
function createChainIndex(hooks: HookIndex, chain: Chain): ChainIndex {
  const count = chain.rules.length;
  const first = hooks.rules;
  hooks.rules += count;
  if (hooks.rules > hooks.compiled.length) {
    const grown = new Int32Array(Math.max(hooks.compiled.length * 2, hooks.rules));
    grown.set(hooks.compiled);
    hooks.compiled = grown;
  }
  return { chain, first, count, indexed: false, runAt: null, runs: NO_RUNS, loc: undefined, returned: undefined, policy: undefined, jump: undefined, goto: undefined };
}

/** The chain as a packet enters it: its index, built at the first entry; null when indexes are
 * off (its rules are scanned and interpreted). */
export function enterChain(index: ChainIndex): ChainIndex | null {
  if (!indexesOn) return null;
  if (!index.indexed) indexRuns(index);
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
  const { probes, values } = run;
  for (let i = 0; i < probes.length; i++) {
    const probe = probes[i]!;
    let value;
    try {
      const ref = probe.ref;
      if (ref) {
        const n = readField(ctx, ref.field, ref.arg, ref.arg2);
        value = n < 0 ? undefined : n;
      } else value = evaluateExpr(probe.expr, ctx);
    } catch (error) {
      if (error instanceof NotModelled) return from;
      throw error;
    }
    if (value !== undefined && typeof value !== probe.type) return from;
    values[i] = value;
  }
  let best = run.end;
  for (const key of run.keys) {
    const value = values[key.probe];
    if (value === undefined) continue;
    const positions = key.positions.get(value as KeyValue);
    if (positions === undefined) continue;
    const at = typeof positions === 'number' ? (positions >= from ? positions : Infinity) : firstAtLeast(positions, from);
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
 * meta keys (not `meta random`, which draws a branch), fib lookups. Named by what its evaluation
 * depends on, so two tests of one field share it (the parts of a name hold no spaces). */
function fieldOf(expr: Expr): string | undefined {
  switch (expr.kind) {
    case 'payload':
      return expr.inner ? `payload ${expr.protocol} ${expr.field} ${expr.inner}` : fieldName(PAYLOAD_NAMES, expr.protocol, expr.field, 'payload');
    case 'meta':
      return expr.key === 'random' ? undefined : fieldName(META_NAMES, '', expr.key, 'meta');
    case 'fib':
      return `fib ${expr.flags.join(',')} ${expr.result}`;
    default:
      return undefined;
  }
}

// The names of header fields and meta keys, one string each: a long chain's index looks each up
// several times per rule, and a string made anew is hashed anew.
const PAYLOAD_NAMES = new Map<string, Map<string, string>>();
const META_NAMES = new Map<string, Map<string, string>>();

function fieldName(names: Map<string, Map<string, string>>, a: string, b: string, kind: string): string {
  let byB = names.get(a);
  if (!byB) {
    byB = new Map();
    names.set(a, byB);
  }
  let name = byB.get(b);
  if (name === undefined) {
    name = `${kind} ${a} ${b}`;
    byB.set(b, name);
  }
  return name;
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
  let value = constantOf(right);
  if (typeof value === 'string') {
    if (value.endsWith('*') && !value.endsWith('\\*')) return undefined;
    value = value.replace(/\\\*$/, '*');
  }
  if (typeof value !== 'bigint' && typeof value !== 'string') return undefined;
  return { field, expr: left, value, keyable: true };
}

/** The tests a rule opens with, before anything that is not such a test (a counter has no
 * effect and is passed over); none when no test may be a key. */
function leadingTests(rule: Rule): KeyTest[] {
  const tests: KeyTest[] = [];
  let keys = 0;
  for (const stmt of rule.stmts) {
    if (stmt.kind === 'counter') continue;
    const test = keyTestOf(stmt);
    if (!test) break;
    // Its origin is read only at a fib test: one more object, cold in memory, per rule indexed.
    const keyable = !(stmt.kind === 'match' && isAddrtypeMatch(stmt.expr) && rule.origin?.format === 'iptables');
    tests.push(keyable ? test : { ...test, keyable });
    if (keyable) keys++;
  }
  return keys > 0 ? tests : [];
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** How many rules of a run tell its fields' selectivity. */
const SAMPLE = 256;

/** Shorter runs are scanned: probing their fields costs about what evaluating them does. */
const MIN_RUN = 8;
const NO_RUNS: readonly IndexedRun[] = [];

function indexRuns(index: ChainIndex): void {
  index.indexed = true;
  const rules = index.chain.rules;
  if (rules.length < MIN_RUN) return;
  const runAt = new Int32Array(rules.length).fill(-1);
  const runs: IndexedRun[] = [];
  let start = 0;
  while (start < rules.length) {
    // A run: consecutive rules with leading tests whose literals agree in type per field.
    const tests: KeyTest[][] = [];
    const types = new Map<string, 'bigint' | 'string'>();
    let end = start;
    for (; end < rules.length; end++) {
      const ruleTests = leadingTests(rules[end]!);
      if (ruleTests.length === 0 || !agreesInTypes(ruleTests, types)) break;
      for (const t of ruleTests) if (!types.has(t.field)) types.set(t.field, typeof t.value as 'bigint' | 'string');
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
  if (runs.length === 0) return;
  index.runAt = runAt;
  index.runs = runs;
}

/** Whether a rule's tests give each field the type the run has for it, checked test by test, so
 * that one rule testing a field against both an integer and a name (`meta iif 2 meta iif
 * "eth0"`) ends the run too. */
function agreesInTypes(ruleTests: readonly KeyTest[], types: ReadonlyMap<string, 'bigint' | 'string'>): boolean {
  for (let i = 0; i < ruleTests.length; i++) {
    const t = ruleTests[i]!;
    let known = types.get(t.field);
    for (let j = 0; known === undefined && j < i; j++) if (ruleTests[j]!.field === t.field) known = typeof ruleTests[j]!.value as 'bigint' | 'string';
    if (known !== undefined && known !== typeof t.value) return false;
  }
  return true;
}

function buildRun(start: number, end: number, tests: readonly KeyTest[][], types: ReadonlyMap<string, 'bigint' | 'string'>): IndexedRun {
  // The most selective field: the one with the most distinct values among the run's first rules
  // (any key gives the same candidates; a better one gives fewer).
  const distinct = new Map<string, Set<KeyValue>>();
  for (const ruleTests of tests.slice(0, SAMPLE)) {
    for (const t of ruleTests) {
      const values = distinct.get(t.field) ?? new Set();
      values.add(t.value);
      distinct.set(t.field, values);
    }
  }
  // A field of integers all below 2^53 is read and keyed as numbers where it has such a reader.
  const safe = new Map<string, boolean>();
  for (const ruleTests of tests) {
    for (const t of ruleTests) safe.set(t.field, (safe.get(t.field) ?? true) && typeof t.value === 'bigint' && t.value >= 0n && t.value <= MAX_SAFE);
  }
  const probes: Probe[] = [];
  const numeric: boolean[] = [];
  const probeOf = new Map<string, number>();
  const probeFor = (t: KeyTest): number => {
    let i = probeOf.get(t.field);
    if (i === undefined) {
      i = probes.length;
      const type = types.get(t.field)!;
      const ref = type === 'bigint' && safe.get(t.field) === true ? fieldRefOf(t.expr) : undefined;
      probes.push(ref ? { expr: t.expr, ref, type: 'number' } : { expr: t.expr, type });
      numeric.push(ref !== undefined);
      probeOf.set(t.field, i);
    }
    return i;
  };
  const keys = new Map<number, Map<KeyValue, number | number[]>>();
  tests.forEach((ruleTests, i) => {
    const selectivity = (t: KeyTest): number => distinct.get(t.field)?.size ?? 0;
    let key = ruleTests.findIndex((t) => t.keyable);
    for (let j = key + 1; j < ruleTests.length; j++) {
      if (ruleTests[j]!.keyable && selectivity(ruleTests[j]!) > selectivity(ruleTests[key]!)) key = j;
    }
    // The tests before the key are evaluated on the way to it: their fields are probed too.
    for (let j = 0; j < key; j++) probeFor(ruleTests[j]!);
    const probe = probeFor(ruleTests[key]!);
    const positions = keys.get(probe) ?? new Map<KeyValue, number | number[]>();
    keys.set(probe, positions);
    const value = ruleTests[key]!.value;
    const keyValue = numeric[probe] ? Number(value) : value;
    const known = positions.get(keyValue);
    if (known === undefined) positions.set(keyValue, start + i);
    else if (typeof known === 'number') positions.set(keyValue, [known, start + i]);
    else known.push(start + i);
  });
  return {
    end,
    probes,
    keys: [...keys].map(([probe, positions]) => ({ probe, positions: numeric[probe] ? new PositionTable(positions as Map<number, number | number[]>) : positions })),
    values: new Array<KeyValue | undefined>(probes.length),
  };
}
