// Where NAT maps a new connection, as nf_nat_core.c get_unique_tuple does: the source it has or
// an earlier connection's mapping of it (SNAT), else the range's address by the kernel's hash
// (pick-range-address.ts), and a port kept unless the tuple it makes is another connection's
// already (nf_nat_used_tuple), then moved on as nf_nat_l4proto_unique_tuple moves it. An ICMP
// query's identifier is its tuple's only port, for either manipulation (src.u.icmp.id, "id is
// same for either direction"): SNAT and DNAT alike move it on a clash.

import type { Address } from './address.js';
import { hasIcmpId, invertTransport, portBounds, tupleOf, type ConntrackTable, type CtTuple, type NatManip } from './conntrack-table.js';
import { pickRangeAddress } from './pick-range-address.js';

/** A NAT address or port: one value (`low === high`), or a range the kernel picks from. */
export interface NatValue {
  readonly low: bigint;
  readonly high: bigint;
}

/** What a NAT statement asks for one connection (struct nf_nat_range2 and the packet). */
export interface NatRequest {
  readonly wants: NatManip;
  /** The packet as the NAT sees it (after the manipulations of earlier hooks). */
  readonly pkt: {
    readonly src: Address;
    readonly dst: Address;
    readonly sport?: number | string;
    readonly dport?: number | string;
    readonly l4proto: number;
    readonly icmpType?: number;
    readonly icmpCode?: number;
    readonly icmpId?: number | string;
  };
  readonly zone: number;
  readonly addresses: NatValue;
  /** The port range given (NF_NAT_RANGE_PROTO_SPECIFIED); absent: none was. */
  readonly ports: NatValue | undefined;
  /** `random` or `fully-random` (NF_NAT_RANGE_PROTO_RANDOM_ALL). */
  readonly random: boolean;
  readonly persistent: boolean;
  /** The base of a shifted port range (NF_NAT_RANGE_PROTO_OFFSET, iptables' `/base`); absent:
   * none. */
  readonly shiftBase?: number;
}

export interface NatChoice {
  readonly address: bigint;
  /** The new port (an ICMP query's new identifier): a number, or the range where the kernel
   * picks one at random (not invented); undefined where the packet has no port nftsim knows and
   * no port was given (unchanged). */
  readonly port: number | NatValue | undefined;
}

/** NF_NAT_MAX_ATTEMPTS: how many ports nf_nat_l4proto_unique_tuple tries from its offset before
 * it starts again at a random one. */
const MAX_ATTEMPTS = 128;

const ALWAYS_FREE = (): boolean => true;

/** The identifiers an ICMP query may get without a range given (nf_nat_l4proto_unique_tuple). */
const ICMP_IDS: NatValue = { low: 0n, high: 65535n };

/** The field NAT maps with the address: the source or destination port, or an ICMP query's
 * identifier for either. */
export function natField(pkt: { readonly l4proto: number; readonly icmpType?: number }, wants: NatManip): 'sport' | 'dport' | 'icmpId' {
  if (hasIcmpId(pkt.l4proto, pkt.icmpType)) return 'icmpId';
  return wants === 'dst' ? 'dport' : 'sport';
}

/** The value of that field. */
export function natKeyOf(pkt: NatRequest['pkt'], wants: NatManip): number | string | undefined {
  return pkt[natField(pkt, wants)];
}

/** The transport part of the reply tuple of a connection whose `wants` side NAT maps to `port`
 * (an ICMP query's identifier): the new tuple's, inverted. */
export function replyTransport(pkt: NatRequest['pkt'], wants: NatManip, port: number | string | undefined): { sport?: number | string; dport?: number | string } {
  if (hasIcmpId(pkt.l4proto, pkt.icmpType)) return invertTransport({ l4proto: pkt.l4proto, sport: port, dport: (pkt.icmpType! << 8) | (pkt.icmpCode ?? 0) });
  return wants === 'src' ? { sport: pkt.dport, dport: port } : { sport: port, dport: pkt.sport };
}

/** get_unique_tuple for `req` against the confirmed connections of `table`. */
export function uniqueTuple(req: NatRequest, table: ConntrackTable): NatChoice {
  const { wants, pkt, ports, random } = req;
  const port = natKeyOf(pkt, wants);
  // A single packet, or the first connection of a flow, takes nothing.
  const isFree =
    table.entries.length === 0 ? ALWAYS_FREE : (address: bigint, newPort: number | NatValue | undefined): boolean => typeof newPort !== 'number' || !table.isTaken(replyTuple(req, address, newPort));
  // 1) SNAT without random flags: the packet's own source when it is in the range (its port in
  // the port range given), else the mapping of an earlier connection from the same source address
  // and port (find_appropriate_src), when it is in the range; either only when its tuple is free.
  if (wants === 'src' && !random) {
    const kept = isInRange(req, pkt.src.n, port) ? { address: pkt.src.n, port: portOf(port) } : appropriateSource(req, table);
    if (kept && isFree(kept.address, kept.port)) return kept;
  }
  // 2) The address (find_best_ips_proto).
  const { low, high } = req.addresses;
  const address = low === high ? low : pickRangeAddress({ src: pkt.src, dst: pkt.dst, zone: req.zone }, wants, low, high, req.persistent);
  // 3) The port.
  if (typeof port !== 'number') return { address, port: ports && (ports.low === ports.high ? Number(ports.low) : ports) };
  return { address, port: uniquePort(req, port, address, isFree) };
}

/** The port of step 3: the packet's own when it is in the range given (or none was) and its
 * tuple is free, or the range is one port; else nf_nat_l4proto_unique_tuple's. That keeps a DNAT
 * port when no range is given (the kernel cannot change it), and tries the range from an offset:
 * 0 for DNAT without random flags, so the first free port of the range; random otherwise,
 * which nftsim shows as the range. Without a range given, SNAT picks from the port's class:
 * 1-511 below 512, 600-1023 below 1024, else 1024-65535; an ICMP identifier, for SNAT and DNAT
 * alike, from 0-65535. */
function uniquePort(req: NatRequest, port: number, address: bigint, isFree: (address: bigint, port: number) => boolean): number | NatValue {
  const { wants, random } = req;
  let range = req.ports;
  // One port given: the packet gets it, free or not.
  if (range && range.low === range.high) return Number(range.low);
  if (range && req.shiftBase !== undefined) return shiftedPort(range, port, req.shiftBase, (candidate) => isFree(address, candidate));
  if (!random && (range ? isWithin(BigInt(port), range) && isFree(address, port) : isFree(address, port))) return port;
  if (!range) {
    if (hasIcmpId(req.pkt.l4proto, req.pkt.icmpType)) range = ICMP_IDS;
    else if (wants === 'dst') return port;
    else range = port < 512 ? { low: 1n, high: 511n } : port < 1024 ? { low: 600n, high: 1023n } : { low: 1024n, high: 65535n };
  }
  if (wants === 'dst' && !random) {
    const attempts = Math.min(Number(range.high - range.low) + 1, MAX_ATTEMPTS);
    for (let i = 0; i < attempts; i++) {
      const candidate = Number(range.low) + i;
      if (isFree(address, candidate)) return candidate;
    }
  }
  return range;
}

/** A shifted port range (nf_nat_l4proto_unique_tuple with NF_NAT_RANGE_PROTO_OFFSET): the
 * offset is the port less the base, a 16-bit count, random flags or not, and the port the range's
 * first plus the offset modulo the range's size, moved on while its tuple is taken, up to 128
 * tries; the kernel never keeps a port for being in the range (get_unique_tuple skips that test
 * with the flag). When every try is taken, a range the tries covered (or one of fewer than 16
 * tries) leaves the last port tried, a clash at confirmation; else the kernel goes on from a
 * random offset, shown as the range. */
function shiftedPort(range: NatValue, port: number, base: number, isFree: (port: number) => boolean): number | NatValue {
  const low = Number(range.low);
  const size = Number(range.high - range.low) + 1;
  const offset = (port - base) & 0xffff;
  const attempts = Math.min(size, MAX_ATTEMPTS);
  let candidate = low;
  for (let i = 0; i < attempts; i++) {
    candidate = low + (((offset + i) & 0xffff) % size);
    if (isFree(candidate)) return candidate;
  }
  return attempts >= size || attempts < 16 ? candidate : range;
}

/** nf_in_range: the address in the range, and the port in the port range when one is given (a
 * packet without a port nftsim knows is taken as out of it). */
function isInRange(req: NatRequest, address: bigint, port: number | string | undefined): boolean {
  if (!isWithin(address, req.addresses)) return false;
  if (!req.ports) return true;
  return typeof port === 'number' && isWithin(BigInt(port), req.ports);
}

/** find_appropriate_src: the source an earlier connection from the same address and port was
 * mapped to, when it is in the range. The port is the tuple's (same_src compares src.u.all): for
 * an ICMP query the identifier (seed 1346823647, case 205: the packet's absent port never
 * matched, and a second echo connection took a hashed address). */
function appropriateSource(req: NatRequest, table: ConntrackTable): NatChoice | undefined {
  const { pkt } = req;
  // A single packet's table is empty: no tuple made for nothing to compare it with.
  const own = table.entries.length === 0 ? undefined : tupleOf(pkt.src.family, pkt, req.zone);
  if (!own) return undefined;
  // Where the reply tuple keeps the mapped source's port: its destination port, or an ICMP
  // query's identifier, which both directions keep in the source's place.
  const icmp = hasIcmpId(pkt.l4proto, pkt.icmpType);
  const mappedPort = (r: CtTuple): number | string | undefined => (icmp ? r.sport : r.dport);
  const mapped = table.entries.find(
    ({ original: o, reply: r }) =>
      o.family === own.family && o.src === own.src && o.sport === own.sport && o.l4proto === own.l4proto && o.zone === own.zone && isInRange(req, r.dst, mappedPort(r)),
  );
  return mapped && { address: mapped.reply.dst, port: natKeyOf(pkt, 'src') === undefined ? undefined : portOf(mappedPort(mapped.reply)) };
}

/** A port as a conntrack tuple keeps it: a number, or a range (`1024-65535`) the kernel picked
 * from. */
function portOf(port: number | string | undefined): number | NatValue | undefined {
  if (typeof port !== 'string') return port;
  const [low, high] = portBounds(port);
  return { low: BigInt(low), high: BigInt(high) };
}

/** The reply tuple a connection mapped to `address` and `port` would have: taken when another
 * connection has it (nf_nat_used_tuple inverts the new tuple). */
function replyTuple(req: NatRequest, address: bigint, port: number): CtTuple {
  const { pkt, wants } = req;
  const { sport, dport } = replyTransport(pkt, wants, port);
  const src = wants === 'dst' ? address : pkt.dst.n;
  const dst = wants === 'src' ? address : pkt.src.n;
  return { family: pkt.src.family, l4proto: pkt.l4proto, zone: req.zone, src, dst, sport, dport };
}

export function isWithin(n: bigint, range: NatValue): boolean {
  return n >= range.low && n <= range.high;
}
