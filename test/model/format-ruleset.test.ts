import { describe, expect, it } from 'vitest';
import type { Chain, Expr, Literal, NamedSet, Relational, Rule, Span, Stmt, Table } from '../../src/model/ast.js';
import { typeAgainst, typeLiteral } from '../../src/model/datatypes.js';
import { formatRuleset, formatStmt } from '../../src/model/format-ruleset.js';

const span: Span = { file: 't', start: 0, end: 0, line: 1, column: 1 };
const lit = (text: string, quoted = false): Literal => ({ kind: 'literal', span, text, ...(quoted ? { quoted } : {}) });
const payload = (protocol: string, field: string): Expr => ({ kind: 'payload', span, protocol, field });
const meta = (key: string): Expr => ({ kind: 'meta', span, key, qualified: false });
const ct = (key: string): Expr => ({ kind: 'ct', span, key });
const match = (left: Expr, right: Expr, op: Relational['op'] = 'implicit', slash = false): Stmt => ({
  kind: 'match',
  span,
  expr: { kind: 'relational', span, op, left, right: typeAgainst(right, left), ...(slash ? { slash } : {}) },
});
const flags = (...items: string[]): Expr => ({ kind: 'flag-list', span, items: items.map((i) => lit(i)) });
const and = (left: Expr, right: Expr): Expr => ({ kind: 'binop', span, op: '&', left, right: typeAgainst(right, left) });
const accept: Stmt = { kind: 'verdict', span, verdict: 'accept' };
const rule = (...stmts: Stmt[]): Rule => ({ kind: 'rule', span, stmts });
const table = (over: Partial<Table>): Table => ({
  kind: 'table', span, family: 'inet', name: 't', flags: [], objects: [], sets: [], flowtables: [], chains: [], ...over,
});
const chain = (over: Partial<Chain>): Chain => ({ kind: 'chain', span, name: 'c', rules: [], ...over });

describe('formatStmt', () => {
  it.each<[string, Stmt, string]>([
    ['a port match', match(payload('tcp', 'dport'), lit('ssh')), 'tcp dport 22'],
    ['a mark in 0x%08x', match(meta('mark'), lit('0x4000')), 'meta mark 0x00004000'],
    ['unqualified meta keys', match(meta('iifname'), lit('eth0', true)), 'iifname "eth0"'],
    ['a ct state flag list', match(ct('state'), flags('established', 'related')), 'ct state established,related'],
    ['an explicit == on flags as an OR', match(ct('state'), flags('established', 'related'), '=='), 'ct state established | related'],
    ['a != match', match(payload('ip', 'saddr'), lit('10.0.0.1'), '!='), 'ip saddr != 10.0.0.1'],
    [
      'a masked mark with ==',
      match(and(meta('mark'), lit('0xff')), lit('0x10')),
      'meta mark & 0x000000ff == 0x00000010',
    ],
    [
      'the 1.0.6 tcp flags bitmask form',
      match(and(payload('tcp', 'flags'), flags('syn', 'ack')), lit('syn'), 'implicit', true),
      'tcp flags syn / syn,ack',
    ],
    [
      'the bitmask form detected without the slash hint (JSON)',
      match(and(payload('tcp', 'flags'), flags('fin', 'syn', 'rst', 'ack')), lit('syn'), '!='),
      'tcp flags != syn / fin,syn,rst,ack',
    ],
    [
      'one flag tested for itself as a binary operation, as nft 1.0.6 lists it',
      match(and(payload('tcp', 'flags'), lit('syn')), lit('syn'), 'implicit', true),
      'tcp flags & syn == syn',
    ],
    ['no flag set as nft 1.0.6 lists it (JSON op "!")', match(and(payload('tcp', 'flags'), lit('cwr')), lit('0x0'), '=='), 'tcp flags ! cwr'],
    ['one flag tested for another in the bitmask form', match(and(payload('tcp', 'flags'), lit('ack')), lit('syn')), 'tcp flags syn / ack'],
    [
      'a bitmask mask against a set, in parentheses',
      match(and(payload('tcp', 'flags'), flags('ack', 'urg')), {
        kind: 'set', span, elements: [{ kind: 'element', span, key: lit('ack') }],
      }, '=='),
      'tcp flags & (ack | urg) == { ack }',
    ],
    [
      'shift operands with precedence parentheses',
      {
        kind: 'ct-set', span, key: 'mark',
        value: { kind: 'binop', span, op: '<<', left: { kind: 'binop', span, op: '|', left: { kind: 'meta', span, key: 'mark', qualified: true }, right: typeLiteral(lit('0x10'), 'mark') }, right: lit('8') },
      },
      'ct mark set (meta mark | 0x00000010) << 8',
    ],
    ['a range of symbols numerically', match(payload('ip', 'protocol'), { kind: 'range', span, low: lit('10'), high: lit('20') }), 'ip protocol 10-20'],
    ['a counter', { kind: 'counter', span, packets: 1, bytes: 2 }, 'counter packets 1 bytes 2'],
    ['log without the default level', { kind: 'log', span, prefix: 'x ', level: 'warn', flags: ['ip options', 'ether'] }, 'log prefix "x " flags ip options flags ether'],
    ['limit without the default burst', { kind: 'limit', span, over: false, rate: 10, unit: 'packets', per: 'second', burst: 5 }, 'limit rate 10/second'],
    ['limit bytes in the largest unit', { kind: 'limit', span, over: true, rate: 1024, unit: 'bytes', per: 'second', burst: 1024, burstUnit: 'bytes' }, 'limit rate over 1 kbytes/second burst 1 kbytes'],
    ['quota with used', { kind: 'quota', span, over: true, amount: 10, unit: 'mbytes', used: 1024, usedUnit: 'bytes' }, 'quota over 10 mbytes used 1 kbytes'],
    ['a meta set', { kind: 'meta-set', span, key: 'mark', qualified: false, value: typeLiteral(lit('1'), 'mark') }, 'meta mark set 0x00000001'],
    ['a dnat with an IPv6 address and port', { kind: 'nat', span, type: 'dnat', family: 'ip6', addr: typeLiteral(lit('2001:db8::10'), 'ipv6_addr'), port: lit('443'), flags: [] }, 'dnat ip6 to [2001:db8::10]:443'],
    ['masquerade with a port range and flags', { kind: 'nat', span, type: 'masquerade', port: { kind: 'range', span, low: lit('1024'), high: lit('2048') }, flags: ['random', 'persistent'] }, 'masquerade to :1024-2048 random,persistent'],
    ['reject with a code', { kind: 'reject', span, with: 'icmpx', code: 'admin-prohibited' }, 'reject with icmpx admin-prohibited'],
    ['a named counter reference', { kind: 'objref', span, type: 'counter', name: lit('c1') }, 'counter name "c1"'],
    ['a set update', { kind: 'set-op', span, op: 'update', set: 's', element: { kind: 'element', span, key: payload('ip', 'saddr'), timeout: '1m', stmts: [{ kind: 'counter', span }] } }, 'update @s { ip saddr timeout 1m counter }'],
    ['a blank xt match as nothing', { kind: 'xt', span, type: 'match', blank: true }, ''],
  ])('prints %s', (_name, stmt, expected) => {
    expect(formatStmt(stmt)).toBe(expected);
  });

  it.each<['ip' | 'ip6' | 'inet', 'icmp' | 'icmpv6' | 'icmpx', string]>([
    ['ip', 'icmp', 'reject'],
    ['ip6', 'icmpv6', 'reject'],
    ['inet', 'icmpx', 'reject'],
    ['inet', 'icmp', 'reject with icmp port-unreachable'],
  ])('in family %s prints reject with %s port-unreachable as %j', (family, w, expected) => {
    expect(formatStmt({ kind: 'reject', span, with: w, code: 'port-unreachable' }, family)).toBe(expected);
  });
});

describe('formatRuleset', () => {
  it('lays out a table with objects, sets and chains like nft 1.0.6', () => {
    const set: NamedSet = {
      kind: 'set', span, isMap: false, name: 's', key: { kind: 'type', names: ['inet_service'] }, flags: ['interval'],
      stmts: [], elements: ['1', '2', '3', '4', '5', '6', '7'].map((n) => ({ kind: 'element' as const, span, key: typeLiteral(lit(n), 'inet_service') })),
    };
    const ruleset = {
      kind: 'ruleset' as const,
      tables: [
        table({
          flags: ['dormant'],
          objects: [{ kind: 'counter-object', span, name: 'cnt', comment: 'cc', packets: 0, bytes: 0 }],
          sets: [set],
          chains: [
            chain({
              name: 'input', comment: 'in',
              base: { type: 'filter', hook: 'input', priority: { span, offset: -5, name: 'filter', value: -5 }, devices: [] },
              rules: [rule(match(payload('tcp', 'dport'), lit('22')), accept), { ...rule(accept), comment: 'ok', handle: 7 }],
            }),
            chain({ name: 'empty' }),
          ],
        }),
        table({ family: 'netdev', name: 'n', chains: [chain({ base: { type: 'filter', hook: 'ingress', priority: { span, offset: 0, value: 0 }, devices: ['lo', 'eth0'] } })] }),
      ],
    };
    expect(formatRuleset(ruleset)).toBe(
      [
        'table inet t {',
        '\tflags dormant',
        '',
        '\tcounter cnt {',
        '\t\tcomment "cc"',
        '\t\tpackets 0 bytes 0',
        '\t}',
        '',
        '\tset s {',
        '\t\ttype inet_service',
        '\t\tflags interval',
        '\t\telements = { 1, 2, 3, 4, 5,',
        '\t\t\t     6, 7 }',
        '\t}',
        '',
        '\tchain input {',
        '\t\tcomment "in"',
        '\t\ttype filter hook input priority filter - 5; policy accept;',
        '\t\ttcp dport 22 accept',
        '\t\taccept comment "ok"',
        '\t}',
        '',
        '\tchain empty {',
        '\t}',
        '}',
        'table netdev n {',
        '\tchain c {',
        '\t\ttype filter hook ingress devices = { lo, eth0 } priority filter; policy accept;',
        '\t}',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('prints a chain binding inline at the jump that targets it', () => {
    const bound = chain({ name: '__chain0', flags: ['binding'], rules: [rule({ kind: 'counter', span, packets: 0, bytes: 0 }, accept)] });
    const jump: Stmt = { kind: 'verdict', span, verdict: 'jump', target: '__chain0' };
    const ruleset = { kind: 'ruleset' as const, tables: [table({ chains: [chain({ name: 'y', rules: [rule(match(meta('l4proto'), lit('tcp')), jump)] }), bound] })] };
    expect(formatRuleset(ruleset)).toBe(
      'table inet t {\n\tchain y {\n\t\tmeta l4proto tcp jump {\n\t\t\tcounter packets 0 bytes 0 accept\n\t\t}\n\t}\n}\n',
    );
  });

  it('prints iptables-nft xlate operators the way they were written', () => {
    const stmt: Stmt = {
      kind: 'meta-set', span, key: 'mark', qualified: true,
      value: { kind: 'binop', span, op: '|', word: true, left: meta('mark'), right: lit('0x4000') },
    };
    expect(formatStmt(stmt)).toBe('meta mark set mark or 0x4000');
  });

  it('prints handles when asked', () => {
    const ruleset = {
      kind: 'ruleset' as const,
      tables: [table({ handle: 1, chains: [chain({ handle: 2, rules: [{ ...rule(accept), handle: 3 }] })] })],
    };
    expect(formatRuleset(ruleset, { handles: true })).toBe(
      'table inet t { # handle 1\n\tchain c { # handle 2\n\t\taccept # handle 3\n\t}\n}\n',
    );
  });
});
