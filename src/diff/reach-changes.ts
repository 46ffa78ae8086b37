// Which probes can meet a change at all, decided without simulating them (issue 6: a 10,000-service
// diff where 5 services changed must not simulate 15,000 probes).
//
// The argument: a probe's fate is made by the rules it meets on its way. If on both sides its way
// only meets chains whose rules are identical (same text, same order, same sets), both runs are
// step by step the same, so its fate cannot change. A probe can meet a changed chain only by
// passing a hook whose base chains differ, or by being sent there: from a base chain, through
// jump/goto (or verdict-map) rules, to the changed chain. So it suffices to follow, from the base
// chains of the hooks it may pass, only the rules that lead (transitively) to a changed chain, and
// ask of each whether the probe could match it. "Could" is over-approximated: only conditions on
// fields that are certainly still the probe's own at that point are trusted (the protocol, the
// input interface; the destination only before destination NAT can have run, the source only
// before source NAT can have run); everything else (marks, conntrack, xt matches, lookups nftsim
// does not read here) counts as a match. A false "could" only costs a simulation.
//
// The probe's reply is conntrack-established: nat chains are not consulted for it, and its fields
// are the original's after NAT, which are not known without simulating. So a probe is also kept
// whenever any non-nat chain leads to a change.

import type { Chain, Expr, Hook, Rule, Ruleset, Stmt, Table } from '../model/ast.js';
import { parseAddress, type Address } from '../sim/address.js';
import type { PacketInput } from '../sim/packet.js';
import { addressInterval, portInterval, protocolNumber, PROTOCOLS, valuesOf } from './derive-probes.js';
import { chainKey } from './rule-keys.js';
import { pushToList } from './push-to-list.js';

/** The hooks a packet may pass, by where it comes from (net/ipv4/ip_input.c, ip_forward.c,
 * ip_output.c): the routing decision is not known before simulating, so both ways count. */
const INGRESS_HOOKS: readonly Hook[] = ['ingress', 'prerouting', 'input', 'forward', 'postrouting'];
const LOCAL_HOOKS: readonly Hook[] = ['output', 'postrouting'];

/** Hooks where destination NAT runs (nat chains at prerouting and output), and where source NAT
 * runs (postrouting, input): a destination is the probe's own up to the first nat chain of a DNAT
 * hook, a source up to the first SNAT hook (net/netfilter/nf_nat_proto.c nf_nat_ipv4_ops). */
const DNAT_HOOKS = new Set<Hook>(['prerouting', 'output']);
const SOURCE_KEPT_HOOKS = new Set<Hook>(['ingress', 'prerouting', 'forward', 'output']);

interface Trust {
  readonly daddr: boolean;
  readonly saddr: boolean;
}

/** A way a rule sends packets to another chain: its jump/goto verdict, or an element of its
 * verdict map. */
interface Exit {
  /** The statement that jumps: the ones before it are the conditions to take it. */
  readonly at: number;
  readonly target: string;
  /** For a verdict map element: the element's key parts, paired with the map's key parts. */
  readonly element?: { readonly key: Expr; readonly parts: readonly Expr[] };
}

interface Lead {
  /** The rule's conditions before its jump (the statements a packet must pass to take it), and
   * for a verdict map element, its key against the map's: read once, tried on every probe. */
  readonly tests: readonly FieldTest[];
  readonly targetKey: string;
}

/** The fields of a probe the tests read, made once per probe. */
interface ProbeFields {
  readonly iif: string;
  readonly dst: Address | undefined;
  readonly src: Address | undefined;
  readonly protocol: number | undefined;
  readonly dport: number | undefined;
}

/** False when a field of the probe certainly fails a condition; true or undefined (not known
 * here) otherwise. */
type FieldTest = (probe: ProbeFields, trust: Trust) => boolean | undefined;

/** A predicate: may this probe meet a changed chain (or a changed hook) on either side?
 * `changedChains` are the chains that differ between the sides: any other is the same on each
 * (its rules and its table's sets), so only the first side's copy of it is read. */
export function reachFilterOf(rulesets: readonly Ruleset[], changedChains: ReadonlySet<string>, changedHooks: ReadonlySet<string>): (packet: PacketInput) => boolean {
  if (changedChains.size === 0 && changedHooks.size === 0) return () => false;
  const parents = new Map<string, string[]>();
  const chains = new Map<string, { table: Table; chain: Chain }[]>();
  // A chain's table (the last side's where both have it): where its rules' named sets are.
  const tables = new Map<string, Table>();
  for (const [side, ruleset] of rulesets.entries()) {
    for (const table of ruleset.tables) {
      // The keys of the chains this table's rules jump to, made once per name.
      const keys = new Map<string, string>();
      const keyOf = (name: string): string => {
        let key = keys.get(name);
        if (key === undefined) keys.set(name, (key = chainKey(table.family, table.name, name)));
        return key;
      };
      for (const chain of table.chains) {
        const key = keyOf(chain.name);
        tables.set(key, table);
        if (side > 0 && !changedChains.has(key)) continue;
        pushToList(chains, key, { table, chain });
        // Indexed: every rule of a large ruleset.
        for (let r = 0; r < chain.rules.length; r++) for (const exit of exitsOf(chain.rules[r]!, table)) pushToList(parents, keyOf(exit.target), key);
      }
    }
  }
  const tainted = taintedChains(parents, changedChains);
  // Only the leads into tainted chains matter, and they are few (kube-proxy's KUBE-SERVICES has a
  // lead per service, a handful of which go to a changed one): keep just those, with their
  // target's key, so a probe's walk costs a few rule checks rather than one per service. A lead
  // into a tainted chain starts in a tainted chain.
  const toChange = new Map<string, Lead[]>();
  for (const key of tainted) {
    for (const { table, chain } of chains.get(key) ?? []) {
      for (const rule of chain.rules) {
        for (const exit of exitsOf(rule, table)) {
          const targetKey = chainKey(table.family, table.name, exit.target);
          if (!tainted.has(targetKey)) continue;
          const tests = rule.stmts.slice(0, exit.at).flatMap((stmt) => conditionTestOf(stmt, tables.get(key)!) ?? []);
          if (exit.element) tests.push(...elementTestsOf(exit.element));
          pushToList(toChange, key, { tests, targetKey });
        }
      }
    }
  }
  const bases = rulesets.flatMap((r) => r.tables.flatMap((t) => t.chains.filter((c) => c.base).map((c) => ({ table: t, chain: c }))));
  // The reply: established, so nat chains are skipped; its fields are not the probe's.
  const replyMay = changedHooks.size > 0 || bases.some(({ table, chain }) => chain.base!.type !== 'nat' && tainted.has(chainKey(table.family, table.name, chain.name)));
  if (replyMay) return () => true;
  const firstNat = new Map<string, number>();
  for (const { table, chain } of bases) {
    if (chain.base!.type !== 'nat') continue;
    const at = `${table.family} ${chain.base!.hook}`;
    firstNat.set(at, Math.min(firstNat.get(at) ?? Infinity, priorityOf(chain)));
  }
  return (packet) => {
    const hooks = packet.iif === undefined ? LOCAL_HOOKS : INGRESS_HOOKS;
    const probe = fieldsOf(packet);
    for (const { table, chain } of bases) {
      const base = chain.base!;
      if (!hooks.includes(base.hook)) continue;
      const key = chainKey(table.family, table.name, chain.name);
      if (!tainted.has(key)) continue;
      if (changedChains.has(key)) return true;
      const nat = firstNat.get(`${table.family} ${base.hook}`) ?? Infinity;
      const daddr = !DNAT_HOOKS.has(base.hook) ? false : base.type === 'nat' || priorityOf(chain) < nat;
      const trust: Trust = { daddr, saddr: SOURCE_KEPT_HOOKS.has(base.hook) };
      if (leadsToChange(key, probe, trust, toChange, changedChains, new Set())) return true;
    }
    return false;
  };
}

function priorityOf(chain: Chain): number {
  return chain.base!.priority.value ?? chain.base!.priority.offset;
}

/** Whether the probe could follow leads from chain `key` to a changed chain. */
function leadsToChange(key: string, probe: ProbeFields, trust: Trust, toChange: ReadonlyMap<string, readonly Lead[]>, changed: ReadonlySet<string>, seen: Set<string>): boolean {
  if (seen.has(key)) return false;
  seen.add(key);
  for (const lead of toChange.get(key) ?? []) {
    if (lead.tests.some((test) => test(probe, trust) === false)) continue;
    if (changed.has(lead.targetKey) || leadsToChange(lead.targetKey, probe, trust, toChange, changed, seen)) return true;
  }
  return false;
}

/** Changed chains and every chain that jumps (transitively) to one, from each chain's parents
 * (the chains with a rule that jumps to it). */
function taintedChains(parents: ReadonlyMap<string, readonly string[]>, changed: ReadonlySet<string>): Set<string> {
  const tainted = new Set(changed);
  const queue = [...changed];
  while (queue.length > 0) {
    for (const p of parents.get(queue.pop()!) ?? []) {
      if (tainted.has(p)) continue;
      tainted.add(p);
      queue.push(p);
    }
  }
  return tainted;
}

/** The ways a rule sends packets to another chain: a jump/goto verdict, or a verdict map's
 * elements. */
function exitsOf(rule: Rule, table: Table): readonly Exit[] {
  // Made on the first exit, with an indexed loop: this runs on every rule of a large ruleset.
  let out: Exit[] | undefined;
  for (let at = 0; at < rule.stmts.length; at++) {
    const stmt = rule.stmts[at]!;
    if (stmt.kind === 'verdict' && (stmt.verdict === 'jump' || stmt.verdict === 'goto') && stmt.target !== undefined) (out ??= []).push({ at, target: stmt.target });
    if (stmt.kind !== 'vmap') continue;
    const elements = stmt.map.kind === 'set' ? stmt.map.elements : (table.sets.find((s) => s.name === (stmt.map as { name: string }).name)?.elements ?? []);
    const parts = stmt.key.kind === 'concat' ? stmt.key.parts : [stmt.key];
    for (const element of elements) {
      const data = element.data;
      if (data?.kind !== 'verdict' || (data.verdict !== 'jump' && data.verdict !== 'goto') || data.target === undefined) continue;
      (out ??= []).push({ at, target: data.target, element: { key: element.key, parts } });
    }
  }
  return out ?? NO_EXITS;
}

const NO_EXITS: readonly Exit[] = [];

/** The test of a condition the probe's own fields can fail, or undefined when none can. */
function conditionTestOf(stmt: Stmt, table: Table): FieldTest | undefined {
  if (stmt.kind !== 'match') return undefined;
  const { left, right, op } = stmt.expr;
  if (op !== 'implicit' && op !== '==' && op !== '!=') return undefined;
  const test = fieldTestOf(left, valuesOf(right, table));
  if (!test) return undefined;
  return op === '!=' ? (probe, trust) => { const hit = test(probe, trust); return hit === undefined ? undefined : !hit; } : test;
}

/** A verdict map element's key parts, each against the map's key part it fills. */
function elementTestsOf(element: { readonly key: Expr; readonly parts: readonly Expr[] }): FieldTest[] {
  const values = element.key.kind === 'concat' ? element.key.parts : [element.key];
  return element.parts.flatMap((part, i) => (values[i] === undefined ? [] : (fieldTestOf(part, [values[i]!]) ?? [])));
}

/** Whether the probe's field `left` is one of `values`; undefined when not known here. The
 * values are read here, once; the probe's fields when tried. */
function fieldTestOf(left: Expr, values: readonly Expr[]): FieldTest | undefined {
  if (values.length === 0) return undefined;
  if (left.kind === 'payload' && (left.protocol === 'ip' || left.protocol === 'ip6') && (left.field === 'daddr' || left.field === 'saddr')) {
    const intervals = values.map(addressInterval);
    const known = !intervals.some((i) => i.length === 0);
    const all = intervals.flat();
    const isDaddr = left.field === 'daddr';
    return (probe, trust) => {
      if (!(isDaddr ? trust.daddr : trust.saddr)) return undefined;
      const a = isDaddr ? probe.dst : probe.src;
      if (!a || !known) return undefined;
      return all.some((i) => i.family === a.family && i.lo <= a.n && a.n <= i.hi);
    };
  }
  if (left.kind === 'payload' && left.field === 'dport' && ['tcp', 'udp', 'sctp', 'th'].includes(left.protocol)) {
    const ranges = values.map(portInterval);
    const known = !ranges.some((r) => r.length === 0);
    const all = ranges.flat();
    const own = left.protocol === 'th' ? undefined : PROTOCOLS[left.protocol];
    return (probe, trust) => {
      // `tcp dport` also says tcp: a udp probe never matches it, whatever NAT did to the port.
      if (own !== undefined && probe.protocol !== undefined && own !== probe.protocol) return false;
      const dport = probe.dport;
      if (!trust.daddr || dport === undefined || !known) return undefined;
      return all.some(([lo, hi]) => lo <= dport && dport <= hi);
    };
  }
  if ((left.kind === 'meta' && left.key === 'l4proto') || (left.kind === 'payload' && left.protocol === 'ip' && left.field === 'protocol')) {
    const numbers = values.map(protocolNumber);
    const known = !numbers.some((n) => n.length === 0);
    const all = numbers.flat();
    return (probe) => (probe.protocol === undefined || !known ? undefined : all.includes(probe.protocol));
  }
  if (left.kind === 'meta' && left.key === 'iifname') {
    const names = values.map((v) => (v.kind === 'literal' ? v.text.replace(/^"|"$/g, '') : undefined));
    if (names.some((n) => n === undefined)) return undefined;
    return (probe) => names.some((n) => (n!.endsWith('*') ? probe.iif.startsWith(n!.slice(0, -1)) : probe.iif === n));
  }
  return undefined;
}

function fieldsOf(packet: PacketInput): ProbeFields {
  const p = packet.protocol ?? 'tcp';
  return {
    iif: packet.iif ?? '',
    dst: packet.dst === undefined ? undefined : parseAddress(packet.dst),
    src: packet.src === undefined ? undefined : parseAddress(packet.src),
    protocol: typeof p === 'number' ? p : (PROTOCOLS[p] ?? (/^\d+$/.test(p) ? Number(p) : undefined)),
    dport: packet.dport,
  };
}
