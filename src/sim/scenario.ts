// Scenario files: many packets on one host, optionally grouped into flows, each with
// expectations, checked against every outcome the simulator gives (a random branch must satisfy
// them too). The what-if tests users keep in CI (issue 4).
//
// State: the conntrack table and dynamic set elements carry across the whole scenario in order.
// Within a flow the random choices of all its packets are enumerated jointly; after a flow the
// scenario goes on from the state of its first branch (every random choice taking its first
// option, or the one `--seed` picked), with a note when the branches left different states.

import type { Ruleset } from '../model/ast.js';
import { formatAddress, parseAddress } from './address.js';
import type { Host } from './host.js';
import type { Outcome } from './outcome.js';
import { FieldReader, type FieldPath, type InputError } from './read-fields.js';
import type { SimState } from './sim-context.js';
import { runFlow } from './simulate-flow.js';
import { createSimState, indexOf, type SimulateOptions } from './simulate-packet.js';

/** `expect:` of one packet. `mark`/`ctMark` are `V` or `V/M` (the bits of M equal those of V);
 * `nat` lists the NAT types that must have happened, `[]` none. */
export interface Expectation {
  readonly disposition?: Outcome['disposition'];
  readonly verdict?: Outcome['verdict'];
  readonly oif?: string;
  readonly nat?: readonly Outcome['nat'][number]['type'][];
  readonly mark?: string;
  readonly ctMark?: string;
  readonly dst?: string;
  readonly src?: string;
}

export interface ScenarioCase {
  readonly name: string;
  readonly packet: unknown;
  readonly packetPath: FieldPath;
  readonly expect?: Expectation;
}

/** Packets simulated together: the random choices of all of them are enumerated jointly. A
 * packet of the scenario's `packets` is a flow of its own (without `name`). */
export interface ScenarioFlow {
  readonly name?: string;
  readonly cases: readonly ScenarioCase[];
}

export interface Scenario {
  readonly host: unknown;
  readonly flows: readonly ScenarioFlow[];
}

/** True when a packet file is a scenario (has `packets` or `flows`) rather than one packet. */
export function isScenario(value: unknown): boolean {
  return typeof value === 'object' && value !== null && ('packets' in value || 'flows' in value);
}

const DISPOSITIONS = ['forwarded', 'delivered', 'sent', 'dropped', 'rejected', 'queued', 'unknown'];
const NAT_TYPES = ['dnat', 'snat', 'masquerade', 'redirect'];
const MASKED = /^(0x[0-9a-fA-F]+|\d+)(\/(0x[0-9a-fA-F]+|\d+))?$/;

export function readScenario(value: unknown): { scenario?: Scenario; errors: InputError[] } {
  const reader = new FieldReader();
  const record = reader.object(value, [], ['description', 'host', 'packets', 'flows']);
  if (!record) return { errors: reader.errors };
  if (record.description !== undefined) reader.string(record.description, ['description']);
  const flows: ScenarioFlow[] = [];
  if (record.flows === undefined) {
    flows.push(...readCases(reader, record.packets, ['packets']).map((c) => ({ cases: [c] })));
  } else if (record.packets !== undefined) reader.fail(['flows'], 'give `packets` or `flows`, not both (a lone packet is a flow of one)');
  else {
    for (const [i, item] of (reader.array(record.flows, ['flows']) ?? []).entries()) {
      const path: FieldPath = ['flows', i];
      const f = reader.object(item, path, ['name', 'description', 'packets']);
      if (!f) continue;
      const name = f.name === undefined ? `flow ${i + 1}` : (reader.string(f.name, [...path, 'name']) ?? '');
      if (f.description !== undefined) reader.string(f.description, [...path, 'description']);
      flows.push({ name, cases: readCases(reader, f.packets, [...path, 'packets']) });
    }
  }
  return reader.errors.length > 0 ? { errors: reader.errors } : { scenario: { host: record.host ?? {}, flows }, errors: [] };
}

function readCases(reader: FieldReader, value: unknown, at: FieldPath): ScenarioCase[] {
  const cases: ScenarioCase[] = [];
  for (const [i, item] of (reader.array(value, at) ?? []).entries()) {
    const path: FieldPath = [...at, i];
    const c = reader.object(item, path, ['name', 'packet', 'expect']);
    if (!c) continue;
    const name = c.name === undefined ? `packet ${i + 1}` : (reader.string(c.name, [...path, 'name']) ?? '');
    if (c.packet === undefined) reader.fail([...path, 'packet'], 'required');
    const expect = c.expect === undefined ? undefined : readExpectation(reader, c.expect, [...path, 'expect']);
    cases.push({ name, packet: c.packet, packetPath: [...path, 'packet'], ...(expect && { expect }) });
  }
  return cases;
}

function readExpectation(reader: FieldReader, value: unknown, path: FieldPath): Expectation | undefined {
  const record = reader.object(value, path, ['disposition', 'verdict', 'oif', 'nat', 'mark', 'ctMark', 'dst', 'src']);
  if (!record) return undefined;
  const oneOf = (field: string, allowed: readonly string[]): string | undefined => {
    if (record[field] === undefined) return undefined;
    const s = reader.string(record[field], [...path, field]);
    if (s !== undefined && !allowed.includes(s)) return reader.fail([...path, field], `expected one of ${allowed.join(', ')}`);
    return s;
  };
  const masked = (field: 'mark' | 'ctMark'): string | undefined => {
    if (record[field] === undefined) return undefined;
    // YAML reads an unquoted 0x4000 as a number.
    const s = typeof record[field] === 'number' ? String(record[field]) : reader.string(record[field], [...path, field]);
    if (s !== undefined && (!MASKED.test(s) || s.split('/').some((n) => Number(n) > 0xffffffff))) {
      return reader.fail([...path, field], 'expected "V" or "V/M" (0x… or decimal, 32 bits)');
    }
    return s;
  };
  const endpoint = (field: 'dst' | 'src'): string | undefined => {
    if (record[field] === undefined) return undefined;
    const s = reader.string(record[field], [...path, field]);
    if (s !== undefined && !canonicalEndpoint(s)) return reader.fail([...path, field], 'expected an address, "a.b.c.d:port" or "[v6]:port"');
    return s;
  };
  let nat: Expectation['nat'];
  if (record.nat !== undefined) {
    const list = typeof record.nat === 'string' ? [record.nat] : reader.array(record.nat, [...path, 'nat']);
    nat = (list ?? []).flatMap((t, i) => {
      if (typeof t !== 'string' || !NAT_TYPES.includes(t)) return reader.fail([...path, 'nat', i], `expected one of ${NAT_TYPES.join(', ')}`) ?? [];
      return [t as Outcome['nat'][number]['type']];
    });
  }
  const disposition = oneOf('disposition', DISPOSITIONS) as Outcome['disposition'] | undefined;
  const verdict = oneOf('verdict', ['accept', 'drop', 'reject', 'queue']) as Outcome['verdict'] | undefined;
  const oif = record.oif === undefined ? undefined : reader.string(record.oif, [...path, 'oif']);
  const dst = endpoint('dst');
  const src = endpoint('src');
  const mark = masked('mark');
  const ctMark = masked('ctMark');
  return {
    ...(disposition && { disposition }),
    ...(verdict && { verdict }),
    ...(oif !== undefined && { oif }),
    ...(nat && { nat }),
    ...(mark && { mark }),
    ...(ctMark && { ctMark }),
    ...(dst !== undefined && { dst }),
    ...(src !== undefined && { src }),
  };
}

function matchesMasked(actual: string, expected: string): boolean {
  const [value, mask] = expected.split('/');
  const m = mask === undefined ? 0xffffffff : Number(mask);
  return ((Number(actual) & m) >>> 0) === ((Number(value) & m) >>> 0);
}

/** What an outcome fails of an expectation, one message per unmet field. */
export function checkExpectation(outcome: Outcome, expect: Expectation): string[] {
  const failures: string[] = [];
  const want = (field: string, expected: string, actual: string | undefined): void => {
    failures.push(`${field}: expected ${expected}, got ${actual ?? 'none'}`);
  };
  if (expect.disposition && outcome.disposition !== expect.disposition) want('disposition', expect.disposition, outcome.disposition);
  if (expect.verdict && outcome.verdict !== expect.verdict) want('verdict', expect.verdict, outcome.verdict);
  if (expect.oif !== undefined && outcome.oif !== expect.oif) want('oif', expect.oif, outcome.oif);
  if (expect.nat) {
    const actual = outcome.nat.map((n) => n.type);
    const same = actual.length === expect.nat.length && expect.nat.every((t) => actual.includes(t));
    if (!same) want('nat', `[${expect.nat.join(', ')}]`, `[${actual.join(', ')}]`);
  }
  if (expect.mark && !matchesMasked(outcome.mark, expect.mark)) want('mark', expect.mark, outcome.mark);
  if (expect.ctMark && !matchesMasked(outcome.ctMark, expect.ctMark)) want('ctMark', expect.ctMark, outcome.ctMark);
  for (const side of ['src', 'dst'] as const) {
    const expected = expect[side];
    if (expected === undefined) continue;
    // A bare address compares the address; `addr:port` / `[addr]:port` the endpoint.
    const canonical = canonicalEndpoint(expected);
    const actual = canonical?.port === false ? outcome.packet[side] : endpointText(outcome.packet, side);
    if (actual !== (canonical?.text ?? expected)) want(side, expected, actual);
  }
  return failures;
}

/** An expected `src`/`dst` as outcomes print it: an address, or an endpoint `a.b.c.d:port` /
 * `[v6]:port` (`port`: it has one); undefined when it is neither. */
function canonicalEndpoint(text: string): { text: string; port: boolean } | undefined {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text);
  const address = parseAddress(m ? (m[1] ?? m[2]!) : text);
  if (!address) return undefined;
  if (!m) return { text: formatAddress(address), port: false };
  const bracketed = m[1] !== undefined;
  if (Number(m[3]) > 65535 || bracketed !== (address.family === 'ip6')) return undefined;
  return { text: bracketed ? `[${formatAddress(address)}]:${Number(m[3])}` : `${formatAddress(address)}:${Number(m[3])}`, port: true };
}

function endpointText(packet: Outcome['packet'], side: 'src' | 'dst'): string {
  const addr = packet[side];
  const port = side === 'src' ? packet.sport : packet.dport;
  return port === undefined ? addr : addr.includes(':') ? `[${addr}]:${port}` : `${addr}:${port}`;
}

/** One packet of a scenario: its outcome in every branch of its flow (outcome i of each packet
 * of a flow belongs to the flow's branch i, with the branch's joint probability). */
export interface CaseResult {
  readonly name: string;
  readonly flow?: string;
  readonly outcomes: readonly Outcome[];
  readonly failures: readonly string[];
}

export interface ScenarioRun {
  readonly results: readonly CaseResult[];
  /** Where the scenario chose among branch states (see the top of this file). */
  readonly notes: readonly string[];
  readonly errors: readonly InputError[];
}

/** Runs a scenario's flows in order on one state, checking every packet's expectation against
 * its outcome in every branch. */
export function runScenario(ruleset: Ruleset, host: Host, scenario: Scenario, options: SimulateOptions = {}): ScenarioRun {
  const index = indexOf(ruleset);
  const results: CaseResult[] = [];
  const notes: string[] = [];
  const errors: InputError[] = [];
  let state = createSimState();
  for (const [f, flow] of scenario.flows.entries()) {
    const steps = flow.cases.map((c) => ({ value: c.packet, path: c.packetPath }));
    const run = runFlow(index, host, steps, state, options);
    errors.push(...run.errors);
    const branches = run.branches;
    if (branches.length === 0) continue;
    for (const [i, c] of flow.cases.entries()) {
      const outcomes = branches.flatMap((b) => (b.packets[i] ? [b.packets[i]!] : []));
      const failures = c.expect ? outcomes.flatMap((o, k) => checkExpectation(o, c.expect!).map((f) => (outcomes.length > 1 ? `outcome ${k + 1}: ${f}` : f))) : [];
      results.push({ name: c.name, ...(flow.name !== undefined && { flow: flow.name }), outcomes, failures });
    }
    // The nexthops multipath routes picked are the branch's random choice, not something the
    // rules left: a later flow picks anew, each nexthop in its own branch.
    state = { ...branches[0]!.state, paths: new Map() };
    // Only a later flow reads the state: the last one's differences matter to nobody.
    if (f === scenario.flows.length - 1) continue;
    const first = describeState(state);
    const differing = branches.filter((b) => describeState(b.state) !== first).length;
    if (differing > 0) {
      const what = flow.name ?? flow.cases[0]?.name ?? 'a packet';
      notes.push(`${what}: ${differing} of its ${branches.length} branches leave a different conntrack table or set contents; the scenario goes on from branch 1's`);
    }
  }
  return { results, notes, errors };
}

/** A text that is equal for equal states: the conntrack entries and the dynamic set elements. */
function describeState(state: SimState): string {
  const json = (value: unknown): string =>
    JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v instanceof Set || v instanceof Map ? [...(v as Iterable<unknown>)] : v));
  const entries = state.conntrack.entries.map((e) => json({ ...e, nat: e.nat.map((n) => n.to) }));
  const sets = [...state.dynamicSets].map(([set, elements]) => json([(set as { name?: string }).name, elements]));
  return [...entries, ...sets].join('\n');
}
