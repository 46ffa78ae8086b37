// IP addresses as the simulator computes with them: unsigned integers of 32 (IPv4) or 128 (IPv6)
// bits, so prefixes, ranges and comparisons are plain integer operations.

import { formatIpv6 } from '../model/format-ipv6.js';

export type AddressFamily = 'ip' | 'ip6';

export interface Address {
  readonly family: AddressFamily;
  readonly n: bigint;
}

/** An address with a prefix length: `10.0.0.0/8`, an interface's `192.0.2.10/24`. */
export interface Cidr extends Address {
  readonly prefix: number;
}


export function familyBits(family: AddressFamily): number {
  return family === 'ip' ? 32 : 128;
}

/** A dotted quad: four decimal octets of 1-3 digits, each at most 255. Read character by
 * character: the simulator reads every address literal of a rule each time it evaluates it, and
 * a regex and four BigInt steps were most of that. */
function parseIpv4(text: string): bigint | undefined {
  let n = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      if (++digits > 3) return undefined;
      octet = octet * 10 + (c - 0x30);
    } else if (c === 0x2e && digits > 0 && dots < 3) {
      if (octet > 255) return undefined;
      n = n * 256 + octet;
      dots++;
      octet = 0;
      digits = 0;
    } else return undefined;
  }
  if (dots !== 3 || digits === 0 || octet > 255) return undefined;
  return BigInt(n * 256 + octet);
}

function parseIpv6(text: string): bigint | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(text) || !text.includes(':')) return undefined;
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (half: string): number[] | undefined => {
    if (half === '') return [];
    const out: number[] = [];
    const parts = half.split(':');
    for (const [i, part] of parts.entries()) {
      if (i === parts.length - 1 && part.includes('.')) {
        const v4 = parseIpv4(part);
        if (v4 === undefined) return undefined;
        out.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
      } else if (/^[0-9a-fA-F]{1,4}$/.test(part)) out.push(parseInt(part, 16));
      else return undefined;
    }
    return out;
  };
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  let n = 0n;
  for (const g of [...head, ...new Array<number>(missing).fill(0), ...tail]) n = (n << 16n) | BigInt(g);
  return n;
}

/** Reads `192.0.2.1` or `2001:db8::1`; undefined when it is neither. */
export function parseAddress(text: string): Address | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return { family: 'ip', n: v4 };
  const v6 = parseIpv6(text);
  if (v6 !== undefined) return { family: 'ip6', n: v6 };
  return undefined;
}

/** parseAddress's number alone, without the Address around it (the simulator's literals). */
export function parseAddressBits(text: string): bigint | undefined {
  return parseIpv4(text) ?? parseIpv6(text);
}

/** Reads `10.0.0.0/8`, `2001:db8::/32`, or a bare address (full-length prefix). */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const address = parseAddress(slash < 0 ? text : text.slice(0, slash));
  if (!address) return undefined;
  const bits = familyBits(address.family);
  if (slash < 0) return { ...address, prefix: bits };
  const lengthText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(lengthText)) return undefined;
  const prefix = Number(lengthText);
  if (prefix > bits) return undefined;
  return { ...address, prefix };
}

// Masks by width and prefix length, made once: the route and local-address lookups of every
// packet ask for them, and each is five BigInt operations.
const prefixMasks = new Map<number, bigint[]>();

export function prefixMask(bits: number, prefix: number): bigint {
  let masks = prefixMasks.get(bits);
  if (!masks) {
    masks = [];
    prefixMasks.set(bits, masks);
  }
  let mask = masks[prefix];
  if (mask === undefined) {
    mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
    masks[prefix] = mask;
  }
  return mask;
}

export function isInCidr(address: Address, cidr: Cidr): boolean {
  if (address.family !== cidr.family) return false;
  const mask = prefixMask(familyBits(cidr.family), cidr.prefix);
  return (address.n & mask) === (cidr.n & mask);
}

/** The canonical text: dotted quad, or IPv6 as inet_ntop (and so nft) writes it. */
export function formatAddress(address: Address): string {
  if (address.family === 'ip') {
    // Number arithmetic: every outcome formats its addresses, and BigInt shifts were slow.
    const n = Number(address.n & 0xffffffffn);
    return `${n >>> 24}.${(n >>> 16) & 0xff}.${(n >>> 8) & 0xff}.${n & 0xff}`;
  }
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((address.n >> BigInt(i * 16)) & 0xffffn));
  return formatIpv6(groups);
}
