import { describe, expect, it } from 'vitest';
import { formatAddress, parseAddress, parseAddressBits, prefixMask } from '../../src/sim/address.js';

describe('parseAddress reads a dotted quad character by character', () => {
  it.each([
    ['192.0.2.1', 0xc0000201n],
    ['0.0.0.0', 0n],
    ['255.255.255.255', 0xffffffffn],
    ['010.001.000.009', 0x0a010009n],
  ])('%s is IPv4 %s', (text, n) => {
    expect(parseAddress(text)).toEqual({ family: 'ip', n });
    expect(parseAddressBits(text)).toBe(n);
  });

  it.each(['256.0.0.1', '1.2.3', '1.2.3.4.5', '1.2.3.', '.1.2.3', '1..2.3', '1234.1.1.1', '1.2.3.4 ', ' 1.2.3.4', '1.2.3.4/8', '1.2.3.a', ''])(
    '%j is not an address',
    (text) => {
      expect(parseAddress(text)).toBeUndefined();
      expect(parseAddressBits(text)).toBeUndefined();
    },
  );

  it('still reads IPv6, with an embedded dotted quad', () => {
    expect(parseAddress('::ffff:192.0.2.1')).toEqual({ family: 'ip6', n: 0xffffc0000201n });
    expect(parseAddressBits('2001:db8::1')).toBe(0x20010db8000000000000000000000001n);
  });
});

describe('formatAddress', () => {
  it.each(['192.0.2.1', '0.0.0.0', '255.255.255.255', '10.1.0.9'])('writes %s back as read', (text) => {
    expect(formatAddress(parseAddress(text)!)).toBe(text);
  });
});

describe('prefixMask', () => {
  it.each([
    [32, 0, 0n],
    [32, 24, 0xffffff00n],
    [32, 32, 0xffffffffn],
    [16, 4, 0xf000n],
    [128, 64, 0xffffffffffffffff0000000000000000n],
  ])('of %i bits with prefix %i is %s, asked twice', (bits, prefix, mask) => {
    expect(prefixMask(bits, prefix)).toBe(mask);
    expect(prefixMask(bits, prefix)).toBe(mask);
  });
});
