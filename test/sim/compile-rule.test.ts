// Compiled rules (src/sim/compile-rule.ts, src/sim/packet-field.ts) only change how fast a rule
// is evaluated: with them, and with every statement interpreted as written (withoutIndexes, the
// reference), every packet and flow has the same outcomes, trace, marks and NAT. Checked on the
// kernel-differential generator's rulesets and packets (every modelled feature, nft and
// iptables-save), on flows of a packet and its reply, and on statements chosen for the edges of
// what a compiled instruction does (32-bit values, masks, ranges past 2^32, random ports after
// NAT, conntrack states). Both find a jump's target chain the same way (src/sim/evaluate-stmt.ts
// verdictResult): the kernel-differential suite checks that against the kernel.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Ruleset } from '../../src/model/ast.js';
import { parseRuleset, type NodeSource } from '../../src/parser/parse-ruleset.js';
import { withoutIndexes } from '../../src/sim/chain-index.js';
import type { HostInput } from '../../src/sim/host.js';
import type { PacketInput } from '../../src/sim/packet.js';
import { simulateFlow } from '../../src/sim/simulate-flow.js';
import { indexOf, simulatePacket } from '../../src/sim/simulate-packet.js';
import { GENERATED_HOST, arbitraryCase, renderCase } from '../kernel/differential-arbitraries.js';
import { parse } from './helpers.js';

function parseSources(rulesets: ReturnType<typeof renderCase>['rulesets']): Ruleset {
  const sources: NodeSource[] = rulesets.map((r) => ({ text: r.text, file: r.file, format: r.kind === 'nft' ? 'nft' : 'iptables' }));
  const { ruleset, diagnostics } = parseRuleset(sources);
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new Error(`generated rulesets do not parse: ${errors.map((d) => d.message).join('; ')}`);
  return ruleset;
}

const HOST = GENERATED_HOST as HostInput;

/** The first run compiles the rules of every chain the packet enters, the one after runs them
 * with what it resolved and kept (jump targets, sets, verdict map elements, locations, trace
 * events). */
const RUNS = 2;

/** With indexes RUNS times and without (every rule interpreted), every outcome in full. */
function expectSameOutcomes(ruleset: Ruleset, packet: PacketInput, host: HostInput = HOST): void {
  const reference = withoutIndexes(() => simulatePacket(ruleset, { host, packet }));
  for (let run = 0; run < RUNS; run++) expect(simulatePacket(ruleset, { host, packet })).toEqual(reference);
}

describe('compiled rules', () => {
  it('give the outcomes of the interpreter on generated rulesets and packets', () => {
    fc.assert(
      fc.property(arbitraryCase, fc.array(arbitraryCase.map((c) => c.packet), { maxLength: 3 }), (testCase, others) => {
        const { rulesets, packet } = renderCase(testCase);
        const ruleset = parseSources(rulesets);
        for (const p of [packet, ...others]) expectSameOutcomes(ruleset, p as PacketInput);
      }),
      { numRuns: 200 },
    );
  });

  it('give the outcomes of the interpreter on generated flows (a packet and its reply)', () => {
    fc.assert(
      fc.property(arbitraryCase, (testCase) => {
        const { rulesets, packet } = renderCase(testCase);
        const ruleset = parseSources(rulesets);
        const input = { host: HOST, packets: [packet as PacketInput, { reply: true as const }, packet as PacketInput] };
        const reference = withoutIndexes(() => simulateFlow(ruleset, input));
        for (let run = 0; run < RUNS; run++) expect(simulateFlow(ruleset, input)).toEqual(reference);
      }),
      { numRuns: 100 },
    );
  });

  const FORWARDED: PacketInput = { iif: 'eth0', src: '192.0.2.99', dst: '198.51.100.20', protocol: 'tcp', sport: 40000, dport: 443, mark: '0x4010' };
  const chain = (head: string, rules: readonly string[]): string =>
    ['table ip t {', '  chain c {', `    ${head}`, ...rules.map((r) => `    ${r}`), '    counter', '  }', '}', ''].join('\n');
  const nat = (rules: readonly string[]): string =>
    ['table ip n {', '  chain pre {', '    type nat hook prerouting priority dstnat; policy accept;', ...rules.map((r) => `    ${r}`), '  }', '  chain fw {', '    type filter hook forward priority 0; policy accept;', '    tcp dport 443 accept', '    tcp dport 1000-2000 accept', '    tcp dport != 8080 drop', '  }', '}', ''].join('\n');
  const FILTER = 'type filter hook forward priority 0; policy accept;';

  const TOP_BIT_RULES = [
    'meta mark set 0x80004010',
    'meta mark 0x80004010 meta mark > 0x80000000 meta mark & 0x80000000 == 0x80000000 meta mark ^ 0x80000000 == 0x4010 meta mark | 0x1 == 0x80004011 meta mark 0x80000000-0xfffffff0 meta mark 0x80000000/1 numgen random mod 2 offset 0x80000000 >= 0x80000000 meta mark set meta mark ^ 0xffff0000',
    'meta mark 0x7fff4010 ip daddr != 255.255.255.255 accept',
    'drop',
  ];

  // The comparison with the interpreter below would hold as well if no test matched: here every
  // one does, interpreted and compiled.
  it('compare and change values with the top bit set', () => {
    const ruleset = parse(chain(FILTER, TOP_BIT_RULES));
    for (let run = 0; run < RUNS; run++) {
      const outcomes = simulatePacket(ruleset, { host: HOST, packet: FORWARDED }).outcomes;
      // numgen's two branches, each through both nexthops of table 100, which the mark's bit 0x10
      // selects (GENERATED_HOST).
      expect(outcomes.map((o) => [o.verdict, o.mark])).toEqual(new Array(4).fill(['accept', '0x7fff4010']));
    }
  });

  it.each([
    ['a mask with a value outside it', chain(FILTER, ['meta mark & 0xff == 0x110 drop', 'meta mark & 0xff != 0x110 accept'])],
    ['a masked mark with a flag test', chain(FILTER, ['meta mark & 0xff00 0x4000 drop', 'meta mark & 0x0f00 0x4000 accept'])],
    ['ordered comparisons', chain(FILTER, ['meta mark < 0x4000 drop', 'meta mark >= 0x4010 meta mark <= 0x4010 accept'])],
    ['a range past 2^32 and a range beyond it', chain(FILTER, ['meta mark 0x4000-0xffffffff meta mark != 0x5000-0x6000 accept'])],
    ['a prefix of a mark', chain(FILTER, ['meta mark 0x4000/18 accept'])],
    ['tcp flags lists', chain(FILTER, ['tcp flags & (syn | ack) == syn accept', 'tcp flags syn,ack drop'])],
    ['ct state lists and negations', chain(FILTER, ['ct state != established,related drop', 'ct state new accept'])],
    ['a set of protocols and a concatenation', chain(FILTER, ['meta l4proto { tcp, udp } ip daddr . tcp dport { 198.51.100.20 . 443, 10.0.0.0/8 . 22 } accept'])],
    ['a negated set', chain(FILTER, ['ip saddr != { 192.0.2.0/25, 10.0.0.1 } drop', 'accept'])],
    ['a mark set from a masked mark', chain(FILTER, ['meta mark set meta mark & 0xffff00ff ^ 0x100', 'meta mark 0x4110 accept'])],
    ['a mark set from the ct mark before conntrack', chain('type filter hook prerouting priority -300; policy accept;', ['meta mark set ct mark', 'accept'])],
    ['a port test after NAT picked a random port', nat(['meta l4proto tcp dnat to 198.51.100.20:1000-2000'])],
    ['a DNAT to an address and port', nat(['tcp dport 443 dnat to 198.51.100.21:8443'])],
    ['numgen verdict maps', chain(FILTER, ['numgen random mod 3 vmap { 0 : accept, 1 : drop, 2 : continue }', 'accept'])],
    ['a verdict map on a concatenation', chain(FILTER, ['ip daddr . meta l4proto . th dport vmap { 198.51.100.20 . tcp . 443 : drop, 198.51.100.21 . udp . 53 : accept }'])],
    ['a meta random test', chain(FILTER, ['meta random & 2147483647 < 1073741824 drop', 'accept'])],
    // The code keeps unsigned operands as int32 (src/sim/compile-rule.ts): here constants,
    // masks, ranges, a prefix, an operation's operand, a field's argument (numgen's offset) and
    // the mark have their top bit set.
    ['constants with the top bit set', chain(FILTER, TOP_BIT_RULES)],
  ])('give the outcomes of the interpreter: %s', (_name, text) => {
    const ruleset = parse(text);
    for (const packet of [FORWARDED, { ...FORWARDED, dport: 1500 }, { ...FORWARDED, protocol: 'udp', dport: 53 }, { ...FORWARDED, mark: '0x0', protocol: 'icmp', dport: undefined }]) {
      expectSameOutcomes(ruleset, packet as PacketInput);
    }
  });

  // Every field a compiled instruction reads, in a chain at each place where it may read
  // differently (before conntrack, at each hook, for a local packet), each rule traced when it
  // matches; packets of each kind the fields tell apart.
  const FIELD_TESTS = [
    'ip saddr 192.0.2.99', 'ip daddr 198.51.100.20', 'ip saddr != 192.0.2.0/24', 'ip daddr 198.51.100.0-198.51.100.30',
    'ip protocol tcp', 'ip6 nexthdr udp', 'ip ttl 64', 'ip ttl < 10', 'ip6 hoplimit 64', 'ip dscp cs0', 'ip dscp != 0x2e',
    'tcp sport 40000', 'tcp dport 443', 'udp dport 53', 'th dport 53', 'th sport != 1', 'sctp dport 1', 'dccp sport 1', 'udplite dport 1',
    'tcp flags syn', 'tcp flags != syn', 'tcp flags & (fin | syn) == fin', 'tcp dport { 80, 443 }', 'tcp dport 1-1024', 'tcp dport != 1-1024',
    'icmp type echo-request', 'icmp type != echo-reply', 'icmp code 0', 'icmpv6 type echo-request', 'icmpv6 code != 1',
    'meta mark 0x4010', 'meta mark & 0xff == 0x10', 'meta mark set meta mark | 0x100', 'meta mark & 0x100 != 0', 'meta l4proto udp',
    'meta length > 40', 'meta nfproto ipv4', 'meta protocol ip6', 'meta pkttype host', 'meta skuid 0', 'meta skuid != 1', 'meta skgid != 1',
    'meta nftrace 0', 'meta priority 0', 'ct state new', 'ct state established,related', 'ct state invalid', 'ct state untracked',
    'ct mark 0x5', 'ct mark != 0x5', 'ct status dnat', 'ct status & snat == 0', 'ct direction original', 'ct zone 0',
    'fib daddr type local', 'fib saddr type unicast', 'fib daddr . iif type local', 'fib daddr . oif type != local',
    'numgen random mod 2 == 1', 'ip daddr . tcp dport { 198.51.100.20 . 443, 192.0.2.10 . 22 }', 'ip6 daddr . th dport { 2001:db8:2::20 . 443 }',
    'meta mark set ct mark', 'meta mark set meta mark & 0xffffbfff ^ 0x4000',
  ];
  const PLACES = [
    'type filter hook prerouting priority -300;',
    'type filter hook prerouting priority -150;',
    'type filter hook input priority 0;',
    'type filter hook forward priority 0;',
    'type filter hook output priority 0;',
    'type filter hook postrouting priority 100;',
  ];
  const fieldsRuleset = [
    'table inet t {',
    '  chain raw {',
    '    type filter hook prerouting priority -400; policy accept;',
    '    ip saddr 192.0.2.98 notrack',
    '  }',
    ...PLACES.flatMap((head, i) => [`  chain c${i} {`, `    ${head} policy accept;`, ...FIELD_TESTS.map((t) => `    ${t}`), '  }']),
    '}',
    '',
  ].join('\n');
  const SYN: PacketInput = { iif: 'eth0', src: '192.0.2.99', dst: '198.51.100.20', protocol: 'tcp', sport: 40000, dport: 443, mark: '0x4010' };

  it.each<[string, PacketInput]>([
    ['a forwarded SYN', SYN],
    ['a packet conntrack finds invalid', { ...SYN, tcpFlags: 'fin,ack' }],
    ['an untracked packet', { ...SYN, src: '192.0.2.98' }],
    ['a UDP packet to the node', { ...SYN, dst: '192.0.2.10', protocol: 'udp', dport: 53 }],
    ['an ICMP echo', { iif: 'eth0', src: '192.0.2.99', dst: '198.51.100.20', protocol: 'icmp' }],
    ['a local packet', { src: '192.0.2.10', dst: '198.51.100.20', protocol: 'tcp', dport: 22, skuid: 0, skgid: 0 }],
    ['a local packet to the node, back in through lo', { src: '192.0.2.10', dst: '192.0.2.10', protocol: 'tcp', dport: 22, skuid: 0, skgid: 0 }],
    ['an IPv6 packet', { iif: 'eth0', src: '2001:db8:1::99', dst: '2001:db8:2::20', protocol: 'udp', dport: 443 }],
    ['an ICMPv6 echo', { iif: 'eth0', src: '2001:db8:1::99', dst: '2001:db8:2::20', protocol: 'icmpv6' }],
    ['a packet of a DNAT-ed connection', { ...SYN, ct: { state: 'established', status: 'dnat', mark: '0x5' } }],
  ])('read every field as the interpreter does: %s', (_name, packet) => {
    expectSameOutcomes(parse(fieldsRuleset), packet);
  });

  // A compiled rule keeps its last trace event and gives it to the next packet that makes the
  // same one (src/sim/compile-rule.ts knownRuleEvent): here one regular chain is entered from
  // two hooks, by packets of different marks, and its verdict map gives each its own verdict.
  it('give every packet the trace events of its own mark, hook and verdict', () => {
    const text = [
      'table ip t {',
      '  chain pre { type filter hook prerouting priority -150; policy accept; jump tag }',
      '  chain fw { type filter hook forward priority 0; policy accept; jump tag }',
      '  chain tag {',
      '    meta mark set meta mark | 0x1',
      '    tcp dport vmap { 443 : jump seen, 80 : continue }',
      '  }',
      '  chain seen { counter }',
      '}',
      '',
    ].join('\n');
    const ruleset = parse(text);
    const packets: PacketInput[] = [SYN, { ...SYN, mark: '0x0' }, { ...SYN, dport: 80 }, { ...SYN, mark: '0x20', dport: 80 }];
    const references = packets.map((packet) => withoutIndexes(() => simulatePacket(ruleset, { host: HOST, packet })));
    for (let round = 0; round < RUNS; round++) {
      packets.forEach((packet, i) => expect(simulatePacket(ruleset, { host: HOST, packet })).toEqual(references[i]));
    }
    const marks = references[1]!.outcomes[0]!.trace.filter((e) => e.chain === 'tag' && e.kind === 'rule').map((e) => `${e.hook} ${e.mark} ${e.verdict}`);
    expect(marks).toEqual(['prerouting 0x00000001 continue', 'prerouting 0x00000001 jump seen', 'forward 0x00000001 continue', 'forward 0x00000001 jump seen']);
  });

  // The arena writes code into chunks that never move (src/sim/compile-rule.ts append): here a
  // chain's rules fill several, each changing the mark, so that the outcome depends on every rule
  // running its own code wherever it was written.
  it('run rules compiled into every chunk of the arena', () => {
    const flips = Array.from({ length: 1000 }, (_, i) => (Math.imul(i + 1, 2654435761) >>> 0) & 0xffff);
    const final = flips.reduce((mark, flip) => mark ^ flip, 0x4010);
    const rules = [...flips.map((flip) => `meta mark set meta mark ^ 0x${flip.toString(16)}`), `meta mark 0x${final.toString(16)} accept`, 'drop'];
    const ruleset = parse(chain('type filter hook prerouting priority 0; policy accept;', rules));
    expectSameOutcomes(ruleset, SYN);
    const outcome = simulatePacket(ruleset, { host: HOST, packet: SYN }).outcomes[0]!;
    expect([outcome.verdict, outcome.mark]).toEqual(['accept', `0x${final.toString(16).padStart(8, '0')}`]);
    expect(indexOf(ruleset).code.chunks.length).toBeGreaterThan(2);
  });

  // 10.0.0.1 . 80 and 10.1.221.6 . 43300 have the same hash in the index of concatenations
  // (src/sim/lookup-element.ts hashParts): the candidate is checked part by part.
  it.each<[string, PacketInput]>([
    ['the element', { ...SYN, dst: '10.0.0.1', dport: 80 }],
    ['a value with the same hash', { ...SYN, dst: '10.1.221.6', dport: 43300 }],
  ])('find in a set of concatenations only its elements: %s', (_name, packet) => {
    const text = chain('type filter hook prerouting priority 0; policy accept;', ['ip daddr . tcp dport { 10.0.0.1 . 80, 10.0.0.2 . 443 } meta mark set 0x1']);
    const ruleset = parse(text);
    expectSameOutcomes(ruleset, packet);
    expect(simulatePacket(ruleset, { host: HOST, packet }).outcomes[0]!.mark).toBe(packet.dport === 80 ? '0x00000001' : '0x00004010');
  });

  it.each([
    ['-A FORWARD -m conntrack ! --ctstate DNAT -j DROP'],
    ['-A FORWARD -m conntrack ! --ctstate NEW,DNAT -j DROP'],
    ['-A FORWARD -m conntrack --ctstate SNAT,INVALID -j DROP'],
    ['-A FORWARD -m conntrack --ctstate DNAT -j DROP'],
    ['-A FORWARD -m conntrack ! --ctstate NEW,RELATED -j DROP'],
    ['-A FORWARD -m conntrack --ctstate INVALID,UNTRACKED -j DROP'],
    ['-A FORWARD -m statistic --mode random --probability 0.25 -j DROP'],
    ['-A FORWARD -m statistic --mode random ! --probability 0.25 -j DROP'],
    ['-A FORWARD -m mark --mark 0x4000/0x4000 -j MARK --set-xmark 0x10/0xff'],
    ['-A FORWARD -m comment --comment "a comment" -j CONNMARK --set-xmark 0x4000/0x4000'],
  ])('give the outcomes of the interpreter on iptables rules: %s', (rule) => {
    const text = ['*nat', ':PREROUTING ACCEPT [0:0]', '-A PREROUTING -p tcp --dport 443 -j DNAT --to-destination 198.51.100.21:8443', 'COMMIT', '*filter', ':FORWARD ACCEPT [0:0]', rule, '-A FORWARD -m mark --mark 0x10 -j ACCEPT', 'COMMIT', ''].join('\n');
    const ruleset = parse(text);
    for (const packet of [FORWARDED, { ...FORWARDED, dport: 80 }, { ...FORWARDED, tcpFlags: 'fin,ack' }, { ...FORWARDED, ct: { state: 'established', status: 'dnat' } }]) {
      expectSameOutcomes(ruleset, packet as PacketInput);
    }
  });
});
