// Expressions beyond header fields, meta and conntrack keys: IPv6 extension headers, TCP, IP and
// SCTP options, the route (rt), the socket, osf, ipsec and the hashes, each as its kernel
// expression evaluates it for the packets nftsim describes (no options, no extension headers,
// no IPsec, no socket but a local packet's own; packet-bytes.ts lists the packet's headers).

import type { Expr } from '../model/ast.js';
import { familyBits, type Address, type AddressFamily } from './address.js';
import { localInterfaceOf, lookupRoute } from './host.js';
import { evaluateExpr, type RtValue } from './evaluate-expr.js';
import { payloadFieldBits, TCP_MSS_LENGTH, TCP_NOP_OPTION, tcpOptionBytes } from './packet-bytes.js';
import { isIptablesRule, NotModelled, type PacketState, type SimContext } from './sim-context.js';
import { HOST_KEY } from './route-rules.js';

type SpecialExpr = Extract<Expr, { kind: 'exthdr' | 'tcp-option' | 'ip-option' | 'sctp-chunk' | 'rt' | 'socket' | 'osf' | 'ipsec' | 'hash' }>;

/** An option or extension header the packet does not carry: an existence test reads 0, a field
 * ends the rule (nft_exthdr.c: NFT_EXTHDR_F_PRESENT stores 0, otherwise NFT_BREAK). */
function absent(field: string | undefined): bigint | undefined {
  return field === undefined ? 0n : undefined;
}

/** A field of the MSS option (nft names its length and size); its existence reads 1. */
function mssOptionField(field: string | undefined, mss: number): bigint | undefined {
  switch (field) {
    case undefined:
      return 1n;
    case 'length':
      return BigInt(TCP_MSS_LENGTH);
    case 'size':
      return BigInt(mss);
    default:
      return undefined;
  }
}

/** `tcp option @KIND,OFFSET,LENGTH` (bits): LENGTH bits of the option from OFFSET, its kind
 * byte first (nft_exthdr_tcp_eval copies priv->len bytes at priv->offset). Unlike a named field
 * the load has no NFT_EXTHDR_F_PRESENT: without the option, or past its length, the rule breaks
 * (checked on Linux 6.18). nftsim's TCP packets carry an MSS option (kind 2, length 4, the size)
 * and the NOPs a stripped option left. */
function rawTcpOption(option: string, p: PacketState): bigint | undefined {
  const match = /^@(\d+),(\d+),(\d+)$/.exec(option);
  if (!match) throw new NotModelled(`tcp option ${option}`);
  const [kind, offset, length] = match.slice(1).map(Number) as [number, number, number];
  if (offset % 8 !== 0 || length % 8 !== 0 || length === 0) throw new NotModelled(`tcp option ${option} (not whole bytes)`);
  const bytes = findTcpOption(p, kind);
  if (!bytes || offset / 8 + length / 8 > bytes.length) return undefined;
  return bytes.slice(offset / 8, offset / 8 + length / 8).reduce((v, b) => (v << 8n) | BigInt(b), 0n);
}

/** The bytes of the first TCP option of `kind`, as nft_exthdr_tcp_eval walks the options: EOL,
 * NOP and an option of length 0 take one byte (optlen), the header's last byte is never an
 * option's start, and one running past the header is not found. */
function findTcpOption(p: PacketState, kind: number): number[] | undefined {
  if (p.l4proto !== 6) return undefined;
  const options = tcpOptionBytes(p);
  for (let i = 0; i < options.length - 1; ) {
    const at = options[i]!;
    const length = at <= TCP_NOP_OPTION || options[i + 1] === 0 ? 1 : options[i + 1]!;
    if (at === kind) return i + length > options.length ? undefined : options.slice(i, i + length);
    i += length;
  }
  return undefined;
}

/** Interface MTUs: the host model has none; veth and Ethernet default to 1500, loopback to 65536
 * (drivers/net/loopback.c LOOPBACK_MTU). */
function mtuOf(dev: string): number {
  return dev === 'lo' ? 65536 : 1500;
}

/** The device of the packet's route (skb_dst): its egress interface, or for a local destination
 * the interface owning the address (the local route's nexthop device, fib_add_ifaddr), lo for a
 * locally generated packet to a local address. */
function routeDevice(ctx: SimContext): string | undefined {
  const local = localInterfaceOf(ctx.host, ctx.pkt.dst);
  if (local) return ctx.iif === undefined ? 'lo' : local.name;
  return ctx.oif;
}

/** Whether the packet has a route attached: the routing decision came before this hook. */
function isRouted(ctx: SimContext): boolean {
  return ctx.hook !== 'prerouting' && ctx.hook !== 'ingress';
}

/** rt_nexthop of the packet's route: the gateway of the nexthop the routing decision attached
 * (ctx.gateway), else the destination (a local one's route has no gateway). */
export function nexthopOf(ctx: SimContext): Address {
  if (localInterfaceOf(ctx.host, ctx.pkt.dst)) return ctx.pkt.dst;
  return ctx.gateway ?? ctx.pkt.dst;
}

function rtValue(expr: Extract<Expr, { kind: 'rt' }>, ctx: SimContext): RtValue | undefined {
  // nft_rt.c nft_rt_get_eval: no dst → NFT_BREAK.
  if (!isRouted(ctx)) return undefined;
  const family: AddressFamily = ctx.family;
  switch (expr.key) {
    case 'nexthop': {
      // NFT_RT_NEXTHOP4/6 only for their family; rt_nexthop: the gateway, else the destination.
      if (expr.family !== undefined && expr.family !== family) return undefined;
      return nexthopOf(ctx).n;
    }
    case 'mtu': {
      // nft's `rt mtu` is NFT_RT_TCPMSS (nft --debug=netlink: `rt load tcpmss`): the smaller of
      // the route's MTU and the MTU towards the source, less the IP and TCP headers
      // (nft_rt.c get_tcpmss).
      const dev = routeDevice(ctx);
      if (dev === undefined) return undefined;
      let mtu = mtuOf(dev);
      const back = localInterfaceOf(ctx.host, ctx.pkt.src) ? 'lo' : lookupRoute(ctx.host, ctx.pkt.src, HOST_KEY)?.dev;
      if (back !== undefined) mtu = Math.min(mtu, mtuOf(back));
      const minimum = family === 'ip' ? 40 : 60;
      // iptables' TCPMSS --clamp-mss-to-pmtu, which the lowering lists as this, runs
      // xt_TCPMSS.c's own clamp: the smaller MTU less the headers, without nft_rt's 536 for an
      // MTU beyond 0xffff (lo's 65536; kernel-checked, seed 1134052775).
      if (isIptablesRule(ctx) && mtu > minimum) return BigInt(mtu - minimum);
      return BigInt(mtu <= minimum || mtu > 0xffff ? 536 : mtu - minimum);
    }
    case 'classid':
      // dst->tclassid: routing realms, none in the host model.
      return 0n;
    case 'ipsec':
      // NFT_RT_XFRM: the route has no xfrm bundle (no IPsec policy in the host model).
      return 0n;
    default:
      throw new NotModelled(`rt ${expr.key}`);
  }
}

/** nft_socket.c: a locally generated packet has its socket (skb->sk); otherwise the kernel looks
 * one up by the packet's addresses and ports. The host model has no sockets: for a packet to a
 * non-local address there is none (the rule does not match), for a local destination a listener
 * may exist, which nftsim cannot know. */
function socketValue(expr: Extract<Expr, { kind: 'socket' }>, ctx: SimContext): RtValue | undefined {
  if (ctx.iif !== undefined && !localInterfaceOf(ctx.host, ctx.pkt.dst)) return undefined;
  throw new NotModelled(`socket ${expr.key} (the host model has no sockets)`);
}

/** IPv6 extension headers: nftsim's packets have none (nft_exthdr_ipv6_eval, ipv6_find_hdr
 * finds nothing). nft makes them depend on `meta nfproto ipv6` in inet, bridge and netdev tables;
 * in an ip table the kernel reads an IPv4 header, whose version is not 6 (-EBADMSG): absent. */
function exthdrValue(expr: Extract<Expr, { kind: 'exthdr' }>, ctx: SimContext): RtValue | undefined {
  if (ctx.family === 'ip' && ctx.table.family !== 'ip') return undefined;
  return absent(expr.field);
}

/** Linux's jhash (include/linux/jhash.h, lookup3 by Bob Jenkins) of `key` with `seed`. Words are
 * read in the CPU's byte order (__get_unaligned_cpu32): little-endian, as on x86 and arm64; the
 * tail's switch adds its bytes as the zero-padded little-endian words do. */
export function jhash(key: Uint8Array, seed: number): number {
  const rol = (x: number, k: number): number => ((x << k) | (x >>> (32 - k))) >>> 0;
  let a = (0xdeadbeef + key.length + seed) >>> 0;
  let b = a;
  let c = a;
  let at = 0;
  let length = key.length;
  while (length > 12) {
    a = (a + cpuWord(key, at)) >>> 0;
    b = (b + cpuWord(key, at + 4)) >>> 0;
    c = (c + cpuWord(key, at + 8)) >>> 0;
    // __jhash_mix
    a = (a - c) >>> 0; a = (a ^ rol(c, 4)) >>> 0; c = (c + b) >>> 0;
    b = (b - a) >>> 0; b = (b ^ rol(a, 6)) >>> 0; a = (a + c) >>> 0;
    c = (c - b) >>> 0; c = (c ^ rol(b, 8)) >>> 0; b = (b + a) >>> 0;
    a = (a - c) >>> 0; a = (a ^ rol(c, 16)) >>> 0; c = (c + b) >>> 0;
    b = (b - a) >>> 0; b = (b ^ rol(a, 19)) >>> 0; a = (a + c) >>> 0;
    c = (c - b) >>> 0; c = (c ^ rol(b, 4)) >>> 0; b = (b + a) >>> 0;
    length -= 12;
    at += 12;
  }
  if (length === 0) return c;
  const tail = new Uint8Array(12);
  tail.set(key.subarray(at, at + length));
  a = (a + cpuWord(tail, 0)) >>> 0;
  b = (b + cpuWord(tail, 4)) >>> 0;
  c = (c + cpuWord(tail, 8)) >>> 0;
  // __jhash_final
  c = (c ^ b) >>> 0; c = (c - rol(b, 14)) >>> 0;
  a = (a ^ c) >>> 0; a = (a - rol(c, 11)) >>> 0;
  b = (b ^ a) >>> 0; b = (b - rol(a, 25)) >>> 0;
  c = (c ^ b) >>> 0; c = (c - rol(b, 16)) >>> 0;
  a = (a ^ c) >>> 0; a = (a - rol(c, 4)) >>> 0;
  b = (b ^ a) >>> 0; b = (b - rol(a, 14)) >>> 0;
  c = (c ^ b) >>> 0; c = (c - rol(b, 24)) >>> 0;
  return c;
}

/** The 32-bit word at `at` in the CPU's byte order (__get_unaligned_cpu32): little-endian. */
export function cpuWord(buf: Uint8Array, at: number): number {
  return (buf[at]! | (buf[at + 1]! << 8) | (buf[at + 2]! << 16) | (buf[at + 3]! << 24)) >>> 0;
}

/** Host-order (little-endian) 32-bit registers: meta and ct keys nft loads as host integers. */
const HOST_ORDER_KEYS: Readonly<Record<string, number>> = { 'meta mark': 4, 'ct mark': 4, 'meta l4proto': 1, 'meta nfproto': 1, 'meta skuid': 4, 'meta skgid': 4 };

/** The bytes nft loads `expr` into, as the hash reads them (NFTA_HASH_LEN bytes from the source
 * register): a byte-aligned header field in network order, a host-order meta/ct key, an
 * interface name of 16 bytes, a concatenation with each part padded to 4 bytes
 * (src/evaluate.c expr_evaluate_concat, netlink_padded_len). */
function registerBytes(expr: Expr, ctx: SimContext, padded: boolean): Uint8Array | undefined {
  if (expr.kind === 'concat') {
    const parts: Uint8Array[] = [];
    for (const part of expr.parts) {
      const bytes = registerBytes(part, ctx, true);
      if (!bytes) return undefined;
      parts.push(bytes);
    }
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
  const value = evaluateExpr(expr, ctx);
  if (value === undefined) return undefined;
  const pad = (bytes: Uint8Array): Uint8Array => {
    if (!padded || bytes.length % 4 === 0) return bytes;
    const out = new Uint8Array(bytes.length + 4 - (bytes.length % 4));
    out.set(bytes);
    return out;
  };
  if (expr.kind === 'meta' && (expr.key === 'iifname' || expr.key === 'oifname') && typeof value === 'string') {
    const out = new Uint8Array(16);
    out.set(new TextEncoder().encode(value).subarray(0, 15));
    return out;
  }
  if (typeof value !== 'bigint') throw new NotModelled('a hash of this expression');
  const key = expr.kind === 'meta' ? `meta ${expr.key}` : expr.kind === 'ct' && !expr.dir ? `ct ${expr.key}` : undefined;
  if (key !== undefined && HOST_ORDER_KEYS[key] !== undefined) {
    const size = HOST_ORDER_KEYS[key];
    const out = new Uint8Array(size);
    for (let i = 0; i < size; i++) out[i] = Number((value >> BigInt(8 * i)) & 0xffn);
    return pad(out);
  }
  // Network order: a header field, and a conntrack tuple's address or port as the tuple holds it.
  const bits = expr.kind === 'payload' ? payloadFieldBits(expr.protocol, expr.field) : expr.kind === 'ct' ? ctTupleBits(expr, ctx) : undefined;
  if (bits !== undefined) {
    if (bits % 8 !== 0) throw new NotModelled(`a hash of ${expr.kind === 'payload' ? `${expr.protocol} ${expr.field}` : 'a ct key'} (not whole bytes)`);
    const out = new Uint8Array(bits / 8);
    for (let i = 0; i < out.length; i++) out[i] = Number((value >> BigInt(8 * (out.length - 1 - i))) & 0xffn);
    return pad(out);
  }
  throw new NotModelled(`a hash of a ${expr.kind} expression`);
}

/** The width of a conntrack tuple's address (of the expression's family, else the packet's) or
 * port; undefined for the other ct keys. */
function ctTupleBits(expr: Extract<Expr, { kind: 'ct' }>, ctx: SimContext): number | undefined {
  if (expr.key.endsWith('saddr') || expr.key.endsWith('daddr')) return familyBits(expr.family ?? ctx.family);
  return expr.key === 'proto-src' || expr.key === 'proto-dst' ? 16 : undefined;
}

/** nft_hash.c: jhash of the source registers with the seed (a random one when none is given,
 * get_random_bytes in nft_jhash_init), symhash of the flow dissector's symmetric hash with a
 * random boot-time key; reciprocal_scale to the modulus, plus the offset. A random key is never
 * guessed: every result is a branch of equal share. */
function hashValue(expr: Extract<Expr, { kind: 'hash' }>, ctx: SimContext): RtValue | undefined {
  const offset = BigInt(expr.offset ?? 0);
  if (expr.type === 'jhash' && expr.seed !== undefined) {
    if (!expr.expr) throw new NotModelled('jhash without an expression');
    const bytes = registerBytes(expr.expr, ctx, expr.expr.kind === 'concat');
    if (!bytes) return undefined;
    const h = jhash(bytes, expr.seed >>> 0);
    return ((BigInt(h) * BigInt(expr.mod)) >> 32n) + offset;
  }
  if (expr.type === 'jhash' && expr.expr && registerBytes(expr.expr, ctx, expr.expr.kind === 'concat') === undefined) return undefined;
  const pick = ctx.choose(new Array<number>(expr.mod).fill(1 / expr.mod));
  return BigInt(pick) + offset;
}

/** The value of one of these expressions, undefined for NFT_BREAK. */
export function evaluateSpecialExpr(expr: SpecialExpr, ctx: SimContext): RtValue | undefined {
  const p = ctx.pkt;
  switch (expr.kind) {
    case 'exthdr':
      return exthdrValue(expr, ctx);
    case 'tcp-option':
      // nft_exthdr_tcp_eval: no TCP header (another protocol) or no such option → absent; nft
      // adds no protocol dependency (nft --debug=netlink 1.0.6). nftsim's TCP packets have no
      // options (data offset 5) but an MSS option, the input's or iptables' TCPMSS's. iptables' tcpmss
      // match, lowered to the MSS option's size, is xt_tcpmss in the kernel, which gives its
      // inversion without the option: a size no range holds (-1) does that.
      if (expr.option.startsWith('@')) return rawTcpOption(expr.option, p);
      if (expr.option === 'maxseg' && p.l4proto === 6 && p.tcpMss !== undefined) return mssOptionField(expr.field, p.tcpMss);
      // A NOP (the kernel's fill of a stripped option): its existence and its kind byte.
      if (expr.option === 'nop' && (expr.field === undefined || expr.field === 'kind') && findTcpOption(p, TCP_NOP_OPTION)) return 1n;
      if (expr.option === 'maxseg' && expr.field === 'size' && isIptablesRule(ctx)) return -1n;
      return absent(expr.field);
    case 'ip-option':
      // nft_exthdr_ipv4_eval after nft's `meta nfproto ipv4` dependency; header length 5.
      if (ctx.family !== 'ip') return undefined;
      return absent(expr.field);
    case 'sctp-chunk':
      // nft_exthdr_sctp_eval: not SCTP → absent; an SCTP packet's chunks are not in the model.
      if (p.l4proto !== 132) return absent(expr.field);
      throw new NotModelled(`sctp chunk ${expr.chunk} (the chunks of an SCTP packet are not in the packet model)`);
    case 'rt':
      return rtValue(expr, ctx);
    case 'socket':
      return socketValue(expr, ctx);
    case 'osf':
      // nft_osf.c: not TCP → NFT_BREAK; a SYN is looked up in the fingerprints userspace loaded
      // (nfnl_osf), which are not in the host model.
      if (p.l4proto !== 6) return undefined;
      throw new NotModelled('osf (the OS fingerprints loaded with nfnl_osf are not in the host model)');
    case 'ipsec':
      // nft_xfrm.c: no secpath on input, no xfrm bundle on output → NFT_BREAK (no IPsec in the
      // host model).
      return undefined;
    case 'hash':
      return hashValue(expr, ctx);
    default: {
      const exhaustive: never = expr;
      return exhaustive;
    }
  }
}

