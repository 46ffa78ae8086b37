// Scenario files: many packets on one host, each with expectations, checked against every
// outcome the simulator gives (a random branch must satisfy them too). The what-if tests users
// keep in CI (issue 4).

import type { Outcome } from './outcome.js';
import { FieldReader, type FieldPath, type InputError } from './read-fields.js';

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
}

export interface ScenarioCase {
  readonly name: string;
  readonly packet: unknown;
  readonly packetPath: FieldPath;
  readonly expect?: Expectation;
}

export interface Scenario {
  readonly host: unknown;
  readonly cases: readonly ScenarioCase[];
}

/** True when a packet file is a scenario (has `packets`) rather than one packet. */
export function isScenario(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'packets' in value;
}

const DISPOSITIONS = ['forwarded', 'delivered', 'sent', 'dropped', 'rejected', 'queued', 'unknown'];
const NAT_TYPES = ['dnat', 'snat', 'masquerade', 'redirect'];
const MASKED = /^(0x[0-9a-fA-F]+|\d+)(\/(0x[0-9a-fA-F]+|\d+))?$/;

export function readScenario(value: unknown): { scenario?: Scenario; errors: InputError[] } {
  const reader = new FieldReader();
  const record = reader.object(value, [], ['description', 'host', 'packets']);
  if (!record) return { errors: reader.errors };
  if (record.description !== undefined) reader.string(record.description, ['description']);
  const cases: ScenarioCase[] = [];
  for (const [i, item] of (reader.array(record.packets, ['packets']) ?? []).entries()) {
    const path: FieldPath = ['packets', i];
    const c = reader.object(item, path, ['name', 'packet', 'expect']);
    if (!c) continue;
    const name = c.name === undefined ? `packet ${i + 1}` : (reader.string(c.name, [...path, 'name']) ?? '');
    const expect = c.expect === undefined ? undefined : readExpectation(reader, c.expect, [...path, 'expect']);
    cases.push({ name, packet: c.packet, packetPath: [...path, 'packet'], ...(expect && { expect }) });
  }
  return reader.errors.length > 0 ? { errors: reader.errors } : { scenario: { host: record.host ?? {}, cases }, errors: [] };
}

function readExpectation(reader: FieldReader, value: unknown, path: FieldPath): Expectation | undefined {
  const record = reader.object(value, path, ['disposition', 'verdict', 'oif', 'nat', 'mark', 'ctMark', 'dst']);
  if (!record) return undefined;
  const oneOf = (field: string, allowed: readonly string[]): string | undefined => {
    if (record[field] === undefined) return undefined;
    const s = reader.string(record[field], [...path, field]);
    if (s !== undefined && !allowed.includes(s)) return reader.fail([...path, field], `expected one of ${allowed.join(', ')}`);
    return s;
  };
  const masked = (field: 'mark' | 'ctMark'): string | undefined => {
    if (record[field] === undefined) return undefined;
    const s = reader.string(record[field], [...path, field]);
    if (s !== undefined && !MASKED.test(s)) return reader.fail([...path, field], 'expected "V" or "V/M" (0x… or decimal)');
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
  const dst = record.dst === undefined ? undefined : reader.string(record.dst, [...path, 'dst']);
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
  if (expect.dst !== undefined) {
    const p = outcome.packet;
    const actual = expect.dst.includes(':') && !expect.dst.startsWith('[') && p.dport !== undefined ? `${p.dst}:${p.dport}` : p.dst;
    if (actual !== expect.dst) want('dst', expect.dst, actual);
  }
  return failures;
}
