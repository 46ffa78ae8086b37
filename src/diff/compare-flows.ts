// Simulating a probe on both sides and saying what changed: disposition, egress interface, NAT,
// the mark bits some rule tests, and which rule decided. Random branches are compared as sets of
// outcomes. A changed flow gets a class: what changed, from which ingress, decided by which
// rules, so that hundreds of flows read as a few lines.

import type { Ruleset } from '../model/ast.js';
import type { Host } from '../sim/host.js';
import type { Loc, Outcome, TraceEvent } from '../sim/outcome.js';
import type { PacketInput } from '../sim/packet.js';
import type { HookIndex } from '../sim/pipeline.js';
import { runFlow } from '../sim/simulate-flow.js';
import { createSimState, indexOf } from '../sim/simulate-packet.js';
import { chainKey, deciderKey, type RuleIndex } from './rule-keys.js';

/** One side of a diff, resolved for simulation. */
export interface Side {
  readonly name: string;
  readonly ruleset: Ruleset;
  readonly index: HookIndex;
  readonly rules: RuleIndex;
}

export function sideOf(name: string, ruleset: Ruleset, rules: RuleIndex): Side {
  return { name, ruleset, index: indexOf(ruleset), rules };
}

/** What a probe did on one side: its outcomes (every branch) and its reply's, when it left. */
export interface ProbeRun {
  readonly outcomes: readonly Outcome[];
  readonly reply?: readonly Outcome[];
}

/** Bounds a probe's branches: kube-proxy's endpoint choice gives one per endpoint. */
const MAX_BRANCHES = 64;

/** The probe and its reply (the answer as the far end sends it, when the probe got through),
 * or undefined when the probe does not fit the host. */
export function runProbe(side: Side, host: Host, packet: PacketInput): ProbeRun | undefined {
  const first = { value: packet, path: ['probe'] };
  const withReply = runFlow(side.index, host, [first, { value: { reply: true }, path: ['reply'] }], createSimState(), { maxOutcomes: MAX_BRANCHES });
  if (withReply.errors.length === 0) {
    return { outcomes: withReply.branches.map((b) => b.packets[0]!), reply: withReply.branches.map((b) => b.packets[1]!) };
  }
  const alone = runFlow(side.index, host, [first], createSimState(), { maxOutcomes: MAX_BRANCHES });
  return alone.errors.length === 0 ? { outcomes: alone.branches.map((b) => b.packets[0]!) } : undefined;
}

/** The mark bits rules test, for meta mark and ct mark: only those are compared at the end. */
export interface TestedBits {
  readonly mark: number;
  readonly ctMark: number;
}

/** What decided, by key; an accept by a base chain's policy is just that (no rule stopped the
 * packet), whichever chain happened to be the last to run. */
function deciderOf(o: Outcome, rules: RuleIndex): string {
  const key = deciderKey(rules, o.decidedBy);
  return o.verdict === 'accept' && o.decidedBy !== undefined && rules.policyAt(o.decidedBy) !== undefined ? 'policy accept' : key;
}

function signature(o: Outcome, bits: TestedBits, rules: RuleIndex): string {
  const nat = o.nat.map((n) => (n.type === 'masquerade' ? n.type : `${n.type} ${n.to}`)).sort();
  const mark = (Number(o.mark) & bits.mark) >>> 0;
  const ct = (Number(o.ctMark) & bits.ctMark) >>> 0;
  return `${o.disposition}|${o.oif ?? ''}|${nat.join(',')}|${mark}|${ct}|${deciderOf(o, rules)}`;
}

function signatures(outcomes: readonly Outcome[] | undefined, bits: TestedBits, rules: RuleIndex): string {
  return [...new Set((outcomes ?? []).map((o) => signature(o, bits, rules)))].sort().join('\n');
}

export function isSameRun(before: ProbeRun, after: ProbeRun, bits: TestedBits, sides: readonly [Side, Side]): boolean {
  return (
    signatures(before.outcomes, bits, sides[0].rules) === signatures(after.outcomes, bits, sides[1].rules) &&
    signatures(before.reply, bits, sides[0].rules) === signatures(after.reply, bits, sides[1].rules)
  );
}

export type ChangeLevel = 'error' | 'warning';

/** What changed, in words, and where each side decided it. */
export interface Change {
  readonly what: string;
  readonly level: ChangeLevel;
  readonly before?: Loc;
  readonly after?: Loc;
}

/** The most telling change of a probe whose runs differ (disposition, then egress, NAT, marks,
 * the deciding rule), first for the probe, then for its reply. */
export function describeChange(before: ProbeRun, after: ProbeRun, bits: TestedBits, sides: readonly [Side, Side]): Change {
  const first = describeOutcomes(before.outcomes, after.outcomes, bits, sides);
  if (first) return first;
  const reply = describeOutcomes(before.reply ?? [], after.reply ?? [], bits, sides);
  return reply ? { ...reply, what: `reply: ${reply.what}` } : { what: 'outcome changed', level: 'warning' };
}

function describeOutcomes(b: readonly Outcome[], a: readonly Outcome[], bits: TestedBits, sides: readonly [Side, Side]): Change | undefined {
  const [sb, sa] = sides;
  const set = <T>(list: readonly Outcome[], f: (o: Outcome) => T): Set<T> => new Set(list.map(f));
  const same = <T>(x: Set<T>, y: Set<T>): boolean => x.size === y.size && [...x].every((v) => y.has(v));
  const words = <T>(s: Set<T>): string => [...s].map((v) => (v === undefined || v === '' ? 'none' : String(v))).join('/');
  const b0 = b[0];
  const a0 = a[0];
  if (b0 === undefined || a0 === undefined) return b0 === a0 ? undefined : { what: b0 ? 'no longer simulated' : 'now simulated', level: 'warning' };
  const disp = [set(b, (o) => o.disposition), set(a, (o) => o.disposition)] as const;
  if (!same(...disp)) return { what: `${words(disp[0])} → ${words(disp[1])}`, level: 'error', before: b0.decidedBy, after: a0.decidedBy };
  const oif = [set(b, (o) => o.oif), set(a, (o) => o.oif)] as const;
  if (!same(...oif)) return { what: `egress ${words(oif[0])} → ${words(oif[1])}`, level: 'error', before: b0.decidedBy, after: a0.decidedBy };
  for (const type of ['masquerade', 'snat', 'dnat', 'redirect'] as const) {
    const has = (o: Outcome): boolean => o.nat.some((n) => n.type === type);
    const hb = b.some(has);
    const ha = a.some(has);
    if (hb !== ha) {
      const withNat = (list: readonly Outcome[]) => list.find(has)!.nat.find((n) => n.type === type)!.at;
      return hb
        ? { what: `${type} lost`, level: 'error', before: withNat(b), after: divergence(a0, b0, sa, sb) }
        : { what: `${type} gained`, level: 'error', before: divergence(b0, a0, sb, sa), after: withNat(a) };
    }
    const targets = [set(b, (o) => o.nat.filter((n) => n.type === type).map((n) => n.to).join(',')), set(a, (o) => o.nat.filter((n) => n.type === type).map((n) => n.to).join(','))] as const;
    if (type !== 'masquerade' && !same(...targets)) {
      // Only what differs: kube-proxy's endpoint choice lists every endpoint as a branch.
      const gone = [...targets[0]].filter((t) => !targets[1].has(t));
      const came = [...targets[1]].filter((t) => !targets[0].has(t));
      return { what: `${type} to ${gone.join('/') || 'none'} → ${came.join('/') || 'none'}`, level: 'error', before: b0.nat.find((n) => n.type === type)?.at, after: a0.nat.find((n) => n.type === type)?.at };
    }
  }
  for (const field of ['mark', 'ctMark'] as const) {
    const mask = field === 'mark' ? bits.mark : bits.ctMark;
    const values = [set(b, (o) => (Number(o[field]) & mask) >>> 0), set(a, (o) => (Number(o[field]) & mask) >>> 0)] as const;
    if (!same(...values)) {
      const hex = (s: Set<number>): string => [...s].map((v) => `0x${v.toString(16)}`).join('/');
      const name = field === 'mark' ? 'mark' : 'ct mark';
      return { what: `${name} ${hex(values[0])} → ${hex(values[1])} (tested bits 0x${mask.toString(16)})`, level: 'error', before: divergence(b0, a0, sb, sa), after: divergence(a0, b0, sa, sb) };
    }
  }
  const deciders = [set(b, (o) => deciderOf(o, sb.rules)), set(a, (o) => deciderOf(o, sa.rules))] as const;
  if (!same(...deciders)) return { what: `${b0.verdict === 'accept' ? 'accepted' : b0.disposition} by another rule`, level: 'error', before: b0.decidedBy, after: a0.decidedBy };
  return undefined;
}

/** Where `mine` (on side `me`) parted from `other`: the first rule it matched that the other did
 * not, preferring a rule both rulesets hold that changed the mark (the platform rule that clears
 * a bit), then any rule both hold, then any. Traces are aligned on their rule keys (LCS), so
 * rules only one side has (a new component's chains) do not hide where the paths part. */
export function divergence(mine: Outcome, other: Outcome, me: Side, them: Side): Loc | undefined {
  const key = (side: Side) => (e: TraceEvent): string => `${e.kind} ${e.verdict} ${e.kind === 'policy' ? chainKey(e.family, e.table, e.chain) : deciderKey(side.rules, e.at)}`;
  const a = mine.trace.map(key(me));
  const b = other.trace.map(key(them));
  const inCommon = lcsMask(a, b);
  const divergent: { event: TraceEvent; changedMark: boolean }[] = [];
  let previous = '0x00000000';
  for (const [i, event] of mine.trace.entries()) {
    if (!inCommon[i] && event.kind === 'rule') divergent.push({ event, changedMark: event.mark !== previous });
    previous = event.mark;
  }
  const shared = (e: TraceEvent): boolean => them.rules.hasKey(me.rules.ruleAt(e.at)?.key ?? '');
  return (
    divergent.find((d) => d.changedMark && shared(d.event))?.event.at ??
    divergent.find((d) => shared(d.event))?.event.at ??
    divergent[0]?.event.at ??
    mine.decidedBy
  );
}

/** Which entries of `a` are part of a longest common subsequence with `b`. */
function lcsMask(a: readonly string[], b: readonly string[]): boolean[] {
  const n = a.length;
  const m = b.length;
  const table = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) table[i]![j] = a[i] === b[j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!);
  const mask = new Array<boolean>(n).fill(false);
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      mask[i] = true;
      i++;
      j++;
    } else if (table[i + 1]![j]! >= table[i]![j + 1]!) i++;
    else j++;
  }
  return mask;
}

// Hooks a packet passes by how it ended (net/ipv4/ip_input.c, ip_forward.c, ip_output.c).
const PATH_HOOKS: Readonly<Record<Outcome['disposition'], readonly string[]>> = {
  delivered: ['ingress', 'prerouting', 'input'],
  forwarded: ['ingress', 'prerouting', 'forward', 'postrouting', 'egress'],
  sent: ['output', 'postrouting', 'egress'],
  dropped: [],
  rejected: [],
  queued: [],
  unknown: [],
};

/** True when the run touched nothing that differs between the sides: no changed chain ran a
 * rule or was jumped to, and no hook it passed gained, lost or changed a base chain. Then the
 * other side's run is the same, and need not be simulated (what keeps a 10,000-service diff fast). */
export function isUntouched(run: ProbeRun, changedChains: ReadonlySet<string>, changedHooks: ReadonlySet<string>): boolean {
  for (const o of [...run.outcomes, ...(run.reply ?? [])]) {
    const hooks = new Set<string>(o.iif === undefined ? ['output'] : ['ingress', 'prerouting']);
    for (const h of PATH_HOOKS[o.disposition]) if (o.iif !== undefined || h === 'output' || h === 'postrouting') hooks.add(h);
    for (const e of o.trace) {
      hooks.add(e.hook);
      if (changedChains.has(chainKey(e.family, e.table, e.chain))) return false;
      const target = /^(?:jump|goto) (.+)$/.exec(e.verdict)?.[1];
      if (target !== undefined && changedChains.has(chainKey(e.family, e.table, target))) return false;
    }
    for (const h of hooks) if (changedHooks.has(h)) return false;
  }
  return true;
}
