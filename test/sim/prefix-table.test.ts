// PrefixTable (src/sim/prefix-table.ts) answers as a scan of its prefixes does: the value of the
// longest prefix holding the address, the first added among equal ones, nothing when none holds
// it; for IPv4 (keys as 32-bit numbers, addresses from 2^31 on) and IPv6 (BigInt keys). The host's
// local addresses are such a table (src/sim/host.ts localInterfaceOf).

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { familyBits, parseAddress, prefixMask, type AddressFamily } from '../../src/sim/address.js';
import { localInterfaceOf, readHost } from '../../src/sim/host.js';
import { PrefixTable } from '../../src/sim/prefix-table.js';

function scan(entries: readonly (readonly [bigint, number, number])[], family: AddressFamily, n: bigint): number | undefined {
  let best: { prefix: number; value: number } | undefined;
  for (const [at, prefix, value] of entries) {
    const mask = prefixMask(familyBits(family), prefix);
    if ((n & mask) !== (at & mask)) continue;
    if (!best || prefix > best.prefix) best = { prefix, value };
  }
  return best?.value;
}

describe('PrefixTable', () => {
  it.each(['ip', 'ip6'] as const)('gives the longest prefix holding an %s address, the first of equal ones', (family) => {
    const bits = familyBits(family);
    // Few distinct high parts, so that prefixes overlap and addresses fall under them.
    const address = fc.tuple(fc.integer({ min: 0, max: 3 }), fc.bigInt({ min: 0n, max: (1n << BigInt(bits - 2)) - 1n })).map(([high, low]) => (BigInt(high) << BigInt(bits - 2)) | low);
    const prefix = fc.oneof(fc.constantFrom(0, 1, 2, bits - 1, bits), fc.integer({ min: 0, max: bits }));
    fc.assert(
      fc.property(fc.array(fc.tuple(address, prefix), { maxLength: 40 }), fc.array(address, { maxLength: 20 }), (prefixes, others) => {
        const entries = prefixes.map(([n, p], i) => [n, p, i] as const);
        const table = new PrefixTable<number>(family);
        for (const [n, p, i] of entries) table.add(n, p, i);
        for (const n of [...entries.map(([at]) => at), ...others]) expect(table.lookup(n)).toBe(scan(entries, family, n));
      }),
      { numRuns: 300 },
    );
  });
});

describe('local addresses', () => {
  // The kernel's local table holds a route for each address and one for a loopback address's
  // prefix: the most specific answers, so an address in 127/8 given to another interface is that
  // interface's, whatever the order of the interfaces.
  const { host } = readHost([
    { value: { interfaces: [{ name: 'lo', addresses: ['127.0.0.1/8', '::1/128'] }, { name: 'dummy0', addresses: ['127.0.0.53/32', '192.0.2.10/24'] }] }, path: ['host'] },
  ]);
  it.each([
    ['127.0.0.53', 'dummy0'],
    ['127.0.0.1', 'lo'],
    ['127.255.0.9', 'lo'],
    ['::1', 'lo'],
    ['192.0.2.10', 'dummy0'],
    ['192.0.2.11', undefined],
    ['128.0.0.1', undefined],
  ])('%s is owned by %s', (text, owner) => {
    expect(localInterfaceOf(host, parseAddress(text)!)?.name).toBe(owner);
  });
});
