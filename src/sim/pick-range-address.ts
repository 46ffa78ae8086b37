// The address a NAT to an address range gives a connection. The kernel picks it by a hash of the
// connection's addresses with no random seed ("servers see the same client coming from the same
// IP ... even across reboots", nf_nat_core.c find_best_ips_proto), so nftsim computes the pick.

import type { Address } from './address.js';
import { cpuWord, jhash } from './evaluate-special-expr.js';
import type { NatManip } from './conntrack-table.js';
import { writeBigint } from './packet-bytes.js';

/** The connection's tuple as the NAT sees it (after the manipulations done before it). */
export interface PickTuple {
  readonly src: Address;
  readonly dst: Address;
  readonly zone: number;
}

/**
 * find_best_ips_proto: j is jhash2 over the source address's four 32-bit words (union
 * nf_inet_addr: an IPv4 address is the first word, the others zero), seeded with the
 * destination's last word (the first for IPv4) xor the zone id, or 0 with `persistent`. Then for
 * each word of the address: the range's low word plus j scaled to the range's width
 * (reciprocal_scale), over the whole word once a picked word is below the range's high word;
 * without `persistent`, j is xored with the tuple's destination word afterwards (for DNAT the
 * word just picked). Words are read from network-order bytes in the CPU's byte order,
 * little-endian as on x86 and arm64, as jhash reads them.
 */
export function pickRangeAddress(tuple: PickTuple, manip: NatManip, low: bigint, high: bigint, persistent: boolean): bigint {
  const family = tuple.src.family;
  const last = family === 'ip' ? 0 : 3;
  const src = addressBytes(tuple.src);
  const dst = addressBytes(tuple.dst);
  let j = jhash(src, persistent ? 0 : (cpuWord(dst, 4 * last) ^ tuple.zone) >>> 0);
  let picked = 0n;
  let fullRange = false;
  for (let i = 0; i <= last; i++) {
    const shift = BigInt(32 * (last - i));
    const lowWord = Number((low >> shift) & 0xffffffffn);
    const highWord = Number((high >> shift) & 0xffffffffn);
    const min = fullRange ? 0 : lowWord;
    const dist = fullRange ? 0xffffffff : (highWord - lowWord + 1) >>> 0;
    const word = (min + Number((BigInt(j) * BigInt(dist)) >> 32n)) >>> 0;
    if (word !== highWord) fullRange = true;
    picked = (picked << 32n) | BigInt(word);
    if (!persistent) j = (j ^ (manip === 'dst' ? byteSwap(word) : cpuWord(dst, 4 * i))) >>> 0;
  }
  return picked;
}

/** The 16 bytes of union nf_inet_addr, network order. */
function addressBytes(address: Address): Uint8Array {
  const bytes = new Uint8Array(16);
  writeBigint(bytes, 0, address.family === 'ip' ? 4 : 16, address.n);
  return bytes;
}

/** A host-order word stored in network order, read back in the CPU's order. */
function byteSwap(word: number): number {
  return (((word & 0xff) << 24) | ((word & 0xff00) << 8) | ((word >>> 8) & 0xff00) | (word >>> 24)) >>> 0;
}
