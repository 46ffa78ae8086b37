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

/** True for the tables iptables-nft knows (`*filter`, `*nat`, `*mangle`, `*raw`, `*security`). */
export function isIptablesNftTable(table: string): boolean {
  return Object.hasOwn(BUILTIN, table);
}

/** The built-in chain `chain` of `table` as iptables-nft creates it; undefined for user chains. */
export function iptablesNftChain(table: string, chain: string): IptablesNftChain | undefined {
  const chains = BUILTIN[table];
  return chains && Object.hasOwn(chains, chain) ? chains[chain] : undefined;
}
