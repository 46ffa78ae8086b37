import { describe, expect, it } from 'vitest';
import { parseNftJson, parseNftJsonStmts } from '../../../src/parser/json/parse-nft-json.js';

const tcpDport = { payload: { protocol: 'tcp', field: 'dport' } };

/** Reads one statement and fails on any diagnostic. */
function readStmt(json: unknown) {
  const { stmts, diagnostics } = parseNftJsonStmts(JSON.stringify([json]));
  expect(diagnostics).toEqual([]);
  expect(stmts).toHaveLength(1);
  return stmts[0];
}

/** A listing with one table `ip t`, plus `items`. */
function listing(...items: unknown[]) {
  return JSON.stringify({
    nftables: [{ metainfo: { json_schema_version: 1 } }, { table: { family: 'ip', name: 't', handle: 1 } }, ...items],
  });
}

describe('statements', () => {
  it.each<[string, unknown, unknown]>([
    [
      'plain equality is the implicit operator',
      { match: { op: '==', left: tcpDport, right: 22 } },
      { kind: 'match', expr: { op: 'implicit', left: { kind: 'payload', protocol: 'tcp', field: 'dport' }, right: { kind: 'literal', text: '22' } } },
    ],
    [
      '"in" with a flag array is an implicit flag-list match',
      { match: { op: 'in', left: { ct: { key: 'state' } }, right: ['established', 'related'] } },
      { kind: 'match', expr: { op: 'implicit', left: { kind: 'ct', key: 'state' }, right: { kind: 'flag-list', items: [{ text: 'established' }, { text: 'related' }] } } },
    ],
    [
      '== after a bitwise left side stays explicit',
      { match: { op: '==', left: { '&': [{ ct: { key: 'mark' } }, 255] }, right: 16 } },
      { kind: 'match', expr: { op: '==', left: { kind: 'binop', op: '&', left: { kind: 'ct', key: 'mark' }, right: { text: '255' } }, right: { text: '16' } } },
    ],
    // As nft 1.0.6 -j lists `tcp flags == syn`, `tcp flags { syn, ack }` and `ct status ! dnat`
    // (checked on Linux 6.18): on a bitmask type "==" is exact against a value, membership
    // against a set.
    [
      '== on a bitmask type against a value stays explicit',
      { match: { op: '==', left: { payload: { protocol: 'tcp', field: 'flags' } }, right: 'syn' } },
      { kind: 'match', expr: { op: '==', right: { text: 'syn', dtype: 'tcp_flag' } } },
    ],
    [
      '== on a bitmask type against a set is membership',
      { match: { op: '==', left: { payload: { protocol: 'tcp', field: 'flags' } }, right: { set: ['syn', 'ack'] } } },
      { kind: 'match', expr: { op: 'implicit', right: { kind: 'set' } } },
    ],
    [
      '"!" types its zero as the flags',
      { match: { op: '!', left: { ct: { key: 'status' } }, right: 'dnat' } },
      { kind: 'match', expr: { op: '==', left: { kind: 'binop', right: { dtype: 'ct_status' } }, right: { text: '0', dtype: 'ct_status' } } },
    ],
    [
      '!= against an anonymous set',
      { match: { op: '!=', left: tcpDport, right: { set: [22, { range: [80, 90] }] } } },
      { kind: 'match', expr: { op: '!=', right: { kind: 'set', elements: [{ key: { text: '22' } }, { key: { kind: 'range', low: { text: '80' }, high: { text: '90' } } }] } } },
    ],
    [
      'a named set reference',
      { match: { op: '==', left: { payload: { protocol: 'ip', field: 'saddr' } }, right: '@allowed' } },
      { kind: 'match', expr: { op: 'implicit', right: { kind: 'set-ref', name: 'allowed' } } },
    ],
    [
      '"!" (no flag set) is (x & flags) == 0',
      { match: { op: '!', left: { payload: { protocol: 'tcp', field: 'flags' } }, right: ['fin', 'rst'] } },
      { kind: 'match', expr: { op: '==', left: { kind: 'binop', op: '&', right: { kind: 'flag-list' } }, right: { text: '0' } } },
    ],
    [
      'a mark literal is typed from its left side',
      { match: { op: '==', left: { meta: { key: 'mark' } }, right: 16384 } },
      { kind: 'match', expr: { left: { kind: 'meta', key: 'mark', qualified: true }, right: { text: '16384', dtype: 'mark', value: { type: 'integer', n: 16384 } } } },
    ],
    [
      'iifname is an unqualified meta key',
      { match: { op: '==', left: { meta: { key: 'iifname' } }, right: 'wt0' } },
      { kind: 'match', expr: { left: { kind: 'meta', key: 'iifname', qualified: false }, right: { text: 'wt0' } } },
    ],
    [
      'ct original ip saddr',
      { match: { op: '==', left: { ct: { key: 'ip saddr', dir: 'original' } }, right: '10.0.0.1' } },
      { kind: 'match', expr: { left: { kind: 'ct', key: 'saddr', dir: 'original', family: 'ip' } } },
    ],
    [
      'mangle of meta mark is meta-set',
      { mangle: { key: { meta: { key: 'mark' } }, value: { '|': [{ meta: { key: 'mark' } }, 16384] } } },
      { kind: 'meta-set', key: 'mark', qualified: true, value: { kind: 'binop', op: '|', left: { kind: 'meta' }, right: { text: '16384' } } },
    ],
    [
      'mangle of ct mark is ct-set',
      { mangle: { key: { ct: { key: 'mark' } }, value: { meta: { key: 'mark' } } } },
      { kind: 'ct-set', key: 'mark', value: { kind: 'meta', key: 'mark' } },
    ],
    [
      'mangle of a header field is payload-set',
      { mangle: { key: { payload: { protocol: 'ip', field: 'daddr' } }, value: '10.0.0.1' } },
      { kind: 'payload-set', target: { kind: 'payload', protocol: 'ip', field: 'daddr' }, value: { text: '10.0.0.1' } },
    ],
    ['an anonymous counter', { counter: { packets: 3, bytes: 120 } }, { kind: 'counter', packets: 3, bytes: 120 }],
    ['a stateless counter', { counter: null }, { kind: 'counter' }],
    ['a named counter', { counter: 'cnt' }, { kind: 'objref', type: 'counter', name: { kind: 'literal', text: 'cnt', quoted: true } }],
    [
      'a counter map',
      { counter: { map: { key: tcpDport, data: { set: [[80, 'http']] } } } },
      { kind: 'objref', type: 'counter', name: { kind: 'map', vmap: false, map: { kind: 'set', elements: [{ key: { text: '80' }, data: { text: 'http' } }] } } },
    ],
    ['ct helper set', { 'ct helper': 'ftp-std' }, { kind: 'objref', type: 'ct helper', name: { text: 'ftp-std' } }],
    ['accept', { accept: null }, { kind: 'verdict', verdict: 'accept' }],
    ['jump', { jump: { target: 'KUBE-SERVICES' } }, { kind: 'verdict', verdict: 'jump', target: 'KUBE-SERVICES' }],
    [
      'vmap with an anonymous map',
      { vmap: { key: { meta: { key: 'iif' } }, data: { set: [['lo', { jump: { target: 'wan' } }]] } } },
      { kind: 'vmap', key: { kind: 'meta', key: 'iif', qualified: false }, map: { kind: 'set', elements: [{ key: { text: 'lo' }, data: { kind: 'verdict', verdict: 'jump', target: 'wan' } }] } },
    ],
    ['vmap with a named map', { vmap: { key: tcpDport, data: '@portmap' } }, { kind: 'vmap', map: { kind: 'set-ref', name: 'portmap' } }],
    [
      'dnat with family, address and port',
      { dnat: { family: 'ip', addr: '10.0.0.1', port: 80 } },
      { kind: 'nat', type: 'dnat', family: 'ip', addr: { text: '10.0.0.1' }, port: { text: '80' }, flags: [] },
    ],
    [
      'snat prefix to a map',
      { snat: { family: 'ip', addr: { map: { key: { payload: { protocol: 'ip', field: 'saddr' } }, data: '@m' } }, type_flags: 'prefix' } },
      { kind: 'nat', type: 'snat', form: 'prefix', addr: { kind: 'map', map: { kind: 'set-ref', name: 'm' } } },
    ],
    ['masquerade with flags', { masquerade: { flags: ['random', 'persistent'] } }, { kind: 'nat', type: 'masquerade', flags: ['random', 'persistent'] }],
    ['bare masquerade', { masquerade: null }, { kind: 'nat', type: 'masquerade', flags: [] }],
    ['redirect to a port', { redirect: { port: 3128 } }, { kind: 'nat', type: 'redirect', port: { text: '3128' } }],
    ['reject with icmpx', { reject: { type: 'icmpx', expr: 'admin-prohibited' } }, { kind: 'reject', with: 'icmpx', code: 'admin-prohibited' }],
    ['reject with tcp reset', { reject: { type: 'tcp reset' } }, { kind: 'reject', with: 'tcp reset' }],
    ['bare reject', { reject: null }, { kind: 'reject' }],
    [
      'log flags as the listing groups them',
      { log: { prefix: 'X ', level: 'debug', flags: ['tcp sequence', 'tcp options', 'ether'] } },
      { kind: 'log', prefix: 'X ', level: 'debug', flags: ['tcp sequence,options', 'ether'] },
    ],
    [
      'limit in bytes',
      { limit: { rate: 1, burst: 0, per: 'second', rate_unit: 'kbytes', burst_unit: 'bytes', inv: true } },
      { kind: 'limit', over: true, rate: 1, unit: 'kbytes', per: 'second' },
    ],
    ['limit in packets with a burst', { limit: { rate: 10, burst: 8, per: 'minute' } }, { kind: 'limit', over: false, rate: 10, unit: 'packets', per: 'minute', burst: 8 }],
    [
      'dnat through an anonymous map types its keys',
      { dnat: { family: 'ip', addr: { map: { key: { meta: { key: 'iifname' } }, data: { set: [['enp2s0', '10.1.1.52']] } } } } },
      { kind: 'nat', addr: { kind: 'map', map: { elements: [{ key: { text: 'enp2s0', dtype: 'ifname' } }] } } },
    ],
    [
      'quota over with used bytes',
      { quota: { val: 500, val_unit: 'bytes', inv: true, used: 12, used_unit: 'bytes' } },
      { kind: 'quota', over: true, amount: 500, unit: 'bytes', used: 12, usedUnit: 'bytes' },
    ],
    [
      'set add with an element timeout and a statement',
      { set: { op: 'add', elem: { elem: { val: { payload: { protocol: 'ip', field: 'saddr' } }, timeout: 90 } }, set: '@meter', stmt: [{ limit: { rate: 10, burst: 5, per: 'second' } }] } },
      { kind: 'set-op', op: 'add', set: 'meter', element: { key: { kind: 'payload', field: 'saddr' }, timeout: '1m30s', stmts: [{ kind: 'limit', rate: 10 }] } },
    ],
    [
      'map update',
      { map: { op: 'update', elem: { payload: { protocol: 'ip', field: 'saddr' } }, data: 2, map: '@m' } },
      { kind: 'set-op', op: 'update', set: 'm', element: { key: { kind: 'payload' }, data: { text: '2' } } },
    ],
    ['an iptables-nft xt match', { xt: { type: 'match', name: 'recent' } }, { kind: 'xt', type: 'match', name: 'recent' }],
    ['queue with a range and flags', { queue: { num: { range: [1, 42] }, flags: ['bypass', 'fanout'] } }, { kind: 'queue', num: { kind: 'range' }, flags: ['bypass', 'fanout'] }],
    ['dup to an address on a device', { dup: { addr: '10.0.0.2', dev: 'lo' } }, { kind: 'dup', addr: { text: '10.0.0.2' }, device: { text: 'lo' } }],
    ['fwd to a device', { fwd: { dev: 'eth0' } }, { kind: 'fwd', device: { text: 'eth0' } }],
    ['tproxy', { tproxy: { family: 'ip6', addr: '::1', port: 80 } }, { kind: 'tproxy', family: 'ip6', addr: { text: '::1' }, port: { text: '80' } }],
    ['synproxy', { synproxy: { mss: 1460, wscale: 7, flags: ['timestamp', 'sack-perm'] } }, { kind: 'synproxy', mss: 1460, wscale: 7, flags: ['timestamp', 'sack-perm'] }],
    ['notrack', { notrack: null }, { kind: 'notrack' }],
    ['flow offload', { flow: { op: 'add', flowtable: '@ft' } }, { kind: 'flow-offload', flowtable: 'ft' }],
    ['reset tcp option', { reset: { 'tcp option': { name: 'maxseg' } } }, { kind: 'option-reset', target: { kind: 'tcp-option', option: 'maxseg' } }],
    ['last used', { last: { used: 500 } }, { kind: 'last', used: '500' }],
    // As nft 1.0.6 -j lists them (checked on Linux 6.18).
    ['ct count over', { 'ct count': { val: 1, inv: true } }, { kind: 'ct-count', count: 1, over: true }],
    [
      'a meter with a concatenated key and an element timeout',
      { meter: { key: { elem: { val: { concat: [{ payload: { protocol: 'ip', field: 'saddr' } }, { payload: { protocol: 'tcp', field: 'dport' } }] }, timeout: 10 } }, stmt: { counter: null }, size: 100, name: 'm2' } },
      { kind: 'set-op', op: 'update', set: 'm2', meter: { size: 100 }, element: { key: { kind: 'concat' }, timeout: '10s', stmts: [{ kind: 'counter' }] } },
    ],
  ])('%s', (_name, json, expected) => {
    expect(readStmt(json)).toMatchObject(expected as object);
  });
});

describe("nft 1.0.6's `[invalid type]` values", () => {
  it.each([
    [{ ct: { key: 'proto-dst', dir: 'original' } }, '0x1f90 [invalid type]', { type: 'integer', n: 8080 }],
    [{ ct: { key: 'ip daddr', dir: 'original' } }, '0xa020304 [invalid type]', { type: 'ipv4', addr: '10.2.3.4' }],
  ])('are read as the key\'s bits, with a warning: %#', (left, right, value) => {
    const { stmts, diagnostics } = parseNftJsonStmts(JSON.stringify([{ match: { op: '==', left, right } }]));
    expect(diagnostics.map((d) => [d.severity, d.code])).toEqual([['warning', 'invalid-type']]);
    expect(stmts[0]).toMatchObject({ kind: 'match', expr: { op: 'implicit', right: { text: right.split(' ')[0], invalidType: true, value } } });
  });
});

describe('values json.c always writes and the listing leaves out when they are the default', () => {
  it.each<[string, unknown, string]>([
    ["a packet burst of 5 (nft's default)", { limit: { rate: 10, burst: 5, per: 'minute' } }, 'burst'],
    ['a quota with nothing used', { quota: { val: 100, val_unit: 'bytes', used: 0 } }, 'used'],
  ])('%s is not in the model', (_name, json, key) => {
    expect(readStmt(json)).not.toHaveProperty(key);
  });
});

describe('expressions', () => {
  it.each<[string, unknown, unknown]>([
    ['prefix', { prefix: { addr: '10.0.0.0', len: 8 } }, { kind: 'prefix', expr: { text: '10.0.0.0' }, length: 8 }],
    ['concat', { concat: [{ payload: { protocol: 'ip', field: 'saddr' } }, tcpDport] }, { kind: 'concat', parts: [{ field: 'saddr' }, { field: 'dport' }] }],
    ['raw payload', { payload: { base: 'nh', offset: 8, len: 8 } }, { kind: 'raw-payload', base: 'nh', offset: 8, length: 8 }],
    ['inner payload', { payload: { tunnel: 'vxlan', protocol: 'ip', field: 'saddr' } }, { kind: 'payload', inner: 'vxlan', protocol: 'ip' }],
    ['exthdr existence', { exthdr: { name: 'hbh' } }, { kind: 'exthdr', header: 'hbh', prefixed: true }],
    ['exthdr field', { exthdr: { name: 'frag', field: 'more-fragments' } }, { kind: 'exthdr', header: 'frag', field: 'more-fragments' }],
    ['tcp option field', { 'tcp option': { name: 'maxseg', field: 'size' } }, { kind: 'tcp-option', option: 'maxseg', field: 'size' }],
    ['raw tcp option', { 'tcp option': { base: 42, offset: 16, len: 4 } }, { kind: 'tcp-option', option: '@42,16,4' }],
    ['ip option', { 'ip option': { name: 'ra', field: 'value' } }, { kind: 'ip-option', option: 'ra', field: 'value' }],
    ['sctp chunk', { 'sctp chunk': { name: 'init', field: 'num-inbound-streams' } }, { kind: 'sctp-chunk', chunk: 'init' }],
    ['fib', { fib: { result: 'oif', flags: ['saddr', 'iif'] } }, { kind: 'fib', result: 'oif', flags: ['saddr', 'iif'] }],
    ['rt nexthop', { rt: { key: 'nexthop', family: 'ip6' } }, { kind: 'rt', key: 'nexthop', family: 'ip6' }],
    ['socket', { socket: { key: 'cgroupv2', level: 1 } }, { kind: 'socket', key: 'cgroupv2', level: 1 }],
    ['osf', { osf: { key: 'version', ttl: 'loose' } }, { kind: 'osf', key: 'version', ttl: 'loose' }],
    ['ipsec', { ipsec: { key: 'daddr', family: 'ip', dir: 'out', spnum: 0 } }, { kind: 'ipsec', key: 'daddr', dir: 'out', family: 'ip' }],
    ['numgen', { numgen: { mode: 'inc', mod: 2, offset: 0 } }, { kind: 'numgen', mode: 'inc', mod: 2 }],
    ['jhash', { jhash: { mod: 2, seed: 3735928559, expr: { payload: { protocol: 'ip', field: 'saddr' } } } }, { kind: 'hash', type: 'jhash', mod: 2, seed: 3735928559, expr: { kind: 'payload' } }],
    ['symhash', { symhash: { mod: 2, offset: 100 } }, { kind: 'hash', type: 'symhash', mod: 2, offset: 100 }],
    [
      'a chained binop associates left',
      { '|': [{ ct: { key: 'mark' } }, 1, 2] },
      { kind: 'binop', op: '|', left: { kind: 'binop', op: '|', left: { kind: 'ct' }, right: { text: '1' } }, right: { text: '2' } },
    ],
    ['a boolean is exists/missing', true, { kind: 'literal', text: 'exists', value: { type: 'boolean', b: true } }],
    ['a big integer keeps its digits', 18446744073709551615, { kind: 'literal', text: '18446744073709551615' }],
    ['the catch-all element', '*', { kind: 'wildcard' }],
    [
      'an element with attributes',
      { elem: { val: 22, timeout: 3600, expires: 59, comment: 'ssh', counter: { packets: 0, bytes: 0 } } },
      { kind: 'element', key: { text: '22' }, timeout: '1h', expires: '59s', comment: 'ssh', stmts: [{ kind: 'counter', packets: 0 }] },
    ],
  ])('%s', (_name, json, expected) => {
    // As the left side of a match, where nothing types it.
    const text = `[{"match": {"op": "==", "left": ${JSON.stringify(json).replace('18446744073709552000', '18446744073709551615')}, "right": 1}}]`;
    const { stmts, diagnostics } = parseNftJsonStmts(text);
    expect(diagnostics).toEqual([]);
    expect(stmts[0]).toMatchObject({ kind: 'match', expr: { left: expected as object } });
  });
});

describe('listing objects', () => {
  it('reads a table with base chains and rules, priorities named as the listing prints them', () => {
    const { ruleset, diagnostics } = parseNftJson(
      listing(
        { chain: { family: 'ip', table: 't', name: 'pre', handle: 0, type: 'nat', hook: 'prerouting', prio: -100, policy: 'accept' } },
        { chain: { family: 'ip', table: 't', name: 'in', handle: 2, type: 'filter', hook: 'input', prio: -5, policy: 'drop' } },
        { chain: { family: 'ip', table: 't', name: 'out', handle: 3, type: 'filter', hook: 'output', prio: 120, policy: 'accept' } },
        { chain: { family: 'ip', table: 't', name: 'user', handle: 4 } },
        { rule: { family: 'ip', table: 't', chain: 'in', handle: 5, comment: 'c', expr: [{ accept: null }] } },
      ),
    );
    expect(diagnostics).toEqual([]);
    const [table] = ruleset.tables;
    expect(table).toMatchObject({ family: 'ip', name: 't', handle: 1, flags: [] });
    expect(table!.chains.map((c) => [c.name, c.handle, c.base?.priority.name, c.base?.priority.offset, c.base?.priority.value, c.base?.policy])).toEqual([
      ['pre', undefined, 'dstnat', 0, -100, 'accept'],
      ['in', 2, 'filter', -5, -5, 'drop'],
      ['out', 3, undefined, 120, 120, 'accept'],
      ['user', 4, undefined, undefined, undefined, undefined],
    ]);
    expect(table!.chains[1]!.rules).toMatchObject([{ kind: 'rule', handle: 5, comment: 'c', stmts: [{ kind: 'verdict', verdict: 'accept' }] }]);
  });

  it("types a conntrack address without a family by its table's (nft -j of an ip6 table)", () => {
    const { ruleset, diagnostics } = parseNftJson(
      JSON.stringify({
        nftables: [
          { table: { family: 'ip6', name: 't', handle: 1 } },
          { chain: { family: 'ip6', table: 't', name: 'c', handle: 2 } },
          { rule: { family: 'ip6', table: 't', chain: 'c', handle: 3, expr: [{ match: { op: '==', left: { ct: { key: 'daddr', dir: 'original' } }, right: '2001:db8::1' } }] } },
        ],
      }),
    );
    expect(diagnostics).toEqual([]);
    expect(ruleset.tables[0]!.chains[0]!.rules[0]!.stmts[0]).toMatchObject({ kind: 'match', expr: { right: { kind: 'literal', dtype: 'ipv6_addr', value: { type: 'ipv6', addr: '2001:db8::1' } } } });
  });

  it('reads netdev devices, single and listed', () => {
    const { ruleset } = parseNftJson(
      JSON.stringify({
        nftables: [
          { table: { family: 'netdev', name: 'n', handle: 1 } },
          { chain: { family: 'netdev', table: 'n', name: 'a', handle: 2, dev: 'lo', type: 'filter', hook: 'ingress', prio: 0, policy: 'accept' } },
          { chain: { family: 'netdev', table: 'n', name: 'b', handle: 3, dev: ['eth0', 'lo'], type: 'filter', hook: 'ingress', prio: 0, policy: 'accept' } },
        ],
      }),
    );
    expect(ruleset.tables[0]!.chains.map((c) => [c.base?.devices, c.base?.deviceList])).toEqual([
      [['lo'], undefined],
      [['eth0', 'lo'], true],
    ]);
  });

  it("marks an ingress chain without \"dev\" as on unknown devices, as nft 1.0.6 -j lists every one", () => {
    const { ruleset, diagnostics } = parseNftJson(
      JSON.stringify({
        nftables: [
          { table: { family: 'netdev', name: 'n', handle: 1 } },
          { chain: { family: 'netdev', table: 'n', name: 'a', handle: 2, type: 'filter', hook: 'ingress', prio: 0, policy: 'accept' } },
        ],
      }),
    );
    expect(ruleset.tables[0]!.chains[0]!.base).toMatchObject({ devices: [], devicesUnknown: true });
    expect(diagnostics.map((d) => [d.severity, d.code])).toEqual([['warning', 'devices-unknown']]);
  });

  it('reads sets and maps: concatenated and typeof keys, flags, timeouts and elements', () => {
    const { ruleset, diagnostics } = parseNftJson(
      listing(
        {
          set: {
            family: 'ip', name: 's', table: 't', type: ['ipv4_addr', 'inet_service'], handle: 2, flags: ['interval', 'timeout'], timeout: 3600, size: 65535,
            elem: [{ concat: [{ prefix: { addr: '10.0.0.0', len: 8 } }, 22] }, { elem: { val: { concat: ['1.1.1.1', 80] }, timeout: 90, comment: 'x' } }],
          },
        },
        { map: { family: 'ip', name: 'm', table: 't', type: { typeof: { meta: { key: 'mark' } } }, map: 'verdict', handle: 3, elem: [[16384, { drop: null }]], stmt: [{ counter: null }] } },
      ),
    );
    expect(diagnostics).toEqual([]);
    const [s, m] = ruleset.tables[0]!.sets;
    expect(s).toMatchObject({
      isMap: false, name: 's', key: { kind: 'type', names: ['ipv4_addr', 'inet_service'] }, flags: ['interval', 'timeout'], timeout: '1h', size: 65535,
      elements: [{ key: { kind: 'concat', parts: [{ kind: 'prefix' }, { text: '22' }] } }, { key: { kind: 'concat' }, timeout: '1m30s', comment: 'x' }],
    });
    expect(m).toMatchObject({
      isMap: true, key: { kind: 'typeof', expr: { kind: 'meta', key: 'mark' } }, data: { kind: 'type', names: ['verdict'] }, stmts: [{ kind: 'counter' }],
      elements: [{ key: { text: '16384', dtype: 'mark' }, data: { kind: 'verdict', verdict: 'drop' } }],
    });
  });

  it.each<[string, unknown, unknown]>([
    ['counter', { counter: { family: 'ip', name: 'c', table: 't', handle: 2, packets: 1, bytes: 2 } }, { kind: 'counter-object', name: 'c', packets: 1, bytes: 2 }],
    ['quota', { quota: { family: 'ip', name: 'q', table: 't', handle: 2, bytes: 100, used: 5, inv: true } }, { kind: 'quota-object', over: true, bytes: 100, used: 5 }],
    ['limit', { limit: { family: 'ip', name: 'l', table: 't', handle: 2, rate: 5, per: 'hour', burst: 0 } }, { kind: 'limit-object', limit: { rate: 5, per: 'hour', unit: 'packets' } }],
    ['ct helper', { 'ct helper': { family: 'ip', name: 'h', table: 't', handle: 2, type: 'ftp', protocol: 'tcp', l3proto: 'ip' } }, { kind: 'ct-helper-object', helper: 'ftp', protocol: 'tcp', l3proto: 'ip' }],
    ['ct timeout', { 'ct timeout': { family: 'ip', name: 'to', table: 't', handle: 2, protocol: 'tcp', l3proto: 'ip', policy: { established: 122, close: 12 } } }, { kind: 'ct-timeout-object', policy: [{ state: 'established', timeout: '122' }, { state: 'close', timeout: '12' }] }],
    ['ct expectation', { 'ct expectation': { family: 'ip', name: 'e', table: 't', handle: 2, protocol: 'tcp', dport: 9876, timeout: 60000, size: 12, l3proto: 'ip' } }, { kind: 'ct-expectation-object', dport: 9876, timeout: '1m', size: 12 }],
    ['secmark', { secmark: { family: 'ip', name: 'sm', table: 't', handle: 2, context: 'system_u:object_r:ssh_server_packet_t:s0' } }, { kind: 'secmark-object', context: 'system_u:object_r:ssh_server_packet_t:s0' }],
    ['synproxy', { synproxy: { family: 'ip', name: 'sp', table: 't', handle: 2, mss: 1460, wscale: 7, flags: 'timestamp' } }, { kind: 'synproxy-object', mss: 1460, wscale: 7, flags: ['timestamp'] }],
    ['tunnel (kept opaque)', { tunnel: { family: 'ip', name: 'tu', table: 't', handle: 2, id: 10 } }, { kind: 'opaque-object', type: 'tunnel', body: ['id 10'] }],
  ])('reads a %s object', (_name, json, expected) => {
    const { ruleset, diagnostics } = parseNftJson(listing(json));
    expect(diagnostics).toEqual([]);
    expect(ruleset.tables[0]!.objects).toMatchObject([expected as object]);
  });

  describe('what nft 1.0.6 JSON leaves out or garbles, restored where the listing proves it', () => {
    const set = (name: string, extra: object = {}) => ({ set: { family: 'ip', name, table: 't', type: 'ipv4_addr', handle: 2, ...extra } });
    const rule = (...expr: unknown[]) => ({ rule: { family: 'ip', table: 't', chain: 'c', handle: 9, expr } });

    it('a single table flag that is no flag name (json.c frees it before printing) reads as dormant, with a warning', () => {
      const { ruleset, diagnostics } = parseNftJson(JSON.stringify({ nftables: [{ table: { family: 'ip', name: 'x', handle: 1, flags: 'x' } }] }));
      expect(ruleset.tables[0]!.flags).toEqual(['dormant']);
      expect(diagnostics).toMatchObject([{ severity: 'warning', code: 'unreadable' }]);
    });

    it('table flags that are flag names are read as they are', () => {
      const { ruleset, diagnostics } = parseNftJson(JSON.stringify({ nftables: [{ table: { family: 'ip', name: 'x', handle: 1, flags: ['dormant', 'owner'] } }] }));
      expect(ruleset.tables[0]!.flags).toEqual(['dormant', 'owner']);
      expect(diagnostics).toEqual([]);
    });

    it.each<[string, unknown[], string[]]>([
      ['a set a rule adds to is dynamic, in listing order', [set('s', { flags: ['interval'] }), rule({ set: { op: 'add', elem: { payload: { protocol: 'ip', field: 'saddr' } }, set: '@s' } })], ['dynamic', 'interval']],
      ['a set no rule updates is not', [set('s', { flags: ['interval'] })], ['interval']],
      ['a map a rule updates is not (map statements leave the flags alone)', [{ map: { family: 'ip', name: 's', table: 't', type: 'ipv4_addr', map: 'mark', handle: 2 } }, rule('update @s { ip saddr : 0x00000001 }')], []],
      ['a set whose elements carry statements it does not declare is dynamic', [set('s', { elem: [{ elem: { val: '1.1.1.1', counter: { packets: 0, bytes: 0 } } }] })], ['dynamic']],
      ['`timeout` alone is left out when the set has a default timeout', [set('s', { flags: ['timeout'], timeout: 60 })], []],
      ['`timeout` stays beside another flag', [set('s', { flags: ['timeout'], timeout: 60 }), rule({ set: { op: 'update', elem: { payload: { protocol: 'ip', field: 'saddr' } }, set: '@s' } })], ['dynamic', 'timeout']],
    ])('%s', (_name, items, flags) => {
      const { ruleset, diagnostics } = parseNftJson(listing({ chain: { family: 'ip', table: 't', name: 'c', handle: 1 } }, ...items));
      expect(diagnostics).toEqual([]);
      expect(ruleset.tables[0]!.sets[0]!.flags).toEqual(flags);
    });

    it("a map's concatenated data type (one string in JSON) reads as its parts, and range data means `: interval`", () => {
      const { ruleset } = parseNftJson(
        listing({ map: { family: 'ip', name: 'm', table: 't', type: 'ipv4_addr', map: 'ipv4_addr . inet_service', handle: 2, flags: ['interval'], elem: [['1.1.1.1', { concat: [{ range: ['10.0.0.1', '10.0.0.3'] }, 80] }]] } }),
      );
      expect(ruleset.tables[0]!.sets[0]).toMatchObject({ data: { kind: 'type', names: ['ipv4_addr', 'inet_service'] }, dataInterval: true });
    });

    it("an element's statements after the first (which JSON drops) come from the set's declaration", () => {
      const { ruleset } = parseNftJson(
        listing(set('s', { elem: [{ elem: { val: '1.1.1.1', limit: { rate: 1, burst: 5, per: 'second' } } }], stmt: [{ limit: { rate: 1, burst: 5, per: 'second' } }, { counter: null }] })),
      );
      const stmts = ruleset.tables[0]!.sets[0]!.elements![0]!.stmts;
      expect(stmts).toMatchObject([{ kind: 'limit', rate: 1 }, { kind: 'counter' }]);
      // The counter's state is not in the JSON.
      expect(stmts![1]).not.toHaveProperty('packets');
    });
  });

  it('reads a flowtable', () => {
    const { ruleset } = parseNftJson(listing({ flowtable: { family: 'ip', name: 'f', table: 't', handle: 2, hook: 'ingress', prio: 5, dev: ['eth0', 'eth1'] } }));
    expect(ruleset.tables[0]!.flowtables).toMatchObject([{ name: 'f', hook: 'ingress', priority: { name: 'filter', offset: 5, value: 5 }, devices: ['eth0', 'eth1'] }]);
  });
});

describe('spans', () => {
  it('point at the JSON object of each node, with 1-based line and column', () => {
    const text = '{"nftables": [\n  {"table": {"family": "ip", "name": "t", "handle": 1}},\n  {"rule": {"family": "ip", "table": "t", "chain": "c", "expr": [\n    {"accept": null}]}}]}';
    const { ruleset } = parseNftJson(text, { file: 'x.json' });
    const table = ruleset.tables[0]!;
    expect(table.span).toMatchObject({ file: 'x.json', line: 2, column: 3 });
    const stmt = table.chains[0]!.rules[0]!.stmts[0]!;
    expect(stmt.span).toMatchObject({ line: 4, column: 5 });
    expect(text.slice(stmt.span.start, stmt.span.end)).toBe('{"accept": null}');
  });
});

describe('what nftsim does not model is kept and reported', () => {
  it.each<[string, unknown, string]>([
    ['an unknown statement', { frobnicate: { x: 1 } }, 'unknown statement "frobnicate"'],
    ['an unknown expression inside a match', { match: { op: '==', left: { wibble: {} }, right: 1 } }, 'unknown expression "wibble"'],
    ['an unknown operator', { match: { op: '~', left: tcpDport, right: 1 } }, 'unknown match operator "~"'],
  ])('%s becomes an unsupported statement with its JSON', (_name, json, message) => {
    const { stmts, diagnostics } = parseNftJsonStmts(JSON.stringify([json]));
    expect(stmts).toMatchObject([{ kind: 'unsupported', text: JSON.stringify(json) }]);
    expect(diagnostics).toMatchObject([{ severity: 'warning', code: 'unsupported' }]);
    expect(diagnostics[0]!.message).toContain(message);
  });

  it('a statement nft wrote as text is read as nft text, its spans inside the JSON string', () => {
    const text = '["update @m { ip saddr : 0x00000001 }"]';
    const { stmts, diagnostics } = parseNftJsonStmts(text);
    expect(diagnostics).toEqual([]);
    expect(stmts).toMatchObject([{ kind: 'set-op', op: 'update', set: 'm', element: { key: { kind: 'payload', field: 'saddr' } } }]);
    const key = (stmts[0] as { element: { key: { span: { start: number; end: number; column: number } } } }).element.key;
    expect([text.slice(key.span.start, key.span.end), key.span.column]).toEqual(['ip saddr', text.indexOf('ip saddr') + 1]);
  });

  it('a text statement with JSON escapes (an anonymous chain) is kept verbatim', () => {
    const { stmts, diagnostics } = parseNftJsonStmts('["jump {\\n\\t\\taccept\\n\\t}"]');
    expect(stmts).toMatchObject([{ kind: 'unsupported', text: 'jump {\n\t\taccept\n\t}' }]);
    expect(diagnostics).toMatchObject([{ severity: 'warning', message: expect.stringContaining('statement without a JSON form'), span: { line: 1, column: 2 } }]);
  });

  it('an unknown key is reported where it is, the rest is read', () => {
    const text = '[{"counter": {"packets": 1, "bytes": 2, "extra": 3}}]';
    const { stmts, diagnostics } = parseNftJsonStmts(text);
    expect(stmts).toMatchObject([{ kind: 'counter', packets: 1, bytes: 2 }]);
    expect(diagnostics).toMatchObject([{ severity: 'warning', message: 'unknown key "extra" in "counter" ignored', span: { column: text.indexOf('"extra"') + 1 } }]);
  });

  it('an unknown listing object is reported', () => {
    const { diagnostics } = parseNftJson(listing({ gizmo: { family: 'ip', table: 't' } }));
    expect(diagnostics).toMatchObject([{ severity: 'warning', code: 'unsupported', message: 'unsupported listing object: unknown object "gizmo"' }]);
  });

  // nft 1.0.6 -j writes no "expr" for a rule it cannot list (`ct label { 5, 70 } numgen random
  // mod 3 vmap { … }`, checked on Linux 6.18).
  it('a rule without "expr" is kept as a rule nftsim cannot know, with a warning', () => {
    const { ruleset, diagnostics } = parseNftJson(listing({ chain: { family: 'ip', table: 't', name: 'c', handle: 2 } }, { rule: { family: 'ip', table: 't', chain: 'c', handle: 3 } }));
    expect(ruleset.tables[0]!.chains[0]!.rules).toMatchObject([{ handle: 3, stmts: [{ kind: 'unsupported', test: true }] }]);
    expect(diagnostics).toMatchObject([{ severity: 'warning', code: 'unlisted-rule', span: { line: 1 } }]);
  });
});

describe('malformed input', () => {
  it.each<[string, string, number, number, string]>([
    ['a missing comma', '{"nftables": [\n  {"table": {"family": "ip" "name": "t"}}]}', 2, 29, 'comma expected'],
    ['a trailing comma', '{"nftables": [{"table": {"name": "t",}}]}', 1, 38, 'property name expected'],
    ['truncated input', '{"nftables": [', 1, 15, 'close bracket expected'],
    ['an unquoted word', '{"nftables": [table]}', 1, 15, 'invalid symbol'],
    // Deeper than the stack would go: an error, not a crash.
    ['arrays nested 10,000 deep', `{"nftables": [${'['.repeat(10_000)}${']'.repeat(10_000)}]}`, 1, 113, 'nesting deeper than 100 levels'],
  ])('%s is an error at its position', (_name, text, line, column, message) => {
    const { diagnostics } = parseNftJson(text, { file: 'bad.json' });
    expect(diagnostics[0]).toMatchObject({ severity: 'error', code: 'syntax', span: { file: 'bad.json', line, column } });
    expect(diagnostics[0]!.message).toContain(message);
  });

  it.each([
    ['empty input', ''],
    ['not a listing', '{"tables": []}'],
    ['an array', '[]'],
  ])('%s is an error, not a crash', (_name, text) => {
    const { ruleset, diagnostics } = parseNftJson(text);
    expect(ruleset.tables).toEqual([]);
    expect(diagnostics.some((d) => d.severity === 'error')).toBe(true);
  });
});

// nft refuses a set without a key and a map without data, as the text parser does.
describe('sets nft refuses', () => {
  it.each([
    ['a set without a key', { set: { family: 'ip', table: 't', name: 's' } }, 'set definition does not specify key'],
    ['a map without a key', { map: { family: 'ip', table: 't', name: 'm', map: 'mark' } }, 'map definition does not specify key'],
    ['a map without data', { map: { family: 'ip', table: 't', name: 'm', type: 'ipv4_addr' } }, 'map definition does not specify mapping data type'],
  ])('%s is an error, and the set is kept', (_name, item, message) => {
    const { ruleset, diagnostics } = parseNftJson(listing(item));
    expect(diagnostics.map((d) => [d.severity, d.message])).toEqual([['error', message]]);
    expect(ruleset.tables[0]!.sets).toHaveLength(1);
  });
});
