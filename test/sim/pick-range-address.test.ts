import { describe, expect, it } from 'vitest';
import { formatAddress, parseAddress } from '../../src/sim/address.js';
import type { NatManip } from '../../src/sim/conntrack-table.js';
import { pickRangeAddress } from '../../src/sim/pick-range-address.js';

// The addresses the kernel picked (Linux 6.18, the kernel rows "… the kernel's pick" of
// test/kernel/differential.test.ts): find_best_ips_proto hashes the connection's addresses with
// no random seed, so every boot and nftsim pick the same.
describe('pickRangeAddress (nf_nat_core.c find_best_ips_proto)', () => {
  it.each([
    ['dst', '198.51.100.40-198.51.100.45', false, '192.0.2.77', '198.51.100.30', 0, '198.51.100.40'],
    ['dst', '198.51.100.40-198.51.100.45', true, '192.0.2.77', '198.51.100.30', 0, '198.51.100.44'],
    ['src', '198.51.100.90-198.51.100.95', true, '192.0.2.77', '198.51.100.20', 0, '198.51.100.94'],
    ['src', '192.0.2.1-192.0.2.5', false, '192.0.2.4', '198.51.100.20', 0, '192.0.2.2'],
    ['dst', '2001:db8:2::40-2001:db8:2::45', false, '2001:db8:1::1', '2001:db8:2::20', 0, '2001:db8:2::41'],
    ['src', '2001:db8:2::90-2001:db8:2::95', true, '2001:db8:1::77', '2001:db8:2::20', 0, '2001:db8:2::91'],
    // Below the high word of the range, the last word comes from the whole word (full_range).
    ['dst', '2001:db8:2::1:0:0-2001:db8:2::3:0:0', false, '2001:db8:1::1', '2001:db8:2::20', 0, '2001:db8:2::1:3d1c:f1a8'],
    ['dst', '2001:db8:2::1:0:0-2001:db8:2::3:0:0', false, '2001:db8:1::77', '2001:db8:2::30', 0, '2001:db8:2::2:9b5e:f1e0'],
  ] as const)('%s %s (persistent %s) for %s → %s in zone %i: %s', (manip, range, persistent, src, dst, zone, picked) => {
    const [low, high] = range.split('-').map((text) => parseAddress(text)!.n) as [bigint, bigint];
    const tuple = { src: parseAddress(src)!, dst: parseAddress(dst)!, zone };
    const n = pickRangeAddress(tuple, manip as NatManip, low, high, persistent);
    expect(formatAddress({ family: tuple.src.family, n })).toBe(picked);
  });

  // The seed is the destination's word xor the zone: another zone may pick another address.
  it('depends on the zone without persistent, not with it', () => {
    const tuple = (zone: number) => ({ src: parseAddress('192.0.2.77')!, dst: parseAddress('198.51.100.30')!, zone });
    const [low, high] = [parseAddress('198.51.100.40')!.n, parseAddress('198.51.100.45')!.n];
    const picks = (persistent: boolean) => new Set([0, 1, 2, 3, 4, 5].map((zone) => pickRangeAddress(tuple(zone), 'dst', low, high, persistent)));
    expect(picks(false).size).toBeGreaterThan(1);
    expect(picks(true).size).toBe(1);
  });
});
