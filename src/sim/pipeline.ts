// Which base chains a packet meets, in which order: the netfilter hooks of its path, the families
// whose chains see it, and the order the kernel runs chains registered at one hook.

import type { Chain, Family, Hook, NatStmt, Ruleset, Stmt, Table } from '../model/ast.js';
import type { AddressFamily } from './address.js';
import { chainsByName } from '../model/chains-by-name.js';
import { baseChainIndex, type ChainIndex } from './chain-index.js';
import { createCodeArena, type CodeArena } from './compile-rule.js';
import { IpsetIndex } from './match-ipset.js';

export type PathName = 'input' | 'forward' | 'output';

/** The hooks of each path, in order (include/uapi/linux/netfilter.h NF_INET_PRE_ROUTING…, called
 * from net/ipv4/ip_input.c ip_rcv → NF_INET_PRE_ROUTING, ip_local_deliver → NF_INET_LOCAL_IN,
 * ip_forward.c → NF_INET_FORWARD, ip_output.c __ip_local_out → NF_INET_LOCAL_OUT and
 * ip_output → NF_INET_POST_ROUTING; net/ipv6 the same). The netdev ingress hook
 * (net/core/dev.c nf_ingress, also inet ingress chains since 5.10) runs before prerouting for a
 * packet from an interface. The routing decision sits between the first hook after ingress and
 * the rest: after prerouting for a received packet, before output for a local one (with a
 * re-route after output when the destination changed, ip_route_me_harder). A packet that
 * leaves through a device meets the netdev egress hook last (dev_queue_xmit → nf_hook_egress,
 * after postrouting and conntrack's confirmation). */
export const PATH_HOOKS: Readonly<Record<PathName, readonly Hook[]>> = {
  input: ['ingress', 'prerouting', 'input'],
  forward: ['ingress', 'prerouting', 'forward', 'postrouting', 'egress'],
  output: ['output', 'postrouting', 'egress'],
};

/** The hooks whose chains are bound to devices (netdev ingress and egress). */
export function isDeviceHook(hook: Hook): hook is 'ingress' | 'egress' {
  return hook === 'ingress' || hook === 'egress';
}

/** The families whose base chains see a packet of each address family at the inet hooks
 * (nf_tables registers an inet chain on both NFPROTO_IPV4 and NFPROTO_IPV6, net/netfilter/
 * nft_chain_filter.c nft_chain_filter_inet_init); at ingress, netdev chains bound to the device
 * and inet ingress chains (nf_tables_api.c nft_chain_parse_netdev). bridge and arp chains never
 * see a routed IP packet. Egress is netdev's alone (nft refuses an inet egress chain). */
export function familiesAt(hook: Hook, family: AddressFamily): readonly Family[] {
  if (hook === 'ingress') return ['netdev', 'inet'];
  if (hook === 'egress') return ['netdev'];
  return [family, 'inet'];
}

/** Where nat-type chains really run: the kernel registers one NAT hook per hook at a fixed
 * priority and runs the nat chains from its own list, in their priority order
 * (net/netfilter/nf_nat_core.c nf_nat_register_fn; nf_nat_proto.c nf_nat_ipv4_ops:
 * NF_IP_PRI_NAT_DST -100 at prerouting and output, NF_IP_PRI_NAT_SRC 100 at input and
 * postrouting; IPv6 identical). A nat chain at `srcnat - 1` still runs inside that hook, after
 * a filter chain at 99.5, not before it. */
export const NAT_HOOK_PRIORITY: Readonly<Partial<Record<Hook, number>>> = {
  prerouting: -100,
  output: -100,
  input: 100,
  postrouting: 100,
};

/** Which NAT manipulation a hook's nat chains set up (nf_nat_core.c HOOK2MANIP). */
export const NAT_MANIP: Readonly<Partial<Record<Hook, 'dst' | 'src'>>> = {
  prerouting: 'dst',
  output: 'dst',
  input: 'src',
  postrouting: 'src',
};

/** Conntrack attaches its entry at NF_IP_PRI_CONNTRACK -200 at prerouting and output
 * (net/netfilter/nf_conntrack_proto.c ipv4_conntrack_ops); chains before it see no entry
 * (`ct state` reads invalid, other ct keys do not match, nft_ct.c nft_ct_get_eval), and
 * `notrack` only has effect there. */
export const CONNTRACK_PRIORITY: Readonly<Partial<Record<Hook, number>>> = {
  prerouting: -200,
  output: -200,
};

/** A hook as a packet passes it: where conntrack and the NAT hook sit among its chains, and
 * which NAT manipulation it sets up. One object per hook, which the simulator passes along: it
 * reads them at every hook of every packet, where three lookups by the hook's name were two
 * fifths of the time spent running a hook without chains. */
export interface HookStage {
  readonly hook: Hook;
  readonly conntrackAt: number | undefined;
  readonly natSlot: number | undefined;
  readonly manip: 'dst' | 'src' | undefined;
}

function stageOf(hook: Hook): HookStage {
  return { hook, conntrackAt: CONNTRACK_PRIORITY[hook], natSlot: NAT_HOOK_PRIORITY[hook], manip: NAT_MANIP[hook] };
}

/** The stages of the hooks a routed packet passes. */
export const STAGES = {
  ingress: stageOf('ingress'),
  prerouting: stageOf('prerouting'),
  input: stageOf('input'),
  forward: stageOf('forward'),
  output: stageOf('output'),
  postrouting: stageOf('postrouting'),
  egress: stageOf('egress'),
} as const;

/** Statement and expression kinds whose kernel expression enables conntrack in the network
 * namespace (nf_ct_netns_get in its init: nft_ct.c nft_ct_get_init / nft_ct_set_init /
 * nft_ct_helper_obj_init, nft_nat.c, nft_masq.c, nft_redir.c, nft_connlimit.c, nft_synproxy.c,
 * nft_flow_offload.c). Since Linux 4.10 conntrack hooks are registered per namespace only on
 * demand: with none of these, no packet gets a conntrack entry and the nat chains, which run from
 * the NAT hooks only for a packet with one (nf_nat_core.c nf_nat_inet_fn: `if (!ct) return
 * NF_ACCEPT`), never run. */
const CONNTRACK_USER_KINDS: ReadonlySet<string> = new Set(['ct', 'ct-set', 'ct-count', 'nat', 'ct-helper-object', 'ct-timeout-object', 'ct-expectation-object', 'synproxy', 'synproxy-object', 'flow-offload']);

/** xt extensions that enable conntrack the same way (their checkentry calls nf_ct_netns_get:
 * xt_conntrack.c, xt_state.c, xt_connmark.c, xt_CT.c, xt_nat.c, xt_MASQUERADE.c, xt_REDIRECT.c,
 * xt_connlimit.c, xt_connbytes.c, xt_helper.c, xt_cluster.c). */
const CONNTRACK_XT_EXTENSIONS: ReadonlySet<string> = new Set(['conntrack', 'state', 'connmark', 'CONNMARK', 'CT', 'DNAT', 'SNAT', 'MASQUERADE', 'REDIRECT', 'NETMAP', 'connlimit', 'connbytes', 'helper', 'cluster', 'connlabel']);

// A walk over every node below (by loops, skipping spans, which hold no node): a 50,000-service
// table is millions of nodes, walked when its first packet is simulated.
function isConntrackUser(node: unknown): boolean {
  if (node === null || typeof node !== 'object') return false;
  if (Array.isArray(node)) {
    for (const item of node) if (isConntrackUser(item)) return true;
    return false;
  }
  const record = node as { readonly kind?: unknown; readonly name?: unknown } & Readonly<Record<string, unknown>>;
  if (typeof record.kind === 'string') {
    if (CONNTRACK_USER_KINDS.has(record.kind)) return true;
    if ((record.kind === 'xt' || record.kind === 'xt-extension') && typeof record.name === 'string') return CONNTRACK_XT_EXTENSIONS.has(record.name);
  }
  for (const key in record) if (key !== 'span' && isConntrackUser(record[key])) return true;
  return false;
}

/** The address families whose packets get a conntrack entry: those of the tables (inet and the
 * other non-IP families: both) holding a conntrack user (nf_ct_netns_get(net, ctx->family)). */
export interface ConntrackFamilies {
  has(family: AddressFamily): boolean;
}

/** Worked out table by table only as far as a question needs: scanning every statement of a
 * 50,000-service table for NAT statements of a family cost a tenth of a second, which an IPv4
 * packet, answered by the table's first conntrack user, does not need. */
function findConntrackFamilies(ruleset: Ruleset): ConntrackFamilies {
  const families = new Set<AddressFamily>();
  const steps = addConntrackFamilies(ruleset, families);
  let done = false;
  return {
    has(family) {
      while (!done && !families.has(family)) done = steps.next().done === true;
      return families.has(family);
    },
  };
}

/** Adds the families in table order, pausing after each addition. */
function* addConntrackFamilies(ruleset: Ruleset, families: Set<AddressFamily>): Generator<void> {
  for (const table of ruleset.tables) {
    const covers: readonly AddressFamily[] = table.family === 'ip' ? ['ip'] : table.family === 'ip6' ? ['ip6'] : ['ip', 'ip6'];
    if (covers.every((f) => families.has(f))) continue;
    // `dnat ip to …` in an inet table enables conntrack for its own family only (nft_nat.c
    // nft_nat_init: nf_ct_netns_get(net, the NAT's family)).
    const familied = (stmt: Stmt): stmt is NatStmt & { family: AddressFamily } => stmt.kind === 'nat' && (stmt.family === 'ip' || stmt.family === 'ip6');
    const usesConntrack = (): boolean => {
      for (const chain of table.chains) {
        for (const rule of chain.rules) for (const stmt of rule.stmts) if (!familied(stmt) && isConntrackUser(stmt)) return true;
      }
      return false;
    };
    // Not a set's statements: a set-level `ct count` does not enable conntrack (checked on Linux
    // 6.18: without another user its count finds no connection of an earlier packet).
    if (isConntrackUser(table.objects) || usesConntrack()) {
      for (const f of covers) families.add(f);
      yield;
    }
    // Loops, not a flattened copy: a 50,000-service table has millions of statements.
    for (const chain of table.chains) {
      for (const rule of chain.rules) {
        for (const stmt of rule.stmts) {
          if (familied(stmt) && !families.has(stmt.family)) {
            families.add(stmt.family);
            yield;
          }
        }
      }
    }
  }
}

/** A base chain as registered at a hook. */
export interface HookEntry {
  readonly table: Table;
  readonly chain: Chain;
  readonly priority: number;
  /** Another chain of this packet's hook list shares the slot: the kernel's order between them
   * is the registration order, which nftsim takes from the listing order. */
  readonly orderDependent: boolean;
  /** A number of its own: a compiled rule keeps its last trace event with the number of the
   * entry it was made in (compile-rule.ts knownRuleEvent). */
  readonly id: number;
  /** The chain's index: every packet at the hook starts here. */
  readonly index: ChainIndex;
  /** Its type is nat, or route; and where it runs among the hook's entries (slotOf). */
  readonly nat: boolean;
  readonly route: boolean;
  readonly slot: number;
}

let entryIds = 0;

interface Registered {
  readonly table: Table;
  readonly chain: Chain;
  readonly priority: number;
  readonly order: number;
  readonly nat: boolean;
}

/** A table's chains by name, and the indexes made for them so far by name. */
export interface TableChains {
  readonly byName: ReadonlyMap<string, Chain>;
  readonly indexes: Map<string, ChainIndex>;
}

/** The base chains at every hook of one ruleset, by hook and family, computed once. */
export interface HookIndex {
  readonly byHook: ReadonlyMap<Hook, readonly Registered[]>;
  /** By table, its chains by name (a jump's target) and the indexes made for them so far
   * (chain-index.ts chainIndexNamed). */
  readonly chains: WeakMap<Table, TableChains>;
  /** The families conntrack is enabled for (findConntrackFamilies). */
  readonly conntrack: ConntrackFamilies;
  /** The families with a nat base chain: the first one registers the NAT hook at all four hooks
   * (nf_nat_core.c nf_nat_register_fn), so each sets up its (null) binding there. */
  readonly nat: ReadonlySet<AddressFamily>;
  /** chainsAt's answers, computed once per hook, family and (for ingress) device. */
  readonly ordered: Map<Hook, Map<string, readonly HookEntry[]>>;
  /** By the number of a rule among those of the chains indexed (ChainIndex.first + its
   * position), 1 + the offset of its code in `code` once it is compiled, 0 before, -1 for a rule
   * interpreted for good (evaluate-chain.ts compiledAt). One array for all rules: an array
   * per chain was one more object for a packet to read at each chain it enters. */
  compiled: Int32Array;
  /** How many rules the chains indexed so far have. */
  rules: number;
  /** The compiled rules' code (compile-rule.ts). */
  readonly code: CodeArena;
  /** The node's ipsets, for iptables' set match (match-ipset.ts). */
  readonly ipsets: IpsetIndex;
}

export function buildHookIndex(ruleset: Ruleset): HookIndex {
  const byHook = new Map<Hook, Registered[]>();
  const chains = new WeakMap<Table, TableChains>();
  let order = 0;
  for (const table of ruleset.tables) {
    for (const chain of table.chains) {
      const base = chain.base;
      if (!base) continue;
      const list = byHook.get(base.hook) ?? [];
      list.push({ table, chain, priority: base.priority.value ?? base.priority.offset, order: order++, nat: base.type === 'nat' });
      byHook.set(base.hook, list);
    }
    chains.set(table, { byName: chainsByName(table), indexes: new Map() });
  }
  const nat = new Set<AddressFamily>();
  for (const r of [...byHook.values()].flat()) {
    if (r.nat) for (const f of r.table.family === 'inet' ? (['ip', 'ip6'] as const) : r.table.family === 'ip' || r.table.family === 'ip6' ? [r.table.family] : []) nat.add(f);
  }
  return { byHook, chains, conntrack: findConntrackFamilies(ruleset), nat, ordered: new Map(), compiled: new Int32Array(1024), rules: 0, code: createCodeArena(), ipsets: new IpsetIndex(ruleset.ipsets) };
}

/** The base chains a packet of `family` meets at `hook` (at ingress and egress, those bound to
 * `device`: the packet's iif, or its oif), in the kernel's order: by priority, and at equal priority the chain registered last first
 * (net/netfilter/core.c nf_hook_entries_grow inserts a new hook before the first existing one
 * whose priority is not lower). nat chains take the slot of the NAT hook, where they are ordered
 * among themselves the same way; the NAT hook registers with the first nat chain. */
export function chainsAt(index: HookIndex, hook: Hook, family: AddressFamily, device: string | undefined): readonly HookEntry[] {
  // Shared by every packet (read-only): two lookups per hook, with no key made per packet (the
  // family is the key, or at ingress the family, a space and the device).
  let byKey = index.ordered.get(hook);
  if (!byKey) {
    byKey = new Map();
    index.ordered.set(hook, byKey);
  }
  const key = isDeviceHook(hook) ? `${family} ${device ?? ''}` : family;
  let entries = byKey.get(key);
  if (!entries) {
    entries = orderChains(index, hook, family, device);
    byKey.set(key, entries);
  }
  return entries;
}

function orderChains(index: HookIndex, hook: Hook, family: AddressFamily, device: string | undefined): HookEntry[] {
  const families = familiesAt(hook, family);
  const entries = (index.byHook.get(hook) ?? []).filter(
    (r) => families.includes(r.table.family) && (!isDeviceHook(hook) || (device !== undefined && (r.chain.base!.devices.includes(device) || r.chain.base!.devicesUnknown === true))),
  );
  // The NAT hook registers with the first nat chain, so all nat chains share its registration.
  const natOrder = Math.min(...entries.filter((r) => r.nat).map((r) => r.order));
  const registration = (r: Registered): { priority: number; order: number } => ({
    priority: slotOf(hook, r),
    order: r.nat && NAT_HOOK_PRIORITY[hook] !== undefined ? natOrder : r.order,
  });
  const byKernelOrder = (a: { priority: number; order: number }, b: { priority: number; order: number }): number =>
    a.priority - b.priority || b.order - a.order;
  const sorted = [...entries].sort((a, b) => byKernelOrder(registration(a), registration(b)) || (a.nat && b.nat ? byKernelOrder(a, b) : 0));
  return sorted.map((r) => ({
    table: r.table,
    chain: r.chain,
    priority: r.priority,
    orderDependent: sorted.some((o) => o !== r && isTied(hook, r, o)),
    id: entryIds++,
    index: baseChainIndex(index, r.table, r.chain),
    nat: r.nat,
    route: r.chain.base?.type === 'route',
    slot: slotOf(hook, r),
  }));
}

/** Where a base chain runs among a hook's entries: a nat chain inside the NAT hook, registered at
 * its fixed priority (nf_nat_core.c), any other chain at its own priority. */
export function slotOf(hook: Hook, entry: { readonly chain: Chain; readonly priority: number }): number {
  const natSlot = NAT_HOOK_PRIORITY[hook];
  return entry.chain.base?.type === 'nat' && natSlot !== undefined ? natSlot : entry.priority;
}

/** Two base chains at `hook` whose order is only their registration order: they share a slot,
 * and nat chains sharing the NAT hook are ordered among themselves by their own priority, so two
 * of them tie only at the same priority. */
export function isTied(hook: Hook, a: { readonly chain: Chain; readonly priority: number }, b: { readonly chain: Chain; readonly priority: number }): boolean {
  if (slotOf(hook, a) !== slotOf(hook, b)) return false;
  const inNatHook = (e: { readonly chain: Chain }): boolean => e.chain.base?.type === 'nat' && NAT_HOOK_PRIORITY[hook] !== undefined;
  return inNatHook(a) && inNatHook(b) ? a.priority === b.priority : true;
}
