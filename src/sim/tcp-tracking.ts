// TCP connection tracking as nf_conntrack_proto_tcp.c does it: the state of a connection, moved
// by each packet's flags and direction through the kernel's transition table (tcp_conntracks),
// with what tcp_packet does beside the table: packets the table finds invalid get no entry,
// ignored ones pass without changing it, a SYN after a close reopens the connection, a reset
// before any reply deletes the entry, and the handshake's end marks the connection assured.
//
// Sequence numbers are implicit: a flow's packets are assumed to follow each other as the peers
// would send them, carrying no data, each acknowledging all the other end sent that reached it
// (docs/simulator-limits.md). Of tcp_in_window that leaves one check that can fail: an ACK of a
// SYN or FIN conntrack did not see ("ACK is over upper bound", the packet is invalid), when one
// reached the peer untracked or found invalid by conntrack.

/** enum tcp_conntrack (include/uapi/linux/netfilter/nf_conntrack_tcp.h). */
export const TCP_STATE = { none: 0, synSent: 1, synRecv: 2, established: 3, finWait: 4, closeWait: 5, lastAck: 6, timeWait: 7, close: 8, synSent2: 9 } as const;

// The table's two non-states: an invalid packet (TCP_CONNTRACK_MAX) and an ignored one.
const sIV = 10;
const sIG = 11;

/** enum tcp_bit_set: which of SYN, SYN-ACK, FIN, ACK, RST a packet is (get_conntrack_index). */
const INDEX = { syn: 0, synack: 1, fin: 2, ack: 3, rst: 4, none: 5 } as const;

const { none: sNO, synSent: sSS, synRecv: sSR, established: sES, finWait: sFW, closeWait: sCW, lastAck: sLA, timeWait: sTW, close: sCL, synSent2: sS2 } = TCP_STATE;

/** tcp_conntracks[direction][index][state]: the state a packet moves a connection to. */
const TRANSITIONS: readonly (readonly (readonly number[])[])[] = [
  [
    // original:  sNO  sSS  sSR  sES  sFW  sCW  sLA  sTW  sCL  sS2
    /* syn */    [sSS, sSS, sIG, sIG, sIG, sIG, sIG, sSS, sSS, sS2],
    /* synack */ [sIV, sIV, sSR, sIV, sIV, sIV, sIV, sIV, sIV, sSR],
    /* fin */    [sIV, sIV, sFW, sFW, sLA, sLA, sLA, sTW, sCL, sIV],
    /* ack */    [sES, sIV, sES, sES, sCW, sCW, sTW, sTW, sCL, sIV],
    /* rst */    [sIV, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL],
    /* none */   [sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV],
  ],
  [
    // reply:     sNO  sSS  sSR  sES  sFW  sCW  sLA  sTW  sCL  sS2
    /* syn */    [sIV, sS2, sIV, sIV, sIV, sIV, sIV, sSS, sIV, sS2],
    /* synack */ [sIV, sSR, sIG, sIG, sIG, sIG, sIG, sIG, sIG, sSR],
    /* fin */    [sIV, sIV, sFW, sFW, sLA, sLA, sLA, sTW, sCL, sIV],
    /* ack */    [sIV, sIG, sSR, sES, sCW, sCW, sTW, sTW, sCL, sIG],
    /* rst */    [sIV, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL],
    /* none */   [sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV],
  ],
];

/** TCP flag bits (include/net/tcp.h TCPHDR_*). */
export const TCP_FLAG = { fin: 0x01, syn: 0x02, rst: 0x04, psh: 0x08, ack: 0x10, urg: 0x20 } as const;
const { fin: FIN, syn: SYN, rst: RST, ack: ACK, urg: URG } = TCP_FLAG;

/** tcp_valid_flags: the flag sets tcp_error lets through, PSH ignored (ECE and CWR are above the
 * flags nftsim keeps). Any other set is invalid before conntrack looks at the connection. */
const VALID_FLAGS: ReadonlySet<number> = new Set([SYN, SYN | URG, SYN | ACK, RST, RST | ACK, FIN | ACK, FIN | ACK | URG, ACK, ACK | URG]);

/** get_conntrack_index for a packet tcp_error lets through; undefined for one it finds invalid. */
function indexOf(flags: number): number | undefined {
  const core = flags & (FIN | SYN | RST | ACK | URG);
  if (!VALID_FLAGS.has(core)) return undefined;
  if (core & RST) return INDEX.rst;
  if (core & SYN) return core & ACK ? INDEX.synack : INDEX.syn;
  if (core & FIN) return INDEX.fin;
  return core & ACK ? INDEX.ack : INDEX.none;
}

/** What conntrack tracks of a TCP connection beside its state (struct ip_ct_tcp). */
export interface TcpTrack {
  state: number;
  /** The kind and direction of the last packet the connection accepted or ignored. */
  lastIndex: number;
  lastDir: 0 | 1;
  /** A FIN started the close (IP_CT_TCP_FLAG_CLOSE_INIT, of either direction). */
  closeInit: boolean;
  /** A SYN came from both ends (IP_CT_TCP_SIMULTANEOUS_OPEN). */
  simultaneousOpen: boolean;
  /** A SYN was ignored in LAST_ACK: the peer may answer it with an ACK that is not the last one
   * (IP_CT_EXP_CHALLENGE_ACK, RFC 5961). */
  challengeAck: boolean;
  /** Picked up mid-stream: both ends' window checks pass (tcp_new sets IP_CT_TCP_FLAG_BE_LIBERAL). */
  readonly liberal: boolean;
  /** Of each direction, how far into its sequence space conntrack accepted packets (td_end) and
   * how far its packets reached the other end (what that end acknowledges): 0 nothing, 1 the
   * SYN, 2 the FIN (sequenceEnd). Replaced, never changed in place: a copy of the tracking for
   * another branch of a flow shares them. */
  accepted: readonly [number, number];
  delivered: readonly [number, number];
}

/** How far into its sender's sequence space a packet without data reaches: its FIN comes after
 * the SYN, a packet with neither takes no sequence number. */
export function sequenceEnd(flags: number): number {
  return flags & FIN ? 2 : flags & SYN ? 1 : 0;
}

/** A packet with these flags reached the other end of the connection in `direction`, which
 * acknowledges its SYN, and its FIN when it carries an ACK (a receiving stack drops a segment
 * without one, RFC 793). */
export function deliverTcp(track: TcpTrack, direction: 0 | 1, flags: number): void {
  track.delivered = raised(track.delivered, direction, sequenceEnd(flags & ACK ? flags : flags & ~FIN));
}

/** `pair` with its `direction` side raised to `end` (the same pair when it is there already). */
function raised(pair: readonly [number, number], direction: 0 | 1, end: number): readonly [number, number] {
  if (end <= pair[direction]) return pair;
  return direction === 0 ? [end, pair[1]] : [pair[0], end];
}

/** The state a first packet starts a connection in (tcp_new and its own transition), undefined
 * when it opens none: only a SYN, or an ACK picked up mid-stream (nf_conntrack_tcp_loose, 1 by
 * default), opens one. */
function openingState(flags: number): number | undefined {
  const index = indexOf(flags);
  const state = index === undefined ? sIV : TRANSITIONS[0]![index]![sNO]!;
  return state < sIV ? state : undefined;
}

/** Whether a first packet with these flags opens a connection (openingState), without the
 * tracking object: asked of every TCP packet. */
export function opensTcpConnection(flags: number): boolean {
  return openingState(flags) !== undefined;
}

/** The tracking a first packet starts, undefined when it opens no connection. */
export function openTcp(flags: number): TcpTrack | undefined {
  const state = openingState(flags);
  if (state === undefined) return undefined;
  const end = sequenceEnd(flags);
  return { state, lastIndex: indexOf(flags)!, lastDir: 0, closeInit: false, simultaneousOpen: false, challengeAck: false, liberal: state !== sSS, accepted: [end, 0], delivered: [0, 0] };
}

/** What a packet does to a connection it belongs to. `accepted`: it gets the entry (`assured`
 * when it completes the handshake); `ignored`: it gets the entry, which it does not change;
 * `invalid`: it gets none; `reopen`: the entry is deleted and the packet opens a connection of its
 * own; `killed`: it gets the entry, which is deleted (a reset before any reply); `uncounted`: it
 * gets the entry and moves it, but is not counted (a SYN again before any reply). */
export type TcpVerdict = 'accepted' | 'assured' | 'ignored' | 'invalid' | 'reopen' | 'killed' | 'uncounted';

/** nf_conntrack_tcp_packet for a packet of a confirmed connection, moving `track` (`seenReply`:
 * a reply was seen before this packet; `assured`: the connection is assured already). */
export function trackTcp(track: TcpTrack, direction: 0 | 1, flags: number, seenReply: boolean, assured: boolean): TcpVerdict {
  const index = indexOf(flags);
  if (index === undefined) return 'invalid';
  let old = track.state;
  let next = TRANSITIONS[direction]![index]![old]!;
  if (next === sSS && old >= sTW) {
    // A SYN after a close: a new connection where a FIN closed this one or the same end reset it.
    if (track.closeInit || (track.lastDir === direction && track.lastIndex === INDEX.rst)) return 'reopen';
    next = sIG;
  }
  if (next === sIV) return 'invalid';
  if (next === sIG && index === INDEX.synack && track.lastIndex === INDEX.syn && track.lastDir !== direction) {
    // The other end answers a SYN conntrack ignored: both ends are in sync where conntrack is
    // not, and it takes the handshake up again from SYN_RECV (nf_conntrack_proto_tcp.c
    // TCP_CONNTRACK_IGNORE case b); the packet counts (checked on Linux 6.18, seed 1590135354).
    // The windows start again from that SYN (seen[last_dir] from the SYN, seen[dir] cleared):
    // what either end sent before, a FIN among it, is behind them.
    old = sSS;
    next = sSR;
    track.accepted = track.lastDir === 0 ? [1, 0] : [0, 1];
    track.delivered = track.accepted;
    track.closeInit = false;
  }
  if (next === sIG) {
    track.lastIndex = index;
    track.lastDir = direction;
    // The SYN's options replace what the last packets left (last_flags): the mark of a
    // simultaneous open among them.
    if (index === INDEX.syn && direction === 0) {
      track.simultaneousOpen = false;
      track.challengeAck = old === sLA;
    }
    return 'ignored';
  }
  if (next === sTW && old === sLA && index === INDEX.ack && track.lastDir !== direction && track.lastIndex === INDEX.syn && track.challengeAck) {
    // The answer to a SYN ignored in LAST_ACK, not the last ACK: nothing changes.
    track.challengeAck = false;
    return 'ignored';
  }
  // tcp_in_window, after the table (nothing of the tracking changes when it fails): an ACK beyond
  // what conntrack saw of the other end.
  const peer = direction === 0 ? 1 : 0;
  if (!track.liberal && flags & ACK && track.delivered[peer] > track.accepted[peer]) return 'invalid';
  track.accepted = raised(track.accepted, direction, sequenceEnd(flags));
  if (next === sS2) track.simultaneousOpen = true;
  if (next === sSR && direction === 1 && index === INDEX.ack && track.simultaneousOpen) next = sES;
  track.lastIndex = index;
  track.lastDir = direction;
  track.state = next;
  if (old !== next && next === sFW) track.closeInit = true;
  if (!seenReply) {
    if (index === INDEX.rst) return 'killed';
    // "do not renew timeout on SYN retransmit" (nf_conntrack_tcp_packet returns before
    // nf_ct_refresh_acct): a SYN in SYN_SENT, the same or a new one, counts no packet or byte
    // (checked on Linux 6.18, seed 1876352365).
    return index === INDEX.syn && old === sSS ? 'uncounted' : 'accepted';
  }
  return !assured && (old === sSR || old === sES) && next === sES ? 'assured' : 'accepted';
}
