// The source masquerade picks (src/sim/masquerade-source.ts), each row with the kernel function
// and rule it follows. test/kernel/differential.test.ts checks the lo and two-subnet rows against
// the kernel.
import { describe, expect, it } from 'vitest';
import { formatAddress, parseAddress } from '../../src/sim/address.js';
import { readHost, type HostInput } from '../../src/sim/host.js';
import { masqueradeSource } from '../../src/sim/masquerade-source.js';

function source(input: HostInput, oif: string, dst: string, nexthop = dst): string | undefined {
  const { host, errors } = readHost([{ value: input, path: ['host'] }]);
  expect(errors).toEqual([]);
  const found = masqueradeSource(host, oif, parseAddress(dst)!, () => parseAddress(nexthop)!);
  return found && formatAddress(found);
}

const NODE: HostInput = {
  interfaces: [
    { name: 'eth0', addresses: ['192.0.2.10/24', '2001:db8:1::10/64', 'fe80::1:10/64'] },
    { name: 'eth1', addresses: ['203.0.113.10/24', '198.51.100.10/24', '198.51.100.11/24', 'fd00::10/64', '2001:db8:2::10/64', 'fe80::2:10/64'] },
    { name: 'wt0', addresses: [] },
  ],
  forwarding: true,
};

describe('IPv4: inet_select_addr(out, nexthop, RT_SCOPE_UNIVERSE) (devinet.c)', () => {
  it.each([
    ['the egress interface\'s address in the nexthop\'s subnet', 'eth1', '8.8.8.8', '198.51.100.20', '198.51.100.10'],
    ['its first address when none is in the nexthop\'s subnet', 'eth1', '8.8.8.8', '10.0.0.1', '203.0.113.10'],
    ['a secondary address (an earlier one has its subnet) never', 'eth1', '198.51.100.11', '198.51.100.11', '198.51.100.10'],
    ['through lo: 127.0.0.1 has host scope, so the first interface\'s address', 'lo', '198.51.100.10', '198.51.100.10', '192.0.2.10'],
    ['an interface without an address: the first interface\'s', 'wt0', '100.64.0.1', '100.64.0.1', '192.0.2.10'],
  ])('%s', (_name, oif, dst, nexthop, expected) => {
    expect(source(NODE, oif, dst, nexthop)).toBe(expected);
  });

  it('a node with no address of universe scope has none to give (the kernel drops)', () => {
    expect(source({ interfaces: [{ name: 'eth0', addresses: ['127.0.0.2/8'] }], forwarding: true }, 'eth0', '192.0.2.1')).toBeUndefined();
  });
});

describe('IPv6: ipv6_dev_get_saddr(out, dst) (addrconf.c, RFC 6724)', () => {
  it.each([
    ['rule 1: the destination itself, through lo', 'lo', '2001:db8:2::10', '2001:db8:2::10'],
    ['rule 2: a global address for a global destination, not lo\'s ::1', 'lo', '2001:db8:9::1', '2001:db8:1::10'],
    // ::1 is of link-local scope for source selection, as fe80:: is: rule 5 decides.
    ['rule 2: ::1 ties with a link-local address, and rule 5 takes the egress interface\'s', 'eth1', 'fe80::99', 'fe80::2:10'],
    ['rule 5: the egress interface\'s', 'eth1', '2001:db8:9::1', '2001:db8:2::10'],
    ['rule 6: of the destination\'s label (fd00::/8 is label 5)', 'eth1', 'fd00:5::1', 'fd00::10'],
    ['a link-local destination: the egress interface\'s link-local address', 'eth0', 'fe80::99', 'fe80::1:10'],
    ['an interface without an address: another interface\'s', 'wt0', '2001:db8:1::99', '2001:db8:1::10'],
    // A multicast destination takes the egress interface's addresses only, by its scope field:
    // of site scope (5), a link-local address is not enough.
    ['a multicast destination: the egress interface\'s', 'eth0', 'ff0e::1', '2001:db8:1::10'],
    ['a multicast destination of site scope: a global address, not the link-local one', 'eth1', 'ff05::1', '2001:db8:2::10'],

  ])('%s', (_name, oif, dst, expected) => {
    expect(source(NODE, oif, dst)).toBe(expected);
  });

  it('a multicast destination on an interface without an IPv6 address: none (the kernel drops)', () => {
    expect(source(NODE, 'wt0', 'ff0e::1')).toBeUndefined();
  });

  it('rule 8: the longest prefix in common with the destination', () => {
    const host: HostInput = { interfaces: [{ name: 'eth0', addresses: ['2001:db8:1::10/48', '2001:db8:2::10/48'] }], forwarding: true };
    expect(source(host, 'eth0', '2001:db8:2::99')).toBe('2001:db8:2::10');
  });
});
