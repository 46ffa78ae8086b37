// The mutable state of one simulated run: the packet as rules change it, its conntrack entry,
// where it is, what happened so far, and the oracle deciding random branches.

import type { Chain, Hook, Rule, Table } from '../model/ast.js';
import type { Address } from './address.js';
import { IPS, type ConntrackTable, type CtEntry, type CtExpectation, type CtMatch, type CtTuple, type NatManip } from './conntrack-table.js';
import { localInterfaceOf, type Host, type HostInterface } from './host.js';
import type { Loc, NatEvent, TraceEvent } from './outcome.js';
import type { CtStateName, Packet, QuotedPacket } from './packet.js';
import { PLAIN_KEY, type RouteKey } from './route-rules.js';
import type { HookIndex } from './pipeline.js';

/** Thrown by the evaluators for something nftsim does not model; the rule it happens in becomes
 * an `unsupported` trace event (an internal signal, never seen by callers). It has no stack
 * trace: nothing reads one, and capturing it was most of the time of a packet through an
 * iptables-nft listing, whose xt matches are thrown on at every rule. */
export class NotModelled extends Error {
  constructor(message: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }
}

/** NotModelled for a value NAT picked at random (a port, an ICMP identifier, a checksum over
 * one): nftsim's packet holds the range it was picked from (docs/simulator-limits.md). */
export class RandomPick extends NotModelled {}

export interface PacketState {
  src: Address;
  dst: Address;
  sport?: number | string;
  dport?: number | string;
  l4proto: number;
  tcpFlags: number;
  icmpType?: number;
  icmpCode?: number;
  /** An ICMP query's or answer's identifier (conntrack-table.ts hasIcmpId), which NAT may
   * change like a port: a range (`0-65535`) where it picked one at random. */
  icmpId?: number | string;
  mark: number;
  /** skb->pkt_type (host.ts PACKET_TYPE), set by the link layer as the packet arrived: a DNAT
   * does not change it, and a locally generated packet is PACKET_HOST. */
  readonly pkttype: number;
  length: number;
  dscp: number;
  ttl: number;
  readonly skuid?: number;
  readonly skgid?: number;
  /** The headers as a payload statement left them (packet-bytes.ts); absent: the defaults. */
  headers?: StoredHeaders;
  /** skb->priority as `meta priority set` left it (absent: 0). */
  priority?: number;
  /** skb->nf_trace as `meta nftrace set` left it (absent: 0). */
  nftrace?: number;
  /** The TCP MSS option's value: the input's, or one iptables' TCPMSS inserted (absent: the
   * packet has no TCP options, packet-bytes.ts). */
  tcpMss?: number;
  /** NOP bytes after the MSS option (or in its place): what the kernel wrote over an option it
   * stripped (xt_TCPOPTSTRIP.c, nft_exthdr_tcp_strip_eval), which stay in the header. */
  tcpNops?: number;
}

/** The serialised network and transport headers (packet-bytes.ts). `checksumLag`: the IPv4
 * header's (`nh`) and the transport header's (`th`) checksum fields as a raw payload statement
 * left them, beside the headers' true checksums then, which the kernel's later updates move the
 * fields from. */
export interface StoredHeaders {
  readonly nh: Uint8Array;
  readonly th: Uint8Array;
  readonly checksumLag?: ChecksumLag;
}

export interface ChecksumLag {
  readonly nh: { readonly field: number; readonly truth: number } | undefined;
  readonly th: { readonly field: number; readonly truth: number } | undefined;
}

/** A conntrack tuple's addresses and ports; a port NAT picked at random is its range's text. */
export interface CtEndpoints {
  readonly src: Address;
  readonly dst: Address;
  readonly sport?: number | string;
  readonly dport?: number | string;
}

export interface CtStateValue {
  state: CtStateName;
  mark: number;
  status: number;
  zone: number;
  direction: 0 | 1;
  /** The labels `ct label set` set (absent: none). */
  labels?: bigint;
  /** The reply tuple: the entry's, or once NAT set up a mapping (absent: the inverse of the original). */
  reply?: CtEndpoints;
  /** The original tuple, for `ct original ip saddr` and friends. */
  original: CtEndpoints;
}

/** What packets leave behind for the later packets of a flow or scenario: the conntrack table
 * and the elements `add @set` / `update @set` added, by set. The set lists are replaced, never
 * changed in place, so a shallow copy of the map is a copy of the state. */
export interface SimState {
  readonly conntrack: ConntrackTable;
  readonly dynamicSets: Map<object, unknown[]>;
  /** The nexthops multipath routes picked for the packets so far (choose-nexthop.ts): a flow's
   * packets take the one its first took. A single packet's run has none: its own is made when
   * a multipath route is first met. */
  readonly paths?: Map<string, number>;
}

/** The packet's link to the conntrack table (conntrack-table.ts). */
export interface ConnLink {
  readonly table: ConntrackTable;
  /** The input gave the packet's `ct`: it overrides the table lookup. */
  readonly explicit: boolean;
  /** Confirmed entries go into the table (not for a single packet, which nothing reads after). */
  readonly keep: boolean;
  /** The entry found or, once confirmed, created. */
  entry?: CtEntry;
  /** The connection conntrack found the packet's tuple in, whether it gave the packet its entry
   * or not (invalid, or untracked with a SYN or FIN: tcp-tracking.ts, what reached the peer). */
  peer?: CtMatch;
  /** The original tuple of a connection this packet opens (confirmed at the end of postrouting
   * or input), and the TCP flags conntrack saw on it, which its tracking starts from (a rule
   * after conntrack may rewrite the packet's). */
  tuple?: CtTuple;
  tcpFlags: number;
  /** Where the nat chains of this packet mapped each manipulation (address and port after
   * the rule), for the entry's reply tuple. */
  readonly mapped: Partial<Record<NatManip, { readonly addr: Address; readonly port?: number | string }>>;
  /** The packet re-enters through lo carrying its entry (a local packet to a local address). */
  carried: boolean;
  /** For an ICMP error: the packet it quotes, by which conntrack relates it (packet.ts). */
  readonly quoted: QuotedPacket | undefined;
  /** For a flow's reply: the connection it answers (Packet.answers). */
  readonly answers: CtEntry | undefined;
  /** Expectations the packet's rules registered for its new connection (`ct expectation set`),
   * which conntrack keeps once it confirms the connection. */
  expectations: Omit<CtExpectation, 'master'>[] | undefined;
}

/** A random choice among weighted branches: returns the index taken. */
export type Chooser = (weights: readonly number[]) => number;

export interface SimContext {
  readonly host: Host;
  readonly index: HookIndex;
  readonly family: Packet['family'];
  readonly pkt: PacketState;
  readonly ct: CtStateValue;
  /** Conntrack has attached its entry (after NF_IP_PRI_CONNTRACK at prerouting/output). */
  ctAttached: boolean;
  /** `ct zone set` or iptables' CT attached a template entry before conntrack (nft_ct.c
   * nft_ct_set_zone_eval, zone-template.ts): until conntrack runs, the packet has that entry,
   * with ctinfo IP_CT_NEW. `mark`: its zone is the mark conntrack finds (`CT --zone mark`). */
  zoneTemplate: boolean | 'mark';
  /** The state `notrack` replaced with untracked: a zone template attached after it gives the
   * packet back to conntrack, which then makes of it what it would have. */
  untrackedFrom: CtStateName | undefined;
  /** Changes only when a local packet comes back in through lo. */
  iif?: string;
  /** Set by the routing decision. */
  oif?: string;
  readonly conn: ConnLink;
  /** The NAT_DONE bits (conntrack-table.ts NAT_DONE) of the manipulations set up so far
   * (nf_nat_initialized per manip type): `ct status` reads them with the entry's status. */
  natDone: number;
  readonly nat: NatEvent[];
  readonly trace: TraceEvent[];
  uncertain: boolean;
  readonly choose: Chooser;
  /** Elements added by `add @set` / `update @set` during the run, by set. */
  readonly dynamicSets: Map<object, unknown[]>;
  /** SimState.paths, or this packet's own made at its first multipath route (choose-nexthop.ts). */
  paths: Map<string, number> | undefined;
  /** The gateway of the route the last routing decision attached to the packet, which
   * rt_nexthop reads (`rt ip nexthop`, masquerade's source); undefined without one. */
  gateway: Address | undefined;
  /** How many elements this packet's `delete @set` took out of each set: their slots stay taken
   * for the rest of the packet (dynset.ts). Made at the first delete. */
  deletedNow: Map<object, number> | undefined;
  /** Where evaluation is: filled per base chain and rule. */
  hook: Hook;
  table: Table;
  chain: Chain;
  basePriority: number;
  orderDependent: boolean;
  /** The position in `chain` of the rule being evaluated (currentRule), -1 between rules. */
  position: number;
  /** The last address whose host-side type (local interface, RTN_* type) was looked up, and the
   * answers: a packet asks about its addresses at several hooks, and they change only by being
   * replaced (sim-context.ts localInterfaceAt, evaluate-expr.ts addressTypeAt). */
  localFor: Address | undefined;
  local: HostInterface | undefined;
  typeFor: Address | undefined;
  type: number;
}

/** `ct state` before conntrack looked the packet up (nft_ct.c nft_ct_get_eval, xt_conntrack):
 * new with a zone template (its ctinfo), untracked after notrack, else invalid (no entry). */
export function stateBeforeConntrack(ctx: SimContext): CtStateName {
  if (ctx.ct.state === 'untracked') return 'untracked';
  return ctx.zoneTemplate !== false ? 'new' : 'invalid';
}

/** The packet has a conntrack entry: conntrack has looked at it and found or made one (not
 * invalid, not untracked). The ct keys other than `state` break without one (nft_ct.c), unless
 * the packet has a zone template (templateKey). */
export function hasConntrackEntry(ctx: SimContext): boolean {
  return ctx.ctAttached && ctx.ct.state !== 'invalid' && ctx.ct.state !== 'untracked';
}

/** Before conntrack, the zone template `ct zone set` or iptables' `CT --zone` attached is what
 * nf_ct_get returns. The xt extensions read it (xt_connmark.c, xt_conntrack.c): mark 0, status
 * template (nf_ct_tmpl_alloc) and confirmed (xt_ct_tg_check, nft_ct_tmpl_alloc_pcpu), direction
 * original: the keys iptables' lowered matches and targets read (kernel-checked: CONNMARK
 * --restore-mark after CT --zone clears the mark, seed 307896318; --ctstatus and --ctdir). nft's
 * ct expression breaks on it on the kernel checked (6.18: nft_ct_get_eval's `!ct ||
 * nf_ct_is_template(ct)`, a recent test: docs/simulator-limits.md).
 * Its tuples are zero (nf_ct_tmpl_alloc zeroes the template): xt_conntrack's address, port and
 * protocol tests compare zeros (kernel-checked: `--ctorigdst X` after CT --zone does not match,
 * `! --ctorigdst X` does).
 * Its counters are none: xt_connbytes gives no match without accounting (nf_conn_acct_find;
 * kernel-checked, seed 2076553586).
 * What an iptables rule reads of the template; undefined without one, for an nft rule and for
 * what gives no match; NotModelled for another key (a template's timeout). */
export function templateKey(ctx: SimContext, key: string): number | undefined {
  if (!hasZoneTemplate(ctx) || !isIptablesRule(ctx)) return undefined;
  switch (key) {
    case 'mark':
    case 'direction':
    case 'saddr':
    case 'daddr':
    case 'proto-src':
    case 'proto-dst':
    case 'protocol':
      return 0;
    case 'status':
      return IPS.template | IPS.confirmed;
    case 'packets':
    case 'bytes':
    case 'avgpkt':
      return undefined;
    default:
      throw new NotModelled(`ct ${key} of a conntrack zone template (before conntrack, after a zone was set)`);
  }
}

/** The ct mark the current rule reads: its entry's, a zone template's (templateKey), or none. */
export function ctMarkOf(ctx: SimContext): number | undefined {
  return hasConntrackEntry(ctx) ? ctx.ct.mark : templateKey(ctx, 'mark');
}

/** Whether the packet has a zone template: before conntrack, after a zone was set. */
export function hasZoneTemplate(ctx: SimContext): boolean {
  return !ctx.ctAttached && ctx.zoneTemplate !== false;
}

/** The current rule is one iptables wrote: its matches and targets are xt extensions in the
 * kernel, whose semantics differ from nft's expressions in places (a mark target continues where
 * nft's `ct mark` breaks, xt_connmark.c connmark_tg: XT_CONTINUE; a zone template is read). */
export function isIptablesRule(ctx: SimContext): boolean {
  return currentRule(ctx)?.origin?.format === 'iptables';
}

/** The device the hook's state gives as the input one: the packet's iif, none at egress
 * (nf_hook_egress initialises the state with `in` NULL, so iif reads 0 and iifname ""). */
export function inputDevice(ctx: SimContext): string | undefined {
  return ctx.hook === 'egress' ? undefined : ctx.iif;
}

/** The device whose frame the packet is (its link layer header): the one it arrived on, and at
 * egress the one it leaves by (__dev_queue_xmit resets the MAC header to the frame built for
 * it). */
export function frameDevice(ctx: SimContext): string | undefined {
  return ctx.hook === 'egress' ? ctx.oif : ctx.iif;
}

/** skb->len, what `meta length` reads: the packet from its network header on, and at egress its
 * link layer header too, which the neighbour output pushed before __dev_queue_xmit (14 bytes on
 * Ethernet and on lo, whose header_ops are Ethernet's). */
export function skbLength(ctx: SimContext): number {
  return ctx.hook === 'egress' ? ctx.pkt.length + ETH_HLEN : ctx.pkt.length;
}

const ETH_HLEN = 14;

/** The rule being evaluated, read from its chain only when needed: a compiled rule's run does
 * not touch the rule (a kube-proxy ruleset's rules are mostly cold in memory). */
export function currentRule(ctx: SimContext): Rule | undefined {
  return ctx.position >= 0 ? ctx.chain.rules[ctx.position] : undefined;
}

/** localInterfaceOf for the run's host, remembered for the last address asked about. */
export function localInterfaceAt(ctx: SimContext, address: Address): HostInterface | undefined {
  if (ctx.localFor !== address) {
    ctx.local = localInterfaceOf(ctx.host, address);
    ctx.localFor = address;
  }
  return ctx.local;
}

/** A new Loc each call (a compiled rule's events share the one compile-rule.ts compiledLoc keeps);
 * a WeakMap over every rule cost more than it saved. */
export function locOf(node: { readonly span: { readonly file: string; readonly line: number; readonly column: number }; readonly handle?: number }): Loc {
  const { file, line, column } = node.span;
  return node.handle === undefined ? { file, line, column } : { file, line, column, handle: node.handle };
}

/** The key of the packet's own route lookup (ip_route_input_noref, ip_route_output_key): its
 * mark as the rules so far left it, its input interface (lo for a locally generated packet), its
 * source address. */
export function routeKeyOf(ctx: SimContext): RouteKey {
  // Without rules nothing reads it.
  return ctx.host.rules ? { mark: ctx.pkt.mark, iif: ctx.iif ?? 'lo', src: ctx.pkt.src } : PLAIN_KEY;
}
