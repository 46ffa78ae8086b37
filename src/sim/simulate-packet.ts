// simulatePacket: what the kernel does to one packet on a node, for every random branch.

import type { Rule, Ruleset, Chain } from '../model/ast.js';
import { formatAddress, type Address } from './address.js';
import { ConntrackTable, IPS, invertTuple, NAT_DONE, transportOf, tupleAt, tupleOf, type CtEntry, type CtMatch, type CtTuple, type NatManip } from './conntrack-table.js';
import { evaluateBaseChain, type ChainResult } from './evaluate-chain.js';
import { formatEndpoint, isNodeInformation, setUpNullBinding } from './evaluate-stmt.js';
import { natField } from './unique-tuple.js';
import { anycastInterfaceOf, IPV6_LOOPBACK, ipv6MulticastScope, isBroadcastAddress, isMulticastAddress, joinsGroup, LIMITED_BROADCAST, linkPacketType, localInterfaceOf, PACKET_TYPE, readHost, lookupRoute, type Host, type HostInput } from './host.js';
import { formatMark, type Disposition, type Loc, type NatEvent, type Outcome, type SimulationResult } from './outcome.js';
import { entrylessState, L4_NUMBERS, protocolName, readPacket, type CtStateName, type Packet, type PacketInput, type QuotedPacket } from './packet.js';
import { memoByObject } from './memo-by-object.js';
import { chooseNexthop, nexthopThrough } from './choose-nexthop.js';
import { buildHookIndex, chainsAt, STAGES, type HookIndex, type HookStage } from './pipeline.js';
import type { InputError } from './read-fields.js';
import { deliverTcp, openTcp, sequenceEnd, trackTcp } from './tcp-tracking.js';
import { readTrafficClass } from './packet-bytes.js';
import { hasConntrackEntry, localInterfaceAt, locOf, routeKeyOf, type Chooser, type CtEndpoints, type PacketState, type SimContext, type SimState } from './sim-context.js';
import { settleTemplateZone } from './zone-template.js';

export interface SimulateOptions {
  /** Pick one branch of every random choice with this seed instead of listing them all. */
  readonly seed?: number;
  /** Stop listing branches after this many outcomes (default 4096). */
  readonly maxOutcomes?: number;
}

export interface SimulationInput {
  readonly host?: HostInput | Host;
  readonly packet: PacketInput;
}

/** The outcomes, or (for bad input) no outcome and the errors naming the fields. */
export interface SimulatePacketResult extends SimulationResult {
  readonly errors?: readonly InputError[];
}

// Built once per parsed ruleset, so that simulating many packets does not re-index it.
export const indexOf: (ruleset: Ruleset) => HookIndex = memoByObject(buildHookIndex);

function isResolvedHost(host: HostInput | Host): host is Host {
  return Array.isArray(host.routes) && host.routes.some((r) => typeof (r as { dst: unknown }).dst === 'object');
}

/** The `host` of an input: nftsim's or ip -j's description (errors name the field), or a host
 * resolved already. */
export function readInputHost(value: unknown): { host: Host; errors: InputError[] } {
  const hostValue = value as HostInput | Host | undefined;
  return hostValue !== undefined && isResolvedHost(hostValue) ? { host: hostValue, errors: [] } : readHost([{ value: value ?? {}, path: ['host'] }]);
}

/** Resolves the JSON host and packet (errors name the field) for simulatePacket. */
export function readSimulationInput(input: { readonly host?: unknown; readonly packet: unknown }): { host?: Host; packet?: Packet; errors: InputError[] } {
  const hostResult = readInputHost(input.host);
  const packetResult = readPacket(input.packet, hostResult.host);
  const errors = [...hostResult.errors, ...packetResult.errors];
  return errors.length > 0 ? { errors } : { host: hostResult.host, packet: packetResult.packet!, errors };
}

/** Simulates one packet through the node's ruleset. Every random branch (statistic, numgen,
 * meta random) becomes its own outcome with its probability, unless `seed` picks one. Can be
 * called many times on one ruleset. Bad input gives `errors`, never an exception. */
export function simulatePacket(ruleset: Ruleset, input: SimulationInput, options: SimulateOptions = {}): SimulatePacketResult {
  const { host, packet, errors } = readSimulationInput(input);
  if (!host || !packet) return { outcomes: [], errors };
  return { outcomes: simulateResolved(ruleset, host, packet, options) };
}

/** simulatePacket for an already resolved host and packet. */
export function simulateResolved(ruleset: Ruleset, host: Host, packet: Packet, options: SimulateOptions = {}): Outcome[] {
  const index = indexOf(ruleset);
  // A single packet does not fill the conntrack table (runPacket's RunHow): one empty table
  // serves every run; the dynamic sets are the run's own.
  return enumerateBranches(options, (choose) => runPacket(index, host, packet, SINGLE_PACKET, { conntrack: UNUSED_TABLE, dynamicSets: new Map() }, choose).outcome).map(withProbability);
}

/** The outcome is its run's own new object: completed in place, with `probability` last as a
 * spread would put it (copying it was a twentieth of the time of a packet, and Object.assign
 * from a new object a twentieth of a packet's through no chain). */
function withProbability({ probability, value }: { probability: number; value: Omit<Outcome, 'probability'> }): Outcome {
  const outcome = value as Mutable<Outcome>;
  outcome.probability = probability;
  return outcome;
}

const UNUSED_TABLE = new ConntrackTable();
const SINGLE_PACKET: RunHow = { keep: false };

/** A fresh state: an empty conntrack table, no dynamic set elements. */
export function createSimState(): SimState {
  return { conntrack: new ConntrackTable(), dynamicSets: new Map(), paths: new Map() };
}

export function cloneSimState(state: SimState): SimState {
  return { conntrack: state.conntrack.clone(), dynamicSets: new Map(state.dynamicSets), paths: new Map(state.paths) };
}

/** Runs `run` once per combination of random choices (or once, for `seed`), each with its joint
 * probability. Each run follows one branch of every choice; the branches not taken are queued as
 * forced prefixes of choices and run again from the start (a run is deterministic given its
 * choices), so `run` may simulate one packet or a whole flow. */
export function enumerateBranches<T>(options: SimulateOptions, run: (choose: Chooser) => T): { probability: number; value: T }[] {
  if (options.seed !== undefined) {
    const random = seededRandom(options.seed);
    let probability = 1;
    const choose: Chooser = (weights) => {
      let r = random();
      const last = weights.length - 1;
      for (let i = 0; i < last; i++) {
        const w = weights[i]!;
        if (r < w) {
          probability *= w;
          return i;
        }
        r -= w;
      }
      probability *= weights[last]!;
      return last;
    };
    const value = run(choose);
    return [{ probability, value }];
  }
  const max = options.maxOutcomes ?? 4096;
  const results: { probability: number; value: T }[] = [];
  const pending: number[][] = [[]];
  while (pending.length > 0 && results.length < max) {
    const forced = pending.shift()!;
    const taken: number[] = [];
    let probability = 1;
    const choose: Chooser = (weights) => {
      let pick: number;
      if (taken.length < forced.length) pick = forced[taken.length]!;
      else {
        const live = weights.flatMap((w, i) => (w > 0 ? [i] : []));
        pick = live[0] ?? 0;
        for (const other of live.slice(1)) pending.push([...taken, other]);
      }
      taken.push(pick);
      probability *= weights[pick]!;
      return pick;
    };
    const value = run(choose);
    results.push({ probability, value });
  }
  return results;
}

/** mulberry32: small, fast, good enough to pick branches reproducibly. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Ending = { readonly disposition: Disposition; readonly verdict: Outcome['verdict']; readonly by?: Rule | Chain; readonly reason?: string };

/** One packet's run: its outcome (probability filled in by the caller) and the packet as it
 * left, for the reply a flow may ask for. */
export interface PacketRun {
  readonly outcome: Omit<Outcome, 'probability'>;
  readonly final: PacketState;
  readonly family: Packet['family'];
  /** The connection the packet belonged to at its end (a reply answers it). */
  readonly entry: CtEntry | undefined;
}

/** How a packet runs: `keep`, a later packet may read what it leaves in the state (a single
 * packet's confirmed entry is not stored, which keeps simulatePacket as fast as before flows
 * existed). */
export interface RunHow {
  readonly keep: boolean;
}

/** Runs one packet with `state` (the conntrack table and dynamic sets it reads and changes). */
export function runPacket(index: HookIndex, host: Host, packet: Packet, how: RunHow, state: SimState, choose: Chooser): PacketRun {
  // Every optional field is present (possibly undefined) so that all contexts and packet states
  // share one shape: V8 then keeps the evaluators' property accesses monomorphic, which
  // conditional spreads here did not (a tenth of the time of a packet).
  const pkt: PacketState = {
    src: packet.src,
    dst: packet.dst,
    sport: packet.sport,
    dport: packet.dport,
    l4proto: packet.l4proto,
    tcpFlags: packet.tcpFlags,
    icmpType: packet.icmpType,
    icmpCode: packet.icmpType !== undefined ? packet.icmpCode : undefined,
    icmpId: packet.icmpId,
    mark: packet.mark,
    pkttype: packet.iif === undefined ? PACKET_TYPE.host : linkPacketType(host, packet.iif, packet.dst),
    length: packet.length,
    dscp: packet.dscp,
    ttl: packet.ttl,
    skuid: packet.skuid,
    skgid: packet.skgid,
    headers: undefined,
    priority: undefined,
    nftrace: undefined,
    tcpMss: packet.tcpMss,
    tcpNops: undefined,
  };
  const ct = packet.ct;
  const ctx: SimContext = {
    host,
    index,
    family: packet.family,
    pkt,
    ct: {
      state: ct.state,
      mark: ct.mark,
      status: ct.status,
      zone: ct.zone,
      direction: ct.direction,
      labels: undefined,
      reply: undefined,
      original: originalEndpoints(packet),
    },
    ctAttached: false,
    zoneTemplate: false,
    untrackedFrom: undefined,
    conn: { table: state.conntrack, explicit: packet.ctGiven !== false, keep: how.keep, entry: undefined, peer: undefined, tuple: undefined, tcpFlags: 0, mapped: {}, carried: false, quoted: packet.quoted, answers: packet.answers, expectations: undefined },
    iif: packet.iif,
    oif: undefined,
    natDone: 0,
    nat: [],
    trace: [],
    uncertain: false,
    choose,
    dynamicSets: state.dynamicSets,
    paths: state.paths,
    gateway: undefined,
    deletedNow: undefined,
    hook: 'prerouting',
    table: undefined as never,
    chain: undefined as never,
    basePriority: 0,
    orderDependent: false,
    position: -1,
    localFor: undefined,
    local: undefined,
    typeFor: undefined,
    type: 0,
  };
  const ending = packet.iif !== undefined ? receive(ctx, packet.oif) : send(ctx, packet);
  // A found entry is the kernel's own object: what the packet changed stays, dropped or not.
  if (ctx.conn.entry) {
    ctx.conn.entry.mark = ctx.ct.mark;
    ctx.conn.entry.labels = ctx.ct.labels;
  }
  if (how.keep && REACHED.has(ending.disposition)) deliverToPeer(ctx);
  return { outcome: finish(ctx, ending), final: ctx.pkt, family: ctx.family, entry: ctx.conn.entry };
}

/** The packet's tuple as `ct original …` reads it before conntrack found an entry: its ports, or
 * an ICMP query's identifier and type (transportOf). Every field present, for one shape. */
function originalEndpoints(packet: Packet): CtEndpoints {
  if (!isIcmp(packet.l4proto)) return { src: packet.src, dst: packet.dst, sport: packet.sport, dport: packet.dport };
  const { sport, dport } = transportOf(packet);
  return { src: packet.src, dst: packet.dst, sport, dport };
}

function isIcmp(l4proto: number): boolean {
  return l4proto === L4_NUMBERS.icmp || l4proto === L4_NUMBERS.icmpv6;
}

/** Dispositions of a packet that reached the other end of its connection. */
const REACHED: ReadonlySet<Disposition> = new Set(['delivered', 'forwarded', 'sent']);

/** A TCP packet reached the other end of its connection, tracked or not: that end acknowledges
 * it in its answers, which conntrack checks against what it saw (tcp-tracking.ts). */
function deliverToPeer(ctx: SimContext): void {
  const conn = ctx.conn;
  if (conn.entry) {
    if (conn.entry.tcp) deliverTcp(conn.entry.tcp, ctx.ct.direction, ctx.pkt.tcpFlags);
    return;
  }
  // A packet without the entry gets none of its NAT: it reached the other end only if it went
  // where that end is (the source of the other direction's tuple).
  const peer = conn.peer;
  if (!peer?.entry.tcp) return;
  const end = peer.direction === 0 ? peer.entry.reply : peer.entry.original;
  if (ctx.pkt.dst.n === end.src && ctx.pkt.dport === end.sport) deliverTcp(peer.entry.tcp, peer.direction, ctx.pkt.tcpFlags);
}

/** Runs every base chain of a hook; an ending when the packet's way ends there. `reroute` looks
 * a local packet's route up again after a route chain changed its mark or addresses (an ending
 * when there is none). */
function runHook(ctx: SimContext, stage: HookStage, reroute?: () => Ending | undefined): Ending | undefined {
  const { hook, conntrackAt, natSlot, manip } = stage;
  ctx.hook = hook;
  // No rule enables conntrack for this family: no packet ever gets an entry (pipeline.ts).
  const tracked = ctx.index.conntrack.has(ctx.family);
  // A packet coming back in through lo still has its entry (loopback_xmit keeps skb->_nfct).
  ctx.ctAttached = ctx.conn.carried ? tracked : conntrackAt === undefined ? tracked && hook !== 'ingress' : false;
  let natHookReached = false;
  let natHookPassed = false;
  for (const entry of chainsAt(ctx.index, hook, ctx.family, hook === 'egress' ? ctx.oif : ctx.iif)) {
    const isNat = entry.nat;
    const slot = entry.slot;
    if (conntrackAt !== undefined && slot > conntrackAt && !ctx.ctAttached) attachConntrack(ctx, tracked);
    // The NAT hook: at its first nat chain or, without one at this hook, before the chains of a
    // later slot.
    if (manip && natSlot !== undefined && !natHookReached && (isNat || slot > natSlot)) {
      natHookReached = true;
      applyMapping(ctx, manip);
    }
    // Past the NAT hook: a chain of a later slot, or one after the nat chains in the same slot
    // (registered before the NAT hook, so run after it).
    if (natSlot !== undefined && !natHookPassed && (slot > natSlot || (natHookReached && !isNat))) {
      natHookPassed = true;
      setNullBinding(ctx, manip);
    }
    if (isNat && !isNatConsulted(ctx, stage)) continue;
    const routed = reroute && entry.route ? { reroute, mark: ctx.pkt.mark, src: ctx.pkt.src.n, dst: ctx.pkt.dst.n } : undefined;
    const result: ChainResult = evaluateBaseChain(entry, ctx);
    if (result.verdict !== 'accept') return endingOf(result);
    // nf_route_table_hook4/6 (nft `type route`, iptables-nft's mangle OUTPUT): a changed mark or
    // address gets a new route at once (ip_route_me_harder), dropped without one.
    if (routed && (ctx.pkt.mark !== routed.mark || ctx.pkt.src.n !== routed.src || ctx.pkt.dst.n !== routed.dst)) {
      const ending = routed.reroute();
      if (ending) return ending;
    }
  }
  if (conntrackAt !== undefined && !ctx.ctAttached) attachConntrack(ctx, tracked);
  if (manip && !natHookReached) applyMapping(ctx, manip);
  if (!natHookPassed) setNullBinding(ctx, manip);
  return undefined;
}

/** The NAT hook ran without a mapping for the packet's connection: nf_nat_inet_fn sets up a null
 * binding (nf_nat_alloc_null_binding), so the manipulation counts as done for later hooks, and its
 * NAT_DONE status bit is set for the chains after the NAT hook. The hook runs wherever the family
 * has a nat chain at any hook (nf_nat_register_fn). */
function setNullBinding(ctx: SimContext, manip: NatManip | undefined): void {
  if (manip && ctx.index.nat.has(ctx.family) && hasConntrackEntry(ctx)) setUpNullBinding(ctx, manip);
}

/** Conntrack looks the packet up at NF_IP_PRI_CONNTRACK (nf_conntrack_core.c nf_conntrack_in →
 * resolve_normal_ct): a packet of a connection in the table gets its entry (trackConnection);
 * else it opens a new connection, confirmed when the packet gets through. */
function attachConntrack(ctx: SimContext, tracked: boolean): void {
  ctx.ctAttached = tracked;
  const conn = ctx.conn;
  // One carried through lo keeps what it had.
  if (!tracked || conn.carried) return;
  const p = ctx.pkt;
  if (ctx.ct.state === 'untracked') {
    // `notrack` leaves the packet untracked, and its connection's tracking behind the peer that
    // gets a SYN or FIN it did not see.
    const tuple = conn.keep && !conn.explicit && p.l4proto === L4_NUMBERS.tcp && sequenceEnd(p.tcpFlags) > 0 ? tupleOf(ctx.family, p, ctx.ct.zone) : undefined;
    conn.peer = tuple && conn.table.lookup(tuple, conn.answers);
    return;
  }
  settleTemplateZone(ctx);
  const tuple = tupleOf(ctx.family, p, ctx.ct.zone);
  if (tuple && !conn.explicit) {
    const found = conn.table.lookup(tuple, conn.answers);
    // Reopened: deleted, and the packet opens a connection of its own.
    if (found && trackConnection(ctx, found) !== 'reopened') {
      conn.peer = found;
      return;
    }
  }
  // Without an entry, what conntrack makes of the packet as it is here (a rule before conntrack
  // may have rewritten its TCP flags or ICMP type): new, or invalid. A new connection a
  // confirmed one's rules told conntrack to expect is related (init_conntrack: IPS_EXPECTED).
  if (!conn.explicit) {
    ctx.ct.state = entrylessState(p.l4proto, p.tcpFlags, p.icmpType);
    const expectation = ctx.ct.state === 'new' && tuple ? conn.table.takeExpectation(tuple) : undefined;
    if (expectation) {
      ctx.ct.state = 'related';
      ctx.ct.status |= IPS.expected;
      // init_conntrack: the expected connection takes its master's mark.
      ctx.ct.mark = expectation.master.mark;
    }
  }
  if (!tuple) {
    if (conn.quoted && !conn.explicit) relateIcmpError(ctx, conn.quoted);
    return;
  }
  // An explicit `ct` is what the user says the packet sees; it opens a connection only as new
  // (or expected) in the original direction.
  const opens = ctx.ct.state === 'new' || (ctx.ct.status & IPS.expected) !== 0;
  if (!opens || ctx.ct.direction !== 0) return;
  conn.tuple = tuple;
  conn.tcpFlags = p.tcpFlags;
  // `ct original …` reads the tuple as conntrack took it here, after what rules before its place
  // rewrote (a raw chain's `icmp id set`, `tcp sport set`).
  const o = ctx.ct.original;
  if (o.src.n !== tuple.src || o.dst.n !== tuple.dst || o.sport !== tuple.sport || o.dport !== tuple.dport) ctx.ct.original = endpointsOf(tuple);
}

/** The packet belongs to a connection found in the table: a tuple of the entry's reply direction
 * is `established` in direction reply and marks the entry SEEN_REPLY; of its original direction
 * `new` until a reply was seen, `established` after. A TCP packet moves the connection's state
 * first (tcp-tracking.ts), which may leave the packet without an entry (`invalid`), or reopen
 * the connection: the entry is deleted and the packet opens one of its own (`reopened`:
 * nf_conntrack_in looks it up again, NF_REPEAT). */
function trackConnection(ctx: SimContext, { entry, direction }: CtMatch): 'attached' | 'invalid' | 'reopened' {
  const seenReply = (entry.status & IPS.seenReply) !== 0;
  let counted = true;
  if (entry.tcp) {
    const verdict = trackTcp(entry.tcp, direction, ctx.pkt.tcpFlags, seenReply, (entry.status & IPS.assured) !== 0);
    counted = verdict !== 'ignored' && verdict !== 'uncounted';
    if (verdict === 'invalid') {
      ctx.ct.state = 'invalid';
      return 'invalid';
    }
    if (verdict === 'reopen' || verdict === 'killed') ctx.conn.table.remove(entry);
    if (verdict === 'reopen') return 'reopened';
    if (verdict === 'assured') entry.status |= IPS.assured;
  }
  // nf_ct_refresh_acct at the end of the protocol's packet handler (nf_ct_kill_acct for a reset
  // before any reply); an ignored or uncounted TCP packet returns before it.
  if (counted) {
    entry.packets[direction] += 1;
    entry.bytes[direction] += ctx.pkt.length;
  }
  if (direction === 1) entry.status |= IPS.seenReply;
  // An expected connection's packets are related until a reply is seen (resolve_normal_ct).
  attachEntry(ctx, entry, direction, direction === 1 || seenReply ? 'established' : (entry.status & IPS.expected) !== 0 ? 'related' : 'new');
  return 'attached';
}

/** An ICMP error is related to the connection whose tuple is the packet it quotes, inverted,
 * when it goes to that tuple's destination (nf_conntrack_core.c nf_conntrack_inet_error: "outer
 * daddr != inner" leaves it invalid), in that tuple's direction. It changes nothing of the entry;
 * without one it stays as read (invalid). */
function relateIcmpError(ctx: SimContext, quoted: QuotedPacket): void {
  const tuple = tupleOf(ctx.family, quoted, ctx.ct.zone);
  const found = tuple && ctx.conn.table.lookup(invertTuple(tuple), ctx.conn.answers);
  if (!found || tupleAt(found).dst !== ctx.pkt.dst.n) return;
  attachEntry(ctx, found.entry, found.direction, 'related');
}

/** The packet gets the entry conntrack found for it, seen in `direction`. */
function attachEntry(ctx: SimContext, entry: CtEntry, direction: 0 | 1, state: CtStateName): void {
  ctx.conn.entry = entry;
  ctx.ct.state = state;
  ctx.ct.direction = direction;
  ctx.ct.mark = entry.mark;
  ctx.ct.labels = entry.labels;
  ctx.ct.status = entry.status;
  ctx.ct.zone = entry.original.zone;
  ctx.ct.original = endpointsOf(entry.original);
  // With the NAT mapping the first packet set up (nf_conntrack_alter_reply), for `ct reply saddr`
  // and friends (seed 1541172547, case 1937: a redirected connection's reply read the inverse of
  // its original tuple).
  ctx.ct.reply = endpointsOf(entry.reply);
  ctx.natDone |= entry.natDone;
}

/** A tuple of an entry as `ct original …` and `ct reply …` read it. */
function endpointsOf(t: CtTuple): CtEndpoints {
  return {
    src: { family: t.family, n: t.src },
    dst: { family: t.family, n: t.dst },
    ...(t.sport !== undefined && { sport: t.sport }),
    ...(t.dport !== undefined && { dport: t.dport }),
  };
}

/** A later packet of a connection gets the mapping at the NAT hook without the nat chains
 * (nf_nat_core.c nf_nat_packet): the manipulation applies when the entry has the NAT of that
 * kind for this direction (IPS_DST_NAT for dst in the original direction, IPS_SRC_NAT for dst in
 * the reply direction, and the reverse for src), and rewrites the packet to the inverted tuple
 * of the other direction (nf_nat_manip_pkt). The NAT hooks are registered at every hook once the
 * family has a nat chain at one (nf_nat_register_fn), so a reply is un-DNATed at postrouting
 * with no nat chain there. */
function applyMapping(ctx: SimContext, manip: NatManip): void {
  const entry = ctx.conn.entry;
  if (!entry || !hasConntrackEntry(ctx)) return;
  const reply = ctx.ct.direction === 1;
  const natOfManip = (m: NatManip): number => (m === 'dst' ? IPS.dstNat : IPS.srcNat);
  const kind: NatManip = reply ? (manip === 'dst' ? 'src' : 'dst') : manip;
  if ((entry.status & natOfManip(kind)) === 0) return;
  const target = invertTuple(reply ? entry.original : entry.reply);
  const p = ctx.pkt;
  const addr = { family: target.family, n: manip === 'dst' ? target.dst : target.src };
  const rewrite = natField(p, manip);
  const port = manip === 'dst' && rewrite !== 'icmpId' ? target.dport : target.sport;
  if (manip === 'dst') p.dst = addr;
  else p.src = addr;
  if (p[rewrite] !== undefined && port !== undefined && !isNodeInformation(p)) p[rewrite] = port;
  const portText = rewrite !== 'icmpId' && p[rewrite] !== undefined && port !== undefined ? String(port) : undefined;
  for (const event of entry.nat.filter((e) => manipOf(e) === kind)) {
    ctx.nat.push({ ...event, to: formatEndpoint(formatAddress(addr), portText, ctx.family), conntrack: reply ? 'reply' : 'original' });
  }
}

function manipOf(event: NatEvent): NatManip {
  return event.type === 'dnat' || event.type === 'redirect' ? 'dst' : 'src';
}

/** The packet got through (end of postrouting or input): a connection it opened is confirmed
 * into the table (nf_conntrack_core.c __nf_conntrack_confirm), its reply tuple the inverted
 * tuple after NAT. */
function confirm(ctx: SimContext): void {
  const conn = ctx.conn;
  const original = conn.tuple;
  if (!original || conn.entry || !hasConntrackEntry(ctx)) return;
  // A received packet's way ends here: without `keep`, nothing reads its entry (a local packet's
  // may still come back in through lo, with it).
  if (!conn.keep && ctx.iif !== undefined) {
    ctx.ct.status |= IPS.confirmed;
    return;
  }
  const { dst, src } = conn.mapped;
  // An ICMP query's identifier is its tuple's source port for either manipulation.
  const dstPort = isIcmp(original.l4proto) ? 'sport' : 'dport';
  const mapped = {
    ...original,
    ...(dst && { dst: dst.addr.n, ...(dst.port !== undefined && { [dstPort]: dst.port }) }),
    ...(src && { src: src.addr.n, ...(src.port !== undefined && { sport: src.port }) }),
  };
  ctx.ct.status |= IPS.confirmed;
  const entry: CtEntry = {
    original,
    reply: invertTuple(mapped),
    mark: ctx.ct.mark,
    labels: ctx.ct.labels,
    status: ctx.ct.status,
    natDone: ctx.natDone,
    nat: [...ctx.nat],
    tcp: original.l4proto === L4_NUMBERS.tcp ? openTcp(conn.tcpFlags) : undefined,
    packets: [1, 0],
    bytes: [ctx.pkt.length, 0],
  };
  if (!conn.keep || conn.table.insert(entry)) conn.entry = entry;
  if (conn.keep && conn.entry === entry) for (const e of conn.expectations ?? []) conn.table.expect({ ...e, master: entry });
}

/** nat chains run for a packet that opens a connection (new) whose mapping for this hook's
 * manipulation is not set up yet; once a chain set it up, later nat chains at the hook are
 * skipped (nf_nat_core.c nf_nat_inet_fn: `if (!nf_nat_initialized(ct, maniptype))`, and the
 * loop ends at the first chain that initialised it). No entry (invalid, untracked): no NAT. */
function isNatConsulted(ctx: SimContext, { manip }: HookStage): boolean {
  if (!manip || (ctx.natDone & NAT_DONE[manip]) !== 0 || !ctx.ctAttached) return false;
  return ctx.ct.state === 'new' || ctx.ct.state === 'related';
}

function endingOf(result: ChainResult): Ending {
  switch (result.verdict) {
    case 'drop':
      return { disposition: 'dropped', verdict: 'drop', by: result.by };
    case 'reject':
      return { disposition: 'rejected', verdict: 'reject', by: result.by };
    case 'queue':
      return { disposition: 'queued', verdict: 'queue', by: result.by };
    case 'unknown':
    case 'accept':
      return { disposition: 'unknown', verdict: 'accept', by: result.by };
    default: {
      const exhaustive: never = result.verdict;
      return exhaustive;
    }
  }
}

/** A packet arriving on iif: ingress, prerouting, the routing decision, then input or forward
 * and postrouting. */
function receive(ctx: SimContext, forcedOif: string | undefined): Ending {
  const ingress = runHook(ctx, STAGES.ingress);
  if (ingress) return ingress;
  const malformed = ipv6HeaderReason(ctx);
  if (malformed) return { disposition: 'dropped', verdict: 'drop', reason: malformed };
  const prerouting = runHook(ctx, STAGES.prerouting);
  if (prerouting) return prerouting;
  const dst = ctx.pkt.dst;
  // Multicast is routed apart (ip_route_input_rcu → ip_route_input_mc, ip6_mc_input), before
  // the checks of ip_route_input_slow.
  const multicast = isMulticastAddress(dst);
  const refused = multicast ? multicastReason(ctx) : martianReason(ctx);
  if (refused) return { disposition: 'dropped', verdict: 'drop', reason: refused };
  // A group the host joined, and a broadcast route of the local table (brd_input), go to input
  // as a local address does.
  if (localInterfaceAt(ctx, dst) || multicast || isBroadcastAddress(ctx.host, dst) || anycastInterfaceOf(ctx.host, dst)) {
    const input = runHook(ctx, STAGES.input);
    if (input) return input;
    confirm(ctx);
    return { disposition: 'delivered', verdict: 'accept' };
  }
  // ip_route_input_slow: no forwarding on the input device → EHOSTUNREACH; no route → dropped.
  if (!ctx.host.forwarding) return { disposition: 'dropped', verdict: 'drop', reason: 'forwarding disabled on the host' };
  const oif = routeTo(ctx, dst, forcedOif);
  if (oif === undefined) return { disposition: 'dropped', verdict: 'drop', reason: `no route to ${formatAddress(dst)}` };
  ctx.oif = oif;
  // ip_forward / ip6_forward forward only what the link layer addressed to the host: a packet
  // that came in a broadcast or multicast frame is dropped, DNATed to a unicast address or not.
  if (ctx.pkt.pkttype !== PACKET_TYPE.host) return { disposition: 'dropped', verdict: 'drop', reason: 'not forwarded: it came in a broadcast or multicast frame' };
  // ip_forward / ip6_forward: a packet whose TTL (hop limit) would expire is dropped with a time
  // exceeded error; the others have it decremented before NF_INET_FORWARD.
  if (ctx.pkt.ttl <= 1) return { disposition: 'dropped', verdict: 'drop', reason: 'TTL exceeded in forwarding' };
  ctx.pkt.ttl -= 1;
  // ip_forward sets the priority from the TOS byte (net.ipv4.ip_forward_update_priority, on by
  // default); ip6_forward leaves it.
  if (ctx.family === 'ip') ctx.pkt.priority = tosPriority(ctx);
  const out = runHook(ctx, STAGES.forward) ?? runHook(ctx, STAGES.postrouting);
  if (out) return out;
  confirm(ctx);
  return runHook(ctx, STAGES.egress) ?? { disposition: 'forwarded', verdict: 'accept' };
}

/** rt_tos2priority: ip_tos2prio[IPTOS_TOS(tos) >> 1] (net/ipv4/route.c), whose sixteen entries
 * go by fours: TC_PRIO_BESTEFFORT 0, TC_PRIO_BULK 2, TC_PRIO_INTERACTIVE 6,
 * TC_PRIO_INTERACTIVE_BULK 4, so the TOS byte's bits 0x10 and 0x08 choose. The byte is the
 * packet's DSCP unless a statement wrote it whole. */
function tosPriority(ctx: SimContext): number {
  const tos = ctx.pkt.headers ? readTrafficClass(ctx) : ctx.pkt.dscp << 2;
  return TOS_PRIORITIES[(tos >> 3) & 3]!;
}

const TOS_PRIORITIES: readonly number[] = [0, 2, 6, 4];

/** Why the IPv4 routing decision drops a received packet as martian (ip_route_input_slow, in its
 * order): a multicast or limited-broadcast source; then, unless the packet goes to the limited
 * broadcast (or from and to 0.0.0.0, brd_input, which checks only a source other than 0.0.0.0),
 * a source or destination 0.0.0.0, a loopback destination or source (route_localnet off); and a
 * source that is one of the host's own addresses (fib_validate_source: inet_lookup_ifaddr_rcu
 * finds it, with rp_filter and accept_local off as in a new namespace). A packet coming back in
 * through lo keeps the route it left with. Multicast destinations have their own checks
 * (multicastReason). */
function martianReason(ctx: SimContext): string | undefined {
  const { src, dst } = ctx.pkt;
  if (src.family !== 'ip' || ctx.iif === 'lo') return undefined;
  // The addresses as Numbers (BigInt tests were a tenth of a packet's time through a ruleset
  // without chains), and the reason's text only for a martian: every received packet is checked.
  const s = Number(src.n);
  const d = Number(dst.n);
  if (s >>> 28 === 0xe) return martian('source', src, 'a multicast address', ctx);
  if (s === IPV4_BROADCAST) return martian('source', src, 'the broadcast address', ctx);
  const broadcast = d === IPV4_BROADCAST || (s === 0 && d === 0);
  // ipv4_is_zeronet is the address 0.0.0.0 only: the rest of 0.0.0.0/8 is a valid address on
  // current kernels (test/kernel/differential.test.ts).
  if (!broadcast) {
    if (s === 0) return martian('source', src, 'the address 0.0.0.0', ctx);
    if (d === 0) return martian('destination', dst, 'the address 0.0.0.0', ctx);
    if (d >>> 24 === 127) return martian('destination', dst, 'a loopback address', ctx);
    if (s >>> 24 === 127) return martian('source', src, 'a loopback address', ctx);
  } else if (s === 0) return undefined;
  if (localInterfaceOf(ctx.host, src)) return martian('source', src, "the host's own address", ctx);
  return undefined;
}

/** Why the routing decision drops a received multicast packet: a group the input interface is
 * not in (ip_route_input_rcu and ip6_mc_input, without multicast routing); for IPv4, else
 * ip_route_input_mc's checks of the source: multicast, the limited broadcast, loopback, or one of
 * the host's own addresses (fib_validate_source). 0.0.0.0 may send to the groups of
 * 224.0.0.0/24, all-hosts among them. */
function multicastReason(ctx: SimContext): string | undefined {
  const { src, dst } = ctx.pkt;
  const iif = ctx.iif!;
  if (!joinsGroup(ctx.host, iif, dst)) return `multicast group ${formatAddress(dst)} not joined on ${iif} (nftsim knows only the groups every interface joins)`;
  if (dst.family !== 'ip') return undefined;
  const srcFirst = Number(src.n) >>> 24;
  if (isMulticastAddress(src)) return martian('source', src, 'a multicast address', ctx);
  if (src.n === LIMITED_BROADCAST) return martian('source', src, 'the broadcast address', ctx);
  if (srcFirst === 127) return martian('source', src, 'a loopback address', ctx);
  if (src.n !== 0n && localInterfaceOf(ctx.host, src)) return martian('source', src, "the host's own address", ctx);
  return undefined;
}

/** Why ip6_rcv_core drops a received IPv6 packet before NF_INET_PRE_ROUTING (RFC 4291's rules,
 * in its order): a loopback source or destination arriving on another device than lo; a group of
 * interface-local scope arriving on another device; a group of the reserved scope 0; a multicast
 * source. A v4-mapped source passes (the kernel tests confirm). */
function ipv6HeaderReason(ctx: SimContext): string | undefined {
  const { src, dst } = ctx.pkt;
  if (src.family !== 'ip6') return undefined;
  const fromLo = ctx.iif === 'lo';
  const dropped = (what: string): string => `dropped by ip6_rcv_core before prerouting: ${what} arriving on ${ctx.iif}`;
  if (!fromLo && (src.n === IPV6_LOOPBACK || dst.n === IPV6_LOOPBACK)) return dropped(`loopback ${src.n === IPV6_LOOPBACK ? 'source' : 'destination'}`);
  if (isMulticastAddress(dst)) {
    const scope = ipv6MulticastScope(dst.n);
    if (scope === 1 && !fromLo) return dropped(`interface-local group ${formatAddress(dst)}`);
    if (scope === 0) return dropped(`group ${formatAddress(dst)} of the reserved scope 0`);
  }
  if (isMulticastAddress(src)) return dropped(`multicast source ${formatAddress(src)}`);
  return undefined;
}


const IPV4_BROADCAST = Number(LIMITED_BROADCAST);

function martian(which: 'source' | 'destination', address: Address, what: string, ctx: SimContext): string {
  return `martian ${which} ${formatAddress(address)} (${what} arriving on ${ctx.iif})`;
}


/** The routing decision for `dst`: the device the packet's route sends it through (on a
 * multipath route, the nexthop its hash picks; `forced`, a given output interface, and the
 * route's nexthop through it), undefined without a route; its gateway is kept for rt_nexthop
 * (ctx.gateway). */
function routeTo(ctx: SimContext, dst: Address, forced: string | undefined): string | undefined {
  const route = lookupRoute(ctx.host, dst, routeKeyOf(ctx));
  const nexthop = route && (forced === undefined ? chooseNexthop(ctx, route) : nexthopThrough(route, forced));
  ctx.gateway = nexthop?.via;
  return forced ?? nexthop?.dev;
}

/** A locally generated packet: routed first (the socket's route, by the packet's mark), output,
 * re-routed after a route chain changed its mark or addresses and when output changed the
 * destination (ip_route_me_harder, nf_nat_ipv4_local_fn), then postrouting. */
function send(ctx: SimContext, packet: Packet): Ending {
  const route = (): string | undefined => {
    if (packet.oif !== undefined || !localInterfaceAt(ctx, ctx.pkt.dst)) return routeTo(ctx, ctx.pkt.dst, packet.oif);
    ctx.gateway = undefined;
    return 'lo';
  };
  // The chains of output keep seeing the device of the route the packet had when the hook began
  // (its state->out); a new route counts from postrouting on.
  let rerouted: string | undefined;
  const reroute = (): Ending | undefined => {
    rerouted = route();
    return rerouted === undefined ? { disposition: 'dropped', verdict: 'drop', reason: `no route to ${formatAddress(ctx.pkt.dst)}` } : undefined;
  };
  const unrouted = reroute();
  if (unrouted) return unrouted;
  ctx.oif = rerouted;
  rerouted = undefined;
  const dst = ctx.pkt.dst;
  const out = runHook(ctx, STAGES.output, reroute);
  if (out) return out;
  if (ctx.pkt.dst.n !== dst.n) {
    const unrerouted = reroute();
    if (unrerouted) return unrerouted;
  }
  if (rerouted !== undefined) ctx.oif = rerouted;
  const post = runHook(ctx, STAGES.postrouting);
  if (post) return post;
  confirm(ctx);
  const egress = runHook(ctx, STAGES.egress);
  if (egress) return egress;
  if (ctx.oif === 'lo' && localInterfaceAt(ctx, ctx.pkt.dst)) return reenter(ctx, packet.ct);
  return { disposition: 'sent', verdict: 'accept' };
}

/** A local packet to a local address leaves through lo and comes back in (loopback_xmit →
 * netif_rx): ingress, prerouting with iif lo, input, delivered. It keeps its conntrack entry,
 * confirmed at postrouting, with the ct state it had (a new connection still reads `new`) and
 * both NAT manipulations set up, so no nat chain runs again (nf_nat_inet_fn). A packet conntrack
 * found invalid at output has no entry to keep (nf_conntrack_in: `skb->_nfct = 0`): prerouting
 * looks it up afresh, as what it was before conntrack (`before`, its input's ct), in the zone
 * prerouting gives it, not output's template (seed 1318616541: an ACK invalid in output's zone
 * opens a connection in zone 0, and prerouting's nat chain runs for it). */
function reenter(ctx: SimContext, before: Packet['ct']): Ending {
  ctx.iif = 'lo';
  ctx.oif = undefined;
  // With an explicit ct (no table lookup) the state is invalid here only when the input said so,
  // which the reset gives back.
  const entryless = ctx.ctAttached && ctx.ct.state === 'invalid';
  if (entryless) {
    ctx.ct.state = before.state;
    ctx.ct.zone = before.zone;
    ctx.zoneTemplate = false;
    ctx.untrackedFrom = undefined;
  }
  ctx.conn.carried = ctx.ctAttached && !entryless;
  return receive(ctx, undefined);
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** The outcome, its optional fields present only when set, in the order of the Outcome type
 * (which its JSON keeps): built property by property, without the temporary objects of spreads. */
function finish(ctx: SimContext, ending: Ending): Omit<Outcome, 'probability'> {
  const p = ctx.pkt;
  const decidedBy = decidingLoc(ctx, ending);
  const uncertain = ctx.uncertain || ending.disposition === 'unknown';
  const outcome: Partial<Mutable<Outcome>> = { disposition: ending.disposition, verdict: ending.verdict };
  if (ctx.iif !== undefined) outcome.iif = ctx.iif;
  if (ctx.oif !== undefined) outcome.oif = ctx.oif;
  const packet: Mutable<Outcome['packet']> = { src: formatAddress(p.src), dst: formatAddress(p.dst), protocol: protocolName(p.l4proto) };
  if (p.sport !== undefined) packet.sport = p.sport;
  if (p.dport !== undefined) packet.dport = p.dport;
  if (p.icmpId !== undefined) packet.icmpId = p.icmpId;
  outcome.packet = packet;
  outcome.mark = formatMark(p.mark);
  outcome.ctMark = formatMark(ctx.ct.mark);
  outcome.nat = ctx.nat;
  if (decidedBy) outcome.decidedBy = decidedBy;
  outcome.trace = ctx.trace;
  outcome.uncertain = uncertain;
  if (ending.reason !== undefined) outcome.reason = ending.reason;
  return outcome as Omit<Outcome, 'probability'>;
}

/** The rule or policy that decided: the one that ended the packet, else the last accepting
 * rule, else the last policy. */
function decidingLoc(ctx: SimContext, ending: Ending): Loc | undefined {
  if (ending.by) return locOf(ending.by);
  if (ending.reason !== undefined) return undefined;
  const events = ctx.trace;
  for (let i = events.length - 1; i >= 0; i--) {
    if (events[i]!.kind === 'rule' && events[i]!.verdict === 'accept') return events[i]!.at;
  }
  for (let i = events.length - 1; i >= 0; i--) {
    if (events[i]!.kind === 'policy') return events[i]!.at;
  }
  return undefined;
}
