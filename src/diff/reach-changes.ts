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
import { parseAddress } from '../sim/address.js';
import type { PacketInput } from '../sim/packet.js';
import { addressInterval, portInterval, protocolNumber, PROTOCOLS, valuesOf } from './derive-probes.js';
import { chainKey } from './rule-keys.js';

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

interface Lead {
  /** The rule's conditions before its jump: the statements a packet must pass to take it. */
  readonly conditions: readonly Stmt[];
  readonly target: string;
  /** For a verdict map element: the element's key parts, paired with the map's key parts. */
  readonly element?: { readonly key: Expr; readonly parts: readonly Expr[] };
}

/** A predicate: may this probe meet a changed chain (or a changed hook) on either side? */
export function reachFilterOf(rulesets: readonly Ruleset[], changedChains: ReadonlySet<string>, changedHooks: ReadonlySet<string>): (packet: PacketInput) => boolean {
  if (changedChains.size === 0 && changedHooks.size === 0) return () => false;
  const leads = new Map<string, Lead[]>();
  const tables = new Map<string, Table>();
  for (const ruleset of rulesets) {
    for (const table of ruleset.tables) {
      for (const chain of table.chains) {
        const key = chainKey(table.family, table.name, chain.name);
        tables.set(key, table);
        for (const rule of chain.rules) for (const lead of leadsOf(rule, table)) push(leads, key, lead);
      }
    }
  }
  const tainted = taintedChains(leads, changedChains);
  // Only the leads into tainted chains matter, and they are few (kube-proxy's KUBE-SERVICES has a
  // lead per service, a handful of which go to a changed one): keep just those, with their
  // target's key, so a probe's walk costs a few rule checks rather than one per service.
  const toChange = new Map<string, (Lead & { readonly targetKey: string })[]>();
  for (const [key, list] of leads) {
    const prefix = key.split(' ').slice(0, 2).join(' ');
    for (const lead of list) {
      const targetKey = `${prefix} ${lead.target}`;
      if (tainted.has(targetKey)) push(toChange, key, { ...lead, targetKey });
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
    for (const { table, chain } of bases) {
      const base = chain.base!;
      if (!hooks.includes(base.hook)) continue;
      const key = chainKey(table.family, table.name, chain.name);
      if (!tainted.has(key)) continue;
      if (changedChains.has(key)) return true;
      const nat = firstNat.get(`${table.family} ${base.hook}`) ?? Infinity;
      const daddr = !DNAT_HOOKS.has(base.hook) ? false : base.type === 'nat' || priorityOf(chain) < nat;
      const trust: Trust = { daddr, saddr: SOURCE_KEPT_HOOKS.has(base.hook) };
      if (leadsToChange(key, packet, trust, toChange, changedChains, tables, new Set())) return true;
    }
    return false;
  };
}

function priorityOf(chain: Chain): number {
  return chain.base!.priority.value ?? chain.base!.priority.offset;
}

/** Whether the probe could follow leads from chain `key` to a changed chain. */
function leadsToChange(key: string, packet: PacketInput, trust: Trust, toChange: ReadonlyMap<string, readonly (Lead & { readonly targetKey: string })[]>, changed: ReadonlySet<string>, tables: ReadonlyMap<string, Table>, seen: Set<string>): boolean {
  if (seen.has(key)) return false;
  seen.add(key);
  const table = tables.get(key)!;
  for (const lead of toChange.get(key) ?? []) {
    if (!lead.conditions.every((s) => couldMatch(s, packet, trust, table))) continue;
    if (lead.element && !couldMatchElement(lead.element, packet, trust)) continue;
    if (changed.has(lead.targetKey) || leadsToChange(lead.targetKey, packet, trust, toChange, changed, tables, seen)) return true;
  }
  return false;
}

/** Changed chains and every chain that jumps (transitively) to one. */
function taintedChains(leads: ReadonlyMap<string, readonly Lead[]>, changed: ReadonlySet<string>): Set<string> {
  const parents = new Map<string, string[]>();
  for (const [from, list] of leads) {
    const prefix = from.split(' ').slice(0, 2).join(' ');
    for (const lead of list) push(parents, `${prefix} ${lead.target}`, from);
  }
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
function leadsOf(rule: Rule, table: Table): Lead[] {
  const out: Lead[] = [];
  for (const [i, stmt] of rule.stmts.entries()) {
    const conditions = rule.stmts.slice(0, i);
    if (stmt.kind === 'verdict' && (stmt.verdict === 'jump' || stmt.verdict === 'goto') && stmt.target !== undefined) out.push({ conditions, target: stmt.target });
    if (stmt.kind !== 'vmap') continue;
    const elements = stmt.map.kind === 'set' ? stmt.map.elements : (table.sets.find((s) => s.name === (stmt.map as { name: string }).name)?.elements ?? []);
    const parts = stmt.key.kind === 'concat' ? stmt.key.parts : [stmt.key];
    for (const element of elements) {
      const data = element.data;
      if (data?.kind !== 'verdict' || (data.verdict !== 'jump' && data.verdict !== 'goto') || data.target === undefined) continue;
      out.push({ conditions, target: data.target, element: { key: element.key, parts } });
    }
  }
  return out;
}

/** False only when the statement certainly does not match the probe at that point. */
function couldMatch(stmt: Stmt, packet: PacketInput, trust: Trust, table: Table): boolean {
  if (stmt.kind !== 'match') return true;
  const { left, right, op } = stmt.expr;
  if (op !== 'implicit' && op !== '==' && op !== '!=') return true;
  const hit = fieldMatches(left, valuesOf(right, table), packet, trust);
  return hit === undefined ? true : op === '!=' ? !hit : hit;
}

function couldMatchElement(element: { readonly key: Expr; readonly parts: readonly Expr[] }, packet: PacketInput, trust: Trust): boolean {
  const values = element.key.kind === 'concat' ? element.key.parts : [element.key];
  return element.parts.every((part, i) => values[i] === undefined || fieldMatches(part, [values[i]!], packet, trust) !== false);
}

/** Whether the probe's field `left` is one of `values`; undefined when not known here. */
function fieldMatches(left: Expr, values: readonly Expr[], packet: PacketInput, trust: Trust): boolean | undefined {
  if (values.length === 0) return undefined;
  if (left.kind === 'payload' && (left.protocol === 'ip' || left.protocol === 'ip6') && (left.field === 'daddr' || left.field === 'saddr')) {
    if (!(left.field === 'daddr' ? trust.daddr : trust.saddr)) return undefined;
    const text = left.field === 'daddr' ? packet.dst : packet.src;
    const a = text === undefined ? undefined : parseAddress(text);
    const intervals = values.map(addressInterval);
    if (!a || intervals.some((i) => i.length === 0)) return undefined;
    return intervals.flat().some((i) => i.family === a.family && i.lo <= a.n && a.n <= i.hi);
  }
  if (left.kind === 'payload' && left.field === 'dport' && ['tcp', 'udp', 'sctp', 'th'].includes(left.protocol)) {
    const proto = protocolOf(packet);
    // `tcp dport` also says tcp: a udp probe never matches it, whatever NAT did to the port.
    if (left.protocol !== 'th' && proto !== undefined && PROTOCOLS[left.protocol] !== proto) return false;
    if (!trust.daddr || packet.dport === undefined) return undefined;
    const ranges = values.map(portInterval);
    if (ranges.some((r) => r.length === 0)) return undefined;
    return ranges.flat().some(([lo, hi]) => lo <= packet.dport! && packet.dport! <= hi);
  }
  if ((left.kind === 'meta' && left.key === 'l4proto') || (left.kind === 'payload' && left.protocol === 'ip' && left.field === 'protocol')) {
    const proto = protocolOf(packet);
    const numbers = values.map(protocolNumber);
    if (proto === undefined || numbers.some((n) => n.length === 0)) return undefined;
    return numbers.flat().includes(proto);
  }
  if (left.kind === 'meta' && left.key === 'iifname') {
    const iif = packet.iif ?? '';
    const names = values.map((v) => (v.kind === 'literal' ? v.text.replace(/^"|"$/g, '') : undefined));
    if (names.some((n) => n === undefined)) return undefined;
    return names.some((n) => (n!.endsWith('*') ? iif.startsWith(n!.slice(0, -1)) : iif === n));
  }
  return undefined;
}

function protocolOf(packet: PacketInput): number | undefined {
  const p = packet.protocol ?? 'tcp';
  return typeof p === 'number' ? p : (PROTOCOLS[p] ?? (/^\d+$/.test(p) ? Number(p) : undefined));
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
