// The host of the generated kernel-differential cases and the addresses the generators use on it,
// per address family (differential-arbitraries.ts, arbitrary-nft-rule.ts, arbitrary-iptables-dump.ts).
import type { KernelHost } from './harness/kernel-harness.js';

/** A dual-stack router between a client network (eth0) and a server network (eth1). The main
 * table has no default route, so a destination outside both is dropped by routing, unless the
 * packet's mark has bit 0x10: a routing rule then takes table 100, whose default route goes out
 * of eth1 (and whose throw route leaves the client network to main). IPv4's is multipath, out of
 * eth1 (weight 2) or eth0 by the packet's hash. IPv6's is not: the harness tags each packet with
 * a flow label of its own, which IPv6 hashes, where nftsim's packets have flow label 0 (a flow's
 * packets would part ways in the kernel and not in nftsim). Each interface lists its link-local
 * address, as `ip -j addr` shows it (the harness makes no other). */
export const GENERATED_HOST: KernelHost = {
  interfaces: [
    { name: 'eth0', addresses: ['192.0.2.10/24', '2001:db8:1::10/64', 'fe80::1:10/64'] },
    { name: 'eth1', addresses: ['198.51.100.10/24', '2001:db8:2::10/64', 'fe80::2:10/64'] },
  ],
  routes: [
    { dst: 'default', nexthops: [{ via: '198.51.100.20', dev: 'eth1', weight: 2 }, { via: '192.0.2.1', dev: 'eth0' }], table: '100' },
    { dst: '192.0.2.0/24', type: 'throw', table: '100' },
    { dst: 'default', via: '2001:db8:2::20', dev: 'eth1', table: '100' },
    { dst: '2001:db8:1::/64', type: 'throw', table: '100' },
  ],
  rules: markRules(),
  rules6: markRules(),
  forwarding: true,
};

/** The kernel's default rules and the mark's (as `ip -j rule show` prints them). */
function markRules(): NonNullable<KernelHost['rules']> {
  return [
    { priority: 0, src: 'all', table: 'local' },
    { priority: 100, src: 'all', fwmark: '0x10', fwmask: '0x10', table: '100' },
    { priority: 32766, src: 'all', table: 'main' },
    { priority: 32767, src: 'all', table: 'default' },
  ];
}

export type AddressFamily = 'ip' | 'ip6';

/**
 * The addresses of one family. NAT address ranges (`natRange`, `snatRange`) lie inside
 * `prefixes[1]`, outside `prefixes[2]`, `range` and the set elements; `natMember` is one address
 * of each, which rules after the NAT test for (the kernel picks the range's address by hash).
 */
export interface FamilyAddresses {
  /** Client side (eth0 network): a client, the node, another client. */
  readonly client: readonly [string, string, string];
  /** Server side (eth1 network): the node, two servers. */
  readonly server: readonly [string, string, string];
  /** Routed nowhere. */
  readonly unroutable: string;
  /** Broadcast and multicast destinations of received packets: for IPv4 eth1's subnet
   * broadcast, the limited broadcast and all hosts (delivered), and a group the host is not in
   * (dropped); for IPv6 all nodes, all routers (delivered), a solicited-node group (dropped:
   * the harness's NOARP veths join none, where nftsim takes an interface to do as one with ARP
   * does), a group the host is not in, and an interface-local group (dropped by ip6_rcv_core,
   * before prerouting). */
  readonly broadcast: readonly string[];
  readonly prefixes: readonly [string, string, string, string];
  readonly range: string;
  /** Pairwise disjoint: nft refuses overlapping elements of an interval set. */
  readonly setElements: readonly string[];
  readonly natRange: string;
  /** The first four addresses of `natRange` as a prefix. */
  readonly natPrefix: string;
  readonly snatRange: string;
  readonly natMember: readonly [string, string];
  /** The SNAT address on each side. */
  readonly snat: readonly [string, string];
}

export const ADDRESSES: Readonly<Record<AddressFamily, FamilyAddresses>> = {
  ip: {
    client: ['192.0.2.1', '192.0.2.10', '192.0.2.77'],
    server: ['198.51.100.10', '198.51.100.20', '198.51.100.30'],
    unroutable: '203.0.113.5',
    broadcast: ['198.51.100.255', '255.255.255.255', '224.0.0.1', '224.0.0.251'],
    prefixes: ['192.0.2.0/24', '198.51.100.0/25', '198.51.100.16/28', '10.0.0.0/8'],
    range: '198.51.100.15-198.51.100.25',
    setElements: ['192.0.2.1', '192.0.2.10', '198.51.100.20', '198.51.100.30', '198.51.100.128/25', '10.0.0.0/8'],
    natRange: '198.51.100.40-198.51.100.45',
    natPrefix: '198.51.100.40/30',
    snatRange: '198.51.100.90-198.51.100.95',
    natMember: ['198.51.100.42', '198.51.100.93'],
    snat: ['192.0.2.99', '198.51.100.99'],
  },
  ip6: {
    client: ['2001:db8:1::1', '2001:db8:1::10', '2001:db8:1::77'],
    server: ['2001:db8:2::10', '2001:db8:2::20', '2001:db8:2::30'],
    unroutable: '2001:db8:3::5',
    broadcast: ['ff02::1', 'ff02::2', 'ff02::1:ff00:99', 'ff02::fb', 'ff01::1'],
    prefixes: ['2001:db8:1::/64', '2001:db8:2::/120', '2001:db8:2::10/124', 'fd00::/8'],
    range: '2001:db8:2::15-2001:db8:2::25',
    setElements: ['2001:db8:1::1', '2001:db8:1::10', '2001:db8:2::20', '2001:db8:2::30', '2001:db8:2::80/121', 'fd00::/8'],
    natRange: '2001:db8:2::40-2001:db8:2::45',
    natPrefix: '2001:db8:2::40/126',
    snatRange: '2001:db8:2::90-2001:db8:2::95',
    natMember: ['2001:db8:2::42', '2001:db8:2::93'],
    snat: ['2001:db8:1::99', '2001:db8:2::99'],
  },
};

/** `a:port` with IPv6 addresses in brackets, as nft writes a NAT target. */
export function withPort(family: AddressFamily, address: string, port: string): string {
  return family === 'ip6' ? `[${address}]:${port}` : `${address}:${port}`;
}
