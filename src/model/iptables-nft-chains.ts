import type { ChainType, Hook } from './ast.js';

/** A built-in chain as iptables-nft creates it in nf_tables. */
export interface IptablesNftChain {
  readonly type: ChainType;
  readonly hook: Hook;
  readonly priority: number;
}

// iptables 1.8.9 iptables/nft.c `xtables_ipv4` (builtin_table): the tables iptables-nft creates
// and their built-in chains, in creation order, with nf_tables' hooks, chain types and
// priorities (NF_IP_PRI_*: raw -300, mangle -150, nat dst -100, filter 0, nat src 100; security
// is 150 there, not the kernel's NF_IP_PRI_SECURITY 50: iptables 1.8.9 nft.c l.523 hard-codes it,
// and the real iptables-nft hides a security chain created at 50 as an incompatible base chain).
// ip6tables-nft uses the same table for ip6 (`xtables_ipv6`); mangle OUTPUT is `type
// route` so a changed mark or address re-routes the packet, as ip_route_me_harder did.
const BUILTIN: Readonly<Record<string, Readonly<Record<string, IptablesNftChain>>>> = {
  raw: {
    PREROUTING: { type: 'filter', hook: 'prerouting', priority: -300 },
    OUTPUT: { type: 'filter', hook: 'output', priority: -300 },
  },
  mangle: {
    PREROUTING: { type: 'filter', hook: 'prerouting', priority: -150 },
    INPUT: { type: 'filter', hook: 'input', priority: -150 },
    FORWARD: { type: 'filter', hook: 'forward', priority: -150 },
    OUTPUT: { type: 'route', hook: 'output', priority: -150 },
    POSTROUTING: { type: 'filter', hook: 'postrouting', priority: -150 },
  },
  filter: {
    INPUT: { type: 'filter', hook: 'input', priority: 0 },
    FORWARD: { type: 'filter', hook: 'forward', priority: 0 },
    OUTPUT: { type: 'filter', hook: 'output', priority: 0 },
  },
  security: {
    INPUT: { type: 'filter', hook: 'input', priority: 150 },
    FORWARD: { type: 'filter', hook: 'forward', priority: 150 },
    OUTPUT: { type: 'filter', hook: 'output', priority: 150 },
  },
  nat: {
    PREROUTING: { type: 'nat', hook: 'prerouting', priority: -100 },
    INPUT: { type: 'nat', hook: 'input', priority: 100 },
    OUTPUT: { type: 'nat', hook: 'output', priority: -100 },
    POSTROUTING: { type: 'nat', hook: 'postrouting', priority: 100 },
  },
};

// iptables 1.8.9 iptables/nft.c `xtables_arp` and `xtables_bridge`: arptables-nft's one table
// (NF_IP_PRI_FILTER 0) and ebtables-nft's, at the bridge priorities of
// linux/netfilter_bridge.h (NF_BR_PRI_FILTER_BRIDGED -200, NF_BR_PRI_NAT_DST_BRIDGED -300,
// NF_BR_PRI_NAT_DST_OTHER 100, NF_BR_PRI_NAT_SRC 300). ebtables' nat chains are `type filter`:
// its nat targets are xt targets, not nf_tables nat. `broute` (BROUTING at prerouting,
// NF_BR_PRI_FIRST = INT_MIN) exists from 1.8.10 (commit 73611d55, v1.8.10 nft.c l.649-658);
// 1.8.9 has no such table ("table 'broute' does not exist") and its save never looks at one, so
// version-aware callers leave it out before 1.8.10.
const ARP_BUILTIN: Readonly<Record<string, Readonly<Record<string, IptablesNftChain>>>> = {
  filter: {
    INPUT: { type: 'filter', hook: 'input', priority: 0 },
    OUTPUT: { type: 'filter', hook: 'output', priority: 0 },
  },
};
const BRIDGE_BUILTIN: Readonly<Record<string, Readonly<Record<string, IptablesNftChain>>>> = {
  filter: {
    INPUT: { type: 'filter', hook: 'input', priority: -200 },
    FORWARD: { type: 'filter', hook: 'forward', priority: -200 },
    OUTPUT: { type: 'filter', hook: 'output', priority: -200 },
  },
  nat: {
    PREROUTING: { type: 'filter', hook: 'prerouting', priority: -300 },
    OUTPUT: { type: 'filter', hook: 'output', priority: 100 },
    POSTROUTING: { type: 'filter', hook: 'postrouting', priority: 300 },
  },
  broute: {
    BROUTING: { type: 'filter', hook: 'prerouting', priority: -2147483648 },
  },
};

/** The built-in tables of the iptables-nft tool that manages `family` (iptables-nft for ip,
 * ip6tables-nft for ip6, arptables-nft for arp, ebtables-nft for bridge). */
function builtinOf(family: string): Readonly<Record<string, Readonly<Record<string, IptablesNftChain>>>> | undefined {
  return family === 'ip' || family === 'ip6' ? BUILTIN : family === 'arp' ? ARP_BUILTIN : family === 'bridge' ? BRIDGE_BUILTIN : undefined;
}

/** True for the tables iptables-nft knows (`*filter`, `*nat`, `*mangle`, `*raw`, `*security`;
 * with `family` arp or bridge, arptables-nft's and ebtables-nft's). */
export function isIptablesNftTable(table: string, family = 'ip'): boolean {
  const tables = builtinOf(family);
  return tables !== undefined && Object.hasOwn(tables, table);
}

/** The built-in chain `chain` of `table` as iptables-nft (or, by `family`, arptables-nft or
 * ebtables-nft) creates it; undefined for user chains. */
export function iptablesNftChain(table: string, chain: string, family = 'ip'): IptablesNftChain | undefined {
  const tables = builtinOf(family);
  const chains = tables && Object.hasOwn(tables, table) ? tables[table] : undefined;
  return chains && Object.hasOwn(chains, chain) ? chains[chain] : undefined;
}
