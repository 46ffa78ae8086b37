import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { simulateFlow, type FlowInput } from '../../src/sim/simulate-flow.js';
import { FORWARDED, HOST } from './helpers.js';

// Counting connections (nft's `ct count`, iptables' connlimit: nf_conncount_add), per-key buckets
// (iptables' hashlimit) and expected connections (`ct expectation set`) across the packets of a
// run; each fact checked on Linux 6.18 by a row of test/kernel/differential.test.ts ("flows of
// conntrack, NAT, marks, zones, sets and limits"). Every packet opens a connection of its own
// unless it repeats an earlier one; a rule marks the packet when it matches.

function marks(inputs: readonly { text: string; file: string }[], packets: FlowInput['packets']): string[] {
  const { ruleset, diagnostics } = parseRuleset(inputs);
  expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  const result = simulateFlow(ruleset, { host: HOST, packets });
  if (result.errors) throw new Error(result.errors.map((e) => e.message).join('; '));
  return result.outcomes[0]!.packets.map((o) => {
    expect(o.uncertain).toBe(false);
    return o.mark;
  });
}

const nft = (rules: string) => [{ text: `table ip f {\n\tset c { type ipv4_addr; flags dynamic; }\n\tchain fw {\n\t\ttype filter hook forward priority 0; policy accept;\n\t\t${rules}\n\t}\n}\n`, file: 'f.nft' }];
const ipt = (rules: string) => [{ text: `*filter\n:FORWARD ACCEPT [0:0]\n${rules}\nCOMMIT\n`, file: 'f.ipt' }];

const UDP = { ...FORWARDED, protocol: 'udp', sport: 40000, dport: 53 } as const;
const OTHER_PORT = { ...UDP, sport: 40001 } as const;
const THIRD_PORT = { ...UDP, sport: 40002 } as const;

describe('connection counts', () => {
  it.each([
    ['`ct count over 1` in a rule: the second connection is over', nft('ct count over 1 meta mark set 0x1'), [UDP, OTHER_PORT], ['0x00000000', '0x00000001']],
    ['a later packet of a counted connection is not counted again', nft('ct count over 1 meta mark set 0x1'), [UDP, UDP], ['0x00000000', '0x00000000']],
    ['`ct count 1`: at most one', nft('ct count 1 meta mark set 0x1'), [UDP, OTHER_PORT], ['0x00000001', '0x00000000']],
    ['a set element counts its key\'s connections', nft('add @c { ip saddr ct count over 1 } meta mark set 0x1'), [UDP, OTHER_PORT, { ...UDP, src: '192.0.2.77' }], ['0x00000000', '0x00000001', '0x00000000']],
    ['connlimit above, by source', ipt('-A FORWARD -p udp -m connlimit --connlimit-above 1 --connlimit-mask 32 --connlimit-saddr -j MARK --set-xmark 0x1/0x1'), [UDP, OTHER_PORT, { ...UDP, src: '192.0.2.77' }], ['0x00000000', '0x00000001', '0x00000000']],
    ['connlimit upto, a /24 of sources', ipt('-A FORWARD -p udp -m connlimit --connlimit-upto 1 --connlimit-mask 24 --connlimit-saddr -j MARK --set-xmark 0x1/0x1'), [UDP, { ...UDP, src: '192.0.2.77' }], ['0x00000001', '0x00000000']],
    // A connection dropped before conntrack confirmed it is no longer counted.
    ['a dropped connection stops counting', ipt('-A FORWARD -p udp -m connlimit --connlimit-above 1 --connlimit-mask 32 -j MARK --set-xmark 0x1/0x1\n-A FORWARD -p udp --sport 40000 -j DROP'), [UDP, OTHER_PORT], ['0x00000000', '0x00000000']],
    // ... but only once the count reaches it: a later packet of an earlier connection stops at
    // its own (__nf_conncount_add).
    ['the count stops at the packet\'s own connection', ipt('-A FORWARD -p udp -m connlimit --connlimit-above 2 --connlimit-mask 32 -j MARK --set-xmark 0x1/0x1\n-A FORWARD -p udp --sport 40002 -j DROP'), [UDP, OTHER_PORT, THIRD_PORT, UDP], ['0x00000000', '0x00000000', '0x00000001', '0x00000001']],
  ] as const)('%s', (_, inputs, packets, expected) => {
    expect(marks(inputs, packets)).toEqual(expected);
  });
});

describe('hashlimit', () => {
  it.each([
    ['a bucket of --hashlimit-burst packets per source', '--hashlimit-upto 1/hour --hashlimit-burst 2 --hashlimit-mode srcip', [UDP, UDP, UDP, { ...UDP, src: '192.0.2.77' }], ['0x00000001', '0x00000001', '0x00000000', '0x00000001']],
    ['--hashlimit-above matches beyond the bucket', '--hashlimit-above 1/hour --hashlimit-burst 1 --hashlimit-mode dstip', [UDP, UDP], ['0x00000000', '0x00000001']],
    ['five packets by default, one bucket without a mode', '--hashlimit-upto 1/hour', [UDP, UDP, UDP, UDP, UDP, { ...UDP, src: '192.0.2.77' }], ['0x00000001', '0x00000001', '0x00000001', '0x00000001', '0x00000001', '0x00000000']],
    ['by source port', '--hashlimit-upto 1/hour --hashlimit-burst 1 --hashlimit-mode srcport', [UDP, OTHER_PORT, UDP], ['0x00000001', '0x00000001', '0x00000000']],
  ] as const)('%s', (_, options, packets, expected) => {
    expect(marks(ipt(`-A FORWARD -m hashlimit ${options} --hashlimit-name h -j MARK --set-xmark 0x1/0x1`), packets)).toEqual(expected);
  });
});

describe('ct expectation set (nft_ct_expect_obj_eval)', () => {
  const expectation = (rule: string) => [
    { text: `table ip f {\n\tct expectation e {\n\t\tprotocol udp\n\t\tdport 5000\n\t\ttimeout 1m\n\t\tsize 8\n\t\tl3proto ip\n\t}\n\tchain fw {\n\t\ttype filter hook forward priority 0; policy accept;\n\t\t${rule}\n\t\tct state related meta mark set mark or 0x1\n\t\tct status expected meta mark set mark or 0x2\n\t}\n}\n`, file: 'e.nft' },
  ];
  const SERVER = { iif: 'cni0', src: '10.244.1.5', dst: '192.0.2.99', protocol: 'udp', sport: 41000, dport: 5000 } as const;
  it.each([
    ["the server's connection to the port is related and expected, once", 'udp dport 53 ct expectation set "e"', [UDP, SERVER, SERVER, { ...SERVER, sport: 41001 }], ['0x00000000', '0x00000003', '0x00000003', '0x00000000']],
    ['a reply makes the expected connection established', 'udp dport 53 ct expectation set "e"', [UDP, SERVER, { reply: true }, SERVER], ['0x00000000', '0x00000003', '0x00000002', '0x00000002']],
    ['only the first packet of a connection sets one up', 'udp sport 40001 ct expectation set "e"', [UDP, SERVER], ['0x00000000', '0x00000000']],
  ] as const)('%s', (_, rule, packets, expected) => {
    expect(marks(expectation(rule), packets)).toEqual(expected);
  });
});

describe('a packet of a closed TCP connection meeting a count', () => {
  // Whether the kernel's counter still holds the connection depends on its garbage collection,
  // and where it does not, the packet is dropped (insert_tree's hotdrop): said so.
  it('is not modelled', () => {
    const { ruleset } = parseRuleset(ipt('-A FORWARD -p tcp -m connlimit --connlimit-above 1 --connlimit-mask 32 -j MARK --set-xmark 0x1/0x1'));
    const syn = { ...FORWARDED, protocol: 'tcp', sport: 40000, tcpFlags: 'syn' } as const;
    const result = simulateFlow(ruleset, { host: HOST, packets: [syn, { reply: true, tcpFlags: 'syn,ack' }, { ...syn, tcpFlags: 'ack' }, { reply: true, tcpFlags: 'rst' }, syn] });
    const last = result.outcomes[0]!.packets[4]!;
    expect(last.uncertain).toBe(true);
    expect(last.trace.find((e) => e.kind === 'unsupported')?.reason).toContain('closed TCP connection');
  });
});
