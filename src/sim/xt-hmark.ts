// iptables' HMARK target (xt_HMARK.c): the packet's mark becomes a hash of its addresses, ports
// and protocol, scaled into `--hmark-mod` marks from `--hmark-offset`. The hash is symmetric:
// the smaller address and the smaller port go first (hmark_hash, hmark_swap_ports), so both
// directions of a connection get one mark. What enters it is chosen by masks (libxt_HMARK.c):
// `--hmark-tuple src,dst,sport,dport,spi,proto` sets them all-ones, and what iptables-save prints
// instead, `--hmark-src-prefix`, `--hmark-sport-mask` and friends, sets them as given; a field
// without a mask enters as 0. `--hmark-tuple ct` hashes the conntrack entry's tuples (the
// original source, the reply's source) where the packet's own fields would be.

import type { XtExtensionStmt } from '../model/ast.js';
import { familyBits } from './address.js';
import { IPS, isIcmpError } from './conntrack-table.js';
import { jhash } from './evaluate-special-expr.js';
import { hasConntrackEntry, hasZoneTemplate, NotModelled, type SimContext } from './sim-context.js';
import { readHmarkOptions, type HmarkInfo } from '../model/hmark-options.js';

/** The hashed tuple (struct hmark_tuple): addresses masked and folded to 32 bits, the ports
 * word, the protocol. */
interface HmarkTuple {
  readonly src: number;
  readonly dst: number;
  readonly ports: number;
  readonly proto: number;
}

/** Transport protocols whose first four bytes are ports (proto_ports_offset 0): TCP, UDP,
 * UDP-Lite, DCCP, SCTP. ESP's and AH's SPI is not in the packet model. */
const PORTED = new Set([6, 17, 136, 33, 132]);
const IPSEC = new Set([50, 51]);

const INFOS = new WeakMap<XtExtensionStmt, HmarkInfo>();

export function runHmarkTarget(stmt: XtExtensionStmt, ctx: SimContext): void {
  let info = INFOS.get(stmt);
  if (!info) {
    const read = readHmarkOptions(stmt.options, familyBits(ctx.family));
    // The lowering refuses such a rule (iptables does): a model built otherwise.
    if (typeof read === 'string') throw new NotModelled(`iptables target HMARK: ${read}`);
    INFOS.set(stmt, (info = read));
  }
  const tuple = info.ct ? connectionTuple(info, ctx) : packetTuple(info, ctx);
  // Without a conntrack entry in ct mode the target does nothing (XT_CONTINUE).
  if (tuple) ctx.pkt.mark = hmarkHash(tuple, info);
}

/** hmark_hash: jhash_3words of the smaller and the larger address and the ports word with the
 * seed (the 12 bytes' words as jhash reads them, little-endian), the protocol under its mask
 * xored in, scaled to the modulus (reciprocal_scale) and offset. */
export function hmarkHash(t: HmarkTuple, info: Pick<HmarkInfo, 'protoMask' | 'rnd' | 'mod' | 'offset'>): number {
  const [low, high] = t.dst < t.src ? [t.dst, t.src] : [t.src, t.dst];
  const key = new Uint8Array(12);
  const view = new DataView(key.buffer);
  view.setUint32(0, low, true);
  view.setUint32(4, high, true);
  view.setUint32(8, t.ports, true);
  const hash = (jhash(key, info.rnd) ^ (t.proto & info.protoMask)) >>> 0;
  return (Number((BigInt(hash) * BigInt(info.mod)) >> 32n) + info.offset) >>> 0;
}

/** An address under its mask, folded to 32 bits: an IPv6 address's four words xored
 * (hmark_addr6_mask). */
function foldAddress(address: bigint, mask: bigint, bits: number): number {
  const masked = address & mask;
  let word = 0n;
  for (let shift = 0; shift < bits; shift += 32) word ^= (masked >> BigInt(shift)) & 0xffffffffn;
  return Number(word);
}

/** hmark_swap_ports: the ports under their masks, or-ed with the sets, the larger in the high
 * half. */
function portsWord(sport: number, dport: number, info: HmarkInfo): number {
  const src = (sport & info.sportMask) | info.sportSet;
  const dst = (dport & info.dportMask) | info.dportSet;
  return dst > src ? ((dst << 16) | src) >>> 0 : ((src << 16) | dst) >>> 0;
}

function portNumber(port: number | string | undefined): number {
  if (typeof port === 'string') throw new NotModelled('iptables target HMARK of a port NAT picked at random');
  return port ?? 0;
}

/** hmark_pkt_set_htuple_ipv4 / _ipv6: the packet's header, or for an ICMP error the header it
 * quotes; the ports of a protocol that has them at the start of its header. ICMP and ICMPv6
 * give none. */
function packetTuple(info: HmarkInfo, ctx: SimContext): HmarkTuple {
  const p = ctx.pkt;
  const bits = familyBits(ctx.family);
  const icmp = ctx.family === 'ip' ? 1 : 58;
  let header: { src: bigint; dst: bigint; l4proto: number; sport?: number | string; dport?: number | string } = { src: p.src.n, dst: p.dst.n, l4proto: p.l4proto, sport: p.sport, dport: p.dport };
  if (p.l4proto === icmp && p.icmpType !== undefined && p.icmpType !== 0 && isIcmpError(icmp, p.icmpType)) {
    const quoted = ctx.conn.quoted;
    // The quote as the packet carries it: nftsim does not rewrite it for NAT.
    if (!quoted || ctx.nat.length > 0 || (ctx.ct.status & (IPS.srcNat | IPS.dstNat)) !== 0) throw new NotModelled('iptables target HMARK of an ICMP error (the header it quotes, as NAT left it)');
    header = { src: quoted.src.n, dst: quoted.dst.n, l4proto: quoted.l4proto, sport: quoted.sport, dport: quoted.dport };
  }
  if (IPSEC.has(header.l4proto)) throw new NotModelled('iptables target HMARK of an ESP or AH packet (its SPI is not in the packet model)');
  const ported = PORTED.has(header.l4proto);
  return {
    src: foldAddress(header.src, info.srcMask, bits),
    dst: foldAddress(header.dst, info.dstMask, bits),
    ports: ported ? portsWord(portNumber(header.sport), portNumber(header.dport), info) : 0,
    proto: header.l4proto,
  };
}

/** hmark_ct_set_htuple: the original tuple's source and the reply tuple's source (where a DNAT
 * sent the connection), their ports the same way; ports for every protocol but ICMP (an ICMPv6
 * query's identifier twice, a protocol without ports 0), the sets or-ed in. Undefined without
 * an entry (nf_ct_get: none, or untracked). */
function connectionTuple(info: HmarkInfo, ctx: SimContext): HmarkTuple | undefined {
  if (hasZoneTemplate(ctx)) throw new NotModelled('iptables target HMARK --hmark-tuple ct of a conntrack template (before conntrack, after a zone was set)');
  if (!hasConntrackEntry(ctx)) return undefined;
  if (ctx.ct.state === 'related') throw new NotModelled('iptables target HMARK --hmark-tuple ct of a related packet (the connection it is related to)');
  const bits = familyBits(ctx.family);
  const { original, reply } = ctx.ct;
  const proto = ctx.pkt.l4proto;
  const icmpQuery = proto === 1 || proto === 58;
  // The reply tuple's source: NAT's mapping, else the original inverted (an ICMP query keeps
  // its identifier in the source's place both ways).
  const replySrc = reply?.src ?? original.dst;
  const replySport = reply?.sport ?? (icmpQuery ? original.sport : original.dport);
  return {
    src: foldAddress(original.src.n, info.srcMask, bits),
    dst: foldAddress(replySrc.n, info.dstMask, bits),
    ports: proto === 1 ? 0 : portsWord(portNumber(original.sport), portNumber(replySport), info),
    proto,
  };
}
