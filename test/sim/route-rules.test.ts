// Policy routing: the host's rules read from `ip -j rule show`, and the route a lookup gives
// (net/core/fib_rules.c fib_rules_lookup, fib_rule_match; fib4_rule_suppress). The kernel checks
// of the same are in test/kernel/policy-routing.test.ts.
import { describe, expect, it } from 'vitest';
import { parseAddress } from '../../src/sim/address.js';
import { lookupRoute, readHost, type HostInput } from '../../src/sim/host.js';
import type { RouteKey } from '../../src/sim/route-rules.js';

// As `ip -j rule show` printed them on Linux 6.18 for: fwmark 0xca6c/0xffff table 51820 pref 100;
// not fwmark 0x80000/0xff0000 table 52 pref 5270; from 10.1.0.0/16 iif eth0 lookup 7 pref 200;
// table main suppress_prefixlength 0 pref 300; fwmark 1 unreachable pref 400.
const RULES = [
  { priority: 0, src: 'all', table: 'local' },
  { priority: 100, src: 'all', fwmark: '0xca6c', fwmask: '0xffff', table: '51820' },
  { priority: 200, src: '10.1.0.0', srclen: 16, iif: 'eth0', table: '7' },
  { priority: 300, src: 'all', table: 'main', suppress_prefixlen: 0 },
  { priority: 400, src: 'all', fwmark: '0x1', action: 'unreachable' },
  { priority: 5270, not: null, src: 'all', fwmark: '0x80000', fwmask: '0xff0000', table: '52' },
  { priority: 32766, src: 'all', table: 'main' },
  { priority: 32767, src: 'all', table: 'default' },
];

const HOST: HostInput = {
  interfaces: [
    { name: 'eth0', addresses: ['192.0.2.10/24'] },
    { name: 'wg0', addresses: ['10.9.0.1/24'] },
    { name: 'ts0', addresses: ['100.64.0.1/10'] },
    { name: 'eth1', addresses: ['198.51.100.10/24'] },
  ],
  routes: [
    { dst: 'default', via: '192.0.2.1', dev: 'eth0' },
    { dst: 'default', dev: 'wg0', table: 51820 },
    { dst: 'default', dev: 'eth1', table: '7' },
    { dst: 'default', dev: 'ts0', table: '52' },
    { dst: '203.0.113.0/24', type: 'throw', table: '52' },
  ],
  rules: RULES,
};

function devOf(dst: string, key: RouteKey, host: HostInput = HOST): string | undefined {
  const { host: resolved, errors } = readHost([{ value: host, path: ['host'] }]);
  expect(errors).toEqual([]);
  return lookupRoute(resolved, parseAddress(dst)!, key)?.dev;
}

describe('route lookup under rules', () => {
  it.each([
    // fwmark under its mask: 0x1ca6c & 0xffff is 0xca6c.
    ['a mark matching under the mask takes its table', '198.18.0.1', { mark: 0x1ca6c }, 'wg0'],
    // main's only route is /0: suppress_prefixlength 0 ignores it, and the not-fwmark rule (the
    // mark lacks 0x80000) sends the packet to table 52.
    ['suppress_prefixlength 0 skips main\'s default route', '198.18.0.1', { mark: 0 }, 'ts0'],
    // A connected route is /24: longer than 0, not suppressed.
    ['suppress_prefixlength keeps a longer prefix', '192.0.2.77', { mark: 0 }, 'eth0'],
    // `not fwmark 0x80000/0xff0000` does not apply to a packet with it: main, then its default.
    ['a not-fwmark rule passes over a packet with the mark', '198.18.0.1', { mark: 0x80000 }, 'eth0'],
    // A throw route ends the lookup in table 52: the next rules, main's default.
    ['a throw route goes on with the next rule', '203.0.113.5', { mark: 0 }, 'eth0'],
    ['a source prefix and an input interface select together', '198.18.0.1', { mark: 0x80000, iif: 'eth0', src: parseAddress('10.1.2.3')! }, 'eth1'],
    ['a rule\'s input interface must be the packet\'s', '198.18.0.1', { mark: 0x80000, iif: 'wg0', src: parseAddress('10.1.2.3')! }, 'eth0'],
    ['a rule with a source prefix needs a source', '198.18.0.1', { mark: 0x80000, iif: 'eth0' }, 'eth0'],
    ['an unreachable rule gives no route', '198.18.0.1', { mark: 0x1 }, undefined],
  ] as const)('%s', (_name, dst, key, dev) => {
    expect(devOf(dst, key)).toBe(dev);
  });

  // fib_rules_lookup suppresses only a route found: a route that drops ends the lookup with its
  // error, short as its prefix is.
  it('suppress_prefixlength does not pass over a route that drops', () => {
    const host: HostInput = {
      interfaces: [{ name: 'eth0', addresses: ['192.0.2.10/24'] }],
      routes: [{ dst: 'default', type: 'unreachable' }, { dst: 'default', dev: 'eth0', table: '7' }],
      rules: [{ priority: 300, table: 'main', suppress_prefixlen: 0 }, { priority: 400, table: '7' }],
    };
    expect(devOf('198.18.0.1', { mark: 0 }, host)).toBeUndefined();
  });

  // fib6_rules_net_init: local and main only.
  it('without rules looks up IPv6 routes in main only', () => {
    const host: HostInput = { interfaces: [{ name: 'eth0', addresses: ['2001:db8::10/64'] }], routes: [{ dst: 'default', via: '2001:db8::1', dev: 'eth0', table: 'default' }] };
    expect(devOf('2001:db8:5::1', { mark: 0 }, host)).toBeUndefined();
  });

  it('without rules looks up main, then default, and never another table', () => {
    const host: HostInput = { interfaces: [{ name: 'eth0', addresses: ['192.0.2.10/24'] }, { name: 'wg0', addresses: ['10.9.0.1/24'] }], routes: [{ dst: 'default', dev: 'wg0', table: '51820' }, { dst: 'default', dev: 'eth0', table: 'default' }] };
    expect(devOf('198.18.0.1', { mark: 0xca6c }, host)).toBe('eth0');
  });

  it('takes the routes of every table from ip -j route show table all', () => {
    const { host } = readHost([
      { value: [{ ifname: 'eth0', addr_info: [{ local: '192.0.2.10', prefixlen: 24 }] }, { ifname: 'wg0', addr_info: [{ local: '10.9.0.1', prefixlen: 24 }] }], path: ['a'] },
      { value: [{ dst: 'default', dev: 'wg0', table: '51820' }, { type: 'local', dst: '192.0.2.10', dev: 'eth0', table: 'local' }, { type: 'unreachable', dst: '198.18.0.0/15', table: 'main' }], path: ['r'] },
    ]);
    expect(host.routes.map((r) => [r.table, r.type, r.dev])).toEqual([
      ['254', 'unicast', 'lo'],
      ['254', 'unicast', 'lo'],
      ['254', 'unicast', 'eth0'],
      ['254', 'unicast', 'wg0'],
      ['51820', 'unicast', 'wg0'],
      ['254', 'unreachable', ''],
    ]);
    expect(lookupRoute(host, parseAddress('198.18.0.1')!)).toBeUndefined();
  });
});

describe('host rules input errors', () => {
  it.each([
    ['rules given as a part of their own', [RULES], /host\[0\]\[0\]: `ip -j rule show` output goes in the host's `rules`/],
    ['an IPv6 source in IPv4 rules', { rules: [{ priority: 1, src: '2001:db8::', srclen: 32, table: 'main' }] }, /rules\[0\]\.src: expected 'all' or an IPv4 address/],
    ['a selector nftsim does not match by', { rules: [{ priority: 1, src: 'all', ipproto: 'tcp', table: 'main' }] }, /rules\[0\]\.ipproto: a rule selecting by ipproto is not modelled/],
    // iproute2 prints `ip rule add uidrange 1000-2000` as uid_start and uid_end.
    ['a uid range', { rules: [{ priority: 1, src: 'all', uid_start: 1000, uid_end: 2000, table: 'main' }] }, /rules\[0\]\.uid_start: a rule selecting by uid_start is not modelled/],
    ['an unknown action', { rules: [{ priority: 1, src: 'all', action: 'nat' }] }, /rules\[0\]\.action: expected unreachable, blackhole or prohibit/],
    ['a route type', { routes: [{ dst: '10.0.0.0/8', type: 'anycast' }] }, /routes\[0\]\.type: expected one of unicast, throw/],
  ] as const)('%s', (_name, value, message) => {
    const { errors } = readHost((Array.isArray(value) ? value : [value]).map((v, i) => ({ value: v, path: Array.isArray(value) ? ['host', i] : ['host'] })));
    expect(errors.map((e) => e.message).join('\n')).toMatch(message);
  });
});
