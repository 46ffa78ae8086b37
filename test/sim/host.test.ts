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
    ['a multipath route', [{ dst: 'default', nexthops: [{ gateway: '192.0.2.1', dev: 'eth0' }] }], [0], 'a multipath route (`nexthops`) is not modelled'],
  ])('refuses %s of ip -j route show, naming it', (_, routes, path, message) => {
    const { errors } = readHost([{ value: { interfaces: [ETH0] }, path: ['host'] }, { value: routes, path: [] }]);
    expect(errors).toEqual([{ part: 1, path, message: expect.stringContaining(message) }]);
  });

  it('takes a default route with an IPv6 gateway as IPv6', () => {
    const { host, errors } = readHost([{ value: { interfaces: [ETH0], routes: [{ dst: 'default', via: '2001:db8::1', dev: 'eth0' }] }, path: ['host'] }]);
    expect(errors).toEqual([]);
    expect(host.routes.at(-1)?.dst).toMatchObject({ family: 'ip6', prefix: 0 });
  });
});
