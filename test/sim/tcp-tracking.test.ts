// TCP connection tracking (src/sim/tcp-tracking.ts) on the sequences flows rarely write: each
// row a series of packets (direction, flags) from a SYN, with the verdict and state after each,
// as nf_conntrack_proto_tcp.c nf_conntrack_tcp_packet gives them (Linux 6.1 source). Flows
// through the simulator: test/sim/simulate-flow.test.ts; against the kernel: the generated flows
// of test/kernel/differential.test.ts.

import { describe, expect, it } from 'vitest';
import { openTcp, TCP_STATE, trackTcp, type TcpTrack } from '../../src/sim/tcp-tracking.js';

const FLAGS = { syn: 0x02, 'syn,ack': 0x12, ack: 0x10, 'fin,ack': 0x11, rst: 0x04, 'syn,fin': 0x03, none: 0 } as const;
type Step = readonly [direction: 0 | 1, flags: keyof typeof FLAGS];

/** The verdict and state name after each step; a reply seen from the first reply on, assured
 * from the first `assured` verdict on, as simulate-packet.ts keeps them. */
function run(steps: readonly Step[]): string[] {
  const track: TcpTrack = openTcp(FLAGS.syn)!;
  let seenReply = false;
  let assured = false;
  const names = Object.fromEntries(Object.entries(TCP_STATE).map(([name, n]) => [n, name]));
  return steps.map(([direction, flags]) => {
    const verdict = trackTcp(track, direction, FLAGS[flags], seenReply, assured);
    if (verdict === 'assured') assured = true;
    if (direction === 1) seenReply = true;
    return `${verdict} ${names[track.state]}`;
  });
}

describe('TCP tracking', () => {
  it('opens a connection only with a SYN or an ACK (loose pickup); PSH does not count', () => {
    expect([openTcp(FLAGS.syn)?.state, openTcp(0x0a)?.state, openTcp(FLAGS.ack)?.state]).toEqual([TCP_STATE.synSent, TCP_STATE.synSent, TCP_STATE.established]);
    expect([openTcp(FLAGS['syn,ack']), openTcp(FLAGS['fin,ack']), openTcp(FLAGS.rst), openTcp(FLAGS.none)]).toEqual([undefined, undefined, undefined, undefined]);
  });

  it.each([
    ['the handshake', [[1, 'syn,ack'], [0, 'ack']], ['accepted synRecv', 'assured established']],
    // TCP_CONNTRACK_IGNORE case b: a SYN-ACK answering the SYN conntrack ignored resynchronises
    // from SYN_RECV (kernel flow row "a SYN-ACK answering an ignored SYN …").
    [
      'a new SYN on an established connection, answered',
      [[1, 'syn,ack'], [0, 'ack'], [0, 'syn'], [1, 'syn,ack'], [0, 'ack']],
      ['accepted synRecv', 'assured established', 'ignored established', 'accepted synRecv', 'accepted established'],
    ],
    [
      'a close by the client',
      [[1, 'syn,ack'], [0, 'ack'], [0, 'fin,ack'], [1, 'fin,ack'], [0, 'ack'], [0, 'syn']],
      ['accepted synRecv', 'assured established', 'accepted finWait', 'accepted lastAck', 'accepted timeWait', 'reopen timeWait'],
    ],
    // The reply direction's SYN in SYN_SENT (sS2), then the client's SYN-ACK (sSR) and the
    // server's ACK, which the SIMULTANEOUS_OPEN flag takes to ESTABLISHED.
    ['a simultaneous open', [[1, 'syn'], [0, 'syn,ack'], [1, 'ack']], ['uncounted synSent2', 'accepted synRecv', 'assured established']],
    // "do not renew timeout on SYN retransmit": a SYN in SYN_SENT before any reply, from either
    // end, counts nothing (kernel flow rows "TCP: a SYN again before any reply …").
    ['a SYN again before any reply', [[0, 'syn'], [1, 'syn,ack']], ['uncounted synSent', 'accepted synRecv']],
    // An ignored SYN's options replace last_flags, the simultaneous open's mark among them.
    [
      'a simultaneous open, a SYN ignored on the way',
      [[1, 'syn'], [0, 'syn,ack'], [0, 'syn'], [1, 'ack'], [0, 'ack']],
      ['uncounted synSent2', 'accepted synRecv', 'ignored synRecv', 'accepted synRecv', 'assured established'],
    ],
    // RFC 5961: a SYN in LAST_ACK is ignored and may be answered by a challenge ACK, which is
    // not the last ACK: the connection stays in LAST_ACK until the next one.
    [
      'a challenge ACK in LAST_ACK',
      [[1, 'syn,ack'], [0, 'ack'], [0, 'fin,ack'], [1, 'fin,ack'], [0, 'syn'], [1, 'ack'], [1, 'ack']],
      ['accepted synRecv', 'assured established', 'accepted finWait', 'accepted lastAck', 'ignored lastAck', 'ignored lastAck', 'accepted timeWait'],
    ],
    ['a reset answering the SYN', [[1, 'rst']], ['killed close']],
    ['a SYN-ACK from the client (invalid), then the handshake', [[0, 'syn,ack'], [1, 'syn,ack'], [0, 'ack']], ['invalid synSent', 'accepted synRecv', 'assured established']],
    ['an invalid flag set, in any state', [[0, 'syn,fin'], [1, 'syn,ack'], [1, 'none']], ['invalid synSent', 'accepted synRecv', 'invalid synRecv']],
    ['a SYN after the server\'s reset, ignored, and a second one', [[1, 'syn,ack'], [0, 'ack'], [1, 'rst'], [0, 'syn'], [0, 'syn']], ['accepted synRecv', 'assured established', 'accepted close', 'ignored close', 'ignored close']],
  ] as const)('%s', (_name, steps, expected) => {
    expect(run(steps)).toEqual(expected);
  });
});
