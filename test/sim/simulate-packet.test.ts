import { describe, expect, it } from 'vitest';
import { FORWARDED, HOST, LOCAL, parse, simulate, simulateOne, steps } from './helpers.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import type { HostInput } from '../../src/sim/host.js';

const chain = (family: string, table: string, name: string, spec: string, rules: string): string =>
  `table ${family} ${table} {\n\tchain ${name} {\n\t\t${spec}\n${rules}\n\t}\n}\n`;

describe('paths and the routing decision', () => {
  it.each([
    // Kernel: ip_rcv_finish → ip_route_input: a local destination goes to LOCAL_IN.
    ['a local destination is delivered through input', LOCAL, 'delivered', undefined, ['filter input policy accept']],
    // ip_forward: a routed destination goes FORWARD then POST_ROUTING with the route's device.
    ['a routed destination is forwarded through forward and postrouting', FORWARDED, 'forwarded', 'cni0', ['filter forward policy accept', 'filter post policy accept']],
    // Locally generated: __ip_local_out → LOCAL_OUT, then ip_output → POST_ROUTING.
    ['a packet without iif is sent through output and postrouting', { dst: '10.244.1.5', dport: 80 }, 'sent', 'cni0', ['filter output policy accept', 'filter post policy accept']],
  ] as const)('%s', (_name, packet, disposition, oif, trace) => {
    const rules = ['input', 'forward', 'output'].map((h) => `\tchain ${h} { type filter hook ${h} priority 0; }`).join('\n');
    const o = simulateOne(`table ip filter {\n${rules}\n\tchain post { type filter hook postrouting priority 0; }\n}\n`, packet);
    expect(o.disposition).toBe(disposition);
    expect(o.oif).toBe(oif);
    expect(steps(o)).toEqual(trace);
  });

  it.each([
    // ip_route_input_slow: no route → the packet is dropped by routing, no chain decides.
    ['no route drops the packet', { routes: [] }, 'no route to 198.51.100.7'],
    // ip_route_input_slow: IN_DEV_FORWARD off → EHOSTUNREACH.
    ['forwarding off drops a packet for another host', { forwarding: false }, 'forwarding disabled on the host'],
  ])('%s', (_name, hostChange, reason) => {
    const host = { ...HOST, ...hostChange };
    const o = simulateOne('', { iif: 'eth0', src: '192.0.2.99', dst: '198.51.100.7' }, host);
    expect(o).toMatchObject({ disposition: 'dropped', verdict: 'drop', reason });
    expect(o.decidedBy).toBeUndefined();
  });

  // ip_route_input_slow: a source 0.0.0.0 (ipv4_is_zeronet: the address 0 only) or in
  // 127.0.0.0/8 is martian, and so is a destination 0.0.0.0 or in 127.0.0.0/8; fib_validate_source
  // refuses one of the host's own addresses (rp_filter and accept_local off); prerouting has run
  // by then. IPv6 routing has no such check. (Kernel rows: test/kernel/differential.test.ts.)
  it.each([
    ['eth0\'s own address, forwarded', { iif: 'eth0', src: '192.0.2.10', dst: '10.244.1.5' }, "martian source 192.0.2.10 (the host's own address arriving on eth0)"],
    ['another interface\'s address, to the host', { iif: 'eth0', src: '100.64.1.1', dst: '192.0.2.10' }, "martian source 100.64.1.1 (the host's own address arriving on eth0)"],
    ['a loopback address', { iif: 'eth0', src: '127.0.0.5', dst: '10.244.1.5' }, 'martian source 127.0.0.5 (a loopback address arriving on eth0)'],
    ['the address 0.0.0.0', { iif: 'wt0', src: '0.0.0.0', dst: '192.0.2.10' }, 'martian source 0.0.0.0 (the address 0.0.0.0 arriving on wt0)'],
    ['a destination 0.0.0.0', { iif: 'eth0', src: '192.0.2.99', dst: '0.0.0.0' }, 'martian destination 0.0.0.0 (the address 0.0.0.0 arriving on eth0)'],
    ['a multicast address', { iif: 'eth0', src: '224.0.0.5', dst: '192.0.2.10' }, 'martian source 224.0.0.5 (a multicast address arriving on eth0)'],
    ['the limited broadcast address', { iif: 'eth0', src: '255.255.255.255', dst: '192.0.2.10' }, 'martian source 255.255.255.255 (the broadcast address arriving on eth0)'],
    ['a loopback destination', { iif: 'eth0', src: '192.0.2.99', dst: '127.0.0.1' }, 'martian destination 127.0.0.1 (a loopback address arriving on eth0)'],
    ['the host\'s own address to the limited broadcast', { iif: 'eth0', src: '192.0.2.10', dst: '255.255.255.255' }, "martian source 192.0.2.10 (the host's own address arriving on eth0)"],
  ] as const)('a martian source is dropped by routing after prerouting: %s', (_name, packet, reason) => {
    const o = simulateOne(chain('ip', 't', 'pre', 'type filter hook prerouting priority 0;', '\t\tmeta mark set 1'), packet);
    expect(o).toMatchObject({ disposition: 'dropped', verdict: 'drop', reason, mark: '0x00000001' });
    expect(steps(o)).toEqual(['t pre rule continue', 't pre policy accept']);
  });

  // A source in 0.0.0.0/8 other than 0.0.0.0 is a valid address on current kernels.
  it('a source in 0.0.0.0/8 other than 0.0.0.0 is routed as any other', () => {
    expect(simulateOne('', { iif: 'wt0', src: '0.1.2.3', dst: '192.0.2.10' })).toMatchObject({ disposition: 'delivered' });
  });

  // brd_input: a DHCP discover (0.0.0.0 to 255.255.255.255) is no martian.
  it('0.0.0.0 to the limited broadcast is not dropped as martian', () => {
    expect(simulateOne('', { iif: 'eth0', src: '0.0.0.0', dst: '255.255.255.255', protocol: 'udp', sport: 68, dport: 67 }).reason ?? '').not.toMatch(/martian/);
  });

  // IPv6 groups every interface joins: all nodes, the solicited-node group of each of its
  // addresses (eth0 has 2001:db8::10/64), and on a router all routers and the solicited-node
  // group of the subnet-router anycast address (2001:db8::); any other group is dropped
  // (ip6_mc_input). The host forwards. (Checked with `ip maddr` on a veth with ARP on: the
  // kernel rows' NOARP veths join no solicited-node group.)
  it.each([
    ['all nodes', 'ff02::1', 'delivered'],
    ['the solicited-node group of eth0\'s address', 'ff02::1:ff00:10', 'delivered'],
    ['the solicited-node group of the subnet-router anycast address', 'ff02::1:ff00:0', 'delivered'],
    ['the solicited-node group of another address', 'ff02::1:ff00:11', 'dropped'],
    ['all routers', 'ff02::2', 'delivered'],
    // ipv6_add_dev joins only ff02::2 on an interface made while forwarding is on.
    ['site-local all routers', 'ff05::2', 'dropped'],
    ['a group the host is not in', 'ff02::fb', 'dropped'],
  ] as const)('an IPv6 packet to %s', (_name, dst, disposition) => {
    const o = simulateOne('', { iif: 'eth0', src: '2001:db8::99', dst, protocol: 'udp', sport: 40000, dport: 5000 });
    expect(o.disposition).toBe(disposition);
    if (disposition === 'dropped') expect(o.reason).toBe(`multicast group ${dst} not joined on eth0 (nftsim knows only the groups every interface joins)`);
  });

  // ip6_rcv_core drops these before NF_INET_PRE_ROUTING (RFC 4291 2.5.3, 2.7, errata 3480):
  // ingress sees them, prerouting does not. A v4-mapped source passes. (Kernel rows:
  // test/kernel/differential.test.ts.)
  it.each([
    ['a loopback source', { src: '::1', dst: '2001:db8::10' }, 'loopback source'],
    ['a loopback destination', { src: '2001:db8::99', dst: '::1' }, 'loopback destination'],
    ['an interface-local group', { src: '2001:db8::99', dst: 'ff01::1' }, 'interface-local group ff01::1'],
    ['a group of scope 0', { src: '2001:db8::99', dst: 'ff00::1' }, 'group ff00::1 of the reserved scope 0'],
    ['a multicast source', { src: 'ff02::1', dst: '2001:db8::10' }, 'multicast source ff02::1'],
    ['a v4-mapped source', { src: '::ffff:192.0.2.99', dst: '2001:db8::10' }, undefined],
  ] as const)('an IPv6 packet with %s on eth0', (_name, addresses, what) => {
    const text = 'table netdev d {\n\tchain in { type filter hook ingress device "eth0" priority 0; meta mark set 0x1; }\n}\ntable ip6 t {\n\tchain pre { type filter hook prerouting priority 0; meta mark set mark or 0x2; }\n}\n';
    const o = simulateOne(text, { iif: 'eth0', ...addresses, protocol: 'udp', sport: 40000, dport: 5000 });
    if (what === undefined) return expect(o).toMatchObject({ disposition: 'delivered', mark: '0x00000003' });
    expect(o).toMatchObject({ disposition: 'dropped', reason: `dropped by ip6_rcv_core before prerouting: ${what} arriving on eth0`, mark: '0x00000001' });
  });

  // From lo (a packet the node sent itself), loopback addresses and interface-local groups pass.
  it.each([
    ['::1', '::1'],
    ['2001:db8::10', 'ff01::1'],
  ])('an IPv6 packet from %s to %s coming back in through lo passes ip6_rcv_core', (src, dst) => {
    expect(simulateOne('', { iif: 'lo', src, dst, protocol: 'udp', sport: 40000, dport: 5000 }).reason ?? '').not.toMatch(/ip6_rcv_core/);
  });

  it.each([
    ['all routers', 'ff02::2'],
    ['the solicited-node group of the subnet-router anycast address', 'ff02::1:ff00:0'],
  ])('%s is not joined when the host does not forward', (_name, dst) => {
    const o = simulateOne('', { iif: 'eth0', src: '2001:db8::99', dst, protocol: 'udp', sport: 40000, dport: 5000 }, { ...HOST, forwarding: false });
    expect(o.reason).toBe(`multicast group ${dst} not joined on eth0 (nftsim knows only the groups every interface joins)`);
  });

  // A forwarding host joins the subnet-router anycast address of each IPv6 subnet it has an
  // address in (addrconf_join_anycast): a local route of type anycast, which delivers to input
  // (ip6_rt_init_dst) and which fib reads as anycast (nft_fib6.c). Checked on Linux 6.18
  // (test/kernel/differential.test.ts, 'a packet to the subnet-router anycast address …').
  it.each([
    [true, 'delivered', '0x00000001'],
    [false, 'dropped', '0x00000002'],
  ])('the subnet-router anycast address 2001:db8::, forwarding %s: %s', (forwarding, disposition, mark) => {
    const text = 'table ip6 t {\n\tchain pre { type filter hook prerouting priority 0; fib daddr type anycast meta mark set 0x1; fib daddr type unicast meta mark set 0x2; }\n}\n';
    const o = simulateOne(text, { iif: 'eth0', src: '2001:db8::99', dst: '2001:db8::', protocol: 'udp', sport: 40000, dport: 5000 }, { ...HOST, forwarding });
    expect(o).toMatchObject({ disposition, mark });
  });

  // nft_fib6_flowi_init pins the lookup of a link-local address to the packet's interface:
  // eth0 has ff00::/8 (it has an IPv6 address); wt0, which the host description gives no IPv6
  // address, is taken to have IPv6 off and so no such route (`fib daddr oif missing`).
  // Other multicast scopes pick among every interface's route: not modelled.
  it.each([
    ['ff02::1 from eth0', 'eth0', 'ff02::1', 'eth0'],
    ['fe80::1 from eth0', 'eth0', 'fe80::1', 'eth0'],
    ['fe80::1 from wt0', 'wt0', 'fe80::1', 'missing'],
  ])('fib daddr oif of %s is %s', (_name, iif, dst, oif) => {
    const text = 'table ip6 t {\n\tchain pre { type filter hook prerouting priority 0; fib daddr oif "eth0" meta mark set 0x1; fib daddr oif missing meta mark set 0x2; }\n}\n';
    const o = simulateOne(text, { iif, src: '2001:db8::99', dst, protocol: 'udp', sport: 40000, dport: 5000 });
    const mark = oif === 'missing' ? '0x00000002' : '0x00000001';
    expect(o.trace.filter((e) => e.kind === 'rule').map((e) => e.verdict)).toEqual(['continue']);
    expect(o.trace[0]!.mark).toBe(mark);
    expect(o.mark).toBe(mark);
  });

  it('fib daddr oif of a multicast group beyond link scope is not modelled', () => {
    const text = 'table ip6 t {\n\tchain pre { type filter hook prerouting priority 0; fib daddr oif "eth0" meta mark set 0x1; }\n}\n';
    const o = simulateOne(text, { iif: 'eth0', src: '2001:db8::99', dst: 'ff05::1:3', protocol: 'udp', sport: 40000, dport: 5000 });
    expect(o.trace.map((e) => e.kind)).toContain('unsupported');
    expect(o.uncertain).toBe(true);
  });

  // IPv4 broadcast and multicast destinations, with a default route that would forward them:
  // a broadcast route of the local table (the limited broadcast, each subnet's broadcast
  // address) goes to brd_input, delivered whichever interface the packet came in on; a group
  // the host is in (224.0.0.1 only: the host description has no memberships) is delivered, any
  // other dropped (ip_route_input_rcu without multicast routing), and ip_route_input_mc checks
  // the source. (Kernel rows: test/kernel/differential.test.ts.)
  it.each([
    ['the limited broadcast', { src: '192.0.2.99', dst: '255.255.255.255' }, 'delivered', undefined],
    ['the broadcast address of the subnet it came from', { src: '192.0.2.99', dst: '192.0.2.255' }, 'delivered', undefined],
    ['the broadcast address of another interface\'s subnet', { src: '192.0.2.99', dst: '100.64.255.255' }, 'delivered', undefined],
    ['a subnet\'s network address, a unicast one', { src: '192.0.2.99', dst: '100.64.0.0' }, 'forwarded', undefined],
    ['all hosts', { src: '192.0.2.99', dst: '224.0.0.1' }, 'delivered', undefined],
    ['all hosts from 0.0.0.0', { src: '0.0.0.0', dst: '224.0.0.1' }, 'delivered', undefined],
    ['a group the host is not in', { src: '192.0.2.99', dst: '224.0.0.251' }, 'dropped', 'multicast group 224.0.0.251 not joined on eth0 (nftsim knows only the groups every interface joins)'],
    ['all hosts from the host\'s own address', { src: '192.0.2.10', dst: '224.0.0.1' }, 'dropped', "martian source 192.0.2.10 (the host's own address arriving on eth0)"],
    ['all hosts from a multicast address', { src: '224.0.0.9', dst: '224.0.0.1' }, 'dropped', 'martian source 224.0.0.9 (a multicast address arriving on eth0)'],
  ] as const)('a UDP packet to %s', (_name, addresses, disposition, reason) => {
    const o = simulateOne('', { iif: 'eth0', ...addresses, protocol: 'udp', sport: 40000, dport: 5000 });
    expect(o.disposition).toBe(disposition);
    expect(o.reason).toBe(reason);
  });

  // skb->pkt_type is the frame's: the link layer sets it from the destination MAC, which a sender
  // on the link picks by the packet's destination (src/sim/host.ts linkPacketType). A DNAT does
  // not change it; a locally generated packet is PACKET_HOST.
  it.each([
    ['a received packet to the limited broadcast', { iif: 'eth0', src: '192.0.2.99', dst: '255.255.255.255' }, '', 'broadcast'],
    ['a received packet to its subnet\'s broadcast address', { iif: 'eth0', src: '192.0.2.99', dst: '192.0.2.255' }, '', 'broadcast'],
    ['a received packet to another subnet\'s broadcast address', { iif: 'eth0', src: '192.0.2.99', dst: '100.64.255.255' }, '', 'host'],
    ['a received packet to a multicast group', { iif: 'eth0', src: '192.0.2.99', dst: '224.0.0.1' }, '', 'multicast'],
    ['a received IPv6 packet to a multicast group', { iif: 'eth0', src: '2001:db8::99', dst: 'ff02::1' }, '', 'multicast'],
    ['a received broadcast DNATed to a unicast address', { iif: 'eth0', src: '192.0.2.99', dst: '192.0.2.255' }, 'dnat to 10.244.1.5', 'broadcast'],
    ['a locally generated packet to the limited broadcast', { src: '192.0.2.10', dst: '255.255.255.255', oif: 'eth0' }, '', 'host'],
    // loopback_xmit → eth_type_trans: lo's neighbours all have lo's own (zero) MAC (arp_constructor).
    ['a packet coming in through lo to a multicast group', { iif: 'lo', src: '192.0.2.10', dst: '224.0.0.1' }, '', 'host'],
  ] as const)('meta pkttype of %s', (_name, addresses, nat, expected) => {
    const text = `table inet t {\n\tchain pre { type nat hook prerouting priority dstnat; ${nat} }\n\tchain late { type filter hook prerouting priority 0; meta pkttype ${expected} meta mark set 0x1; }\n\tchain out { type filter hook output priority 0; meta pkttype ${expected} meta mark set 0x1; }\n}\n`;
    expect(simulateOne(text, { ...addresses, protocol: 'udp', sport: 40000, dport: 5000 }).mark).toBe('0x00000001');
  });

  // ip_forward / ip6_forward drop a packet that came in a broadcast or multicast frame.
  it.each([
    ['a broadcast', '192.0.2.255', 'dropped'],
    ['a multicast packet', '224.0.0.1', 'dropped'],
    ['another subnet\'s broadcast (to the node\'s MAC)', '100.64.255.255', 'forwarded'],
  ] as const)('%s DNATed to a pod', (_name, dst, disposition) => {
    const text = 'table ip n {\n\tchain pre { type nat hook prerouting priority dstnat; dnat to 10.244.1.5; }\n}\n';
    const o = simulateOne(text, { iif: 'eth0', src: '192.0.2.99', dst, protocol: 'udp', sport: 40000, dport: 5000 });
    expect(o.disposition).toBe(disposition);
    if (disposition === 'dropped') expect(o.reason).toBe('not forwarded: it came in a broadcast or multicast frame');
  });

  it('an IPv6 packet with the host\'s own address as source is routed as any other', () => {
    expect(simulateOne('', { iif: 'eth0', src: '2001:db8::10', dst: '2001:db8::99' })).toMatchObject({ disposition: 'forwarded', oif: 'eth0' });
  });

  const NAT_TABLE = 'table ip n {\n\tchain pre { type nat hook prerouting priority dstnat; }\n\tchain post { type nat hook postrouting priority srcnat; }\n}\n';

  // nf_nat_setup_info sets IPS_DST_NAT_DONE (0x100) / IPS_SRC_NAT_DONE (0x80) for each mapping,
  // the null binding of a NAT hook without one too, at the NAT hook's priority.
  it.each([
    ['before the prerouting NAT hook', 'prerouting', -150, '0x0'],
    ['after the prerouting NAT hook', 'prerouting', -50, '0x100'],
    ['at forward', 'forward', 0, '0x100'],
    ['before the postrouting NAT hook', 'postrouting', 50, '0x100'],
    ['after the postrouting NAT hook', 'postrouting', 150, '0x180'],
  ])('ct status NAT_DONE bits %s', (_name, hook, priority, bits) => {
    const o = simulateOne(`${NAT_TABLE}${chain('ip', 't', 'c', `type filter hook ${hook} priority ${priority};`, `\t\tct status & 0x180 == ${bits} meta mark set 1`)}`, FORWARDED);
    expect(o.mark).toBe('0x00000001');
  });

  // At the NAT hook's own priority, a chain registered before the nat table runs after the NAT hook
  // (nf_hook_entries_grow puts the newer of equal priorities first) and sees the bit; one
  // registered after runs before it. Seen in a fresh namespace on Linux 6.18 with nft monitor
  // trace (the kernel-differential harness reuses its namespaces, where the NAT hook may stay
  // registered from an earlier case, so it is not a kernel row).
  it.each([
    ['registered before the nat table, runs after the NAT hook', true, '0x00000001'],
    ['registered after the nat table, runs before the NAT hook', false, '0x00000000'],
  ])('ct status NAT_DONE at the NAT hook\'s priority: %s', (_name, filterFirst, mark) => {
    const filter = chain('ip', 't', 'c', 'type filter hook prerouting priority dstnat;', '\t\tct status & 0x100 == 0x100 meta mark set 1');
    expect(simulateOne(filterFirst ? `${filter}${NAT_TABLE}` : `${NAT_TABLE}${filter}`, FORWARDED).mark).toBe(mark);
  });

  // ip_forward / ip6_forward decrement the TTL (hop limit) before NF_INET_FORWARD, and drop a
  // packet whose TTL would expire with a time exceeded error; input sees the TTL as received.
  it.each([
    ['ip', FORWARDED, 'ip ttl 63', 'forwarded', '0x00000001'],
    ['ip', { ...FORWARDED, ttl: 1 }, 'ip ttl 1', 'dropped', '0x00000000'],
    ['ip6', { iif: 'eth0', src: '2001:db8::99', dst: '2001:db8:1::5', ttl: 10 }, 'ip6 hoplimit 9', 'forwarded', '0x00000001'],
  ] as const)('%s: forwarding decrements the TTL before the forward hook (%s)', (family, packet, match, disposition, mark) => {
    const host = { ...HOST, routes: [...(HOST.routes ?? []), { dst: '2001:db8:1::/64', dev: 'cni0' }] };
    const o = simulateOne(chain(family, 't', 'c', 'type filter hook forward priority 0;', `\t\t${match} meta mark set 1`), packet, host);
    expect(o.disposition).toBe(disposition);
    expect(o.mark).toBe(mark);
  });
});

describe('verdicts (nf_tables_core.c nft_do_chain)', () => {
  it.each([
    // accept ends only its base chain: the next base chain at the hook still runs.
    ['accept in one base chain, drop in the next', 'accept', 'drop', 'dropped'],
    // drop ends the packet: later base chains never see it.
    ['drop in the first base chain', 'drop', 'accept', 'dropped'],
    ['reject ends the packet as rejected', 'reject', 'accept', 'rejected'],
    ['queue hands the packet to userspace', 'queue', 'accept', 'queued'],
  ])('%s', (_name, first, second, disposition) => {
    const text = `${chain('ip', 'a', 'c', 'type filter hook input priority 0;', `\t\t${first}`)}${chain('ip', 'b', 'c', 'type filter hook input priority 10;', `\t\t${second}`)}`;
    const o = simulateOne(text, LOCAL);
    expect(o.disposition).toBe(disposition);
    expect(o.trace.filter((e) => e.table === 'b').length).toBe(first === 'accept' ? 1 : 0);
  });

  it('jump returns to the next rule of the caller, goto does not, return pops', () => {
    const text = `table ip t {
\tchain in { type filter hook input priority 0; policy drop;
\t\tjump a
\t\tgoto b
\t\taccept
\t}
\tchain a { meta mark set 1; }
\tchain b { return; }
}
`;
    const o = simulateOne(text, LOCAL);
    expect(steps(o)).toEqual([
      't in rule jump a',
      't a rule continue',
      't a return continue',
      't in rule goto b',
      // return from a chain entered by goto from the base chain: the base chain's policy.
      't b rule return',
      't in policy drop',
    ]);
    expect(o.disposition).toBe('dropped');
  });

  it('a jump deeper than NFT_JUMP_STACK_SIZE (16) is reported, not followed', () => {
    const chains = Array.from({ length: 18 }, (_, i) => `\tchain c${i} { jump c${i + 1}; }`).join('\n');
    const o = simulateOne(`table ip t {\n\tchain in { type filter hook input priority 0; jump c0; }\n${chains}\n\tchain c18 { accept; }\n}\n`, LOCAL);
    expect(o.disposition).toBe('unknown');
    expect(o.uncertain).toBe(true);
    expect(o.trace.at(-1)).toMatchObject({ kind: 'unsupported' });
  });
  // The kernel refuses such a ruleset (nf_tables_api.c: the target is looked up by name when the
  // rule is added); a listing with one can only be a hand-made or truncated file. Compiled
  // on the first packet (the jump and the verdict map element resolved when first taken):
  // reported each time.
  it.each([
    ['a jump', 'jump nowhere'],
    ['a goto', 'goto nowhere'],
    ['a verdict map element', 'tcp dport vmap { 22 : jump nowhere }'],
  ])('%s to a chain the table does not have is reported, not followed', (_name, rule) => {
    const ruleset = parse(`table ip t {\n\tchain in { type filter hook input priority 0; ${rule}; accept; }\n}\n`);
    for (let run = 0; run < 2; run++) {
      const o = simulatePacket(ruleset, { host: HOST, packet: LOCAL }).outcomes[0]!;
      expect(o.disposition).toBe('unknown');
      expect(o.trace.at(-1)).toMatchObject({ kind: 'unsupported', reason: expect.stringContaining('nowhere, which is not in table ip t') });
    }
  });
});

describe('hook order (net/netfilter/core.c nf_hook_entries_grow)', () => {
  // The kernel refuses a second chain of one name in a table (nf_tables_api.c), and the parsers
  // merge one written twice; a ruleset built by hand through the library may still have one.
  // Each base chain runs its own rules (src/sim/chain-index.ts baseChainIndex), every time.
  it('runs two base chains of one name each with its own rules', () => {
    const parsed = parse(`table ip t {\n\tchain c { type filter hook input priority 0; meta mark set 1; }\n\tchain d { type filter hook input priority 10; meta mark 1 drop; }\n}\n`);
    const table = parsed.tables[0]!;
    const ruleset = { ...parsed, tables: [{ ...table, chains: table.chains.map((c) => ({ ...c, name: 'c' })) }] };
    for (let run = 0; run < 2; run++) {
      const o = simulatePacket(ruleset, { host: HOST, packet: LOCAL }).outcomes[0]!;
      expect(o.trace.map((e) => `${e.chain} ${e.kind} ${e.verdict}`)).toEqual(['c rule continue', 'c policy accept', 'c rule drop']);
      expect(o.disposition).toBe('dropped');
    }
  });

  it('runs base chains by priority, whatever the listing order', () => {
    const text = `${chain('ip', 'late', 'c', 'type filter hook input priority 10;', '\t\tmeta mark set 2')}${chain('ip', 'early', 'c', 'type filter hook input priority -10;', '\t\tmeta mark set 1')}`;
    expect(simulateOne(text, LOCAL).trace.map((e) => e.table)).toEqual(['early', 'early', 'late', 'late']);
  });

  it('at equal priority runs the chain registered last first, and says the order depends on it', () => {
    const text = `${chain('ip', 'first', 'c', 'type filter hook input priority 0;', '')}${chain('inet', 'second', 'c', 'type filter hook input priority 0;', '')}`;
    const trace = simulateOne(text, LOCAL).trace;
    expect(trace.map((e) => `${e.family} ${e.table}`)).toEqual(['inet second', 'ip first']);
    expect(trace.every((e) => e.orderDependent)).toBe(true);
  });

  it('runs nat chains in the NAT hook slot (NF_IP_PRI_NAT_SRC 100), after a filter chain at 99.5-like priorities below it', () => {
    // A nat chain at srcnat - 1 (99) runs at the NAT hook's 100, after a filter chain at 99.
    // (The filter chain's ct match enables conntrack, without which no nat chain runs.)
    const text = `${chain('ip', 'n', 'c', 'type nat hook postrouting priority 99;', '')}${chain('ip', 'f', 'c', 'type filter hook postrouting priority 99;', '\t\tct state established accept')}`;
    const trace = simulateOne(text, FORWARDED).trace;
    expect(trace.map((e) => e.table)).toEqual(['f', 'n']);
    expect(trace.some((e) => e.orderDependent)).toBe(false);
  });

  it('only sees chains of the packet family and inet', () => {
    const text = `${chain('ip6', 'six', 'c', 'type filter hook input priority 0;', '\t\tdrop')}${chain('bridge', 'br', 'c', 'type filter hook input priority 0;', '\t\tdrop')}${chain('arp', 'ar', 'c', 'type filter hook input priority 0;', '\t\tdrop')}`;
    expect(simulateOne(text, LOCAL)).toMatchObject({ disposition: 'delivered', trace: [] });
  });
});

describe('marks', () => {
  it.each([
    // iptables MARK --set-xmark V/M: mark = (mark & ~M) ^ V (xt_mark.c mark_tg).
    ['meta mark set 0x1bd20', 0x4000, 0x1bd20],
    ['meta mark set mark or 0x4000', 0x20, 0x4020],
    ['meta mark set mark and 0xffffbfff', 0x4020, 0x20],
    ['meta mark set mark xor 0x4000', 0x4020, 0x20],
    ['meta mark set meta mark & 0xffff0000 | 0x10', 0x12345678, 0x12340010],
    ['meta mark set ct mark', 0x1, 0x7],
  ])('%s', (stmt, before, after) => {
    const o = simulateOne(chain('ip', 't', 'c', 'type filter hook input priority 0;', `\t\t${stmt}`), { ...LOCAL, mark: before, ct: { state: 'new', mark: 7 } });
    expect(o.mark).toBe(`0x${after.toString(16).padStart(8, '0')}`);
    expect(o.trace[0]!.mark).toBe(o.mark);
  });

  it('ct mark set meta mark saves the packet mark in the entry', () => {
    const o = simulateOne(chain('ip', 't', 'c', 'type filter hook input priority 0;', '\t\tct mark set meta mark'), { ...LOCAL, mark: 0x4000 });
    expect(o.ctMark).toBe('0x00004000');
  });
});

describe('conntrack', () => {
  // nft_ct_set_zone_eval attaches a template entry with ctinfo IP_CT_NEW before conntrack: `ct
  // state` reads new until conntrack runs, where without it there is no entry (invalid), and
  // nft_notrack_eval leaves a packet that has the template; an untracked packet has no entry, so
  // `ct zone set` after notrack attaches the template all the same. (Kernel rows:
  // test/kernel/differential.test.ts.)
  it.each([
    ['ct state reads new after ct zone set', 'ct zone set 1 ct state new meta mark set 0x1', '0x00000001'],
    ['ct state reads invalid without it', 'ct state new meta mark set 0x1', '0x00000000'],
    ['notrack leaves a packet with the template', 'ct zone set 1 notrack', '0x00000000'],
    ['notrack without it untracks the packet', 'notrack', '0x00000001'],
    ['ct zone set after notrack tracks the packet again', 'notrack ct zone set 1', '0x00000000'],
  ])('before conntrack: %s', (_name, raw, mark) => {
    const text = `table ip t {\n\tchain raw { type filter hook prerouting priority -300; ${raw}; }\n\tchain later { type filter hook prerouting priority -150; ct state untracked meta mark set 0x1; }\n}\n`;
    expect(simulateOne(text, LOCAL).mark).toBe(mark);
  });

  // After conntrack, notrack untracks only a packet it found invalid: that one has no entry.
  it.each([
    ['a first SYN-ACK (invalid)', 'syn,ack', '0x00000001'],
    ['a first SYN (new, with an entry)', 'syn', '0x00000000'],
  ])('notrack after conntrack on %s', (_name, tcpFlags, mark) => {
    const text = `table ip t {\n\tchain late { type filter hook prerouting priority -150; notrack; }\n\tchain later { type filter hook prerouting priority -100; ct state untracked meta mark set 0x1; }\n}\n`;
    expect(simulateOne(text, { ...LOCAL, tcpFlags }).mark).toBe(mark);
  });

  // Only an ICMP query opens a connection (valid_new of nf_conntrack_proto_icmp.c and
  // nf_conntrack_proto_icmpv6.c): an answer or another type without an entry is invalid. ICMPv6
  // neighbour discovery and MLD are untracked before any lookup (nf_conntrack_icmpv6_error,
  // noct_valid_new; test/kernel/differential.test.ts 'ct state of an ICMPv6 …').
  it.each([
    ['icmp', 'echo-request', 'new', '192.0.2.10'],
    ['icmp', 'echo-reply', 'invalid', '192.0.2.10'],
    ['icmp', 'timestamp-request', 'new', '192.0.2.10'],
    ['icmpv6', 'echo-reply', 'invalid', '2001:db8::10'],
    ['icmpv6', 'nd-router-solicit', 'untracked', 'ff02::2'],
    ['icmpv6', 'nd-neighbor-advert', 'untracked', '2001:db8::10'],
    ['icmpv6', 'mld2-listener-report', 'untracked', '2001:db8::10'],
    ['icmpv6', 'nd-redirect', 'invalid', '2001:db8::10'],
  ])('a first %s %s is %s', (protocol, icmpType, state, dst) => {
    const text = `table inet t {\n\tchain in { type filter hook input priority 0; ct state ${state} meta mark set 0x1; }\n}\n`;
    const src = protocol === 'icmp' ? '192.0.2.99' : '2001:db8::99';
    expect(simulateOne(text, { iif: 'eth0', src, dst, protocol, icmpType }).mark).toBe('0x00000001');
  });

  it('ct zone set after notrack: conntrack tracks the packet, new, in the zone', () => {
    const text = `table ip t {\n\tchain raw { type filter hook prerouting priority -300; notrack ct zone set 1; }\n\tchain later { type filter hook prerouting priority -150; ct state new ct zone 1 meta mark set 0x1; }\n}\n`;
    expect(simulateOne(text, LOCAL).mark).toBe('0x00000001');
  });

  // A first SYN-ACK gets no conntrack entry, so `ct mark` has no value. nft's `meta mark set ct
  // mark` breaks the rule untraced (nft_ct.c NFT_BREAK); iptables' CONNMARK targets continue and
  // the rule is traced (xt_connmark.c connmark_tg: XT_CONTINUE without an entry).
  it.each([
    ['nft meta mark set ct mark', 'table ip filter {\n\tchain INPUT {\n\t\ttype filter hook input priority 0; policy accept;\n\t\tmeta mark set ct mark\n\t}\n}\n', []],
    ['iptables CONNMARK --restore-mark', '*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j CONNMARK --restore-mark\nCOMMIT\n', ['continue']],
    ['iptables CONNMARK --set-xmark', '*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j CONNMARK --set-xmark 0x7/0xff\nCOMMIT\n', ['continue']],
  ] as const)('without an entry: %s', (_name, text, ruleVerdicts) => {
    const o = simulateOne(text, { ...LOCAL, tcpFlags: 'syn,ack' });
    expect(o.trace.filter((e) => e.kind === 'rule').map((e) => e.verdict)).toEqual(ruleVerdicts);
    expect(o.disposition).toBe('delivered');
  });

  it.each([
    // nft_ct_get_eval: no entry before NF_IP_PRI_CONNTRACK (-200): state reads invalid.
    ['raw priority sees no entry yet', -300, 'ct state invalid', true],
    ['after conntrack the first packet is new', -150, 'ct state new', true],
    ['established does not match a new packet', 0, 'ct state established,related', false],
    // A comma list without an operator tests any of the bits (nft's flagcmp)...
    ['a list tests any of its states', 0, 'ct state new,related', true],
    // ...but with `!=` or `==` nft compares the whole value: `ct state != new,related` is
    // `cmp neq reg 1 0x0000000c` (nft 1.0.6 --debug=netlink), true for a new packet (0x8).
    ['!= with a list compares the whole value', 0, 'ct state != new,related', true],
    ['== with a list compares the whole value', 0, 'ct state == new,related', false],
    // `!` is "none of these bits": (state & 0xc) == 0 (nft src/evaluate.c, OP_NEG).
    ['! with a list means none of them', 0, 'ct state ! new,related', false],
  ])('%s', (_name, priority, match, matched) => {
    const o = simulateOne(chain('ip', 't', 'c', `type filter hook prerouting priority ${priority};`, `\t\t${match} meta mark set 1`), LOCAL);
    expect(o.mark).toBe(matched ? '0x00000001' : '0x00000000');
  });

  it('notrack in raw makes the packet untracked: no NAT', () => {
    const text = `${chain('ip', 'raw', 'c', 'type filter hook prerouting priority -300;', '\t\tnotrack')}${chain('ip', 'nat', 'c', 'type nat hook prerouting priority -100;', '\t\tdnat to 10.244.1.5')}${chain('ip', 'f', 'c', 'type filter hook prerouting priority 0;', '\t\tct state untracked meta mark set 9')}`;
    const o = simulateOne(text, LOCAL);
    expect(o.nat).toEqual([]);
    expect(o.mark).toBe('0x00000009');
  });

  // Kernel fact (found by test/kernel/differential.test.ts): conntrack hooks are registered in a
  // network namespace only once a rule needs them (nf_ct_netns_get from the ct, nat, masq, redir…
  // expressions and xt conntrack/state/NAT extensions); without them no packet has an entry and
  // nf_nat_inet_fn returns before running any nat chain.
  it.each([
    ['a ruleset with no conntrack user runs no nat chain', '', false],
    ['a ct match elsewhere enables conntrack: the nat chain runs', chain('ip', 'f', 'c', 'type filter hook forward priority 0;', '\t\tct state invalid drop'), true],
    ['a NAT statement enables it', chain('ip', 'f', 'c', 'type nat hook prerouting priority dstnat;', '\t\tip daddr 1.1.1.1 dnat to 2.2.2.2'), true],
    ['a ct match in an ip6 table does not enable it for IPv4', chain('ip6', 'f', 'c', 'type filter hook forward priority 0;', '\t\tct state invalid drop'), false],
    ['an inet table enables it for IPv4 too', chain('inet', 'f', 'c', 'type filter hook forward priority 0;', '\t\tct state invalid drop'), true],
  ])('%s', (_name, other, runs) => {
    const o = simulateOne(`${chain('ip', 'nat', 'c', 'type nat hook postrouting priority srcnat;', '\t\tmeta mark set 5')}${other}`, FORWARDED);
    expect(steps(o).filter((step) => step.startsWith('nat '))).toEqual(runs ? ['nat c rule continue', 'nat c policy accept'] : []);
    expect(o.mark).toBe(runs ? '0x00000005' : '0x00000000');
  });

  // Kernel fact (found by test/kernel/differential.test.ts): with no conntrack entry yet (raw
  // priority), `ct mark` has no value: nft_ct_get_eval sets NFT_BREAK, the rule ends unmatched
  // and untraced, and the statements after it do not run.
  it('meta mark set ct mark before conntrack ends the rule as a mismatch', () => {
    const text = `${chain('ip', 'raw', 'c', 'type filter hook prerouting priority -300;', '\t\tmeta mark set ct mark meta mark set 7')}${chain('ip', 'f', 'c', 'type filter hook prerouting priority 0;', '\t\tct state invalid drop')}`;
    const o = simulateOne(text, LOCAL);
    expect(steps(o)).toEqual(['raw c policy accept', 'f c policy accept']);
    expect(o).toMatchObject({ mark: '0x00000000', uncertain: false });
  });

  it('an established packet skips the nat chains (nf_nat_inet_fn only runs them for new)', () => {
    const o = simulateOne(chain('ip', 'nat', 'c', 'type nat hook prerouting priority -100;', '\t\tdnat to 10.244.1.5'), { ...LOCAL, ct: { state: 'established' } });
    expect(o).toMatchObject({ disposition: 'delivered', nat: [], trace: [] });
  });
});

describe('NAT (nf_nat_core.c)', () => {
  it('DNAT in prerouting changes the routing decision', () => {
    const o = simulateOne(chain('ip', 'nat', 'c', 'type nat hook prerouting priority dstnat;', '\t\ttcp dport 22 dnat to 10.244.1.5:2222'), LOCAL);
    expect(o).toMatchObject({ disposition: 'forwarded', oif: 'cni0', packet: { dst: '10.244.1.5', dport: 2222 } });
    expect(o.nat).toEqual([{ type: 'dnat', to: '10.244.1.5:2222', at: { file: 'test.nft', line: 4, column: 3 } }]);
    expect(o.trace[0]!.verdict).toBe('accept');
  });

  it('once a nat chain set up the mapping, later nat chains at the hook are skipped', () => {
    const text = `${chain('ip', 'a', 'c', 'type nat hook postrouting priority 100;', '\t\tmasquerade')}${chain('ip', 'b', 'c', 'type nat hook postrouting priority 110;', '\t\tsnat to 192.0.2.77')}`;
    const o = simulateOne(text, FORWARDED);
    expect(o.nat.map((n) => n.type)).toEqual(['masquerade']);
    expect(o.trace.map((e) => e.table)).toEqual(['a']);
  });

  it('a nat chain that sets up nothing lets the next one run', () => {
    const text = `${chain('ip', 'a', 'c', 'type nat hook postrouting priority 100;', '\t\tip saddr 1.1.1.1 masquerade')}${chain('ip', 'b', 'c', 'type nat hook postrouting priority 110;', '\t\tsnat to 192.0.2.77')}`;
    expect(simulateOne(text, FORWARDED).nat.map((n) => n.to)).toEqual(['192.0.2.77']);
  });

  it.each([
    // nf_nat_masquerade_ipv4: the egress device's primary address (inet_select_addr).
    ['masquerade', '10.244.0.1'],
    // nf_nat_l4proto_unique_tuple: a random port from 1024-65535, shown as the range.
    ['masquerade fully-random', '10.244.0.1:1024-65535'],
    // Below 1024 the range is the port's class: 1-511, or 600-1023 from 512.
    ['masquerade random', '10.244.0.1:1-511', 511],
    ['masquerade random', '10.244.0.1:600-1023', 512],
    ['masquerade random', '10.244.0.1:600-1023', 1023],
    ['masquerade random', '10.244.0.1:1024-65535', 1024],
    ['snat to 192.0.2.77:1000-2000', '192.0.2.77:1000-2000'],
    // get_unique_tuple keeps a source port already in the range (the packet's is 40000).
    ['snat to 192.0.2.77:30000-50000', '192.0.2.77:40000'],
    // find_best_ips_proto's pick by hash for 192.0.2.99 → 10.244.1.5 (pick-range-address.ts,
    // whose picks are the kernel's: pick-range-address.test.ts).
    ['snat to 192.0.2.70-192.0.2.79', '192.0.2.77'],
    // nft gives the kernel a prefix as its first and last address: the same pick; a map's
    // element may hold either (kernel rows 'dnat to a prefix', 'snat via a map to an address
    // range', 'dnat to a map of a prefix').
    ['snat to 192.0.2.64/28', '192.0.2.76'],
    ['snat to 192.0.2.64-192.0.2.79', '192.0.2.76'],
    ['snat ip to ip saddr map { 192.0.2.0/24 : 192.0.2.70-192.0.2.79 }', '192.0.2.77'],
    // `prefix` (NF_NAT_RANGE_NETMAP): the host part stays, the network is the range's.
    ['snat ip prefix to ip saddr map { 192.0.2.0/24 : 10.99.0.0/24 }', '10.99.0.99'],
    ['snat ip prefix to ip saddr map { 192.0.2.0/24 : 10.99.0.0/16 }', '10.99.2.99'],
  ])('%s takes %s', (stmt, to, sport = 40000) => {
    const o = simulateOne(chain('ip', 'nat', 'c', 'type nat hook postrouting priority srcnat;', `\t\t${stmt}`), { ...FORWARDED, sport });
    expect(o.nat[0]!.to).toBe(to);
    expect(o.packet.src).toBe(to.split(':')[0]);
  });

  it('masquerade accepts a packet from 0.0.0.0 without a mapping (nf_nat_masquerade_ipv4)', () => {
    const o = simulateOne(chain('ip', 'nat', 'c', 'type nat hook postrouting priority srcnat;', '\t\tmasquerade'), { src: '0.0.0.0', dst: '255.255.255.255', protocol: 'udp', sport: 68, dport: 67, oif: 'eth0' });
    expect(o.nat).toEqual([]);
    expect(o.trace.map((e) => `${e.kind} ${e.verdict}`)).toEqual(['rule accept']);
    expect(o.packet.src).toBe('0.0.0.0');
  });

  // nf_nat_redirect_ipv6: the input interface's first address of the destination's scope
  // (ipv6_addr_scope: multicast scope 5 is site-local, 0xe global), none of it: dropped. Every
  // interface has a link-local address; a host description that lists none cannot say which.
  it.each([
    ['2001:db8::10', '2001:db8::10', undefined],
    ['ff02::1', 'fe80::10', undefined],
    ['ff0e::2', '2001:db8::10', undefined],
    ['ff02::1', undefined, 'redirect of a link-local destination: the host description lists no link-local address on eth0'],
  ] as const)('IPv6 redirect of a packet to %s goes to %s', (dst, to, unsupported) => {
    const host = unsupported ? HOST : { interfaces: [{ name: 'eth0', addresses: ['2001:db8::10/64', 'fe80::10/64'] }] };
    const o = simulateOne(chain('ip6', 'nat', 'c', 'type nat hook prerouting priority dstnat;', '\t\tredirect'), { iif: 'eth0', src: '2001:db8::99', dst, protocol: 'udp', sport: 40000, dport: 53 }, host);
    if (unsupported) return expect(o.trace[0]).toMatchObject({ kind: 'unsupported', reason: expect.stringContaining(unsupported) });
    expect(o.nat.map((n) => n.to)).toEqual([to]);
  });

  it('IPv6 redirect of a packet to a site-local group, with no site-local address, drops it', () => {
    const o = simulateOne(chain('ip6', 'nat', 'c', 'type nat hook prerouting priority dstnat;', '\t\tredirect'), { iif: 'eth0', src: '2001:db8::99', dst: 'ff05::2', protocol: 'udp', sport: 40000, dport: 53 });
    expect(o).toMatchObject({ disposition: 'dropped', verdict: 'drop', nat: [] });
    expect(steps(o)).toEqual(['nat c rule drop']);
  });

  it('redirect sends to the input interface\'s address', () => {
    const o = simulateOne(chain('ip', 'nat', 'c', 'type nat hook prerouting priority dstnat;', '\t\ttcp dport 80 redirect to :3128'), FORWARDED);
    expect(o).toMatchObject({ disposition: 'delivered', packet: { dst: '192.0.2.10', dport: 3128 } });
  });

  it('DNAT in output re-routes a local packet', () => {
    const o = simulateOne(chain('ip', 'nat', 'c', 'type nat hook output priority -100;', '\t\tdnat to 10.244.1.9'), { dst: '192.0.2.50', dport: 80 });
    expect(o).toMatchObject({ disposition: 'sent', oif: 'cni0', packet: { dst: '10.244.1.9' } });
  });

  // nf_route_table_hook4 (`type route`) re-routes a local packet whose mark a chain changed:
  // postrouting sees the new oif, a later output chain still the first one (the hook's
  // state->out). A filter chain's mark does not re-route (kernel rows in
  // test/kernel/policy-routing.test.ts).
  it.each([
    ['route', 'wt0', '0x00000101'],
    ['filter', 'eth0', '0x00000001'],
  ])('a %s chain marking a local packet sends it out of %s under a fwmark rule', (type, oif, mark) => {
    const host = { ...HOST, routes: [...(HOST.routes as object[]), { dst: 'default', dev: 'wt0', table: '100' }], rules: [{ priority: 100, fwmark: '0x1', table: '100' }, { priority: 32766, table: 'main' }] };
    const text = `table ip t {\n  chain out { type ${type} hook output priority mangle; meta mark set 0x1 }\n  chain later { type filter hook output priority 0; oifname "wt0" meta mark set mark or 0x200 }\n  chain post { type filter hook postrouting priority 0; oifname "wt0" meta mark set mark or 0x100 }\n}`;
    expect(simulateOne(text, { dst: '198.18.0.1' }, host as HostInput)).toMatchObject({ disposition: 'sent', oif, mark });
  });
});

describe('expressions', () => {
  it.each([
    ['iifname "eth0"', true],
    ['iifname "et*"', true], // nft turns a trailing * into a prefix match
    ['iifname "wt*"', false],
    ['iifname != "wt0"', true],
    ['oifname ""', true], // no output device yet at input: the empty name
    ['iif "eth0"', true],
    ['meta l4proto tcp', true],
    ['meta nfproto ipv4', true],
    ['meta pkttype host', true],
    ['ip saddr 192.0.2.0/24', true],
    ['ip saddr != 192.0.2.0/24', false],
    ['ip saddr 192.0.2.90-192.0.2.100', true],
    ['ip saddr { 10.0.0.1, 192.0.2.99 }', true],
    ['ip daddr . tcp dport { 192.0.2.10 . 22 }', true],
    ['ip daddr . tcp dport { 192.0.2.10 . 23 }', false],
    ['tcp dport 1-1023', true],
    ['tcp dport < 22', false],
    ['tcp dport >= 22', true],
    ['udp dport 22', false], // the tcp packet has no udp header: NFT_BREAK
    ['th dport 22', true],
    ['tcp flags syn', true],
    ['tcp flags & (syn | ack) == syn', true],
    // Three flags or more are a chain of `|`, each of its literals a TCP flag.
    ['tcp flags & (fin | syn | rst | ack) == syn', true],
    ['tcp flags & (fin | syn | rst | ack) != syn', false],
    ['tcp flags == syn', true],
    ['tcp flags ack', false],
    ['ct state new', true],
    ['ct state { new, established }', true],
    ['ct direction original', true],
    ['ct status dnat', false],
    ['fib daddr type local', true],
    ['fib daddr type unicast', false],
    ['fib saddr . iif oif "eth0"', true],
    ['fib saddr . iif oif missing', false],
    ['meta mark 0', true],
    ['ip ttl 64', true],
    ['meta length 40', true], // 20 bytes IPv4 + 20 bytes TCP, no options (packet-bytes.ts)
  ])('%s → %s', (match, expected) => {
    const o = simulateOne(chain('inet', 't', 'c', 'type filter hook input priority 0;', `\t\t${match} meta mark set 1`), LOCAL);
    expect(o.uncertain).toBe(false);
    expect(o.mark).toBe(expected ? '0x00000001' : '0x00000000');
  });

  // nft gives `th` no dependency (nft --debug=netlink: `payload load 2b @ transport header + 0`):
  // of an ICMP echo request it reads the type and code (8, 0), then the checksum. Checked on
  // Linux 6.18 (test/kernel/differential.test.ts, 'th sport and th dport of an ICMP echo request').
  it.each([
    ['th sport 2048', true],
    ['th sport != 40000', true],
    ['th dport 0', false],
  ])('%s of an ICMP echo request → %s', (match, expected) => {
    const o = simulateOne(chain('inet', 't', 'c', 'type filter hook input priority 0;', `\t\t${match} meta mark set 1`), { ...LOCAL, protocol: 'icmp' });
    expect(o.mark).toBe(expected ? '0x00000001' : '0x00000000');
  });

  // The type of an address no route reaches: IPv4 asks the local table only
  // (nft_fib4_eval_type → fib_frontend.c __inet_dev_addr_type: not there, not broadcast or
  // multicast is RTN_UNICAST); IPv6 routes it (nft_fib6.c __nft_fib6_eval_type: no route is
  // RTN_UNREACHABLE). Seen at prerouting, before routing drops the packet.
  it.each([
    ['IPv4', '203.0.113.5', 'unicast'],
    ['IPv6', '2001:db8:ffff::5', 'unreachable'],
  ])('fib daddr type of an %s address without a route (%s) is %s', (_family, dst, type) => {
    const o = simulateOne(chain('inet', 't', 'c', 'type filter hook prerouting priority -300;', `\t\tfib daddr type ${type} meta mark set 1`), { iif: 'eth0', src: dst.includes(':') ? '2001:db8::99' : '192.0.2.99', dst }, { ...HOST, routes: [] });
    expect(o.disposition).toBe('dropped');
    expect(o.mark).toBe('0x00000001');
  });

  it.each([
    ['tcp dport vmap { 22 : drop, 80 : accept }', 'dropped'],
    ['tcp dport vmap { 80 : drop }', 'delivered'],
    ['ip saddr vmap @v', 'rejected'],
  ])('verdict maps: %s', (stmt, disposition) => {
    const text = `table ip t {\n\tmap v { type ipv4_addr : verdict; flags interval; elements = { 192.0.2.0/24 : jump r } }\n\tchain r { reject; }\n\tchain c { type filter hook input priority 0; ${stmt}; }\n}\n`;
    expect(simulateOne(text, LOCAL).disposition).toBe(disposition);
  });

  it('named sets and maps, and sets filled by add @set during the run', () => {
    const text = `table ip t {
\tset seen { type ipv4_addr; }
\tset ports { type inet_service; elements = { 22, 443 } }
\tmap marks { type inet_service : mark; elements = { 22 : 0x10 } }
\tchain c { type filter hook input priority 0; add @seen { ip saddr }; ip saddr @seen tcp dport @ports meta mark set tcp dport map @marks; }
}
`;
    expect(simulateOne(text, LOCAL).mark).toBe('0x00000010');
  });
});

describe('randomness is never guessed', () => {
  it('meta random splits into branches with their probabilities (statistic --mode random)', () => {
    const text = chain('ip', 't', 'c', 'type filter hook input priority 0;', '\t\tmeta random & 2147483647 < 536870912 drop');
    const outcomes = simulate(text, LOCAL);
    expect(outcomes.map((o) => [o.disposition, o.probability])).toEqual([
      ['dropped', 0.25],
      ['delivered', 0.75],
    ]);
  });

  it('numgen random mod 3 gives three equal outcomes', () => {
    const text = chain('ip', 't', 'c', 'type filter hook input priority 0;', '\t\tmeta mark set numgen random mod 3');
    const outcomes = simulate(text, LOCAL);
    expect(outcomes.map((o) => o.mark)).toEqual(['0x00000000', '0x00000001', '0x00000002']);
    expect(outcomes.every((o) => Math.abs(o.probability - 1 / 3) < 1e-9)).toBe(true);
  });

  // nft_ng_inc_eval: a counter the rule's packets move on, which a snapshot does not show: each
  // value a branch with its share (kernel rows "numgen inc …", "statistic --mode nth …").
  it.each([
    ['numgen inc mod 3, compiled', 'meta mark set numgen inc mod 3 offset 4', ['0x00000004', '0x00000005', '0x00000006']],
    ['numgen inc in a verdict map', 'numgen inc mod 2 vmap { 0 : accept, 1 : drop }', ['0x00000000', '0x00000000']],
  ])('%s gives a branch per value, each its share', (_name, rule, marks) => {
    const outcomes = simulate(chain('ip', 't', 'c', 'type filter hook input priority 0;', `\t\t${rule}`), LOCAL);
    expect(outcomes.map((o) => o.mark)).toEqual(marks);
    expect(outcomes.every((o) => Math.abs(o.probability - 1 / marks.length) < 1e-9 && !o.uncertain)).toBe(true);
  });

  it('iptables\' statistic --mode nth matches every nth packet: a branch with its share', () => {
    const text = '*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m statistic --mode nth --every 4 --packet 1 -j DROP\nCOMMIT\n';
    const outcomes = simulate(text, LOCAL);
    expect(outcomes.map((o) => [o.disposition, o.probability])).toEqual([
      ['delivered', 0.25],
      ['dropped', 0.25],
      ['delivered', 0.25],
      ['delivered', 0.25],
    ]);
  });

  it('a seed picks one branch, the same one every time', () => {
    const ruleset = parse(chain('ip', 't', 'c', 'type filter hook input priority 0;', '\t\tmeta mark set numgen random mod 100'));
    const run = () => simulatePacket(ruleset, { host: HOST, packet: LOCAL }, { seed: 42 }).outcomes;
    expect(run()).toHaveLength(1);
    expect(run()[0]!.mark).toBe(run()[0]!.mark);
    expect(run()[0]!.probability).toBeCloseTo(0.01);
  });
});

describe('what is not modelled is said, never a silent match or miss', () => {
  it.each([
    ['socket transparent 1 drop', 'the host model has no sockets'],
    ['meta cpu 0 drop', 'meta cpu'],
    ['osf name "Linux" drop', 'OS fingerprints'],
  ])('%s', (rule, reason) => {
    const o = simulate(chain('ip', 't', 'c', 'type filter hook input priority 0;', `\t\t${rule}`), LOCAL)[0]!;
    expect(o.uncertain).toBe(true);
    const event = o.trace.find((e) => e.kind === 'unsupported')!;
    expect(event.reason).toContain(reason);
    expect(event.at).toMatchObject({ file: 'test.nft', line: 4 });
  });

  it('an ingress chain whose devices the input does not say (nft 1.0.6 JSON) is not run, and says so', () => {
    const json = JSON.stringify({
      nftables: [
        { table: { family: 'netdev', name: 'n', handle: 1 } },
        { chain: { family: 'netdev', table: 'n', name: 'in', handle: 2, type: 'filter', hook: 'ingress', prio: 0, policy: 'drop' } },
      ],
    });
    const o = simulateOne(json, LOCAL);
    expect(o).toMatchObject({ disposition: 'delivered', uncertain: true });
    expect(o.trace.map((e) => [e.table, e.chain, e.kind])).toEqual([['n', 'in', 'unsupported']]);
    expect(o.trace[0]!.reason).toContain('does not say which devices');
  });

  it('a rule nft listed as its handle alone is said where the packet meets it', () => {
    const o = simulateOne('table ip t { # handle 1\n\tchain in { # handle 2\n\t\ttype filter hook input priority 0; policy accept;\n\t\t # handle 3\n\t}\n}\n', LOCAL);
    expect(o).toMatchObject({ disposition: 'delivered', uncertain: true, trace: [{ kind: 'unsupported', at: { line: 4, handle: 3 } }, { kind: 'policy' }] });
  });

  it('a set element of fewer parts than its key (as nft 1.0.6 -j lists some) is said, not a silent miss', () => {
    const concat = { concat: [{ payload: { protocol: 'ip', field: 'saddr' } }, { payload: { protocol: 'tcp', field: 'dport' } }] };
    const json = JSON.stringify({
      nftables: [
        { table: { family: 'ip', name: 't', handle: 1 } },
        { chain: { family: 'ip', table: 't', name: 'in', handle: 2, type: 'filter', hook: 'input', prio: 0, policy: 'accept' } },
        { rule: { family: 'ip', table: 't', chain: 'in', handle: 3, expr: [{ match: { op: '==', left: concat, right: { set: [{ concat: ['192.0.2.99'] }] } } }, { drop: null }] } },
      ],
    });
    const o = simulateOne(json, LOCAL);
    expect(o).toMatchObject({ disposition: 'delivered', uncertain: true });
    expect(o.trace.find((e) => e.kind === 'unsupported')?.reason).toBe('an element of 1 part(s) for a key of 2: not modelled; assumed no match');
  });
});

describe('simulatePacket input', () => {
  it('returns errors naming the field instead of throwing', () => {
    const result = simulatePacket(parse(''), { host: HOST, packet: { iif: 'eth9', dst: 'nope', tcpflags: 'syn' } as never });
    expect(result.outcomes).toEqual([]);
    expect(result.errors!.map((e) => e.message)).toEqual([
      expect.stringContaining('packet.tcpflags: unknown field'),
      expect.stringContaining("packet.iif: unknown interface 'eth9'"),
      expect.stringContaining("packet.dst: 'nope' is not an IPv4 or IPv6 address"),
    ]);
  });

  it.each([
    ['a TCP packet', { protocol: 'tcp', icmpId: 1 }, 'packet.icmpId: only for an ICMP query or its answer'],
    ['an ICMP error', { protocol: 'icmp', icmpType: 'destination-unreachable', icmpId: 1 }, 'packet.icmpId: only for an ICMP query or its answer'],
    ['an identifier past 16 bits', { protocol: 'icmp', icmpId: 65536 }, 'packet.icmpId'],
  ])('refuses an ICMP identifier for %s', (_name, fields, message) => {
    const result = simulatePacket(parse(''), { host: HOST, packet: { iif: 'eth0', src: '192.0.2.99', dst: '192.0.2.10', ...fields } as never });
    expect(result.errors!.map((e) => e.message)).toEqual([expect.stringContaining(message)]);
  });

  it.each([
    ['a null field', { dport: null }, 'packet.dport: expected a value, not null'],
    ['ICMPv6 by number with IPv4 addresses', { protocol: 58 }, "packet.protocol: '58' does not go with IPv4 addresses"],
    ['ICMP by name with IPv6 addresses', { protocol: 'icmp', src: '2001:db8::99', dst: '2001:db8::10' }, "packet.protocol: 'icmp' does not go with IPv6 addresses"],
    ['a protocol number past 8 bits', { protocol: 256 }, 'packet.protocol'],
  ])('refuses %s', (_name, fields, message) => {
    const result = simulatePacket(parse(''), { host: HOST, packet: { iif: 'eth0', src: '192.0.2.99', dst: '192.0.2.10', ...fields } as never });
    expect(result.errors!.map((e) => e.message)).toEqual([expect.stringContaining(message)]);
  });
});

// A TCP packet's MSS option, as a real client's SYN carries one: `tcpMss`, 4 bytes more of header
// (data offset 6); without it the packet has no TCP options. nft's `tcp option maxseg size set`
// lowers it, never raises it (nft_exthdr_tcp_set_eval); iptables' tcpmss match reads it. Kernel
// rows "tcp option maxseg … of a SYN with one", "xt tcpmss of a SYN with an MSS".
describe('the TCP MSS option of the input', () => {
  const input = (rule: string): string => `table inet t {\n\tchain in { type filter hook input priority 0; ${rule} meta mark set 0x1; }\n}\n`;
  it.each([
    ['tcp option maxseg size 1460 tcp option maxseg length 4 meta length 44 @th,96,4 6', { tcpMss: 1460 }, '0x00000001'],
    ['tcp option maxseg missing meta length 40', {}, '0x00000001'],
    ['tcp option maxseg size set 1360 tcp option maxseg size 1360', { tcpMss: 1460 }, '0x00000001'],
    ['tcp option maxseg size set 1500 tcp option maxseg size 1460', { tcpMss: 1460 }, '0x00000001'],
  ])('%s with %j', (rule, fields, mark) => {
    expect(simulateOne(input(rule), { ...LOCAL, ...fields }).mark).toBe(mark);
  });

  it('iptables -m tcpmss reads it', () => {
    const dump = '*mangle\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp -m tcpmss --mss 1400:1536 -j MARK --set-xmark 0x1/0xffffffff\nCOMMIT\n';
    expect(simulateOne(dump, { ...LOCAL, tcpMss: 1460 }).mark).toBe('0x00000001');
  });

  it.each([
    ['a UDP packet', { protocol: 'udp', tcpMss: 1460 }, 'packet.tcpMss: only for tcp'],
    ['an MSS past 16 bits', { tcpMss: 70000 }, 'packet.tcpMss'],
  ])('refuses an MSS for %s', (_name, fields, message) => {
    const result = simulatePacket(parse(''), { host: HOST, packet: { ...LOCAL, ...fields } as never });
    expect(result.errors!.map((e) => e.message)).toEqual([expect.stringContaining(message)]);
  });
});

// An ICMP query's identifier: 40000 unless given (what the kernel harness sends), read by `icmp
// id`, and, with the type and code, the transport part of its conntrack tuple (icmp_pkt_to_tuple:
// `ct original proto-src` the identifier, `proto-dst` type << 8 | code; the reply's type is the
// answer's). Kernel rows "ct proto-src of an echo…", "ct proto-dst of an echo…".
describe('ICMP identifiers', () => {
  const ECHO = { iif: 'eth0', src: '192.0.2.99', dst: '192.0.2.10', protocol: 'icmp' } as const;
  const input = (rule: string): string => `table inet t {\n\tchain in { type filter hook input priority 0; ${rule} meta mark set 0x1; }\n}\n`;
  it.each([
    ['icmp id 40000', {}, '0x00000001'],
    ['icmp id 7', { icmpId: 7 }, '0x00000001'],
    ['icmp id 40000', { icmpId: 7 }, '0x00000000'],
    ['meta l4proto icmp ct original proto-src 7 ct reply proto-src 7', { icmpId: 7 }, '0x00000001'],
    ['meta l4proto icmp ct original proto-dst 2048 ct reply proto-dst 0', {}, '0x00000001'],
    ['meta l4proto icmp ct original proto-dst 3328', { icmpType: 'timestamp-request' }, '0x00000001'],
  ])('%s with %j', (rule, fields, mark) => {
    expect(simulateOne(input(rule), { ...ECHO, ...fields }).mark).toBe(mark);
  });

  it('shows the identifier in the outcome', () => {
    expect(simulateOne('', { ...ECHO, icmpId: 9 }).packet).toMatchObject({ protocol: 'icmp', icmpId: 9 });
  });
});

// net/core/dev.c __dev_queue_xmit → nf_hook_egress: the netdev egress chains of the device a
// packet leaves by run last, after postrouting (its NAT) and conntrack's confirmation, with no
// input device in the hook's state; __dev_queue_xmit reset the MAC header to the frame built for
// the device. The kernel rows are in test/kernel/differential-expressions.test.ts ('egress …').
describe('netdev egress', () => {
  const egress = (device: string, rules: string, extra = ''): string =>
    `${extra}table netdev e {\n\tchain out {\n\t\ttype filter hook egress device "${device}" priority 0; policy accept;\n\t\t${rules}\n\t}\n}\n`;
  const masquerade = 'table ip nat {\n\tchain post {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\toifname "cni0" masquerade\n\t}\n}\n';

  it('runs after postrouting, on the translated packet, for the chains of the oif', () => {
    const o = simulateOne(egress('cni0', 'ip saddr 10.244.0.1 meta mark set 0x1', masquerade), FORWARDED);
    expect(steps(o)).toEqual(['nat post rule accept', 'e out rule continue', 'e out policy accept']);
    expect(o).toMatchObject({ disposition: 'forwarded', mark: '0x00000001', trace: [{ hook: 'postrouting' }, { hook: 'egress' }, { hook: 'egress' }] });
  });

  it.each([
    ['no input device: iif reads 0', 'meta iif 0 meta mark set 0x1', '0x00000001'],
    ['no input device: iifname is not the iif', 'iifname "eth0" meta mark set 0x1', '0x00000000'],
    ['the output device is the oif', 'oifname "cni0" meta mark set 0x1', '0x00000001'],
    // skb->len counts the Ethernet header pushed for the device: 40 bytes of IPv4 and TCP, + 14.
    ['meta length counts the link layer header', 'meta length 54 meta mark set 0x1', '0x00000001'],
  ])('%s', (_, rules, mark) => {
    expect(simulateOne(egress('cni0', rules), FORWARDED).mark).toBe(mark);
  });

  it('a drop there drops the packet', () => {
    const o = simulateOne(egress('cni0', 'tcp dport 80 drop'), FORWARDED);
    expect(o).toMatchObject({ disposition: 'dropped', verdict: 'drop', decidedBy: { line: 4 } });
  });

  it('the chains of another device are not met', () => {
    expect(simulateOne(egress('eth0', 'tcp dport 80 drop'), FORWARDED).disposition).toBe('forwarded');
  });

  it("a packet the node sends itself meets lo's egress chains before coming back in", () => {
    const o = simulateOne(egress('lo', 'meta mark set 0x5'), { src: '192.0.2.10', dst: '192.0.2.10', dport: 22 });
    expect(o).toMatchObject({ disposition: 'delivered', mark: '0x00000005' });
  });

  it("the frame's MAC addresses are not modelled", () => {
    const o = simulateOne(egress('cni0', 'ether saddr 02:00:00:00:00:01 drop'), FORWARDED);
    expect(o).toMatchObject({ disposition: 'forwarded', uncertain: true });
  });
});
