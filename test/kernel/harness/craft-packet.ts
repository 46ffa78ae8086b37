// Packets for the kernel-differential harness: crafting the IP packet a case injects, and reading
// back the frames the peers capture. Only what the harness needs: IPv4/IPv6 with TCP, UDP, ICMP
// echo and ICMPv6 echo (requests and replies) and a few ICMP errors, no options, no payload.
import { isIPv4, isIPv6 } from 'node:net';

export type KernelProtocol = 'tcp' | 'udp' | 'icmp' | 'icmpv6';

/** What to inject: the `packet` of the packet JSON, the fields the harness can craft. */
export interface KernelPacket {
  /** Host interface the packet arrives on; absent: sent from a socket inside the node (output). */
  readonly iif?: string;
  /** For a locally generated packet: bind the socket to this interface (SO_BINDTODEVICE). */
  readonly oif?: string;
  readonly src: string;
  readonly dst: string;
  readonly protocol: KernelProtocol;
  /** TCP/UDP ports. */
  readonly sport?: number;
  readonly dport?: number;
  /** An ICMP echo's identifier, 40000 by default (what nftsim assumes, packet.ts). */
  readonly icmpId?: number;
  /** Comma-separated TCP flags, `syn` by default: `syn`, `syn,ack`, `ack`, `fin,ack`, `rst`. */
  readonly tcpFlags?: string;
  /** A TCP MSS option (kind 2, length 4) after the header; none by default. */
  readonly tcpMss?: number;
  /** For ICMP and ICMPv6: an echo request (the default) or reply, an error quoting `quoted`, or
   * for ICMPv6 a neighbour discovery or MLD message (its body zeros). */
  readonly icmpType?: 'echo-request' | 'echo-reply' | IcmpErrorType | NeighbourDiscoveryType;
  /** An ICMP error's code: a name of nft's icmp_code or icmpv6_code that ICMP_CODES has. */
  readonly icmpCode?: IcmpCodeName;
  /** The packet an ICMP error is about, quoted whole (its headers: there is no payload). */
  readonly quoted?: KernelPacket;
  /** Initial meta mark (`0x4000` or a number). */
  readonly mark?: string | number;
  readonly ttl?: number;
  /** For the simulator only: the harness sends a local packet from root's socket, so 0 is the
   * only truthful value (the kernel's `meta skuid` of it). */
  readonly skuid?: number;
  readonly skgid?: number;
  /** Harness only (nftsim does not track TCP windows): sequence and acknowledgement numbers, so
   * that the packets of a flow pass conntrack's window check (nf_conntrack_proto_tcp.c
   * tcp_in_window). Default 0x10000000 and 0. */
  readonly tcpSeq?: number;
  readonly tcpAck?: number;
}

/** A packet as seen on the wire: addresses and ports after whatever NAT the node did. */
export interface SeenPacket {
  readonly family: 'ip' | 'ip6';
  readonly src: string;
  readonly dst: string;
  readonly protocol: KernelProtocol | `proto-${number}`;
  readonly sport?: number;
  readonly dport?: number;
  /** An ICMP echo's identifier (NAT rewrites it like a port). */
  readonly icmpId?: number;
  readonly tcpFlags?: string;
  /** IPv4 identification or IPv6 flow label: the harness's tag for the packet of a case. */
  readonly tag: number;
  readonly ttl: number;
}

/** Protocol numbers (include/uapi/linux/in.h, in6.h). */
const PROTOCOL_NUMBER: Record<KernelProtocol, number> = { tcp: 6, udp: 17, icmp: 1, icmpv6: 58 };
/** TCP flag bits in header byte 13 (RFC 9293), in nft's printing order. */
const TCP_FLAG_BITS: readonly (readonly [string, number])[] = [
  ['fin', 0x01],
  ['syn', 0x02],
  ['rst', 0x04],
  ['psh', 0x08],
  ['ack', 0x10],
  ['urg', 0x20],
  ['ecn', 0x40],
  ['cwr', 0x80],
];
/** ICMP and ICMPv6 echo types (include/uapi/linux/icmp.h, icmpv6.h). */
const ECHO_TYPES = { icmp: { 'echo-request': 8, 'echo-reply': 0 }, icmpv6: { 'echo-request': 128, 'echo-reply': 129 } } as const;
/** The error types the harness crafts, by nft's names. */
const ERROR_TYPES = {
  icmp: { 'destination-unreachable': 3, 'time-exceeded': 11, 'parameter-problem': 12 },
  icmpv6: { 'destination-unreachable': 1, 'time-exceeded': 3, 'parameter-problem': 4 },
} as const;
export type IcmpErrorType = keyof (typeof ERROR_TYPES)['icmp'];
/** ICMPv6 neighbour discovery and MLD messages the harness crafts, by nft's names, with the
 * length of each (RFC 4861, RFC 2710): conntrack leaves them untracked. */
const NEIGHBOUR_DISCOVERY = { 'nd-router-solicit': [133, 8], 'nd-neighbor-solicit': [135, 24], 'mld-listener-query': [130, 24] } as const;
export type NeighbourDiscoveryType = keyof typeof NEIGHBOUR_DISCOVERY;
/** Their codes, by nft's names (ICMPv6 has no host-unreachable: addr-unreachable stands for it). */
const ICMP_CODES = {
  icmp: { 'port-unreachable': 3, 'host-unreachable': 1, 'addr-unreachable': 1 },
  icmpv6: { 'port-unreachable': 4, 'host-unreachable': 3, 'addr-unreachable': 3 },
} as const;
export type IcmpCodeName = keyof (typeof ICMP_CODES)['icmp'];
const DEFAULT_PORTS = { sport: 40000, dport: 80 };
const DEFAULT_ICMP_ID = 40000;
/** The TCP sequence number of a packet that gives none. */
export const DEFAULT_SEQ = 0x1000_0000;

/** The IP version of an address, or an error naming it. */
export function findIpFamily(address: string): 'ip' | 'ip6' {
  if (isIPv4(address)) return 'ip';
  if (isIPv6(address)) return 'ip6';
  throw new Error(`not an IP address: ${address}`);
}

/**
 * The packet's bytes from the IP header on, tagged with `tag` (IPv4 identification, or IPv6 flow
 * label) so that the harness finds it among the frames the peers capture and in the trace, whatever
 * NAT did to its addresses and ports.
 */
export function craftPacket(packet: KernelPacket, tag: number): Buffer {
  const family = findIpFamily(packet.src);
  if (findIpFamily(packet.dst) !== family) throw new Error(`src ${packet.src} and dst ${packet.dst} differ in family`);
  const protocol = packet.protocol === 'icmp' && family === 'ip6' ? 'icmpv6' : packet.protocol;
  const src = encodeAddress(packet.src);
  const dst = encodeAddress(packet.dst);
  const l4 = craftTransport(packet, protocol, src, dst);
  const ttl = packet.ttl ?? 64;
  if (family === 'ip') {
    const header = Buffer.alloc(20);
    header.writeUInt8(0x45, 0);
    header.writeUInt16BE(20 + l4.length, 2);
    header.writeUInt16BE(tag & 0xffff, 4);
    header.writeUInt16BE(0x4000, 6); // DF
    header.writeUInt8(ttl, 8);
    header.writeUInt8(PROTOCOL_NUMBER[protocol], 9);
    src.copy(header, 12);
    dst.copy(header, 16);
    header.writeUInt16BE(checksum(header), 10);
    return Buffer.concat([header, l4]);
  }
  const header = Buffer.alloc(40);
  header.writeUInt32BE((6 << 28) | (tag & 0xfffff), 0);
  header.writeUInt16BE(l4.length, 4);
  header.writeUInt8(PROTOCOL_NUMBER[protocol], 6);
  header.writeUInt8(ttl, 7);
  src.copy(header, 8);
  dst.copy(header, 24);
  return Buffer.concat([header, l4]);
}

function craftTransport(packet: KernelPacket, protocol: KernelProtocol, src: Buffer, dst: Buffer): Buffer {
  const sport = packet.sport ?? DEFAULT_PORTS.sport;
  const dport = packet.dport ?? DEFAULT_PORTS.dport;
  let segment: Buffer;
  let checksumAt: number;
  switch (protocol) {
    case 'tcp':
      segment = Buffer.alloc(packet.tcpMss === undefined ? 20 : 24);
      segment.writeUInt16BE(sport, 0);
      segment.writeUInt16BE(dport, 2);
      segment.writeUInt32BE(packet.tcpSeq ?? DEFAULT_SEQ, 4);
      segment.writeUInt32BE(packet.tcpAck ?? 0, 8);
      segment.writeUInt8((segment.length / 4) << 4, 12);
      if (packet.tcpMss !== undefined) {
        segment.writeUInt8(2, 20);
        segment.writeUInt8(4, 21);
        segment.writeUInt16BE(packet.tcpMss, 22);
      }
      segment.writeUInt8(encodeTcpFlags(packet.tcpFlags ?? 'syn'), 13);
      segment.writeUInt16BE(64240, 14);
      checksumAt = 16;
      break;
    case 'udp':
      segment = Buffer.alloc(8);
      segment.writeUInt16BE(sport, 0);
      segment.writeUInt16BE(dport, 2);
      segment.writeUInt16BE(8, 4);
      checksumAt = 6;
      break;
    case 'icmp':
    case 'icmpv6': {
      const type = packet.icmpType ?? 'echo-request';
      if (type === 'echo-request' || type === 'echo-reply') {
        segment = Buffer.alloc(8);
        segment.writeUInt8(ECHO_TYPES[protocol][type], 0);
        segment.writeUInt16BE(packet.icmpId ?? DEFAULT_ICMP_ID, 4);
        segment.writeUInt16BE(1, 6);
      } else if (type in NEIGHBOUR_DISCOVERY) {
        if (protocol !== 'icmpv6') throw new Error(`${type} is an ICMPv6 message`);
        const [number, length] = NEIGHBOUR_DISCOVERY[type as NeighbourDiscoveryType];
        segment = Buffer.alloc(length);
        segment.writeUInt8(number, 0);
      } else {
        // Type, code, checksum, 4 unused bytes, then the quoted packet (RFC 792, RFC 4443).
        if (!packet.quoted) throw new Error(`an ICMP ${type} needs the packet it quotes`);
        segment = Buffer.concat([Buffer.alloc(8), craftPacket(packet.quoted, 0)]);
        segment.writeUInt8(ERROR_TYPES[protocol][type as IcmpErrorType], 0);
        segment.writeUInt8(ICMP_CODES[protocol][packet.icmpCode ?? 'port-unreachable'], 1);
      }
      checksumAt = 2;
      break;
    }
    default: {
      const unknown: never = protocol;
      throw new Error(`unknown protocol ${String(unknown)}`);
    }
  }
  // ICMPv4's checksum covers only the message; TCP, UDP and ICMPv6 add the pseudo-header.
  const covered = protocol === 'icmp' ? segment : Buffer.concat([pseudoHeader(src, dst, protocol, segment.length), segment]);
  const sum = checksum(covered);
  segment.writeUInt16BE(protocol === 'udp' && sum === 0 ? 0xffff : sum, checksumAt);
  return segment;
}

function pseudoHeader(src: Buffer, dst: Buffer, protocol: KernelProtocol, length: number): Buffer {
  const tail = Buffer.alloc(src.length === 4 ? 4 : 8);
  if (src.length === 4) {
    tail.writeUInt8(PROTOCOL_NUMBER[protocol], 1);
    tail.writeUInt16BE(length, 2);
  } else {
    tail.writeUInt32BE(length, 0);
    tail.writeUInt8(PROTOCOL_NUMBER[protocol], 7);
  }
  return Buffer.concat([src, dst, tail]);
}

/** The Internet checksum (RFC 1071) of `data`. */
function checksum(data: Buffer): number {
  let sum = 0;
  for (let i = 0; i + 1 < data.length; i += 2) sum += data.readUInt16BE(i);
  if (data.length % 2 === 1) sum += data[data.length - 1]! << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

function encodeTcpFlags(text: string): number {
  let bits = 0;
  for (const name of text.split(/[,|]/).map((part) => part.trim())) {
    const flag = TCP_FLAG_BITS.find(([flagName]) => flagName === name);
    if (!flag) throw new Error(`unknown TCP flag ${name} in "${text}"`);
    bits |= flag[1];
  }
  return bits;
}

function decodeTcpFlags(bits: number): string {
  return TCP_FLAG_BITS.filter(([, bit]) => (bits & bit) !== 0)
    .map(([name]) => name)
    .join(',');
}

export function encodeAddress(address: string): Buffer {
  if (isIPv4(address)) return Buffer.from(address.split('.').map(Number));
  const [head = '', tail] = address.split('::');
  const groups = (part: string): number[] => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const bytes = Buffer.alloc(16);
  all.forEach((group, index) => bytes.writeUInt16BE(group, index * 2));
  return bytes;
}

function decodeAddress(bytes: Buffer): string {
  if (bytes.length === 4) return [...bytes].join('.');
  const groups = Array.from({ length: 8 }, (_, index) => bytes.readUInt16BE(index * 2));
  // RFC 5952: the longest run of two or more zero groups becomes "::".
  let bestStart = -1;
  let bestLength = 1;
  for (let start = 0; start < 8; start++) {
    let length = 0;
    while (start + length < 8 && groups[start + length] === 0) length++;
    if (length > bestLength) [bestStart, bestLength] = [start, length];
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** Reads an Ethernet frame the peers captured; undefined when it carries neither IPv4 nor IPv6. */
export function parseFrame(frame: Buffer): SeenPacket | undefined {
  if (frame.length < 14) return undefined;
  const ethertype = frame.readUInt16BE(12);
  const ip = frame.subarray(14);
  if (ethertype === 0x0800 && ip.length >= 20) {
    const headerLength = (ip[0]! & 0x0f) * 4;
    return withTransport(
      {
        family: 'ip',
        src: decodeAddress(ip.subarray(12, 16)),
        dst: decodeAddress(ip.subarray(16, 20)),
        tag: ip.readUInt16BE(4),
        ttl: ip[8]!,
      },
      ip[9]!,
      ip.subarray(headerLength),
    );
  }
  if (ethertype === 0x86dd && ip.length >= 40) {
    return withTransport(
      {
        family: 'ip6',
        src: decodeAddress(ip.subarray(8, 24)),
        dst: decodeAddress(ip.subarray(24, 40)),
        tag: ip.readUInt32BE(0) & 0xfffff,
        ttl: ip[7]!,
      },
      ip[6]!,
      ip.subarray(40),
    );
  }
  return undefined;
}

function withTransport(base: Omit<SeenPacket, 'protocol'>, number: number, l4: Buffer): SeenPacket {
  const protocol = (Object.keys(PROTOCOL_NUMBER) as KernelProtocol[]).find((name) => PROTOCOL_NUMBER[name] === number);
  if (protocol === undefined) return { ...base, protocol: `proto-${number}` };
  if ((protocol === 'tcp' || protocol === 'udp') && l4.length >= 4) {
    const ports = { protocol, sport: l4.readUInt16BE(0), dport: l4.readUInt16BE(2) };
    return protocol === 'tcp' && l4.length >= 14 ? { ...base, ...ports, tcpFlags: decodeTcpFlags(l4[13]!) } : { ...base, ...ports };
  }
  // ICMP echo: the identifier, which NAT rewrites like a port (an error has none).
  const echoTypes: readonly number[] = Object.values(ECHO_TYPES[protocol === 'icmpv6' ? 'icmpv6' : 'icmp']);
  if (l4.length >= 6 && echoTypes.includes(l4[0]!)) return { ...base, protocol, icmpId: l4.readUInt16BE(4) };
  return { ...base, protocol };
}
