import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import type { PacketInput } from '../../src/sim/packet.js';
import { HOST } from './helpers.js';

// iptables' set match against the sets of `ipset save` (xt_set.c, ip_set_core.c ip_set_test);
// each fact is checked on Linux 6.18 by the set match rows of
// test/kernel/differential-expressions.test.ts.
const IPSETS = `create dsts hash:ip family inet
add dsts 10.244.1.5
create nets hash:net family inet
add nets 10.244.0.0/16
add nets 10.244.1.0/24 nomatch
add nets 10.244.1.7
create svc hash:ip,port family inet
add svc 10.244.1.5,tcp:80
add svc 10.244.1.5,icmp:echo-request
create ports bitmap:port range 0-65535
add ports 80
add ports 2048
create masked hash:ip family inet netmask 16
add masked 10.244.0.0
create six hash:ip family inet6
add six 2001:db8::5
create any list:set
add any six
add any dsts
create onlysix list:set
add onlysix six
create macs hash:mac
add macs 00:11:22:33:44:55
create dynips hash:ip family inet
create dnets hash:net family inet
add dnets 10.0.0.0/16
create dlist list:set
add dlist six
add dlist dynips
create dports bitmap:port range 0-100
create except hash:net family inet
add except 10.244.0.0/16
add except 10.244.1.5 nomatch
create masked2 hash:ip family inet bitmask 255.255.0.255
add masked2 10.244.0.5
create full hash:ip family inet hashsize 64 maxelem 1
add full 192.0.2.1
create forced hash:ip family inet hashsize 64 maxelem 1 forceadd
add forced 192.0.2.1
`;

const SYN: PacketInput = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'tcp', sport: 40000, dport: 80 };

/** Whether FORWARD (policy drop) accepts the packet by the rule `test`, and whether the outcome is
 * certain. */
function accepts(test: string, packet: PacketInput = SYN, before?: string): { accepted: boolean; uncertain: boolean } {
  const dump = `*filter\n:FORWARD DROP [0:0]\n${before ? `-A FORWARD ${before}\n` : ''}-A FORWARD ${test} -j ACCEPT\nCOMMIT\n`;
  const { ruleset, diagnostics } = parseRuleset([
    { text: dump, file: 'iptables.save' },
    { text: IPSETS, file: 'node.ipset' },
  ]);
  expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  const { outcomes, errors } = simulatePacket(ruleset, { host: HOST, packet });
  expect(errors).toBeUndefined();
  return { accepted: outcomes[0]!.disposition === 'forwarded', uncertain: outcomes[0]!.uncertain };
}

describe('iptables match set', () => {
  it.each([
    ['the flag picks the side: the destination is in the set', '-m set --match-set dsts dst', SYN, true],
    ['the flag picks the side: the source is not', '-m set --match-set dsts src', SYN, false],
    ['`!` inverts', '-m set ! --match-set dsts dst', SYN, false],
    ['the most specific network decides: a nomatch network inside a wider one says no', '-m set --match-set nets dst', SYN, false],
    ['the most specific network decides: a host inside the nomatch network says yes', '-m set --match-set nets dst', { ...SYN, dst: '10.244.1.7' }, true],
    ['the wider network alone', '-m set --match-set nets dst', { ...SYN, dst: '10.244.2.5' }, true],
    ['--return-nomatch: the nomatch network matches', '-m set --match-set nets dst --return-nomatch', SYN, true],
    ['--return-nomatch: a plain element does not', '-m set --match-set nets dst --return-nomatch', { ...SYN, dst: '10.244.1.7' }, false],
    ['`!` of a nomatch element matches', '-m set ! --match-set nets dst', SYN, true],
    ['address and port of the same protocol', '-m set --match-set svc dst,dst', SYN, true],
    ['the port of another protocol', '-m set --match-set svc dst,dst', { ...SYN, protocol: 'udp' }, false],
    ['an ICMP type and code are the port', '-m set --match-set svc dst,dst', { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'icmp' }, true],
    ['fewer flags than dimensions never match', '-m set --match-set svc dst', SYN, false],
    ['fewer flags than dimensions, negated, always match', '-m set ! --match-set svc dst', SYN, true],
    ['bitmap:port: a TCP port', '-m set --match-set ports dst', SYN, true],
    ['bitmap:port: an ICMP type and code is no port', '-m set --match-set ports dst', { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'icmp' }, false],
    ["hash:ip's netmask: the address's network", '-m set --match-set masked dst', SYN, true],
    // ipset 7.17's bitmask: the third byte is not compared.
    ["hash:ip's bitmask, which need not be a prefix", '-m set --match-set masked2 dst', SYN, true],
    ['list:set: a member holds it', '-m set --match-set any dst', SYN, true],
    ['list:set: a member of the other family never matches', '-m set --match-set onlysix dst', SYN, false],
  ] as const)('%s', (_, test, packet, accepted) => {
    expect(accepts(test, packet)).toEqual({ accepted, uncertain: false });
  });

  // ip_set_add and ip_set_del make the element from the packet as the match reads it (kernel rows
  // "xt set: SET …").
  it.each([
    ['--add-set: the rules after it find the element', '-j SET --add-set dynips src', '-m set --match-set dynips src', SYN, true],
    ['--del-set: a static element is gone', '-j SET --del-set dsts dst', '-m set --match-set dsts dst', SYN, false],
    ["--add-set to hash:net: a network of the set's most specific prefix length", '-j SET --add-set dnets src', '-m set --match-set dnets dst', { ...SYN, src: '10.244.9.9' }, true],
    ['--add-set to list:set: the first member that takes the element', '-j SET --add-set dlist src', '-m set --match-set dynips src', SYN, true],
    ["--add-set to bitmap:port: a port outside the bitmap's range is not added", '-j SET --add-set dports src', '-m set --match-set dports src', SYN, false],
    ['--add-set of the other flags than the set has dimensions adds nothing', '-j SET --add-set svc dst', '-m set --match-set svc dst,dst', { ...SYN, dport: 81 }, false],
    // mtype_add with --exist sets the element's flags anew: nomatch no more.
    ['--add-set --exist onto a nomatch element makes it match', '-j SET --add-set except dst --exist', '-m set --match-set except dst', SYN, true],
    ['--add-set without --exist leaves a nomatch element', '-j SET --add-set except dst', '-m set --match-set except dst', SYN, false],
    // set_target_v3: the add, then the delete.
    ['--del-set and --add-set in one rule: added, then deleted', '-j SET --del-set dynips src --add-set dynips src', '-m set --match-set dynips src', SYN, false],
    // mtype_add: a hash set of maxelem elements refuses one more (kernel flow row "xt flow: SET
    // --add-set into a full set").
    ['--add-set into a full hash set adds nothing', '-j SET --add-set full src', '-m set --match-set full src', SYN, false],
  ] as const)('SET %s', (_, before, test, packet, accepted) => {
    expect(accepts(test, packet, before)).toEqual({ accepted, uncertain: false });
  });

  it('says it cannot tell for an add to a full set with forceadd, which evicts an element at random', () => {
    expect(accepts('-m set --match-set forced src', SYN, '-j SET --add-set forced src').uncertain).toBe(true);
  });

  it.each([
    ['a set no input creates', '-m set --match-set nowhere dst'],
    ['a part nftsim has no packet field for (a MAC address)', '-m set --match-set macs src'],
    ['a test of the element counters', '-m set --match-set dsts dst --packets-gt 5'],
  ])('says it cannot tell for %s', (_, test) => {
    expect(accepts(test).uncertain).toBe(true);
  });

  it('says it cannot tell for SET --map-set (the skbinfo of elements)', () => {
    expect(accepts('-m set --match-set dsts dst', SYN, '-j SET --map-set dsts dst --map-mark').uncertain).toBe(true);
  });
});
