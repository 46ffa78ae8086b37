// Kernel checks of policy routing (`ip rule`): the table a packet's route comes from by its mark,
// interfaces and addresses (fib_rules_lookup), a local packet re-routed after a route chain
// changed its mark (ip_route_me_harder), and fib with `mark`. Each host is set up in its own
// namespaces from its `ip -j rule show` rules; simulatePacket gets the same host.
import { afterAll, describe, expect, it } from 'vitest';
import { compareCase } from './compare-case.js';
import type { KernelPacket } from './harness/craft-packet.js';
import { openKernelHarness, type KernelHarness, type KernelHost } from './harness/kernel-harness.js';
import { findKernelSkipReason } from './helpers/network-namespace.mjs';

const REQUIRED_TOOLS = ['ip', 'nft', 'iptables-nft-restore', 'python3', 'sysctl', 'stdbuf', 'nsenter'];
const skipReason = findKernelSkipReason(REQUIRED_TOOLS);
if (skipReason) console.warn(`kernel checks of policy routing (test/kernel/policy-routing.test.ts) skipped: ${skipReason}`);

const INTERFACES: KernelHost['interfaces'] = [
  { name: 'eth0', addresses: ['192.0.2.10/24', '2001:db8:1::10/64'] },
  { name: 'eth1', addresses: ['198.51.100.10/24', '2001:db8:2::10/64'] },
];
const DEFAULT_RULES = [
  { priority: 0, src: 'all', table: 'local' },
  { priority: 32766, src: 'all', table: 'main' },
  { priority: 32767, src: 'all', table: 'default' },
] as const;

/** Marked packets (0x1) take table 100, out of eth1, but for its throw route; 0x2 is unreachable. */
const BY_MARK: KernelHost = {
  interfaces: INTERFACES,
  routes: [
    { dst: '203.0.113.0/24', via: '192.0.2.1', dev: 'eth0' },
    { dst: 'default', via: '198.51.100.20', dev: 'eth1', table: '100' },
    { dst: '203.0.113.128/25', type: 'throw', table: '100' },
  ],
  rules: [
    DEFAULT_RULES[0],
    { priority: 100, src: 'all', fwmark: '0x1', table: '100' },
    { priority: 110, src: 'all', fwmark: '0x2', fwmask: '0xff', action: 'unreachable' },
    DEFAULT_RULES[1],
    DEFAULT_RULES[2],
  ],
  forwarding: true,
};

/** wg-quick's rules: main without its default route first, then everything not marked 0xca6c
 * through the tunnel's table (eth1 stands for the tunnel). */
const WG_QUICK: KernelHost = {
  interfaces: INTERFACES,
  routes: [
    { dst: 'default', via: '192.0.2.1', dev: 'eth0' },
    { dst: '203.0.113.0/24', via: '192.0.2.1', dev: 'eth0' },
    { dst: 'default', via: '198.51.100.20', dev: 'eth1', table: '51820' },
  ],
  rules: [
    DEFAULT_RULES[0],
    { priority: 32764, src: 'all', table: 'main', suppress_prefixlen: 0 },
    { priority: 32765, not: null, src: 'all', fwmark: '0xca6c', table: '51820' },
    DEFAULT_RULES[1],
    DEFAULT_RULES[2],
  ],
  forwarding: true,
};

/** Packets from 192.0.2.64/26 take table 7 (out of eth1), those from eth1 table 8 (out of eth0,
 * blackholed for 198.18.0.0/24); main's default route is unreachable but under suppression. The
 * IPv6 rules select by mark; IPv6 has no default-table rule by default. */
const BY_SOURCE: KernelHost = {
  interfaces: INTERFACES,
  routes: [
    { dst: 'default', type: 'unreachable' },
    { dst: 'default', via: '198.51.100.20', dev: 'eth1', table: '7' },
    { dst: 'default', via: '192.0.2.1', dev: 'eth0', table: '8' },
    { dst: '198.18.0.0/24', type: 'blackhole', table: '8' },
    { dst: 'default', via: '2001:db8:2::20', dev: 'eth1', table: '9' },
  ],
  rules: [
    DEFAULT_RULES[0],
    { priority: 40, src: 'all', table: 'main', suppress_prefixlen: 0 },
    { priority: 50, src: '192.0.2.64', srclen: 26, table: '7' },
    { priority: 60, src: 'all', iif: 'eth1', table: '8' },
    DEFAULT_RULES[1],
    DEFAULT_RULES[2],
  ],
  rules6: [DEFAULT_RULES[0], { priority: 70, src: 'all', fwmark: '0x1', table: '9' }, DEFAULT_RULES[1]],
  forwarding: true,
};

/** No rules given: IPv6 has local and main only, so its default table's route is not used. */
const V6_DEFAULT_TABLE: KernelHost = {
  interfaces: INTERFACES,
  routes: [{ dst: 'default', via: '2001:db8:2::20', dev: 'eth1', table: 'default' }],
  forwarding: true,
};

/** Multipath routes (ECMP uplinks): the default route through eth0 (weight 1) and eth1
 * (weight 3), IPv6's through both alike, and 10.9.0.0/16 through eth0 and eth2 (where the clients
 * are). Which nexthop a packet takes depends on a hash with a random seed: nftsim gives each. */
const MULTIPATH: KernelHost = {
  interfaces: [...INTERFACES, { name: 'eth2', addresses: ['203.0.113.10/24', '2001:db8:3::10/64'] }],
  routes: [
    { dst: 'default', nexthops: [{ via: '192.0.2.1', dev: 'eth0', weight: 1 }, { via: '198.51.100.20', dev: 'eth1', weight: 3 }] },
    { dst: 'default', nexthops: [{ via: '2001:db8:1::1', dev: 'eth0' }, { via: '2001:db8:2::20', dev: 'eth1' }] },
    { dst: '10.9.0.0/16', nexthops: [{ via: '192.0.2.1', dev: 'eth0' }, { via: '203.0.113.20', dev: 'eth2' }] },
    { dst: '2001:db8:9::/48', nexthops: [{ via: '2001:db8:1::1', dev: 'eth0' }, { via: '2001:db8:3::20', dev: 'eth2' }] },
  ],
  forwarding: true,
};

/** Marks by the device and gateway the packet leaves through, and masquerades. */
const MULTIPATH_WAY =
  'table ip t {\n  chain fw {\n    type filter hook forward priority 0; policy accept;\n    oifname "eth0" meta mark set mark or 0x100\n    oifname "eth1" meta mark set mark or 0x200\n    rt ip nexthop 198.51.100.20 meta mark set mark or 0x400\n  }\n  chain post {\n    type nat hook postrouting priority srcnat; policy accept;\n    masquerade\n  }\n}\n';
const FIB_MULTIPATH =
  'table ip t {\n  chain pre {\n    type filter hook prerouting priority 0; policy accept;\n    fib daddr oif "eth0" meta mark set mark or 0x100\n    fib daddr oif "eth1" meta mark set mark or 0x200\n    fib saddr . iif oif "eth2" meta mark set mark or 0x400\n    fib saddr oif "eth0" meta mark set mark or 0x800\n  }\n}\n';
// IPv6's fib lookups select a nexthop by the packet's hash, as routing does.
const FIB6_DADDR = 'table ip6 t {\n  chain pre {\n    type filter hook prerouting priority 0; policy accept;\n    fib daddr oif "eth0" meta mark set mark or 0x100\n    fib daddr oif "eth1" meta mark set mark or 0x200\n  }\n  chain fw {\n    type filter hook forward priority 0; policy accept;\n    oifname "eth1" meta mark set mark or 0x1000\n  }\n}\n';
const FIB6_SADDR = 'table ip6 t {\n  chain pre {\n    type filter hook prerouting priority 0; policy accept;\n    fib saddr . iif oif "eth2" meta mark set mark or 0x400\n    fib saddr . iif oif missing meta mark set mark or 0x800\n  }\n}\n';
const fromClients = (dst: string, src = '203.0.113.99'): KernelPacket => ({ iif: 'eth2', src, dst, protocol: 'udp', sport: 40000, dport: 53 });

const FORWARD6 = 'table ip6 t {\n  chain fw {\n    type filter hook forward priority 0; policy accept;\n    oifname "eth1" meta mark set mark or 0x100\n  }\n}\n';
const FORWARD = 'table ip t {\n  chain fw {\n    type filter hook forward priority 0; policy accept;\n    oifname "eth1" meta mark set mark or 0x100\n  }\n}\n';
const udp = (dst: string, mark?: string): KernelPacket => ({ iif: 'eth0', src: '192.0.2.99', dst, protocol: 'udp', sport: 40000, dport: 53, ...(mark && { mark }) });
const local = (dst: string, mark?: string): KernelPacket => ({ src: '192.0.2.10', dst, protocol: 'udp', sport: 40001, dport: 53, skuid: 0, skgid: 0, ...(mark && { mark }) });
// The later output chain sees the device of the route the packet had when output began (the
// hook's state->out), postrouting the new one.
const outputChain = (type: string) =>
  `table ip t {\n  chain out {\n    type ${type} hook output priority mangle; policy accept;\n    meta mark set 0x1\n  }\n  chain later {\n    type filter hook output priority 0; policy accept;\n    oifname "eth1" meta mark set mark or 0x200\n  }\n  chain post {\n    type filter hook postrouting priority 0; policy accept;\n    oifname "eth1" meta mark set mark or 0x100\n  }\n}\n`;

const CASES: readonly { name: string; host: KernelHost; rules: string; packet: KernelPacket; kind?: 'iptables' }[] = [
  { name: 'a received packet marked 0x1 takes table 100', host: BY_MARK, rules: FORWARD, packet: udp('203.0.113.5', '0x1') },
  { name: 'an unmarked one takes main', host: BY_MARK, rules: FORWARD, packet: udp('203.0.113.5') },
  { name: 'a throw route of table 100 sends a marked packet on to main', host: BY_MARK, rules: FORWARD, packet: udp('203.0.113.200', '0x1') },
  { name: 'an unreachable rule drops the packet it selects (fwmark under a mask)', host: BY_MARK, rules: FORWARD, packet: udp('203.0.113.5', '0x302') },
  {
    name: 'a mark set at prerouting chooses the route',
    host: BY_MARK,
    rules: `table ip m {\n  chain pre {\n    type filter hook prerouting priority mangle; policy accept;\n    ip daddr 203.0.113.5 meta mark set 0x1\n  }\n}\n${FORWARD}`,
    packet: udp('203.0.113.5'),
  },
  { name: 'a local packet with socket mark 0x1 takes table 100', host: BY_MARK, rules: outputChain('filter').replace('meta mark set 0x1', 'counter'), packet: local('203.0.113.5', '0x1') },
  { name: 'a route chain that marks a local packet re-routes it', host: BY_MARK, rules: outputChain('route'), packet: local('203.0.113.5') },
  { name: 'a filter chain that marks a local packet does not', host: BY_MARK, rules: outputChain('filter'), packet: local('203.0.113.5') },
  {
    name: 'iptables mangle OUTPUT marking a local packet re-routes it',
    host: BY_MARK,
    kind: 'iptables',
    rules: '*mangle\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n-A OUTPUT -j MARK --set-xmark 0x1/0xffffffff\nCOMMIT\n',
    packet: local('203.0.113.5'),
  },
  {
    // xt_rpfilter looks the source up without the mark (no --validmark): main, out of eth0, so a
    // marked packet from it on eth1 fails, though table 100 would send it back out of eth1.
    name: 'rpfilter looks the route back up without the packet\'s mark',
    host: BY_MARK,
    kind: 'iptables',
    rules: '*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A PREROUTING -m rpfilter --invert -j DROP\nCOMMIT\n',
    packet: { iif: 'eth1', src: '203.0.113.5', dst: '198.51.100.30', protocol: 'udp', sport: 40000, dport: 53, mark: '0x1' },
  },
  {
    name: 'fib daddr . mark oif follows the mark through the rules',
    host: BY_MARK,
    rules: 'table ip t {\n  chain fw {\n    type filter hook prerouting priority 0; policy accept;\n    fib daddr . mark oif "eth1" meta mark set mark or 0x100\n    fib daddr oif "eth0" meta mark set mark or 0x200\n  }\n}\n',
    packet: udp('203.0.113.5', '0x1'),
  },
  { name: 'wg-quick: a prefix of main wins over the tunnel', host: WG_QUICK, rules: FORWARD, packet: udp('203.0.113.5') },
  { name: 'wg-quick: main\'s default route is suppressed, the unmarked packet takes the tunnel', host: WG_QUICK, rules: FORWARD, packet: udp('198.18.0.1') },
  { name: 'wg-quick: the tunnel\'s own packets (0xca6c) take main\'s default route', host: WG_QUICK, rules: FORWARD, packet: udp('198.18.0.1', '0xca6c') },
  { name: 'a source prefix selects table 7', host: BY_SOURCE, rules: FORWARD, packet: { ...udp('198.18.0.1'), src: '192.0.2.70' } },
  // Main's unreachable default route is not suppressed: the lookup ends there, dropped.
  { name: 'a source outside it meets main\'s unreachable route', host: BY_SOURCE, rules: FORWARD, packet: udp('198.18.0.1') },
  { name: 'an iif rule selects table 8 for a packet from eth1', host: BY_SOURCE, rules: FORWARD, packet: { iif: 'eth1', src: '198.51.100.20', dst: '203.0.113.5', protocol: 'udp', sport: 40000, dport: 53 } },
  { name: 'a blackhole route of table 8 drops', host: BY_SOURCE, rules: FORWARD, packet: { iif: 'eth1', src: '198.51.100.20', dst: '198.18.0.1', protocol: 'udp', sport: 40000, dport: 53 } },
  { name: 'an IPv6 fwmark rule selects table 9', host: BY_SOURCE, rules: FORWARD6, packet: { iif: 'eth0', src: '2001:db8:1::99', dst: '2001:db8:5::1', protocol: 'udp', sport: 40000, dport: 53, mark: '0x1' } },
  { name: 'IPv6 looks up no default table without rules', host: V6_DEFAULT_TABLE, rules: FORWARD6, packet: { iif: 'eth0', src: '2001:db8:1::99', dst: '2001:db8:5::1', protocol: 'udp', sport: 40000, dport: 53 } },
  ...['198.18.0.1', '198.18.0.2', '198.18.0.3', '198.18.0.4'].map((dst) => ({ name: `a multipath route forwards ${dst} through one of its nexthops, masquerading to its address`, host: MULTIPATH, rules: MULTIPATH_WAY, packet: fromClients(dst) })),
  // Without a path selected: the first nexthop; with the input interface: any nexthop through it.
  { name: 'fib daddr oif of a multipath route is its first nexthop, fib saddr . iif oif finds iif among them', host: MULTIPATH, rules: FIB_MULTIPATH, packet: fromClients('198.18.0.1', '10.9.0.5') },
  {
    name: 'rpfilter passes a packet whose route back has a nexthop through its input interface',
    host: MULTIPATH,
    kind: 'iptables',
    rules: '*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A PREROUTING -m rpfilter --invert -j DROP\nCOMMIT\n',
    packet: fromClients('198.18.0.1', '10.9.0.5'),
  },
  ...['198.18.0.5', '198.18.0.6'].map((dst) => ({ name: `a local packet to ${dst} leaves through one of the nexthops`, host: MULTIPATH, rules: outputChain('filter').replace('meta mark set 0x1', 'counter'), packet: local(dst) })),
  ...['2001:db8:9::1', '2001:db8:9::2'].map((dst) => ({ name: `an IPv6 packet to ${dst} takes one of its multipath route's nexthops`, host: MULTIPATH, rules: FORWARD6, packet: { iif: 'eth2', src: '2001:db8:3::99', dst, protocol: 'udp' as const, sport: 40000, dport: 53 } })),
  ...[1, 2, 3, 4, 5, 6].map((n) => ({ name: `IPv6 fib daddr oif of a multipath route is the nexthop the packet takes (${n})`, host: MULTIPATH, rules: FIB6_DADDR, packet: { iif: 'eth2', src: '2001:db8:3::99', dst: `2001:db8:77::${n}`, protocol: 'udp' as const, sport: 40000, dport: 53 } })),
  ...[1, 2, 3, 4, 5, 6].map((n) => ({ name: `IPv6 fib saddr . iif oif of a multipath route back is iif when its hash picks iif (${n})`, host: MULTIPATH, rules: FIB6_SADDR, packet: { iif: 'eth2', src: `2001:db8:9::${n}`, dst: '2001:db8:77::1', protocol: 'udp' as const, sport: 40000, dport: 53 } })),
  {
    // nf_nat_ipv4_local_fn re-routes at the NAT hook; the filter chain after it still sees the
    // first route's device.
    name: 'a DNAT at output re-routes, the output chains after it see the first device',
    host: BY_MARK,
    rules: 'table ip n {\n  chain out {\n    type nat hook output priority -100; policy accept;\n    dnat to 198.51.100.30\n  }\n  chain f {\n    type filter hook output priority 0; policy accept;\n    oifname "eth1" meta mark set 0x100\n  }\n}\n',
    packet: local('203.0.113.5'),
  },
];

const harnesses = new Map<KernelHost, Promise<KernelHarness>>();
afterAll(async () => {
  for (const harness of harnesses.values()) (await harness.catch(() => undefined))?.close();
});

describe.skipIf(skipReason !== undefined)('kernel checks: policy routing', () => {
  it.each(CASES)('$name', async ({ host, rules, packet, kind }) => {
    const harness = harnesses.get(host) ?? openKernelHarness(host);
    harnesses.set(host, harness);
    const { problems, kernelWay } = await compareCase(await harness, host, [{ kind: kind ?? 'nft', text: rules, file: 'case.rules' }], packet);
    expect(problems, `${rules}\nkernel way:\n${kernelWay.join('\n')}`).toEqual([]);
  });
});
