// Longest-prefix match over a host's prefixes (its routes of one table, its local addresses): one
// map per prefix length, longest first, as fib_table_lookup's trie answers. A lookup is a map
// read per distinct prefix length, with no BigInt arithmetic for IPv4 (keys are the masked
// address as a number), so it needs no cache: a cache keyed by BigInt addresses, which V8 hashes
// digit by digit, and cleared as the packets' many addresses filled it, was a tenth of a
// kube-proxy packet's time.

import { familyBits, prefixMask, type AddressFamily } from './address.js';

interface Level<T> {
  readonly prefix: number;
  /** IPv4: the mask as a 32-bit integer; IPv6: as a BigInt. */
  readonly mask: number | bigint;
  readonly values: Map<number | bigint, T>;
}

export class PrefixTable<T> {
  private readonly levels: Level<T>[] = [];

  constructor(private readonly family: AddressFamily) {}

  /** `value` for the addresses under `n`/`prefix`; a prefix added before keeps its value, as the
   * first of two equal routes is the one found. */
  add(n: bigint, prefix: number, value: T): void {
    let level = this.levels.find((l) => l.prefix === prefix);
    if (!level) {
      const mask = this.family === 'ip' ? (prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) | 0) : prefixMask(familyBits('ip6'), prefix);
      level = { prefix, mask, values: new Map() };
      this.levels.push(level);
      this.levels.sort((a, b) => b.prefix - a.prefix);
    }
    const key = this.keyOf(n, level.mask);
    if (!level.values.has(key)) level.values.set(key, value);
  }

  /** The value of the longest prefix holding `n`. */
  lookup(n: bigint): T | undefined {
    const levels = this.levels;
    if (this.family === 'ip') {
      const v = Number(n);
      for (let i = 0; i < levels.length; i++) {
        const found = levels[i]!.values.get(v & (levels[i]!.mask as number));
        if (found !== undefined) return found;
      }
      return undefined;
    }
    for (let i = 0; i < levels.length; i++) {
      const found = levels[i]!.values.get(n & (levels[i]!.mask as bigint));
      if (found !== undefined) return found;
    }
    return undefined;
  }

  private keyOf(n: bigint, mask: number | bigint): number | bigint {
    return this.family === 'ip' ? Number(n) & (mask as number) : n & (mask as bigint);
  }
}
