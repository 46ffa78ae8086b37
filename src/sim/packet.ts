// The packet to simulate: the `packet` of a packet file, with every field defaulted (issue 4) and
// checked against the host it arrives on.

import { datatypeSymbols } from '../model/datatypes.js';
import { parseAddress, type Address, type AddressFamily } from './address.js';
import type { Host } from './host.js';
import { hasIcmpId, isIcmpError, isUntrackedIcmp, opensIcmpConnection, type CtEntry } from './conntrack-table.js';
import { headersLength, TCP_MSS_LENGTH } from './packet-bytes.js';
import { FieldReader, type FieldPath, type InputError } from './read-fields.js';
import { opensTcpConnection } from './tcp-tracking.js';

/** The packet as a user writes it. Numbers may be given as `"0x…"` strings. */
export interface PacketInput {
  /** The interface it arrives on; absent: generated locally (output path). */
  readonly iif?: string;
  /** Force the egress interface (otherwise the route lookup decides). */
  readonly oif?: string;
  readonly src?: string;
  readonly dst: string;
  /** `tcp` (default), `udp`, `icmp`, `icmpv6`, `sctp`, `udplite`, `dccp`, or a protocol number. */
  readonly protocol?: string | number;
  readonly sport?: number;
  readonly dport?: number;
  /** `syn` (default), `syn,ack`, or a list. */
  readonly tcpFlags?: string | readonly string[];
  /** A TCP packet's MSS option (a real SYN carries one); absent: no TCP options. */
  readonly tcpMss?: number;
  readonly icmpType?: string | number;
  readonly icmpCode?: string | number;
  /** An ICMP query's or answer's identifier (an echo's, a timestamp's…); default 40000. */
  readonly icmpId?: number;
  readonly mark?: string | number;
  readonly ct?: { readonly state?: CtStateName; readonly mark?: string | number; readonly status?: string | readonly string[]; readonly zone?: number; readonly direction?: 'original' | 'reply' };
  readonly length?: number;
  readonly dscp?: string | number;
  readonly ttl?: number;
  readonly skuid?: number;
  readonly skgid?: number;
  /** For an ICMP error: the packet it is about (its addresses, protocol, ports or ICMP type),
   * by which conntrack relates it to that packet's connection. A flow's reply that is an ICMP
   * error quotes the previous packet without it. */
  readonly quoted?: Pick<PacketInput, 'src' | 'dst' | 'protocol' | 'sport' | 'dport' | 'icmpType' | 'icmpCode' | 'icmpId'>;
}

/** The packet an ICMP error quotes: its addresses, protocol, and ports or ICMP type. */
export interface QuotedPacket {
  readonly src: Address;
  readonly dst: Address;
  readonly l4proto: number;
  readonly sport?: number;
  readonly dport?: number;
  readonly icmpType?: number;
  readonly icmpCode?: number;
  readonly icmpId?: number;
}

export type CtStateName = 'new' | 'established' | 'related' | 'invalid' | 'untracked';

/** The resolved packet the simulator starts from. */
export interface Packet {
  readonly family: AddressFamily;
  readonly iif?: string;
  readonly oif?: string;
  readonly src: Address;
  readonly dst: Address;
  readonly l4proto: number;
  readonly sport?: number;
  readonly dport?: number;
  readonly tcpFlags: number;
  /** The TCP MSS option's value; absent: no TCP options. */
  readonly tcpMss?: number;
  readonly icmpType?: number;
  readonly icmpCode?: number;
  /** For an ICMP query or its answer (conntrack-table.ts hasIcmpId): its identifier. */
  readonly icmpId?: number;
  readonly mark: number;
  /** False when the input gave no `ct`: the packet then sees what conntrack makes of it. A
   * packet built by hand without it sees its `ct`, as before the field existed. */
  readonly ctGiven?: boolean;
  readonly ct: {
    readonly state: CtStateName;
    readonly mark: number;
    readonly status: number;
    readonly zone: number;
    readonly direction: 0 | 1;
  };
  readonly length: number;
  readonly dscp: number;
  readonly ttl: number;
  readonly skuid?: number;
  readonly skgid?: number;
  /** For an ICMP error: the packet it is about, as the header it quotes shows it (a flow's reply
   * to the previous packet as that left the node), by which conntrack relates it. */
  readonly quoted?: QuotedPacket;
  /** For a flow's reply: the connection it answers. A port of it the kernel picked at random
   * (shown as a range, the reply sent to its first port) is that connection's pick, which no
   * other connection's range holds (conntrack-table.ts lookup). */
  readonly answers?: CtEntry;
}

const PACKET_FIELDS = [
  'iif', 'oif', 'src', 'dst', 'protocol', 'sport', 'dport', 'tcpFlags', 'tcpMss', 'icmpType', 'icmpCode', 'icmpId', 'quoted',
  'mark', 'ct', 'length', 'dscp', 'ttl', 'skuid', 'skgid',
] as const;

// IANA protocol numbers (/etc/protocols) of the transports whose ports nftsim models.
export const L4_NUMBERS: Readonly<Record<string, number>> = {
  icmp: 1, tcp: 6, udp: 17, dccp: 33, icmpv6: 58, sctp: 132, udplite: 136,
};
/** The identifier of an ICMP query or answer when the input gives none. */
export const DEFAULT_ICMP_ID = 40000;
const PORT_PROTOCOLS = new Set([6, 17, 33, 132, 136]);

export function hasPorts(l4proto: number): boolean {
  return PORT_PROTOCOLS.has(l4proto);
}

const PROTOCOL_NAMES: ReadonlyMap<number, string> = new Map(Object.entries(L4_NUMBERS).map(([name, n]) => [n, name]));

export function protocolName(l4proto: number): string {
  return PROTOCOL_NAMES.get(l4proto) ?? String(l4proto);
}

function symbolValue(dtype: string, name: string): number | undefined {
  return datatypeSymbols(dtype).find(([symbol]) => symbol === name)?.[1];
}

/** Reads and checks the packet against the host; errors name the field. */
export function readPacket(value: unknown, host: Host, path: FieldPath = ['packet']): { packet?: Packet; errors: InputError[] } {
  const reader = new FieldReader();
  const record = reader.object(value, path, PACKET_FIELDS);
  if (!record) return { errors: reader.errors };
  const at = (field: string): FieldPath => [...path, field];
  const iface = (field: 'iif' | 'oif'): string | undefined => {
    if (record[field] === undefined) return undefined;
    const name = reader.string(record[field], at(field));
    if (name !== undefined && !host.interfaces.some((i) => i.name === name)) {
      return reader.fail(at(field), `unknown interface '${name}' (the host has ${host.interfaces.map((i) => i.name).join(', ')})`);
    }
    return name;
  };
  const iif = iface('iif');
  const oif = iface('oif');
  const address = (field: 'src' | 'dst'): Address | undefined => {
    if (record[field] === undefined) return undefined;
    const text = reader.string(record[field], at(field));
    if (text === undefined) return undefined;
    return parseAddress(text) ?? reader.fail(at(field), `'${text}' is not an IPv4 or IPv6 address`);
  };
  const dst = record.dst === undefined ? reader.fail(at('dst'), 'required') : address('dst');
  let src = address('src');
  if (dst && src && src.family !== dst.family) reader.fail(at('src'), 'src and dst are of different families');
  const family: AddressFamily = dst?.family ?? 'ip';
  if (!src && record.src === undefined) {
    if (iif !== undefined) reader.fail(at('src'), 'required for a packet arriving on an interface');
    else src = sourceFor(host, oif, family);
  }

  const l4proto = readProtocol(reader, record.protocol, at('protocol'), family);
  const ported = l4proto !== undefined && hasPorts(l4proto);
  const port = (field: 'sport' | 'dport', fallback: number): number | undefined => {
    if (record[field] === undefined) return ported ? fallback : undefined;
    if (!ported) return reader.fail(at(field), `the protocol has no ports`);
    return reader.unsigned(record[field], at(field), 16);
  };
  const isTcp = l4proto === L4_NUMBERS.tcp;
  if (record.tcpFlags !== undefined && !isTcp) reader.fail(at('tcpFlags'), 'only for tcp');
  const tcpFlags = isTcp ? readFlags(reader, record.tcpFlags ?? 'syn', at('tcpFlags'), 'tcp_flag') : 0;
  if (record.tcpMss !== undefined && !isTcp) reader.fail(at('tcpMss'), 'only for tcp');
  const tcpMss = isTcp && record.tcpMss !== undefined ? reader.unsigned(record.tcpMss, at('tcpMss'), 16) : undefined;
  const icmpDtype = l4proto === L4_NUMBERS.icmp ? 'icmp' : l4proto === L4_NUMBERS.icmpv6 ? 'icmpv6' : undefined;
  for (const field of ['icmpType', 'icmpCode'] as const) {
    if (record[field] !== undefined && !icmpDtype) reader.fail(at(field), 'only for icmp and icmpv6');
  }
  const icmpType = icmpDtype ? readSymbolic(reader, record.icmpType ?? 'echo-request', at('icmpType'), `${icmpDtype}_type`) : undefined;
  const icmpCode = icmpDtype ? readSymbolic(reader, record.icmpCode ?? 0, at('icmpCode'), `${icmpDtype}_code`) : undefined;
  const identified = l4proto !== undefined && hasIcmpId(l4proto, icmpType);
  if (record.icmpId !== undefined && !identified) reader.fail(at('icmpId'), 'only for an ICMP query or its answer (echo, timestamp, information, address mask, node information)');
  // What the kernel harness's echo requests carry (packet-bytes.ts).
  const icmpId = identified ? (record.icmpId === undefined ? DEFAULT_ICMP_ID : reader.unsigned(record.icmpId, at('icmpId'), 16)) : undefined;

  // An ICMP error opens no connection: conntrack relates it to the one it is about, or leaves it
  // without an entry, invalid (nf_conntrack_core.c nf_conntrack_handle_icmp). Nor does any other
  // ICMP type but a query: an echo reply without its request is invalid.
  const isError = l4proto !== undefined && icmpType !== undefined && isIcmpError(l4proto, icmpType);
  const ct = readCt(reader, record.ct, at('ct'), entrylessState(l4proto, tcpFlags, icmpType));
  let quoted: QuotedPacket | undefined;
  if (record.quoted !== undefined) {
    if (isError) quoted = readQuoted(reader, record.quoted, at('quoted'), host, family);
    else reader.fail(at('quoted'), 'only for an ICMP error');
  }
  for (const field of ['skuid', 'skgid'] as const) {
    if (record[field] !== undefined && iif !== undefined) reader.fail(at(field), 'only for a locally generated packet (no iif)');
  }
  const number = (field: 'length' | 'ttl', bits: number, fallback: number): number =>
    record[field] === undefined ? fallback : (reader.unsigned(record[field], at(field), bits) ?? fallback);
  const packet: Packet | undefined =
    src && dst && l4proto !== undefined && ct
      ? {
          family,
          ...(iif !== undefined && { iif }),
          ...(oif !== undefined && { oif }),
          src,
          dst,
          l4proto,
          ...(ported && { sport: port('sport', 40000), dport: port('dport', 80) }),
          tcpFlags,
          ...(tcpMss !== undefined && { tcpMss }),
          ...(icmpType !== undefined && { icmpType, icmpCode }),
          ...(icmpId !== undefined && { icmpId }),
          mark: record.mark === undefined ? 0 : (reader.unsigned(record.mark, at('mark'), 32) ?? 0),
          ctGiven: record.ct !== undefined,
          ct,
          // Default: the headers alone, no payload and no options but an MSS option given
          // (packet-bytes.ts), as the kernel harness crafts a first packet.
          length: number('length', 16, headersLength(family, l4proto) + (tcpMss !== undefined ? TCP_MSS_LENGTH : 0) + (quoted ? headersLength(family, quoted.l4proto) : 0)),
          dscp: record.dscp === undefined ? 0 : (readSymbolic(reader, record.dscp, at('dscp'), 'dscp') ?? 0),
          ttl: number('ttl', 8, 64),
          ...(record.skuid !== undefined && { skuid: reader.unsigned(record.skuid, at('skuid'), 32) }),
          ...(record.skgid !== undefined && { skgid: reader.unsigned(record.skgid, at('skgid'), 32) }),
          ...(quoted && { quoted }),
        }
      : undefined;
  return reader.errors.length > 0 || !packet ? { errors: reader.errors } : { packet, errors: [] };
}

/** The packet an ICMP error quotes, read as a packet of its own; quoted whole (a packet of
 * headers only fits in an error). */
function readQuoted(reader: FieldReader, value: unknown, path: FieldPath, host: Host, family: AddressFamily): QuotedPacket | undefined {
  const record = reader.object(value, path, ['src', 'dst', 'protocol', 'sport', 'dport', 'icmpType', 'icmpCode', 'icmpId']);
  if (!record) return undefined;
  if (record.src === undefined) return reader.fail([...path, 'src'], 'required');
  const read = readPacket(record, host, path);
  reader.errors.push(...read.errors);
  const p = read.packet;
  if (!p) return undefined;
  if (p.family !== family) return reader.fail([...path, 'dst'], 'the quoted packet is of another family than the error');
  return { src: p.src, dst: p.dst, l4proto: p.l4proto, sport: p.sport, dport: p.dport, icmpType: p.icmpType, icmpCode: p.icmpCode, icmpId: p.icmpId };
}

/** The source address the kernel picks for a local packet: the primary address of the egress
 * interface (inet_select_addr), else of any interface. */
function sourceFor(host: Host, oif: string | undefined, family: AddressFamily): Address | undefined {
  const ifaces = oif ? host.interfaces.filter((i) => i.name === oif) : host.interfaces.filter((i) => i.name !== 'lo');
  for (const iface of ifaces) {
    const a = iface.addresses.find((c) => c.family === family);
    if (a) return { family, n: a.n };
  }
  return family === 'ip' ? parseAddress('127.0.0.1') : parseAddress('::1');
}

function readProtocol(reader: FieldReader, value: unknown, path: FieldPath, family: AddressFamily): number | undefined {
  if (value === undefined) return L4_NUMBERS.tcp;
  if (typeof value !== 'number' && typeof value !== 'string') return reader.fail(path, 'expected a protocol name or number');
  const n = typeof value === 'number' ? reader.unsigned(value, path, 8) : (L4_NUMBERS[value] ?? symbolValue('inet_proto', value));
  if (n === undefined) return typeof value === 'number' ? undefined : reader.fail(path, `unknown protocol '${value}'`);
  // ICMP (1) and ICMPv6 (58), by name or number, must go with the addresses' family.
  if ((n === 1 && family === 'ip6') || (n === 58 && family === 'ip')) return reader.fail(path, `'${value}' does not go with ${family === 'ip' ? 'IPv4' : 'IPv6'} addresses`);
  return n;
}

function readSymbolic(reader: FieldReader, value: unknown, path: FieldPath, dtype: string): number | undefined {
  if (typeof value === 'string' && !/^(0x[0-9a-fA-F]+|\d+)$/.test(value)) {
    const n = symbolValue(dtype, value);
    return n ?? reader.fail(path, `unknown ${dtype} '${value}' (expected ${datatypeSymbols(dtype).map(([s]) => s).join(', ')})`);
  }
  return reader.unsigned(value, path, 8);
}

function readFlags(reader: FieldReader, value: unknown, path: FieldPath, dtype: string): number {
  const names = typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter((s) => s !== '') : Array.isArray(value) ? value : undefined;
  if (!names) return reader.fail(path, 'expected a comma list or an array of names') ?? 0;
  let bits = 0;
  for (const [i, name] of names.entries()) {
    const n = typeof name === 'string' ? symbolValue(dtype, name) : undefined;
    if (n === undefined) reader.fail(Array.isArray(value) ? [...path, i] : path, `unknown ${dtype} '${String(name)}' (expected ${datatypeSymbols(dtype).map(([s]) => s).join(', ')})`);
    else bits |= n;
  }
  return bits;
}

const CT_STATES: readonly CtStateName[] = ['new', 'established', 'related', 'invalid', 'untracked'];

/**
 * What conntrack makes of a packet it finds no entry for: a new connection, unless it is a TCP
 * packet that cannot open one (only a SYN, or a bare ACK picked up mid-stream, can: tcp-tracking.ts
 * opensTcpConnection) or an ICMP type other than a query (an echo reply without its request, an error it
 * relates to nothing), which are invalid; ICMPv6 neighbour discovery and MLD are untracked.
 */
export function entrylessState(l4proto: number | undefined, tcpFlags: number, icmpType: number | undefined): CtStateName {
  if (l4proto === L4_NUMBERS.tcp) return opensTcpConnection(tcpFlags) ? 'new' : 'invalid';
  if (l4proto === undefined || icmpType === undefined || opensIcmpConnection(l4proto, icmpType)) return 'new';
  return isUntrackedIcmp(l4proto, icmpType) ? 'untracked' : 'invalid';
}

function readCt(reader: FieldReader, value: unknown, path: FieldPath, defaultState: CtStateName): Packet['ct'] | undefined {
  if (value === undefined) return { state: defaultState, mark: 0, status: 0, zone: 0, direction: 0 };
  const record = reader.object(value, path, ['state', 'mark', 'status', 'zone', 'direction']);
  if (!record) return undefined;
  let state: CtStateName = defaultState;
  if (record.state !== undefined) {
    const s = reader.string(record.state, [...path, 'state']);
    if (s !== undefined && !(CT_STATES as readonly string[]).includes(s)) reader.fail([...path, 'state'], `expected one of ${CT_STATES.join(', ')}`);
    else if (s !== undefined) state = s as CtStateName;
  }
  let direction: 0 | 1 = 0;
  if (record.direction !== undefined) {
    const d = reader.string(record.direction, [...path, 'direction']);
    if (d === 'reply') direction = 1;
    else if (d !== 'original') reader.fail([...path, 'direction'], "expected 'original' or 'reply'");
  }
  return {
    state,
    mark: record.mark === undefined ? 0 : (reader.unsigned(record.mark, [...path, 'mark'], 32) ?? 0),
    status: record.status === undefined ? 0 : readFlags(reader, record.status, [...path, 'status'], 'ct_status'),
    zone: record.zone === undefined ? 0 : (reader.unsigned(record.zone, [...path, 'zone'], 16) ?? 0),
    direction,
  };
}
