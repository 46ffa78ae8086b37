// PositionTable (src/sim/position-table.ts) answers as the Map it is built from: the position or
// positions of every key it holds, nothing for any other integer, whatever the keys' hashes
// share (addresses from 2^31 on, keys past 2^32 that differ only in their high bits, neighbours).

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PositionTable } from '../../src/sim/position-table.js';

const key = fc.oneof(
  fc.integer({ min: 0, max: 0xffffffff }),
  fc.integer({ min: 0x7ffffff0, max: 0x80000010 }),
  fc.integer({ min: 0, max: 7 }).map((high) => high * 0x100000000 + 42),
  fc.maxSafeInteger().map((n) => Math.abs(n)),
);
const positions = fc.oneof(fc.nat({ max: 1_000_000 }), fc.uniqueArray(fc.nat({ max: 1_000_000 }), { minLength: 2, maxLength: 5 }).map((p) => p.sort((a, b) => a - b)));

describe('PositionTable', () => {
  it('gives what the Map it is built from gives, for its keys and for others', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(key, positions), { maxLength: 300 }), fc.array(key, { maxLength: 50 }), (entries, others) => {
        const map = new Map(entries);
        const table = new PositionTable(map);
        for (const k of [...map.keys(), ...others]) expect(table.get(k)).toEqual(map.get(k));
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ['no keys', [], [0, 1, 0xffffffff]],
    ['a key of 0', [[0, 7]], [1, 0x100000000]],
    ['keys that differ only past 2^32', [[42, 1], [0x100000000 + 42, 2], [0x200000000 + 42, [3, 4]]], [0x300000000 + 42]],
    ['a full run of neighbours', Array.from({ length: 64 }, (_, i): [number, number] => [0xac1e0000 + i, i]), [0xac1e0040, 0xac1dffff]],
  ] as [string, [number, number | number[]][], number[]][])('finds its keys and no others: %s', (_name, entries, absent) => {
    const table = new PositionTable(new Map(entries));
    for (const [k, v] of entries) expect(table.get(k)).toEqual(v);
    for (const k of absent) expect(table.get(k)).toBeUndefined();
  });
});
