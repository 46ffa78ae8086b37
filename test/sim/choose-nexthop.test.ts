import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { readHost, type HostInput } from '../../src/sim/host.js';
import { readScenario, runScenario } from '../../src/sim/scenario.js';
import { simulateFlow } from '../../src/sim/simulate-flow.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';

// Multipath routes (multipath.ts): routing takes one nexthop by a hash whose seed each network
// namespace draws at random (fib_select_multipath), so each nexthop is an outcome with its
// weight's share, and the packets of a run with the same addresses take the same one. Checked on
// Linux 6.18 by the MULTIPATH rows of test/kernel/policy-routing.test.ts.

const HOST: HostInput = {
  interfaces: [
    { name: 'eth0', addresses: ['192.0.2.10/24'] },
    { name: 'eth1', addresses: ['198.51.100.10/24'] },
    { name: 'eth2', addresses: ['203.0.113.10/24'] },
  ],
  routes: [{ dst: 'default', nexthops: [{ via: '192.0.2.1', dev: 'eth0' }, { via: '198.51.100.20', dev: 'eth1', weight: 3 }] }],
};

const { ruleset } = parseRuleset([
  {
    text: 'table ip t {\n\tchain post {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\tmasquerade\n\t}\n}\n',
    file: 'masq.nft',
  },
]);

const UDP = { iif: 'eth2', src: '203.0.113.99', dst: '198.18.0.1', protocol: 'udp', sport: 40000, dport: 53 } as const;

describe('multipath routes', () => {
  it('forward through each nexthop with its weight\'s share, masquerading to its address', () => {
    const { outcomes } = simulatePacket(ruleset, { host: HOST, packet: UDP });
    expect(outcomes.map((o) => [o.probability, o.oif, o.packet.src])).toEqual([
      [0.25, 'eth0', '192.0.2.10'],
      [0.75, 'eth1', '198.51.100.10'],
    ]);
    expect(outcomes.every((o) => !o.uncertain)).toBe(true);
  });

  it('send a locally generated packet through each nexthop', () => {
    const { outcomes } = simulatePacket(ruleset, { host: HOST, packet: { src: '192.0.2.10', dst: '198.18.0.1', protocol: 'udp', sport: 40000, dport: 53 } });
    expect(outcomes.map((o) => [o.disposition, o.oif])).toEqual([
      ['sent', 'eth0'],
      ['sent', 'eth1'],
    ]);
  });

  it('take one nexthop with a seed', () => {
    const { outcomes } = simulatePacket(ruleset, { host: HOST, packet: UDP }, { seed: 7 });
    expect(outcomes).toHaveLength(1);
    expect(['eth0', 'eth1']).toContain(outcomes[0]!.oif);
  });

  it('send the later packets of a flow where its first went, and others anew', () => {
    const other = { ...UDP, dst: '198.18.0.2' };
    const result = simulateFlow(ruleset, { host: HOST, packets: [UDP, { ...UDP, sport: 40001 }, other] });
    // Two choices (one per pair of addresses), not three: four branches.
    const branches = result.outcomes.map((branch) => [branch.packets.map((p) => p.oif).join(' '), branch.probability]).sort();
    expect(branches).toEqual([
      ['eth0 eth0 eth0', 0.0625],
      ['eth0 eth0 eth1', 0.1875],
      ['eth1 eth1 eth0', 0.1875],
      ['eth1 eth1 eth1', 0.5625],
    ]);
  });

  const HOST6: HostInput = {
    interfaces: [
      { name: 'eth0', addresses: ['2001:db8:1::10/64'] },
      { name: 'eth1', addresses: ['2001:db8:2::10/64'] },
      { name: 'eth2', addresses: ['2001:db8:3::10/64'] },
    ],
    routes: [
      { dst: 'default', nexthops: [{ via: '2001:db8:1::1', dev: 'eth0' }, { via: '2001:db8:2::1', dev: 'eth1' }] },
      { dst: '2001:db8:9::/48', nexthops: [{ via: '2001:db8:1::1', dev: 'eth0' }, { via: '2001:db8:3::1', dev: 'eth2' }] },
    ],
  };
  const UDP6 = { iif: 'eth2', src: '2001:db8:3::99', dst: '2001:db8:5::1', protocol: 'udp', sport: 40000, dport: 53 } as const;

  it('send the IPv6 packets of a flow one way: their flow label is 0 as their protocol is the same', () => {
    const result = simulateFlow(ruleset, { host: HOST6, packets: [UDP6, UDP6] });
    expect(result.outcomes.map((branch) => branch.packets.map((p) => p.oif).join(' ')).sort()).toEqual(['eth0 eth0', 'eth1 eth1']);
  });

  it('send a received ICMP error the way of the packet it quotes', () => {
    const error = { iif: 'eth2', src: '203.0.113.1', dst: '198.18.0.1', protocol: 'icmp', icmpType: 'destination-unreachable', icmpCode: 'port-unreachable', quoted: { src: '198.18.0.1', dst: '203.0.113.99', protocol: 'udp', sport: 53, dport: 40000 } } as const;
    const result = simulateFlow(ruleset, { host: HOST, packets: [UDP, error] });
    expect(result.errors).toBeUndefined();
    expect(result.outcomes.map((branch) => branch.packets.map((p) => p.oif).join(' ')).sort()).toEqual(['eth0 eth0', 'eth1 eth1']);
  });

  const marks = (rules: string, host: HostInput, packet: Parameters<typeof simulatePacket>[1]['packet']): string[][] => {
    const { ruleset: r } = parseRuleset([{ text: rules, file: 'm.nft' }]);
    return simulatePacket(r, { host, packet }).outcomes.map((o) => [o.oif ?? '', o.mark]);
  };
  const chain = (family: string, hook: string, rules: readonly string[]) =>
    `table ${family} t {\n  chain c {\n    type filter hook ${hook} priority 0; policy accept;\n${rules.map((r) => `    ${r}\n`).join('')}  }\n}\n`;

  // rt_nexthop reads the route routing attached: the gateway of the nexthop the packet leaves by.
  it('give rt ip nexthop the gateway of the nexthop taken, after a masquerade too', () => {
    const rules = `${chain('ip', 'postrouting', ['rt ip nexthop 192.0.2.1 meta mark set mark or 0x1', 'rt ip nexthop 198.51.100.20 meta mark set mark or 0x2'])}table ip n {\n  chain post {\n    type nat hook postrouting priority srcnat - 10; policy accept;\n    masquerade\n  }\n}\n`;
    expect(marks(rules, HOST, UDP)).toEqual([
      ['eth0', '0x00000001'],
      ['eth1', '0x00000002'],
    ]);
  });

  it('give a packet with a given oif the gateway of the nexthop through it, without a choice', () => {
    const rules = chain('ip', 'forward', ['rt ip nexthop 198.51.100.20 meta mark set 0x2']);
    expect(marks(rules, HOST, { ...UDP, oif: 'eth1' })).toEqual([['eth1', '0x00000002']]);
  });

  // IPv4's fib lookup selects no path (FIB_RES_DEV), IPv6's the packet's (fib6_select_path):
  // kernel rows in test/kernel/policy-routing.test.ts.
  it('give fib daddr oif of an IPv4 multipath route its first nexthop, whatever the packet takes', () => {
    const rules = chain('ip', 'prerouting', ['fib daddr oif "eth0" meta mark set 0x1', 'fib daddr oif "eth1" meta mark set 0x2']);
    expect(marks(rules, HOST, UDP)).toEqual([
      ['eth0', '0x00000001'],
      ['eth1', '0x00000001'],
    ]);
  });

  it('give fib daddr oif of an IPv6 multipath route the nexthop the packet takes', () => {
    const rules = chain('ip6', 'prerouting', ['fib daddr oif "eth0" meta mark set 0x1', 'fib daddr oif "eth1" meta mark set 0x2']);
    expect(marks(rules, HOST6, UDP6)).toEqual([
      ['eth0', '0x00000001'],
      ['eth1', '0x00000002'],
    ]);
  });

  it.each([
    ['IPv4: any nexthop through iif', 'ip', { ...UDP, src: '10.9.0.5' }, [['eth0', '0x00000001'], ['eth1', '0x00000001']]],
    ['IPv6: the one the packet\'s hash picks', 'ip6', { ...UDP6, src: '2001:db8:9::5' }, [['eth0', '0x00000001'], ['eth0', '0x00000000'], ['eth1', '0x00000001'], ['eth1', '0x00000000']]],
  ] as const)('give fib saddr . iif oif of a multipath route back, %s', (_, family, packet, expected) => {
    const host = family === 'ip' ? { ...HOST, routes: [...HOST.routes!, { dst: '10.9.0.0/16', nexthops: [{ via: '192.0.2.1', dev: 'eth0' }, { via: '203.0.113.20', dev: 'eth2' }] }] } : HOST6;
    const rules = chain(family, 'prerouting', ['fib saddr . iif oif "eth2" meta mark set 0x1']);
    expect(marks(rules, host as HostInput, packet).sort()).toEqual([...expected].map((e) => [...e]).sort());
  });

  // The route back from 10.9.0.0/16 (2001:db8:9::/48) has a nexthop through eth2, the default
  // route none. An address in the rule makes the dump ip6tables' for IPv6.
  it.each([
    ['IPv4', '-s 0.0.0.0/0', { ...UDP, src: '10.9.0.5' }, { ...UDP, src: '198.18.0.9' }],
    ['IPv6', '-s ::/0', { ...UDP6, src: '2001:db8:9::5' }, { ...UDP6, src: '2001:db8:5::9' }],
  ] as const)('pass %s rpfilter where any nexthop of the route back goes through iif', (family, source, passing, failing) => {
    const host = family === 'IPv4' ? { ...HOST, routes: [...HOST.routes!, { dst: '10.9.0.0/16', nexthops: [{ via: '192.0.2.1', dev: 'eth0' }, { via: '203.0.113.20', dev: 'eth2' }] }] } : HOST6;
    const { ruleset: r } = parseRuleset([{ text: `*raw\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING ${source} -m rpfilter --invert -j DROP\nCOMMIT\n`, file: 'raw.save' }]);
    const dispositions = (packet: typeof passing | typeof failing) => simulatePacket(r, { host: host as HostInput, packet }).outcomes.map((o) => o.disposition);
    expect(dispositions(passing)).toEqual(['forwarded', 'forwarded']);
    expect(dispositions(failing)).toEqual(['dropped']);
  });
});

describe('multipath routes in a scenario', () => {
  // A later flow does not go on with the nexthop branch 1 of an earlier one picked: the pick is a
  // random choice, not state the rules left.
  it('let each flow pick a nexthop anew', () => {
    const { scenario } = readScenario({ flows: [{ packets: [{ packet: UDP }] }, { packets: [{ packet: { ...UDP, sport: 40001 } }] }] });
    const run = runScenario(ruleset, readHost([{ value: HOST, path: ['host'] }]).host, scenario!);
    expect(run.results.map((r) => r.outcomes.map((o) => o.oif))).toEqual([
      ['eth0', 'eth1'],
      ['eth0', 'eth1'],
    ]);
  });
});
