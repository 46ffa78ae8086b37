import { describe, expect, it } from 'vitest';
import { parseIpsetSave } from '../../../src/parser/ipset/parse-ipset-save.js';
import { parseRuleset } from '../../../src/parser/parse-ruleset.js';

// What `ipset save` (ipset 7.17) prints, read back: the element parts by the set's type.
const SAVED = `create svc hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x06b5cbf1
add svc 10.0.0.1,tcp:80
add svc 10.0.0.1,udp:53
add svc 10.0.0.1,80
add svc 10.0.0.2,icmp:fragmentation-needed
add svc 10.0.0.3,gre:0
create nets hash:net family inet hashsize 1024 maxelem 65536
add nets 10.1.0.0/16 nomatch
add nets 10.2.3.4
create ports bitmap:port range 0-65535
add ports 30000
create masked hash:ip family inet hashsize 1024 maxelem 65536 netmask 24
add masked 10.9.8.0
create six hash:ip family inet6 hashsize 1024 maxelem 65536 timeout 100 counters comment
add six 2001:db8::1 timeout 49 packets 0 bytes 0 comment "hi there"
create all list:set size 8
add all svc
`;

describe('parseIpsetSave', () => {
  const { ipsets, diagnostics } = parseIpsetSave(SAVED, 'node.ipset');

  it('reads every set and element without a diagnostic', () => {
    expect(diagnostics).toEqual([]);
    expect(ipsets.map((s) => [s.name, s.type, s.family, s.elements.length])).toEqual([
      ['svc', 'hash:ip,port', 'inet', 5],
      ['nets', 'hash:net', 'inet', 2],
      ['ports', 'bitmap:port', undefined, 1],
      ['masked', 'hash:ip', 'inet', 1],
      ['six', 'hash:ip', 'inet6', 1],
      ['all', 'list:set', undefined, 1],
    ]);
  });

  it.each([
    ['a port with its protocol', 'svc', 0, [{ kind: 'address', family: 'ip', address: '10.0.0.1', prefix: 32 }, { kind: 'port', protocol: 6, port: 80 }]],
    ['a bare port is TCP', 'svc', 2, [{ kind: 'address', family: 'ip', address: '10.0.0.1', prefix: 32 }, { kind: 'port', protocol: 6, port: 80 }]],
    ['an ICMP name is type << 8 | code', 'svc', 3, [{ kind: 'address', family: 'ip', address: '10.0.0.2', prefix: 32 }, { kind: 'port', protocol: 1, port: (3 << 8) | 4 }]],
    ['a protocol without ports', 'svc', 4, [{ kind: 'address', family: 'ip', address: '10.0.0.3', prefix: 32 }, { kind: 'port', protocol: 47, port: 0 }]],
    ['a network', 'nets', 0, [{ kind: 'address', family: 'ip', address: '10.1.0.0', prefix: 16 }]],
    ['a host of hash:net is a whole prefix', 'nets', 1, [{ kind: 'address', family: 'ip', address: '10.2.3.4', prefix: 32 }]],
    ["bitmap:port's port has no protocol", 'ports', 0, [{ kind: 'port', protocol: -1, port: 30000 }]],
    ["hash:ip's netmask is the element's prefix", 'masked', 0, [{ kind: 'address', family: 'ip', address: '10.9.8.0', prefix: 24 }]],
    ['a member set by name', 'all', 0, [{ kind: 'name', name: 'svc' }]],
  ])('%s', (_, name, index, parts) => {
    expect(ipsets.find((s) => s.name === name)!.elements[index]!.parts).toEqual(parts);
  });

  it('reads the masks in the family given after them, and a network of a netmask set as the netmask\'s', () => {
    const r = parseIpsetSave('create m hash:ip netmask 64 family inet6\ncreate b hash:ip family inet bitmask 255.255.0.255\ncreate n hash:ip family inet netmask 24\nadd n 10.0.0.0/30\n');
    expect(r.diagnostics).toEqual([]);
    expect(r.ipsets.map((s) => [s.name, s.family, s.netmask, s.bitmask])).toEqual([['m', 'inet6', 64, undefined], ['b', 'inet', undefined, '255.255.0.255'], ['n', 'inet', 24, undefined]]);
    expect(r.ipsets[2]!.elements[0]!.parts).toEqual([{ kind: 'address', family: 'ip', address: '10.0.0.0', prefix: 24 }]);
  });

  it('keeps nomatch, and passes over the extensions of an element', () => {
    expect(ipsets.find((s) => s.name === 'nets')!.elements.map((e) => e.nomatch)).toEqual([true, false]);
    expect(ipsets.find((s) => s.name === 'six')!.elements[0]!.text).toBe('2001:db8::1');
  });

  it.each([
    ['an unknown command', 'flush svc\n', 1, 1, 'expected "create" or "add"'],
    ['an unknown type', 'create s hash:foo family inet\n', 1, 10, 'unknown set type "hash:foo"'],
    ['an element of a set not created', 'add s 10.0.0.1\n', 1, 5, 'set s is not created before this line'],
    ['an element with too few parts', 'create s hash:ip,port\nadd s 10.0.0.1\n', 2, 7, 'a hash:ip,port element has 2 parts'],
    ['an address of the other family', 'create s hash:ip family inet6\nadd s 10.0.0.1\n', 2, 7, '"10.0.0.1" is not an IPv6 address'],
    ['a port above 65535', 'create s hash:ip,port\nadd s 10.0.0.1,tcp:70000\n', 2, 7, '"70000" is not a port'],
    ['a range of addresses (ipset restore input, which save expands)', 'create s hash:ip\nadd s 10.0.0.1-10.0.0.3\n', 2, 7, 'is a range'],
    ['a range of ports', 'create s hash:ip,port\nadd s 10.0.0.1,udp:50-60\n', 2, 7, 'is a range of ports'],
    ['a port for a protocol without ports', 'create s hash:ip,port\nadd s 10.0.0.1,gre:5\n', 2, 7, 'protocol gre has no ports'],
    ['an unknown element option', 'create s hash:ip\nadd s 10.0.0.1 foo\n', 2, 16, 'unknown element option "foo"'],
    ['a set created twice', 'create s hash:ip\ncreate s hash:net\n', 2, 8, 'set s is created twice'],
    ['a list:set holding a list:set', 'create a hash:ip\ncreate l list:set\ncreate m list:set\nadd m l\n', 4, 7, 'list:set m cannot hold list:set l'],
    ['an unterminated comment', 'create s hash:ip comment\nadd s 10.0.0.1 comment "x\n', 2, 24, 'unterminated double quote'],
    ['`ipset list` output, once', 'Name: s\nType: hash:ip\nMembers:\n10.0.0.1\n', 1, 1, 'this is `ipset list` output'],
  ])('reports %s at its place', (_, text, line, column, message) => {
    const result = parseIpsetSave(text, 'bad.ipset');
    expect(result.diagnostics).toHaveLength(1);
    expect(result.diagnostics[0]).toMatchObject({ severity: 'error', code: 'syntax', span: { file: 'bad.ipset', line, column } });
    expect(result.diagnostics[0]!.message).toContain(message);
  });

  it('puts the sets of a node capture beside its tables, and refuses a set two inputs create', () => {
    const dump = '*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m set --match-set svc dst,dst -j ACCEPT\nCOMMIT\n';
    const node = parseRuleset([{ text: dump, file: 'iptables.save' }, { text: SAVED, file: 'node.ipset' }]);
    expect(node.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(node.ruleset.tables.map((t) => t.name)).toEqual(['filter']);
    expect(node.ruleset.ipsets?.map((s) => s.name)).toEqual(['svc', 'nets', 'ports', 'masked', 'six', 'all']);
    const twice = parseRuleset([{ text: SAVED, file: 'a.ipset' }, { text: 'create svc hash:ip\n', file: 'b.ipset' }]);
    expect(twice.diagnostics.filter((d) => d.severity === 'error')).toMatchObject([{ code: 'duplicate-ipset', span: { file: 'b.ipset', line: 1 } }]);
  });
});
