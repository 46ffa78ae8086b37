import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import type { HostInput } from '../../src/sim/host.js';
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

  it('send each IPv6 packet of a flow its own way: its flow label is hashed too', () => {
    const host: HostInput = {
      interfaces: [
        { name: 'eth0', addresses: ['2001:db8:1::10/64'] },
        { name: 'eth1', addresses: ['2001:db8:2::10/64'] },
        { name: 'eth2', addresses: ['2001:db8:3::10/64'] },
      ],
      routes: [{ dst: 'default', nexthops: [{ via: '2001:db8:1::1', dev: 'eth0' }, { via: '2001:db8:2::1', dev: 'eth1' }] }],
    };
    const udp = { iif: 'eth2', src: '2001:db8:3::99', dst: '2001:db8:9::1', protocol: 'udp', sport: 40000, dport: 53 } as const;
    const result = simulateFlow(ruleset, { host, packets: [udp, udp] });
    expect(result.outcomes.map((branch) => branch.packets.map((p) => p.oif).join(' ')).sort()).toEqual(['eth0 eth0', 'eth0 eth1', 'eth1 eth0', 'eth1 eth1']);
  });
});
