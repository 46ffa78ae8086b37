// A byte-level view of the simulated packet: its IPv4/IPv6 and transport headers serialised from
// the packet state, so that raw payload expressions (`@nh,8,8`, `@th,16,16`) and every named
// header field of nft's protocol tables read the bits the kernel would, and payload statements
// (`ip dscp set cs1`, `@th,16,16 set 8080`) change the same state.
//
// What a packet carries beyond the fields of the packet input (the values the kernel harness's
// crafted packets carry, test/kernel/harness/craft-packet.ts, which are also what a Linux stack
// typically sends for a first packet):
// - IPv4: header length 5 (no options), ECN 0, identification 0, DF set and no fragment
//   (frag-off 0x4000: Linux sets DF on TCP, UDP and ping sockets, ip_dont_fragment with the
//   default IP_PMTUDISC_WANT), header checksum computed;
// - IPv6: flow label 0, no extension headers;
// - TCP: sequence 0x10000000, ack 0, data offset 5 (no options; 6 with the MSS option the input
//   gives, `tcpMss`, or iptables' TCPMSS inserts, and the NOPs a stripped one left after it,
//   `tcpNops`), reserved 0, window 64240, urgent pointer 0;
//   UDP: length from the packet length; UDP-Lite: checksum coverage 0 (all);
//   ICMP/ICMPv6 queries and their answers: the packet's identifier (40000 unless given,
//   packet.ts), echo sequence 1 (other types: the rest of the header 0);
//   SCTP: verification tag 0 (an INIT's), no chunks; DCCP: a Request with 48-bit sequence 0;
// - no payload bytes beyond the headers unless the packet length says so (then zeros);
// - checksums: the IPv4 header, TCP, UDP, UDP-Lite, ICMP and ICMPv6 checksums are computed
//   complete (as on the wire and in the harness's packets), and kept valid across payload
//   statements on named fields, as nft asks the kernel to (nft_payload_set with csum_type inet and
//   NFT_PAYLOAD_L4CSUM_PSEUDOHDR). A raw payload statement, or one of `th`, leaves the checksum
//   fields as they were (no csum_type); the kernel's later updates (NAT, named fields) are
//   incremental, so a field keeps its lag behind the true checksum from then on (StoredHeaders
//   checksumLag). Not modelled: the SCTP (crc32c) and DCCP checksums; a locally generated
//   TCP/UDP packet's checksum, which the kernel leaves partial for the device (CHECKSUM_PARTIAL).
// - the link layer header exists only for a packet received on an interface (nft_payload.c:
//   no mac header → NFT_BREAK); its ethertype is known, its MAC addresses are not in the host
//   model.

import type { Payload, RawPayload } from '../model/ast.js';
import type { AddressFamily } from './address.js';
import { hasIcmpId, portBounds } from './conntrack-table.js';
import { L4_NUMBERS } from './packet.js';
import { frameDevice, NotModelled, RandomPick, type ChecksumLag, type PacketState, type SimContext, type StoredHeaders } from './sim-context.js';

type Base = 'll' | 'nh' | 'th' | 'ih';

/** A header field: where its bits are, relative to the header base. */
interface FieldLocation {
  readonly base: Base;
  readonly offset: number;
  readonly length: number;
}

/** nft's implicit dependency of a field on the ICMP type (src/proto.c ICMP46HDR_FIELD's
 * PROTO_ICMP_ECHO, _MTU, _ADDRESS…; nft --debug=netlink 1.0.6 shows `icmp id 5` as a lookup of
 * the type in { echo-reply, echo-request } before the load). */
interface IcmpDependency {
  readonly icmpTypes: readonly number[];
}

type FieldSpec = FieldLocation & Partial<IcmpDependency>;

const f = (base: Base, offset: number, length: number, icmpTypes?: readonly number[]): FieldSpec => ({ base, offset, length, ...(icmpTypes && { icmpTypes }) });

// Offsets and lengths in bits from nft's protocol templates (src/proto.c proto_ip, proto_ip6,
// proto_tcp, proto_udp, proto_udplite, proto_sctp, proto_dccp, proto_icmp, proto_icmp6, proto_th,
// proto_eth; struct members at their offsets in the Linux headers).
const ICMP_ECHO = [0, 8];
const ICMP6_ECHO = [128, 129];
const FIELDS: Readonly<Record<string, Readonly<Record<string, FieldSpec>>>> = {
  ether: { daddr: f('ll', 0, 48), saddr: f('ll', 48, 48), type: f('ll', 96, 16) },
  ip: {
    version: f('nh', 0, 4), hdrlength: f('nh', 4, 4), dscp: f('nh', 8, 6), ecn: f('nh', 14, 2),
    length: f('nh', 16, 16), id: f('nh', 32, 16), 'frag-off': f('nh', 48, 16), ttl: f('nh', 64, 8),
    protocol: f('nh', 72, 8), checksum: f('nh', 80, 16), saddr: f('nh', 96, 32), daddr: f('nh', 128, 32),
  },
  ip6: {
    version: f('nh', 0, 4), dscp: f('nh', 4, 6), ecn: f('nh', 10, 2), flowlabel: f('nh', 12, 20),
    length: f('nh', 32, 16), nexthdr: f('nh', 48, 8), hoplimit: f('nh', 56, 8), saddr: f('nh', 64, 128), daddr: f('nh', 192, 128),
  },
  tcp: {
    sport: f('th', 0, 16), dport: f('th', 16, 16), sequence: f('th', 32, 32), ackseq: f('th', 64, 32),
    doff: f('th', 96, 4), reserved: f('th', 100, 4), flags: f('th', 104, 8), window: f('th', 112, 16),
    checksum: f('th', 128, 16), urgptr: f('th', 144, 16),
  },
  udp: { sport: f('th', 0, 16), dport: f('th', 16, 16), length: f('th', 32, 16), checksum: f('th', 48, 16) },
  udplite: { sport: f('th', 0, 16), dport: f('th', 16, 16), csumcov: f('th', 32, 16), checksum: f('th', 48, 16) },
  sctp: { sport: f('th', 0, 16), dport: f('th', 16, 16), vtag: f('th', 32, 32), checksum: f('th', 64, 32) },
  dccp: { sport: f('th', 0, 16), dport: f('th', 16, 16), type: f('th', 67, 4) },
  th: { sport: f('th', 0, 16), dport: f('th', 16, 16) },
  icmp: {
    type: f('th', 0, 8), code: f('th', 8, 8), checksum: f('th', 16, 16),
    id: f('th', 32, 16, ICMP_ECHO), sequence: f('th', 48, 16, ICMP_ECHO),
    gateway: f('th', 32, 32, [5]), mtu: f('th', 48, 16, [3]),
  },
  icmpv6: {
    type: f('th', 0, 8), code: f('th', 8, 8), checksum: f('th', 16, 16),
    'parameter-problem': f('th', 32, 32, [4]), mtu: f('th', 32, 32, [2]),
    id: f('th', 32, 16, ICMP6_ECHO), sequence: f('th', 48, 16, ICMP6_ECHO),
    'max-delay': f('th', 32, 16, [130, 131, 132]),
  },
};

/** Checksum fields: their value is only as good as nftsim's computation (see the header). */
const CHECKSUM_FIELDS = new Set(['ip checksum', 'tcp checksum', 'udp checksum', 'udplite checksum', 'icmp checksum', 'icmpv6 checksum', 'sctp checksum']);
/** Transport header length by protocol number (first packet of a flow, no options). */
const TRANSPORT_LENGTH: Readonly<Record<number, number>> = { 6: 20, 17: 8, 136: 8, 132: 12, 33: 16, 1: 8, 58: 8 };

/** The fields NAT may leave a range (a port or an ICMP identifier it picked at random), and their
 * byte in the transport header. */
const PORTS_AT = [['sport', 0], ['dport', 2], ['icmpId', 4]] as const;
/** Where the transport checksum nftsim computes sits in its header, by protocol. */
const CHECKSUM_AT: Readonly<Record<number, number>> = { 6: 16, 17: 6, 136: 6, 1: 2, 58: 2 };
const ETHERTYPE: Readonly<Record<AddressFamily, number>> = { ip: 0x0800, ip6: 0x86dd };
const DEFAULT_TCP_SEQUENCE = 0x1000_0000;
const DEFAULT_TCP_WINDOW = 64240;
const DEFAULT_ECHO_SEQUENCE = 1;
const IP_DF = 0x4000;
const ICMP_ECHO_TYPES = new Set([0, 8, 128, 129]);

/** TCPOPT_NOP, TCPOPT_MSS and TCPOLEN_MSS (include/net/tcp.h). */
export const TCP_NOP_OPTION = 1;
export const TCP_MSS_OPTION = 2;
export const TCP_MSS_LENGTH = 4;

/** The bytes of the TCP options the packet carries: the MSS option first, then the NOPs a
 * stripped option left (sim-context.ts PacketState). */
export function tcpOptionBytes(p: Pick<PacketState, 'tcpMss' | 'tcpNops'>): number[] {
  const mss = p.tcpMss === undefined ? [] : [TCP_MSS_OPTION, TCP_MSS_LENGTH, p.tcpMss >> 8, p.tcpMss & 0xff];
  return [...mss, ...new Array<number>(p.tcpNops ?? 0).fill(TCP_NOP_OPTION)];
}

/** The transport header's length: its protocol's, with the TCP options the packet carries. */
function transportLength(p: PacketState): number {
  return (TRANSPORT_LENGTH[p.l4proto] ?? 0) + (p.tcpMss !== undefined ? TCP_MSS_LENGTH : 0) + (p.tcpNops ?? 0);
}

/** The length of the packet's headers, TCP options included: beyond it is data. */
export function headersLengthOf(family: AddressFamily, p: PacketState): number {
  return networkLength(family) + transportLength(p);
}

/** The header length of the network header of `family` (no options, no extension headers). */
function networkLength(family: AddressFamily): number {
  return family === 'ip' ? 20 : 40;
}

/** The packet length the kernel sees for a first packet with no payload: its headers. */
export function headersLength(family: AddressFamily, l4proto: number): number {
  return networkLength(family) + (TRANSPORT_LENGTH[l4proto] ?? 0);
}

/** A port as the headers hold it. One NAT picked from a range is one port of it in the kernel,
 * not known here: it is written as the range's first, and the readers of the headers say what
 * that leaves unknown (readLocation, keptPorts). */
function port(value: number | string | undefined): number {
  return (typeof value === 'string' ? portBounds(value)[0] : value) ?? 0;
}

/** The network and transport headers of the packet as it is now: what was stored by an earlier
 * payload statement, with the packet state's fields (which NAT and the fast paths change) laid
 * over it, lengths and checksums recomputed. */
export function serialiseHeaders(family: AddressFamily, p: PacketState): StoredHeaders {
  const stored = p.headers;
  const nh = new Uint8Array(networkLength(family));
  const th = new Uint8Array(transportLength(p));
  if (stored && stored.nh.length === nh.length) nh.set(stored.nh);
  else initialiseNetwork(family, nh);
  // A header an inserted option grew keeps what was stored before it.
  if (stored && stored.th.length <= th.length) th.set(stored.th);
  else initialiseTransport(p, th);
  const l4Length = Math.max(p.length - nh.length, th.length);
  const view = new DataView(nh.buffer);
  if (family === 'ip') {
    nh[1] = (p.dscp << 2) | (nh[1]! & 0x03);
    view.setUint16(2, p.length);
    nh[8] = p.ttl;
    nh[9] = p.l4proto;
    writeBigint(nh, 12, 4, p.src.n);
    writeBigint(nh, 16, 4, p.dst.n);
    view.setUint16(10, 0);
    view.setUint16(10, lagged(internetChecksum([nh]), stored?.checksumLag?.nh, false));
  } else {
    view.setUint32(0, (6 << 28) | (p.dscp << 22) | (view.getUint32(0) & 0x003fffff));
    view.setUint16(4, p.length - nh.length);
    nh[6] = p.l4proto;
    nh[7] = p.ttl;
    writeBigint(nh, 8, 16, p.src.n);
    writeBigint(nh, 24, 16, p.dst.n);
  }
  const tv = new DataView(th.buffer);
  if (th.length >= 4 && p.l4proto !== 1 && p.l4proto !== 58) {
    tv.setUint16(0, port(p.sport));
    tv.setUint16(2, port(p.dport));
  }
  switch (p.l4proto) {
    case 6:
      th[12] = ((th.length / 4) << 4) | (th[12]! & 0x0f);
      th[13] = p.tcpFlags;
      th.set(tcpOptionBytes(p), 20);
      break;
    case 17:
      tv.setUint16(4, l4Length);
      break;
    case 1:
    case 58:
      th[0] = p.icmpType ?? 0;
      th[1] = p.icmpCode ?? 0;
      // NAT rewrites the identifier as a port (nf_nat_proto.c icmp_manip_pkt).
      if (p.icmpId !== undefined) tv.setUint16(4, port(p.icmpId));
      break;
    default:
      break;
  }
  const checksumAt = CHECKSUM_AT[p.l4proto];
  if (checksumAt !== undefined) {
    tv.setUint16(checksumAt, 0);
    // ICMPv4's checksum covers the message only; the others add the pseudo-header (RFC 768, 793,
    // 4443); a UDP checksum of 0 is sent as 0xffff.
    const parts = p.l4proto === 1 ? [th] : [pseudoHeader(nh, family, p.l4proto, l4Length), th];
    const udp = p.l4proto === 17;
    const lag = stored?.checksumLag?.th;
    const sum = internetChecksum(parts);
    tv.setUint16(checksumAt, lag ? lagged(sum, lag, udp) : udp && sum === 0 ? 0xffff : sum);
  }
  return { nh, th, ...(stored?.checksumLag && { checksumLag: stored.checksumLag }) };
}

/** The field a raw write left (`lag.field`, when the true checksum was `lag.truth`) as the
 * kernel's incremental updates since move it (inet_proto_csum_replace*: ~(~field + new - old)
 * of the data, so ~(~field + ~truth + lag.truth) of the checksums), a UDP field of 0 included
 * (checked on Linux 6.18: a named write after a raw one of 0 moves it); one an update makes 0 is
 * 0xffff for UDP. */
function lagged(truth: number, lag: { readonly field: number; readonly truth: number } | undefined, udp: boolean): number {
  if (!lag) return truth;
  if (truth === lag.truth) return lag.field;
  const field = ~onesAdd(onesAdd(~lag.field & 0xffff, ~truth & 0xffff), lag.truth) & 0xffff;
  return udp && field === 0 ? 0xffff : field;
}

/** a + b in 16-bit ones' complement (the end-around carry). */
function onesAdd(a: number, b: number): number {
  const sum = a + b;
  return (sum & 0xffff) + (sum >>> 16);
}

function initialiseNetwork(family: AddressFamily, nh: Uint8Array): void {
  if (family === 'ip') {
    nh[0] = 0x45;
    new DataView(nh.buffer).setUint16(6, IP_DF);
  }
}

function initialiseTransport(p: PacketState, th: Uint8Array): void {
  const view = new DataView(th.buffer);
  switch (p.l4proto) {
    case 6:
      view.setUint32(4, DEFAULT_TCP_SEQUENCE);
      th[12] = 5 << 4;
      view.setUint16(14, DEFAULT_TCP_WINDOW);
      break;
    case 33:
      // Data offset 4 words, a Request (type 0) with extended sequence numbers (X = 1), RFC 4340.
      th[4] = 4;
      th[8] = 0x01;
      break;
    case 1:
    case 58:
      // The echo sequence lives in the transport header only for echo messages; the checksum
      // covers it (an echo's `icmp checksum` read before any write was computed without it).
      if (ICMP_ECHO_TYPES.has(p.icmpType ?? -1)) view.setUint16(6, DEFAULT_ECHO_SEQUENCE);
      break;
    default:
      break;
  }
}

function pseudoHeader(nh: Uint8Array, family: AddressFamily, l4proto: number, l4Length: number): Uint8Array {
  if (family === 'ip') {
    const out = new Uint8Array(12);
    out.set(nh.subarray(12, 20), 0);
    out[9] = l4proto;
    new DataView(out.buffer).setUint16(10, l4Length);
    return out;
  }
  const out = new Uint8Array(40);
  out.set(nh.subarray(8, 40), 0);
  new DataView(out.buffer).setUint32(32, l4Length);
  out[39] = l4proto;
  return out;
}

/** The Internet checksum (RFC 1071) over the concatenation of `parts` (each of even length but
 * the last). */
function internetChecksum(parts: readonly Uint8Array[]): number {
  let sum = 0;
  for (const part of parts) {
    for (let i = 0; i + 1 < part.length; i += 2) sum += (part[i]! << 8) | part[i + 1]!;
    if (part.length % 2 === 1) sum += part[part.length - 1]! << 8;
  }
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** Writes `n` big-endian into `bytes` bytes of `buf` from `at`. */
export function writeBigint(buf: Uint8Array, at: number, bytes: number, n: bigint): void {
  for (let i = bytes - 1; i >= 0; i--) {
    buf[at + i] = Number(n & 0xffn);
    n >>= 8n;
  }
}

/** Bits [offset, offset + length) of `buf`, big-endian, as nft_payload loads them; undefined
 * beyond the end (skb_copy_bits fails: NFT_BREAK). */
export function readBits(buf: Uint8Array, offset: number, length: number): bigint | undefined {
  if (offset < 0 || length <= 0 || offset + length > buf.length * 8) return undefined;
  let n = 0n;
  const first = offset >> 3;
  const last = (offset + length - 1) >> 3;
  for (let i = first; i <= last; i++) n = (n << 8n) | BigInt(buf[i]!);
  const trailing = BigInt((last + 1) * 8 - (offset + length));
  return (n >> trailing) & ((1n << BigInt(length)) - 1n);
}

/** Writes `value` into bits [offset, offset + length) of `buf`, keeping the other bits (nft's
 * read-modify-write of a sub-byte field). */
function writeBits(buf: Uint8Array, offset: number, length: number, value: bigint): boolean {
  if (offset < 0 || length <= 0 || offset + length > buf.length * 8) return false;
  for (let bit = 0; bit < length; bit++) {
    const at = offset + bit;
    const set = (value >> BigInt(length - 1 - bit)) & 1n;
    const mask = 0x80 >> (at & 7);
    buf[at >> 3] = set ? buf[at >> 3]! | mask : buf[at >> 3]! & ~mask;
  }
  return true;
}

/** The bytes from `base` on, for a read (undefined: the kernel has no such header here). */
function bytesAt(base: Base, ctx: SimContext, headers: StoredHeaders): Uint8Array | undefined {
  const p = ctx.pkt;
  const payload = Math.max(0, p.length - headers.nh.length - headers.th.length);
  switch (base) {
    case 'll': {
      // Only a frame has a link layer header (loopback's has no MAC addresses here).
      const dev = frameDevice(ctx);
      if (dev === undefined || dev === 'lo') return undefined;
      const ll = new Uint8Array(14);
      new DataView(ll.buffer).setUint16(12, ETHERTYPE[ctx.family]);
      return concat([ll, headers.nh, headers.th, new Uint8Array(payload)]);
    }
    case 'nh':
      return concat([headers.nh, headers.th, new Uint8Array(payload)]);
    case 'th':
      return concat([headers.th, new Uint8Array(payload)]);
    case 'ih':
      // The inner offset is set for TCP and UDP only (nf_tables_core.c nft_set_pktinfo's
      // NFT_PKTINFO_INNER via nft_inner_parse / the payload's inneroff).
      if (p.l4proto !== 6 && p.l4proto !== 17) return undefined;
      return new Uint8Array(payload);
    default: {
      const exhaustive: never = base;
      return exhaustive;
    }
  }
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}


/** Reads bits of the packet from a header base, as nft_payload_eval does. */
function readLocation(loc: FieldLocation, ctx: SimContext, what: string): bigint | undefined {
  if (loc.base === 'll' && loc.offset < 96) {
    const dev = frameDevice(ctx);
    if (dev !== undefined && dev !== 'lo') throw new NotModelled(`${what}: the MAC addresses of the frame are not in the host model`);
  }
  // A read of a port NAT picked from a range, or of the transport checksum, which covers it, is
  // not modelled (port); other bytes read as they are.
  const p = ctx.pkt;
  const headers = serialiseHeaders(ctx.family, ctx.pkt);
  if (typeof p.sport === 'string' || typeof p.dport === 'string' || typeof p.icmpId === 'string') checkPortsUnread(loc, headers, p, what);
  const buf = bytesAt(loc.base, ctx, headers);
  return buf && readBits(buf, loc.offset, loc.length);
}

/** Throws NotModelled when a read of `loc` covers a port NAT picked from a range, or the
 * transport checksum, which covers the port. */
function checkPortsUnread(loc: FieldLocation, headers: StoredHeaders, p: PacketState, what: string): void {
  // Where the transport header starts in the base's bytes (bytesAt); `ih` starts after it.
  const start = loc.base === 'll' ? 14 + headers.nh.length : loc.base === 'nh' ? headers.nh.length : loc.base === 'th' ? 0 : undefined;
  if (start === undefined) return;
  const from = loc.offset - start * 8;
  const to = from + loc.length;
  const covers = (byte: number): boolean => from < (byte + 2) * 8 && to > byte * 8;
  const checksumAt = CHECKSUM_AT[p.l4proto];
  for (const [field, at] of PORTS_AT) {
    const value = p[field];
    if (typeof value === 'string' && (covers(at) || (checksumAt !== undefined && covers(checksumAt)))) {
      throw new RandomPick(`${what} after NAT picked a random ${field === 'icmpId' ? 'ICMP identifier' : 'port'} (${value})`);
    }
  }
}

/** `@ll,OFF,LEN`, `@nh,…`, `@th,…`, `@ih,…`. */
export function readRawPayload(expr: RawPayload, ctx: SimContext): bigint | undefined {
  return readLocation(expr, ctx, `@${expr.base},${expr.offset},${expr.length}`);
}

/** The 32-bit big-endian word at byte `at` of the packet from its network header (what xt_u32
 * reads); undefined past the packet's end. */
export function readNetworkWord(ctx: SimContext, at: number, what: string): number | undefined {
  const value = readLocation({ base: 'nh', offset: at * 8, length: 32 }, ctx, what);
  return value === undefined ? undefined : Number(value);
}

/** Whether nft's dependency of a header field holds for the packet: the network family for ip
 * and ip6 fields (meta nfproto in inet tables), the transport protocol for transport fields
 * (meta l4proto, src/payload.c payload_gen_dependency), a link layer for ether fields (meta
 * iiftype ether), the ICMP type for ICMP fields that exist for some types only. `th` has none
 * (nft --debug=netlink): it reads any transport header nftsim has the bytes of, an ICMP
 * message's type and code, its checksum. */
function isDependencyMet(protocol: string, spec: FieldSpec, ctx: SimContext): boolean {
  const p = ctx.pkt;
  if (protocol === 'ip' || protocol === 'ip6') return ctx.family === protocol;
  if (protocol === 'ether') {
    const dev = frameDevice(ctx);
    return dev !== undefined && dev !== 'lo';
  }
  if (protocol === 'th') return TRANSPORT_LENGTH[p.l4proto] !== undefined;
  if (p.l4proto !== L4_NUMBERS[protocol]) return false;
  return !spec.icmpTypes || spec.icmpTypes.includes(p.icmpType ?? -1);
}

function fieldSpec(protocol: string, field: string): FieldSpec {
  const spec = FIELDS[protocol]?.[field];
  if (!spec) throw new NotModelled(`${protocol} ${field}`);
  return spec;
}

/** The width in bits of a named header field. */
export function payloadFieldBits(protocol: string, field: string): number {
  return fieldSpec(protocol, field).length;
}

/** A named header field (`ip id`, `tcp window`, `icmp mtu`…); undefined for NFT_BREAK or an
 * unmet dependency (the rule does not match). */
export function readPayloadField(expr: Payload, ctx: SimContext): bigint | undefined {
  return readHeaderField(expr.protocol, expr.field, ctx);
}

/** readPayloadField of `protocol field`, for the compiled rules, which keep no expression. */
export function readHeaderField(protocol: string, field: string, ctx: SimContext): bigint | undefined {
  const spec = fieldSpec(protocol, field);
  if (!isDependencyMet(protocol, spec, ctx)) return undefined;
  const name = `${protocol} ${field}`;
  if (CHECKSUM_FIELDS.has(name)) checkChecksumKnown(protocol, ctx);
  return readLocation(spec, ctx, name);
}

function checkChecksumKnown(protocol: string, ctx: SimContext): void {
  if (protocol === 'sctp') throw new NotModelled('sctp checksum (crc32c is not computed)');
  if (protocol !== 'ip' && protocol !== 'icmp' && protocol !== 'icmpv6' && ctx.iif === undefined) {
    throw new NotModelled(`${protocol} checksum of a locally generated packet (left partial for the device, CHECKSUM_PARTIAL)`);
  }
}

/** Fields a payload statement may not change in nftsim: changing them would make a packet the
 * simulator does not describe (another header length, a version, a checksum it recomputes). */
const UNWRITABLE = new Set(['ip version', 'ip hdrlength', 'ip6 version', 'tcp doff', 'ip protocol', 'ip6 nexthdr', 'ip length', 'ip6 length', 'udp length']);

/** A payload statement: writes `value` into the field, then reads the packet state back. */
export function writePayload(target: Payload | RawPayload, value: bigint, ctx: SimContext): void {
  if (target.kind === 'raw-payload') {
    writeLocation(target, value, true, ctx);
    return;
  }
  if (target.inner) throw new NotModelled(`${target.inner} ${target.protocol} ${target.field} set`);
  const spec = fieldSpec(target.protocol, target.field);
  const name = `${target.protocol} ${target.field}`;
  if (UNWRITABLE.has(name) || CHECKSUM_FIELDS.has(name)) throw new NotModelled(`${name} set`);
  // An unmet dependency ends the rule before the write; the caller checked it by reading. `th`
  // names no protocol, so nft has no checksum to fix for it (src/proto.c proto_th has no
  // checksum_key: `th dport set` is a payload write with csum_type 0), as for a raw one.
  if (isDependencyMet(target.protocol, spec, ctx)) writeLocation(spec, value, target.protocol === 'th', ctx);
}

/** The IPv4 TOS byte or the IPv6 traffic class, DSCP and ECN together (what iptables' tos match
 * and TOS target read and write, ipv4_get_dsfield and ipv6_get_dsfield): the byte DSCP opens. */
function trafficClassAt(ctx: SimContext): FieldLocation {
  return { base: 'nh', offset: FIELDS[ctx.family]!.dscp!.offset, length: 8 };
}

export function readTrafficClass(ctx: SimContext): number {
  return Number(readLocation(trafficClassAt(ctx), ctx, 'the TOS byte'));
}

/** Writes the traffic class, the checksum kept valid (ipv4_change_dsfield). */
export function writeTrafficClass(ctx: SimContext, value: number): void {
  writeLocation(trafficClassAt(ctx), BigInt(value), false, ctx);
}

/** Writes `value` at `loc`, then reads the packet state back; `raw`: a raw payload statement or
 * one of `th`, after which nft leaves the checksums as they were. */
function writeLocation(loc: FieldLocation, value: bigint, raw: boolean, ctx: SimContext): void {
  if (loc.base === 'll' || loc.base === 'ih') throw new NotModelled(`a payload statement on the ${loc.base === 'll' ? 'link layer' : 'inner'} header`);
  // A port (or ICMP identifier) NAT picked from a range is one of it in the kernel, which a write
  // elsewhere in the headers leaves as it is: written out as the range's first, it stays the
  // range after, unless the write replaced it whole.
  const p = ctx.pkt;
  const picked = { sport: p.sport, dport: p.dport, icmpId: p.icmpId };
  const ranged = typeof p.sport === 'string' || typeof p.dport === 'string' || typeof p.icmpId === 'string';
  const headers = serialiseHeaders(ctx.family, ctx.pkt);
  const start = loc.base === 'th' ? headers.nh.length * 8 : 0;
  const kept = ranged ? keptPorts(picked, start + loc.offset - headers.nh.length * 8, loc.length) : undefined;
  const packet = concat([headers.nh, headers.th]);
  if (!writeBits(packet, start + loc.offset, loc.length, value & ((1n << BigInt(loc.length)) - 1n))) {
    throw new NotModelled(`a payload statement beyond the headers nftsim models`);
  }
  const nh = packet.slice(0, headers.nh.length);
  const th = packet.slice(headers.nh.length);
  if (raw && (readBits(nh, 0, 4) !== (ctx.family === 'ip' ? 4n : 6n) || (ctx.family === 'ip' && readBits(nh, 4, 4) !== 5n))) {
    throw new NotModelled('a raw payload statement changing the IP version or header length');
  }
  readBack(ctx, nh, th, headers.checksumLag);
  if (raw) p.headers = { nh, th, checksumLag: lagAfterRawWrite(ctx, nh, th) };
  if (kept) Object.assign(p, kept);
}

/** The checksum fields as a raw write left them against the true checksums of the headers it
 * made. */
function lagAfterRawWrite(ctx: SimContext, nh: Uint8Array, th: Uint8Array): ChecksumLag {
  const truth = serialiseHeaders(ctx.family, { ...ctx.pkt, headers: { nh, th } });
  const field = (bytes: Uint8Array, at: number | undefined): number => (at === undefined || bytes.length < at + 2 ? 0 : (bytes[at]! << 8) | bytes[at + 1]!);
  const nhAt = ctx.family === 'ip' ? 10 : undefined;
  const thAt = CHECKSUM_AT[ctx.pkt.l4proto];
  const lagOf = (at: number | undefined, written: Uint8Array, computed: Uint8Array) => (at === undefined ? undefined : { field: field(written, at), truth: field(computed, at) });
  return { nh: lagOf(nhAt, nh, truth.nh), th: lagOf(thAt, th, truth.th) };
}

type Ranged = { -readonly [K in (typeof PORTS_AT)[number][0]]?: number | string };

/** The ports (and ICMP identifier) NAT picked from a range that a write of `length` bits at
 * `bit` (counted from the transport header's start) does not touch: they stay the range. One it
 * touches, it rewrites whole: only a named field gets here, since a raw payload statement first
 * reads what it writes (evaluate-stmt.ts setPayload), which is not modelled over such a port
 * (readLocation). */
function keptPorts(picked: Ranged, bit: number, length: number): Ranged {
  const kept: Ranged = {};
  for (const [field, at] of PORTS_AT) {
    const range = picked[field];
    if (typeof range === 'string' && (bit >= (at + 2) * 8 || bit + length <= at * 8)) kept[field] = range;
  }
  return kept;
}

/** Takes the packet state's fields from rewritten headers and keeps the headers for the rest. */
function readBack(ctx: SimContext, nh: Uint8Array, th: Uint8Array, checksumLag: ChecksumLag | undefined): void {
  const p = ctx.pkt;
  const family = ctx.family;
  const nv = new DataView(nh.buffer);
  if (family === 'ip') {
    p.dscp = nh[1]! >> 2;
    p.length = nv.getUint16(2);
    p.ttl = nh[8]!;
    p.l4proto = nh[9]!;
    p.src = { family, n: readBits(nh, 96, 32)! };
    p.dst = { family, n: readBits(nh, 128, 32)! };
  } else {
    p.dscp = (nv.getUint32(0) >>> 22) & 0x3f;
    p.length = nv.getUint16(4) + nh.length;
    p.l4proto = nh[6]!;
    p.ttl = nh[7]!;
    p.src = { family, n: readBits(nh, 64, 128)! };
    p.dst = { family, n: readBits(nh, 192, 128)! };
  }
  const tv = new DataView(th.buffer);
  if (th.length >= 4 && p.l4proto !== 1 && p.l4proto !== 58) {
    p.sport = tv.getUint16(0);
    p.dport = tv.getUint16(2);
  }
  if (p.l4proto === 6 && th.length >= 14) p.tcpFlags = th[13]!;
  if ((p.l4proto === 1 || p.l4proto === 58) && th.length >= 2) {
    p.icmpType = th[0]!;
    p.icmpCode = th[1]!;
    p.icmpId = hasIcmpId(p.l4proto, p.icmpType) && th.length >= 6 ? tv.getUint16(4) : undefined;
  }
  p.headers = { nh, th, ...(checksumLag && { checksumLag }) };
}
