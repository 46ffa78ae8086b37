// Positions by a numeric key: of the rules of an indexed run (chain-index.ts), of the elements of
// a set (lookup-element.ts). An open-addressing hash table in one Float64Array, each key beside
// its value. A Map of a kube-proxy chain's ten thousand service addresses is a bucket array, an
// entry table and, for a key from 2^31 on (every address from 128.0.0.0), a heap number per key: a
// lookup read three places in memory, cold when the packets go to many services, where this reads
// one.

/** What a slot's key is when the slot is empty (no key is NaN: keys are integers). */
const EMPTY = NaN;

export class PositionTable {
  /** [key, value] per slot; a value is a position, or -1 - i for the positions `lists[i]`. */
  private readonly slots: Float64Array;
  private readonly mask: number;
  private readonly lists: (readonly number[])[] = [];

  /** The table of `entries`, whose keys are integers below 2^53. */
  constructor(entries: ReadonlyMap<number, number | readonly number[]>) {
    // At most half full: a miss ends at an empty slot after a probe or two.
    let capacity = 8;
    while (capacity < entries.size * 2) capacity *= 2;
    this.mask = capacity - 1;
    this.slots = new Float64Array(capacity * 2).fill(EMPTY);
    for (const [key, value] of entries) {
      let slot = hashOf(key) & this.mask;
      while (!Number.isNaN(this.slots[2 * slot]!)) slot = (slot + 1) & this.mask;
      this.slots[2 * slot] = key;
      if (typeof value === 'number') this.slots[2 * slot + 1] = value;
      else {
        this.slots[2 * slot + 1] = -1 - this.lists.length;
        this.lists.push(value);
      }
    }
  }

  /** The position, or the ascending positions, keyed by `key`. */
  get(key: number): number | readonly number[] | undefined {
    const slots = this.slots;
    let slot = hashOf(key) & this.mask;
    for (;;) {
      const known = slots[2 * slot]!;
      if (known === key) {
        const value = slots[2 * slot + 1]!;
        return value >= 0 ? value : this.lists[-1 - value];
      }
      if (Number.isNaN(known)) return undefined;
      slot = (slot + 1) & this.mask;
    }
  }
}

/** Fibonacci hashing of the key's low 32 bits and its high ones (addresses and ports differ in
 * their low bits; a key of 2^32 or more is rare, and only probed further when it collides). */
function hashOf(key: number): number {
  const mixed = Math.imul((key >>> 0) ^ Math.floor(key / 0x100000000), 0x9e3779b1);
  return (mixed ^ (mixed >>> 15)) >>> 0;
}
