import { describe, expect, it } from 'vitest';
import { readHost } from '../../src/sim/host.js';

// readHost's errors: each names the part (of the CLI's repeated --host) and the field it is about.

const ETH0 = { name: 'eth0', addresses: ['192.0.2.10/24', '2001:db8::10/64'] };

describe('readHost errors', () => {
  it.each([
    ['a family the prefix does not have', { interfaces: [ETH0], routes: [{ dst: '10.0.0.0/8', family: 'ip6', dev: 'eth0' }] }, ['host', 'routes', 0, 'family'], "'10.0.0.0/8' is an IPv4 prefix"],
    ['an IPv4 route through an IPv6 gateway', { interfaces: [ETH0], routes: [{ dst: '10.0.0.0/8', via: '2001:db8::1', dev: 'eth0' }] }, ['host', 'routes', 0, 'via'], 'an IPv4 route through an IPv6 gateway is not modelled'],
    ['an IPv6 route through an IPv4 gateway', { interfaces: [ETH0], routes: [{ dst: '2001:db8:5::/48', via: '192.0.2.1', dev: 'eth0' }] }, ['host', 'routes', 0, 'via'], 'an IPv6 route through an IPv4 gateway is not modelled'],
    ['an interface given twice', { interfaces: [ETH0, ETH0] }, ['host', 'interfaces', 1, 'name'], "interface 'eth0' given twice"],
    ['a route through an unknown interface', { interfaces: [ETH0], routes: [{ dst: '10.0.0.0/8', dev: 'eth9' }] }, ['host', 'routes', 0, 'dev'], "route to 10.0.0.0/8 uses unknown interface 'eth9'"],
    ['a nexthop through an unknown interface', { interfaces: [ETH0], routes: [{ dst: 'default', nexthops: [{ dev: 'eth0' }, { dev: 'eth9' }] }] }, ['host', 'routes', 0, 'nexthops', 1, 'dev'], "route to 0.0.0.0/0 uses unknown interface 'eth9'"],
    ['nexthops beside dev', { interfaces: [ETH0], routes: [{ dst: 'default', dev: 'eth0', nexthops: [{ dev: 'eth0' }] }] }, ['host', 'routes', 0, 'nexthops'], 'give `nexthops` or `dev` and `via`, not both'],
    ['no nexthop', { interfaces: [ETH0], routes: [{ dst: 'default', nexthops: [] }] }, ['host', 'routes', 0, 'nexthops'], 'expected at least one nexthop'],
    ['a weight of 0', { interfaces: [ETH0], routes: [{ dst: 'default', nexthops: [{ dev: 'eth0', weight: 0 }, { dev: 'eth0' }] }] }, ['host', 'routes', 0, 'nexthops', 0, 'weight'], 'expected a weight from 1 to 256'],
    ['a weight that is no integer', { interfaces: [ETH0], routes: [{ dst: 'default', nexthops: [{ dev: 'eth0', weight: 1.5 }, { dev: 'eth0' }] }] }, ['host', 'routes', 0, 'nexthops', 0, 'weight'], 'expected a weight from 1 to 256'],
    // ip6_route_multipath_add refuses both.
    ['an IPv6 multipath route with a nexthop without gateway', { interfaces: [ETH0], routes: [{ dst: '2001:db8:5::/48', nexthops: [{ via: '2001:db8::1', dev: 'eth0' }, { dev: 'eth0' }] }] }, ['host', 'routes', 0, 'nexthops', 1, 'dev'], 'an IPv6 multipath route needs a gateway on every nexthop'],
    ['an IPv6 nexthop given twice', { interfaces: [ETH0], routes: [{ dst: '2001:db8:5::/48', nexthops: [{ via: '2001:db8::1', dev: 'eth0' }, { via: '2001:db8::1', dev: 'eth0' }] }] }, ['host', 'routes', 0, 'nexthops', 1, 'via'], 'nexthop given twice'],
    ['a nexthop of the other family', { interfaces: [ETH0], routes: [{ dst: '10.0.0.0/8', nexthops: [{ via: '192.0.2.1', dev: 'eth0' }, { via: '2001:db8::1', dev: 'eth0' }] }] }, ['host', 'routes', 0, 'nexthops', 1, 'via'], 'an IPv4 route through an IPv6 gateway is not modelled'],
    ['nexthops of a blackhole route', { interfaces: [ETH0], routes: [{ dst: 'default', type: 'blackhole', nexthops: [{ dev: 'eth0' }] }] }, ['host', 'routes', 0, 'nexthops'], 'a blackhole route has no nexthops'],
  ])('%s', (_, host, path, message) => {
    expect(readHost([{ value: host, path: ['host'] }]).errors).toEqual([{ part: 0, path, message: expect.stringContaining(message) }]);
  });

  it('names the part an interface was given twice in', () => {
    const addr = [{ ifname: 'eth0', addr_info: [{ local: '192.0.2.10', prefixlen: 24 }] }];
    const { errors } = readHost([{ value: { interfaces: [ETH0] }, path: ['host'] }, { value: addr, path: [] }]);
    expect(errors).toEqual([{ part: 1, path: [0, 'ifname'], message: expect.stringContaining("interface 'eth0' given twice") }]);
  });

  // The kernel gives every IPv6 route a preference, which iproute2 prints as `pref`.
  it.each([
    ['pref', [{ dst: 'default', dev: 'eth0', metric: 1024, pref: 'medium' }], 'ip6'],
    ['no pref (a VPN full tunnel)', [{ dst: 'default', dev: 'eth0', scope: 'link', flags: [] }], 'ip'],
  ])('reads an ip -j default route without a gateway by %s', (_, routes, family) => {
    const { host, errors } = readHost([{ value: { interfaces: [ETH0] }, path: ['host'] }, { value: routes, path: [] }]);
    expect(errors).toEqual([]);
    expect(host.routes.find((r) => r.dst.prefix === 0)?.dst.family).toBe(family);
  });

  it.each([
    ['a route via inet6', [{ dst: '10.9.0.0/16', via: { family: 'inet6', host: 'fe80::1' }, dev: 'eth0' }], [0, 'via'], '(`via inet6`) is not modelled'],
    ['a multipath route via inet6', [{ dst: 'default', nexthops: [{ gateway: '192.0.2.1', dev: 'eth0' }, { via: { family: 'inet6', host: 'fe80::1' }, dev: 'eth0' }] }], [0, 'nexthops', 1, 'via'], '(`via inet6`) is not modelled'],
    ['a multipath route without nexthops', [{ dst: 'default', nexthops: [] }], [0, 'nexthops'], 'expected at least one nexthop'],
    ['a nexthop through an unknown interface', [{ dst: 'default', nexthops: [{ gateway: '192.0.2.1', dev: 'eth0' }, { gateway: '192.0.2.2', dev: 'eth9' }] }], [0, 'nexthops', 1, 'dev'], "uses unknown interface 'eth9'"],
  ])('refuses %s of ip -j route show, naming it', (_, routes, path, message) => {
    const { errors } = readHost([{ value: { interfaces: [ETH0] }, path: ['host'] }, { value: routes, path: [] }]);
    expect(errors).toEqual([{ part: 1, path, message: expect.stringContaining(message) }]);
  });

  // ip -j route show of `ip route add default nexthop via 192.0.2.1 dev eth0 weight 1 nexthop via
  // 198.51.100.20 dev eth1 weight 3` (iproute2 6.1).
  const MULTIPATH_IP_JSON = [
    { dst: 'default', flags: [], nexthops: [{ gateway: '192.0.2.1', dev: 'eth0', weight: 1, flags: [] }, { gateway: '198.51.100.20', dev: 'eth1', weight: 3, flags: [] }] },
  ];
  const ETH1 = { name: 'eth1', addresses: ['198.51.100.10/24'] };
  const NEXTHOPS = [
    { via: { family: 'ip', n: 0xc0000201n }, dev: 'eth0', weight: 1 },
    { via: { family: 'ip', n: 0xc6336414n }, dev: 'eth1', weight: 3 },
  ];

  it.each([
    ['nftsim\'s', { interfaces: [ETH0, ETH1], routes: [{ dst: 'default', nexthops: [{ via: '192.0.2.1', dev: 'eth0' }, { via: '198.51.100.20', dev: 'eth1', weight: 3 }] }] }],
    ['ip -j route show\'s', MULTIPATH_IP_JSON],
  ])('reads a multipath route in %s shape: its nexthops, the first one as its via and dev', (_, value) => {
    const parts = Array.isArray(value) ? [{ value: { interfaces: [ETH0, ETH1] }, path: ['host'] }, { value, path: [] }] : [{ value, path: ['host'] }];
    const { host, errors } = readHost(parts);
    expect(errors).toEqual([]);
    expect(host.routes.at(-1)).toEqual({ dst: { family: 'ip', n: 0n, prefix: 0 }, dev: 'eth0', via: NEXTHOPS[0]!.via, table: '254', type: 'unicast', nexthops: NEXTHOPS });
  });

  it('leaves out the nexthops ip -j route show flags dead, and a route of dead nexthops only', () => {
    const dead = (route: (typeof MULTIPATH_IP_JSON)[number], which: readonly number[]) => ({ ...route, nexthops: route.nexthops.map((n, i) => (which.includes(i) ? { ...n, flags: ['dead', 'linkdown'] } : n)) });
    const read = (which: readonly number[]) => readHost([{ value: { interfaces: [ETH0, ETH1] }, path: ['host'] }, { value: [dead(MULTIPATH_IP_JSON[0]!, which)], path: [] }]);
    expect(read([0]).errors).toEqual([]);
    expect(read([0]).host.routes.at(-1)).toEqual({ dst: { family: 'ip', n: 0n, prefix: 0 }, dev: 'eth1', via: NEXTHOPS[1]!.via, table: '254', type: 'unicast' });
    expect(read([0, 1]).host.routes.filter((r) => r.dst.prefix === 0)).toEqual([]);
  });

  it('reads a multipath route of one nexthop as a plain route', () => {
    const { host, errors } = readHost([{ value: { interfaces: [ETH0], routes: [{ dst: '10.0.0.0/8', nexthops: [{ via: '192.0.2.1', dev: 'eth0' }] }] }, path: ['host'] }]);
    expect(errors).toEqual([]);
    expect(host.routes.at(-1)).toEqual({ dst: { family: 'ip', n: 0x0a000000n, prefix: 8 }, dev: 'eth0', via: NEXTHOPS[0]!.via, table: '254', type: 'unicast' });
  });

  it('takes a default route with an IPv6 gateway as IPv6', () => {
    const { host, errors } = readHost([{ value: { interfaces: [ETH0], routes: [{ dst: 'default', via: '2001:db8::1', dev: 'eth0' }] }, path: ['host'] }]);
    expect(errors).toEqual([]);
    expect(host.routes.at(-1)?.dst).toMatchObject({ family: 'ip6', prefix: 0 });
  });
});
