// The conntrack table a flow's packets share: an entry per connection, found by the tuple of
// either direction, carrying the ct mark, the status bits and the NAT mappings the first packet
// set up, so that later packets see what the kernel would show them (issue 4, Conntrack).

import type { AddressFamily } from './address.js';
import type { NatEvent } from './outcome.js';
import type { CtStateName } from './packet.js';
import type { TcpTrack } from './tcp-tracking.js';

/** A conntrack tuple (nf_conntrack_tuple.h): addresses, layer 4 protocol, ports, zone. For ICMP
 * queries and their answers the kernel keeps the identifier (src.u.icmp.id) and the type and code
 * (dst.u.icmp): here `sport` is the identifier and `dport` the type and code as the two bytes of
 * dst.u.all read (`type << 8 | code`, what `ct original proto-dst` reads). A port may be a range
 * (`1024-65535`) where NAT let the kernel pick one: any port of the range then matches. */
export interface CtTuple {
  readonly family: AddressFamily;
  readonly l4proto: number;
  readonly src: bigint;
  readonly dst: bigint;
  readonly sport?: number | string;
  readonly dport?: number | string;
  readonly zone: number;
}

/** ct status bits nftsim maintains (include/uapi/linux/netfilter/nf_conntrack_common.h IPS_*).
 * ASSURED only for TCP (tcp-tracking.ts): UDP's depends on time (nf_conntrack_proto_udp.c). */
export const IPS = { expected: 0x01, seenReply: 0x02, assured: 0x04, confirmed: 0x08, srcNat: 0x10, dstNat: 0x20, srcNatDone: 0x80, dstNatDone: 0x100, template: 0x800 } as const;

/** The bits `ct state` reads (include/uapi/linux/netfilter/nf_conntrack_common.h
 * NF_CT_STATE_INVALID_BIT, NF_CT_STATE_BIT(IP_CT_ESTABLISHED / RELATED / NEW),
 * NF_CT_STATE_UNTRACKED_BIT). */
export const CT_STATE_BITS: Readonly<Record<CtStateName, number>> = { invalid: 0x01, established: 0x02, related: 0x04, new: 0x08, untracked: 0x40 };

export type NatManip = 'src' | 'dst';

/** The IPS_*_NAT_DONE bit of each manipulation: nf_nat_setup_info sets it once the
 * manipulation is set up, for a null binding too (nf_nat_initialized reads it). */
export const NAT_DONE: Readonly<Record<NatManip, number>> = { src: IPS.srcNatDone, dst: IPS.dstNatDone };

export interface CtEntry {
  readonly original: CtTuple;
  /** The post-NAT tuple of the first packet, inverted (nf_nat_setup_info alters the reply
   * tuple; without NAT it is the inverted original). */
  readonly reply: CtTuple;
  mark: number;
  /** The bits `ct label set` set (nf_conn_labels), undefined for none. */
  labels: bigint | undefined;
  status: number;
  /** The NAT_DONE bits of the manipulations set up (nf_nat_initialized): nat chains at hooks of
   * these do not run again for the connection. */
  readonly natDone: number;
  /** The NAT events of the first packet, shown again on later packets the mapping rewrites. */
  readonly nat: readonly NatEvent[];
  /** A TCP connection's tracking (tcp-tracking.ts), which its packets move on. */
  readonly tcp: TcpTrack | undefined;
  /** The accounting of its packets and bytes by direction (nf_conn_acct, which an nft rule
   * reading `ct packets` turns on before any connection of the run is made): conntrack counts a
   * packet when it attaches the entry to it, not an ICMP error it relates, nor a TCP packet the
   * state machine ignores or finds invalid. */
  readonly packets: [number, number];
  readonly bytes: [number, number];
}

/** A connection a rule told conntrack to expect (nft_ct.c nft_ct_expect_obj_eval): from the
 * master's reply source to its reply destination, of a protocol and destination port, any source
 * port. */
export interface CtExpectation {
  readonly family: AddressFamily;
  readonly l4proto: number;
  readonly src: bigint;
  readonly dst: bigint;
  readonly dport: number;
  readonly zone: number;
  readonly master: CtEntry;
}

export interface CtMatch {
  readonly entry: CtEntry;
  /** 0: the tuple is the entry's original one; 1: its reply one. */
  readonly direction: 0 | 1;
}

/** ICMP query types and their answers (nf_conntrack_proto_icmp.c and nf_conntrack_proto_icmpv6.c
 * valid_new and invmap): echo, timestamp, info, address mask; ICMPv6 echo and node information.
 * Other ICMP types (errors) are not connections of their own: nftsim does not track them (related
 * is not modelled across packets). */
const ICMP_QUERIES: Readonly<Record<number, Readonly<Record<number, number>>>> = {
  1: { 8: 0, 13: 14, 15: 16, 17: 18 },
  58: { 128: 129, 139: 140 },
};

/** invmap: each query type and each answer type to the other. */
const ICMP_QUERY_ANSWER: Readonly<Record<number, Readonly<Record<number, number>>>> = Object.fromEntries(
  Object.entries(ICMP_QUERIES).map(([proto, answers]) => [proto, Object.fromEntries(Object.entries(answers).flatMap(([query, answer]) => [[query, answer], [answer, Number(query)]]))]),
);

/** Whether an ICMP type is an error, which quotes the packet it is about: destination
 * unreachable, source quench, redirect, time exceeded and parameter problem (include/linux/icmp.h
 * icmp_is_err); for ICMPv6 every type below 128 (nf_conntrack_proto_icmpv6.c). */
export function isIcmpError(l4proto: number, type: number): boolean {
  if (l4proto === 1) return type === 3 || type === 4 || type === 5 || type === 11 || type === 12;
  return l4proto === 58 && type < 128;
}

/** ICMP types that open a connection: the queries (valid_new). Any other type without an entry,
 * an answer included, is invalid ("invalid new with type"). */
export function opensIcmpConnection(l4proto: number, type: number): boolean {
  return ICMP_QUERIES[l4proto]?.[type] !== undefined;
}

/** ICMPv6 types conntrack leaves untracked, before looking for an entry (nf_conntrack_proto_icmpv6.c
 * nf_conntrack_icmpv6_error, noct_valid_new): MLD queries, reports and reductions (130, 131, 132,
 * 143), router solicitation and advertisement (133, 134), neighbour solicitation and
 * advertisement (135, 136). */
const UNTRACKED_ICMPV6_TYPES: ReadonlySet<number> = new Set([130, 131, 132, 133, 134, 135, 136, 143]);

/** Whether conntrack leaves a packet of this ICMP type untracked (neighbour discovery, MLD). */
export function isUntrackedIcmp(l4proto: number, type: number): boolean {
  return l4proto === 58 && UNTRACKED_ICMPV6_TYPES.has(type);
}

/** The answer to an ICMP query type, undefined for other types and protocols. */
export function icmpAnswerType(l4proto: number, type: number): number | undefined {
  return ICMP_QUERY_ANSWER[l4proto]?.[type];
}

/** Whether an ICMP type carries an identifier conntrack keys on: the queries and their answers
 * (the identifier is the header's bytes 4-5, icmp_pkt_to_tuple and icmpv6_pkt_to_tuple). */
export function hasIcmpId(l4proto: number, type: number | undefined): boolean {
  return type !== undefined && ICMP_QUERY_ANSWER[l4proto]?.[type] !== undefined;
}

/** A tuple's transport part as `ct original proto-src` and `proto-dst` read it and conntrack
 * compares it: the ports, or an ICMP query's identifier and its type and code (CtTuple). */
export function transportOf(pkt: { readonly l4proto: number; readonly sport?: number | string; readonly dport?: number | string; readonly icmpType?: number; readonly icmpCode?: number; readonly icmpId?: number | string }): {
  sport?: number | string;
  dport?: number | string;
} {
  if (ICMP_QUERY_ANSWER[pkt.l4proto]) {
    return hasIcmpId(pkt.l4proto, pkt.icmpType) ? { sport: pkt.icmpId ?? 0, dport: (pkt.icmpType! << 8) | (pkt.icmpCode ?? 0) } : {};
  }
  return { sport: pkt.sport, dport: pkt.dport };
}

/** The tuple of a packet, undefined for what nftsim does not track (ICMP errors). */
export function tupleOf(
  family: AddressFamily,
  pkt: { readonly src: { readonly n: bigint }; readonly dst: { readonly n: bigint }; readonly l4proto: number; readonly sport?: number | string; readonly dport?: number | string; readonly icmpType?: number; readonly icmpCode?: number; readonly icmpId?: number | string },
  zone: number,
): CtTuple | undefined {
  if (ICMP_QUERY_ANSWER[pkt.l4proto]) {
    if (!hasIcmpId(pkt.l4proto, pkt.icmpType)) return undefined;
    return { family, l4proto: pkt.l4proto, src: pkt.src.n, dst: pkt.dst.n, zone, ...transportOf(pkt) };
  }
  // Built field by field: object spreads here were a tenth of the time of simulating a packet.
  const tuple: { -readonly [K in keyof CtTuple]: CtTuple[K] } = { family, l4proto: pkt.l4proto, src: pkt.src.n, dst: pkt.dst.n, zone };
  if (pkt.sport !== undefined) tuple.sport = pkt.sport;
  if (pkt.dport !== undefined) tuple.dport = pkt.dport;
  return tuple;
}

/** The tuple of the other direction (nf_ct_invert_tuple): addresses swapped, and the ports, or
 * for an ICMP query the type turned into its answer's, identifier and code kept
 * (icmp_invert_tuple). */
export function invertTuple(t: CtTuple): CtTuple {
  const inverted: { -readonly [K in keyof CtTuple]: CtTuple[K] } = { family: t.family, l4proto: t.l4proto, src: t.dst, dst: t.src, zone: t.zone };
  const { sport, dport } = ICMP_QUERY_ANSWER[t.l4proto] ? invertTransport(t) : { sport: t.dport, dport: t.sport };
  if (sport !== undefined) inverted.sport = sport;
  if (dport !== undefined) inverted.dport = dport;
  return inverted;
}

/** The transport part of the other direction's tuple (invertTuple). */
export function invertTransport(t: { readonly l4proto: number; readonly sport?: number | string; readonly dport?: number | string }): { sport?: number | string; dport?: number | string } {
  const icmp = ICMP_QUERY_ANSWER[t.l4proto];
  if (icmp && typeof t.dport === 'number') return { sport: t.sport, dport: ((icmp[t.dport >> 8] ?? t.dport >> 8) << 8) | (t.dport & 0xff) };
  return { sport: t.dport, dport: t.sport };
}

/** The bounds of a port: a number, or a range (`1024-65535`) where NAT let the kernel pick. */
export function portBounds(port: number | string): readonly [number, number] {
  if (typeof port === 'number') return [port, port];
  const [low, high] = port.split('-').map(Number) as [number, number];
  return [low, high];
}

function portMatches(entryPort: number | string | undefined, port: number | string | undefined): boolean {
  if (entryPort === port) return true;
  if (typeof entryPort !== 'string' || port === undefined) return false;
  const [low, high] = portBounds(entryPort);
  const [pLow, pHigh] = portBounds(port);
  return pLow >= low && pHigh <= high;
}

/** The tuple of the entry a lookup found, in the direction found. */
export function tupleAt({ entry, direction }: CtMatch): CtTuple {
  return direction === 0 ? entry.original : entry.reply;
}

/** The same ports, neither a range. */
function isSamePorts(a: CtTuple, b: CtTuple): boolean {
  return a.sport === b.sport && a.dport === b.dport && typeof a.sport !== 'string' && typeof a.dport !== 'string';
}

function bucketKey(t: CtTuple): string {
  return `${t.family}/${t.l4proto}/${t.src}/${t.dst}/${t.zone}`;
}

/** The table: entries by the address part of both their tuples, ports compared within. */
export class ConntrackTable {
  private readonly buckets = new Map<string, CtMatch[]>();
  private readonly list: CtEntry[] = [];
  private expectations: CtExpectation[] = [];

  /** The entry whose original or reply tuple is `t` (nf_conntrack_find_get on the hash of
   * both directions, net/netfilter/nf_conntrack_core.c): one with the very ports, else one whose
   * port is a range the kernel picked from (the pick is one of the range's ports). A flow's reply
   * answering `answers` carries that connection's pick: another connection's pick from the same
   * range is another port (seed 42306950, case 1892: a SYN in a zone holding another
   * connection's range was taken for its packet). */
  lookup(t: CtTuple, answers?: CtEntry): CtMatch | undefined {
    // A single packet looks up an empty table: no key to make.
    if (this.list.length === 0) return undefined;
    const bucket = this.buckets.get(bucketKey(t));
    if (!bucket) return undefined;
    return (
      bucket.find((m) => isSamePorts(tupleAt(m), t)) ??
      bucket.find((m) => (answers === undefined || m.entry === answers) && portMatches(tupleAt(m).sport, t.sport) && portMatches(tupleAt(m).dport, t.dport))
    );
  }

  /** Whether a confirmed entry has `t` as one of its tuples (nf_conntrack_tuple_taken). A port
   * the kernel picked at random (a range here) is taken as none of the range's ports: the pick
   * is one of thousands. */
  isTaken(t: CtTuple): boolean {
    return this.buckets.get(bucketKey(t))?.some((m) => isSamePorts(tupleAt(m), t)) ?? false;
  }

  /** Inserts a confirmed entry; false (and no change) when a tuple of it is taken already, as
   * __nf_conntrack_confirm refuses a clash. */
  insert(entry: CtEntry): boolean {
    if (this.isTaken(entry.original) || this.isTaken(entry.reply)) return false;
    this.list.push(entry);
    for (const direction of [0, 1] as const) {
      const key = bucketKey(direction === 0 ? entry.original : entry.reply);
      const bucket = this.buckets.get(key) ?? [];
      bucket.push({ entry, direction });
      this.buckets.set(key, bucket);
    }
    return true;
  }

  /** Deletes an entry (nf_ct_kill): its tuples are free for a new connection. */
  remove(entry: CtEntry): void {
    const at = this.list.indexOf(entry);
    if (at < 0) return;
    this.list.splice(at, 1);
    for (const tuple of [entry.original, entry.reply]) {
      const key = bucketKey(tuple);
      const rest = (this.buckets.get(key) ?? []).filter((m) => m.entry !== entry);
      if (rest.length > 0) this.buckets.set(key, rest);
      else this.buckets.delete(key);
    }
  }

  get entries(): readonly CtEntry[] {
    return this.list;
  }

  /** Registers an expectation (nf_ct_expect_related). */
  expect(expectation: CtExpectation): void {
    this.expectations.push(expectation);
  }

  /** The expectation a new connection's tuple meets, taken out (nf_ct_find_expectation unlinks
   * it: it is met once); one whose master is gone is met by nothing. */
  takeExpectation(t: CtTuple): CtExpectation | undefined {
    const at = this.expectations.findIndex(
      (e) => e.family === t.family && e.l4proto === t.l4proto && e.src === t.src && e.dst === t.dst && e.dport === t.dport && e.zone === t.zone && this.list.includes(e.master),
    );
    if (at < 0) return undefined;
    const [taken] = this.expectations.splice(at, 1);
    return taken;
  }

  /** A copy whose entries can change without touching this table's (one per random branch). */
  clone(): ConntrackTable {
    const copy = new ConntrackTable();
    const copies = new Map<CtEntry, CtEntry>();
    for (const entry of this.list) {
      const copied = { ...entry, tcp: entry.tcp && { ...entry.tcp } };
      copies.set(entry, copied);
      copy.insert(copied);
    }
    copy.expectations = this.expectations.map((e) => ({ ...e, master: copies.get(e.master) ?? e.master }));
    return copy;
  }
}
