import { describe, expect, it } from 'vitest';
import type { Expr, Literal, Span } from '../../src/model/ast.js';
import {
  datatypeOf,
  formatValue,
  readIptablesIcmpType,
  readIptablesRejectWith,
  typeAgainst,
  typeLiteral,
} from '../../src/model/datatypes.js';

const span: Span = { file: 't', start: 0, end: 0, line: 1, column: 1 };
const lit = (text: string, quoted = false): Literal => ({ kind: 'literal', span, text, ...(quoted ? { quoted } : {}) });
const payload = (protocol: string, field: string): Expr => ({ kind: 'payload', span, protocol, field });
const meta = (key: string): Expr => ({ kind: 'meta', span, key, qualified: true });
const ct = (key: string): Expr => ({ kind: 'ct', span, key });

describe('datatypeOf', () => {
  it.each([
    [payload('ip', 'saddr'), 'ipv4_addr', 32],
    [payload('ip6', 'daddr'), 'ipv6_addr', 128],
    [payload('tcp', 'dport'), 'inet_service', 16],
    [payload('tcp', 'flags'), 'tcp_flag', 8],
    [payload('ip', 'dscp'), 'dscp', 6],
    [payload('ether', 'type'), 'ether_type', 16],
    [meta('mark'), 'mark', 32],
    [meta('iifname'), 'ifname', 128],
    [meta('l4proto'), 'inet_proto', 8],
    [meta('time'), 'date', 64],
    [ct('state'), 'ct_state', 32],
    [ct('expiration'), 'time', 32],
    [{ kind: 'fib', span, flags: ['daddr'], result: 'type' } as Expr, 'fib_addrtype', 32],
    [{ kind: 'raw-payload', span, base: 'nh', offset: 8, length: 8 } as Expr, 'xinteger', 8],
  ])('types %j as %s', (expr, name, bits) => {
    expect(datatypeOf(expr)).toEqual({ name, bits });
  });

  it('types a concatenation as the concatenation of its parts', () => {
    const t = datatypeOf({ kind: 'concat', span, parts: [payload('ip', 'saddr'), payload('tcp', 'dport')] });
    expect(t?.name).toBe('ipv4_addr . inet_service');
    expect(t?.bits).toBe(48);
    expect(t?.parts?.map((p) => p.name)).toEqual(['ipv4_addr', 'inet_service']);
  });

  it('knows nothing about an unknown payload field', () => {
    expect(datatypeOf(payload('ip', 'nonsense'))).toBeUndefined();
  });
});

describe('typeLiteral and formatValue', () => {
  it.each([
    ['mark', '0x4000', { type: 'integer', n: 0x4000 }, '0x00004000'],
    ['mark', '1', { type: 'integer', n: 1 }, '0x00000001'],
    ['inet_service', 'ssh', { type: 'integer', n: 22 }, '22'],
    ['inet_service', '443', { type: 'integer', n: 443 }, '443'],
    ['inet_proto', '6', { type: 'integer', n: 6 }, 'tcp'],
    ['inet_proto', 'icmpv6', { type: 'integer', n: 58 }, 'ipv6-icmp'],
    ['ct_state', 'established', { type: 'integer', n: 2 }, 'established'],
    ['dscp', 'af11', { type: 'integer', n: 0x0a }, 'af11'],
    ['dscp', '0', { type: 'integer', n: 0 }, 'cs0'],
    ['icmp_code', '1', { type: 'integer', n: 1 }, 'host-unreachable'],
    ['ether_type', '0x8100', { type: 'integer', n: 0x8100 }, '8021q'],
    ['ipv4_addr', '10.0.0.1', { type: 'ipv4', addr: '10.0.0.1' }, '10.0.0.1'],
    ['ipv6_addr', '2001:DB8:0:0:0:0:0:1', { type: 'ipv6', addr: '2001:db8::1' }, '2001:db8::1'],
    ['ipv6_addr', '::ffff:1.2.3.4', { type: 'ipv6', addr: '::ffff:1.2.3.4' }, '::ffff:1.2.3.4'],
    ['ether_addr', '0:F:54:c:11:4', { type: 'ether', addr: '00:0f:54:0c:11:04' }, '00:0f:54:0c:11:04'],
    ['ifname', 'eth0', { type: 'string', s: 'eth0' }, '"eth0"'],
    ['iface_index', 'lo', { type: 'string', s: 'lo' }, '"lo"'],
    ['iface_index', '0', { type: 'integer', n: 0 }, '0'],
    ['time', '90s', { type: 'integer', n: 90_000 }, '1m30s'],
    ['hour', '17:00', { type: 'integer', n: 61_200 }, '"17:00"'],
    ['day', 'Saturday', { type: 'integer', n: 6 }, '"Saturday"'],
    ['devgroup', '0', { type: 'integer', n: 0 }, '"default"'],
    ['classid', '1:1234', { type: 'integer', n: 0x11234 }, '1:1234'],
    ['integer', '0x2000', { type: 'integer', n: 8192 }, '8192'],
    ['xinteger', '0', { type: 'integer', n: 0 }, '0x0'],
    ['xinteger', '0x870697a7a6173656f03636f6d00', { type: 'bigint', hex: '870697a7a6173656f03636f6d00' }, '0x870697a7a6173656f03636f6d00'],
    ['boolean', 'exists', { type: 'boolean', b: true }, 'exists'],
  ])('reads %s %s and prints it as nft does', (dtype, text, value, printed) => {
    const typed = typeLiteral(lit(text), dtype);
    expect(typed.dtype).toBe(dtype);
    expect(typed.value).toEqual(value);
    expect(formatValue(typed)).toBe(printed);
  });

  it.each([
    ['inet_service', 'no-such-service'],
    ['ipv4_addr', '300.1.1.1'],
    ['ct_state', 'bogus'],
    ['ipv6_addr', '1:2:3'],
  ])('keeps the type but no value for an unknown %s spelling %s', (dtype, text) => {
    const typed = typeLiteral(lit(text), dtype);
    expect(typed.dtype).toBe(dtype);
    expect(typed.value).toBeUndefined();
    expect(formatValue(typed)).toBe(text);
  });

  it('prints an untyped quoted literal with its quotes', () => {
    expect(formatValue(lit('abc', true))).toBe('"abc"');
  });
});

describe('typeAgainst', () => {
  it('types set elements, ranges and prefixes against the left-hand side', () => {
    const rhs: Expr = {
      kind: 'set',
      span,
      elements: [
        { kind: 'element', span, key: lit('ssh') },
        { kind: 'element', span, key: { kind: 'range', span, low: lit('1000'), high: lit('2000') } },
      ],
    };
    const typed = typeAgainst(rhs, payload('tcp', 'dport'));
    expect(typed).toMatchObject({
      elements: [
        { key: { dtype: 'inet_service', value: { n: 22 } } },
        { key: { low: { value: { n: 1000 } }, high: { value: { n: 2000 } } } },
      ],
    });
  });

  it('aligns concatenation parts with a concatenated left-hand side', () => {
    const lhs: Expr = { kind: 'concat', span, parts: [payload('ip', 'saddr'), payload('tcp', 'dport')] };
    const rhs: Expr = { kind: 'concat', span, parts: [lit('1.1.1.1'), lit('http')] };
    expect(typeAgainst(rhs, lhs)).toMatchObject({
      parts: [{ dtype: 'ipv4_addr', value: { addr: '1.1.1.1' } }, { dtype: 'inet_service', value: { n: 80 } }],
    });
  });

  it('types flag lists and mask operands', () => {
    const flags: Expr = { kind: 'flag-list', span, items: [lit('established'), lit('related')] };
    expect(typeAgainst(flags, ct('state'))).toMatchObject({ items: [{ value: { n: 2 } }, { value: { n: 4 } }] });
    const masked: Expr = { kind: 'binop', span, op: '&', left: meta('mark'), right: lit('0xff') };
    expect(typeAgainst(lit('0x10'), masked)).toMatchObject({ dtype: 'mark', value: { n: 16 } });
  });

  it('types map keys against the map key and data against the target', () => {
    const map: Expr = {
      kind: 'map',
      span,
      key: payload('ip', 'saddr'),
      vmap: false,
      map: { kind: 'set', span, elements: [{ kind: 'element', span, key: lit('1.1.1.1'), data: lit('2') }] },
    };
    expect(typeAgainst(map, meta('mark'))).toMatchObject({
      map: { elements: [{ key: { dtype: 'ipv4_addr' }, data: { dtype: 'mark', value: { n: 2 } } }] },
    });
  });

  it('leaves literals alone when the left-hand side has no known type', () => {
    expect(typeAgainst(lit('x'), payload('foo', 'bar'))).toEqual(lit('x'));
  });
});

describe('iptables spellings', () => {
  it.each<[string, 'ip' | 'ip6', { type: number; code?: number } | undefined]>([
    ['echo-request', 'ip', { type: 8 }],
    ['ping', 'ip', { type: 8 }],
    ['host-unreachable', 'ip', { type: 3, code: 1 }],
    ['3/13', 'ip', { type: 3, code: 13 }],
    ['11', 'ip', { type: 11 }],
    ['neighbour-solicitation', 'ip6', { type: 135 }],
    ['no-route', 'ip6', { type: 1, code: 0 }],
    ['no-such-type', 'ip', undefined],
  ])('reads --icmp-type %s (%s)', (text, family, expected) => {
    expect(readIptablesIcmpType(text, family)).toEqual(expected);
  });

  it.each([
    ['icmp-host-prohibited', { with: 'icmp', code: 'host-prohibited' }],
    ['tcp-reset', { with: 'tcp reset' }],
    ['icmp6-adm-prohibited', { with: 'icmpv6', code: 'admin-prohibited' }],
    ['bogus', undefined],
  ])('maps --reject-with %s to nft', (name, expected) => {
    expect(readIptablesRejectWith(name)).toEqual(expected);
  });
});
