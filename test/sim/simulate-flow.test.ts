import { describe, expect, it } from 'vitest';
import { simulateFlow, type FlowInput } from '../../src/sim/simulate-flow.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import type { Outcome } from '../../src/sim/outcome.js';
import { formatAddress, parseAddress } from '../../src/sim/address.js';
import { pickRangeAddress } from '../../src/sim/pick-range-address.js';
import { COUNT_MARKS, HOST, parse, steps } from './helpers.js';

function flow(text: string, packets: FlowInput['packets'], options = {}) {
  const result = simulateFlow(parse(text), { host: HOST, packets }, options);
  if (result.errors) throw new Error(result.errors.map((e) => e.message).join('; '));
  return result.outcomes;
}

function only(text: string, packets: FlowInput['packets']): readonly Outcome[] {
  const outcomes = flow(text, packets);
  if (outcomes.length !== 1) throw new Error(`expected one flow outcome, got ${outcomes.length}`);
  return outcomes[0]!.packets;
}

// Each bit of the packet mark records what the packet saw at prerouting (received) or output
// (locally generated), after conntrack: new 0x1, established 0x2, direction reply 0x4, status
// seen-reply 0x8, status confirmed 0x10, ct mark 0x42 set by an earlier packet 0x20.
const SEEN = (hook: 'prerouting' | 'output') => `
  chain ${hook} { type filter hook ${hook} priority 0; policy accept;
    ct state new meta mark set mark or 0x1
    ct state established meta mark set mark or 0x2
    ct direction reply meta mark set mark or 0x4
    ct status seen-reply meta mark set mark or 0x8
    ct status confirmed meta mark set mark or 0x10
    ct mark 0x42 meta mark set mark or 0x20
    ct mark set 0x42
  }`;
const OBSERVE = `table inet t {${SEEN('prerouting')}${SEEN('output')}\n}`;

const UDP = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'udp', sport: 5555, dport: 9999 } as const;

// nf_conn_acct: conntrack counts each packet of a connection as it attaches the entry, the
// first when it makes it (helpers.ts COUNT_MARKS says the marks).
describe("a connection's packet and byte counts", () => {
  it('counts every packet of a UDP flow, in its direction', () => {
    expect(only(COUNT_MARKS, [UDP, UDP, { reply: true }, UDP]).map((o) => o.mark)).toEqual(['0x00000021', '0x00000022', '0x0000003a', '0x0000002c']);
  });

  // tcp_conntracks[0][syn][sES] is sIG: nf_conntrack_tcp_packet returns before counting it.
  it('does not count a TCP packet the state machine ignores', () => {
    const syn = { ...UDP, protocol: 'tcp', tcpFlags: 'syn' } as const;
    const marks = only(COUNT_MARKS, [syn, { reply: true }, { ...syn, tcpFlags: 'ack' }, syn, { ...syn, tcpFlags: 'ack' }]).map((o) => o.mark);
    expect(marks.slice(2)).toEqual(['0x0000000a', '0x0000000a', '0x0000000c']);
  });
});

// A limit's bucket starts full and the run has no clock (nft_limit.c nft_limit_eval takes a
// packet's cost from it while it lasts); a quota counts every packet that reaches it
// (nft_quota.c nft_overquota, xt_quota.c). Each UDP packet is 28 bytes. Checked on Linux 6.18
// (test/kernel/differential.test.ts, '… across a flow').
describe('limits and quotas across the packets of a run', () => {
  const marks = (stmt: string, packets: FlowInput['packets']) =>
    only(`table inet t {\n  chain pre { type filter hook prerouting priority 0; policy accept;\n    ${stmt} meta mark set 1\n  }\n}`, packets).map((o) => o.mark);
  it.each([
    ['limit rate 1/hour burst 2 packets', ['0x00000001', '0x00000001', '0x00000000', '0x00000000']],
    ['limit rate over 1/hour burst 2 packets', ['0x00000000', '0x00000000', '0x00000001', '0x00000001']],
    ['limit rate 1/hour', ['0x00000001', '0x00000001', '0x00000001', '0x00000001']], // burst 5
    // rate + burst bytes: 28 + 28 + 28 fit in 90, the fourth does not.
    ['limit rate 10 bytes/hour burst 80 bytes', ['0x00000001', '0x00000001', '0x00000001', '0x00000000']],
    ['quota 60 bytes', ['0x00000001', '0x00000001', '0x00000000', '0x00000000']],
    ['quota 56 bytes', ['0x00000001', '0x00000001', '0x00000000', '0x00000000']],
    ['quota over 56 bytes used 20 bytes', ['0x00000000', '0x00000001', '0x00000001', '0x00000001']],
  ] as const)('%s', (stmt, expected) => {
    expect(marks(stmt, [UDP, UDP, { reply: true }, UDP])).toEqual(expected);
  });

  it('a named quota is one count for every rule that names it', () => {
    const text = `table inet t {\n  quota q { 60 bytes }\n  chain pre { type filter hook prerouting priority 0; policy accept;\n    ct direction original quota name "q" meta mark set 1\n    ct direction reply quota name "q" meta mark set 2\n  }\n}`;
    expect(only(text, [UDP, { reply: true }, UDP]).map((o) => o.mark)).toEqual(['0x00000001', '0x00000002', '0x00000000']);
  });

  it('iptables limit and quota matches count the same way', () => {
    const dump = '*mangle\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -m limit --limit 1/hour --limit-burst 1 -j MARK --set-xmark 0x1/0x1\n-A PREROUTING -m quota --quota 56 -j MARK --set-xmark 0x2/0x2\nCOMMIT\n';
    expect(only(dump, [UDP, UDP, UDP]).map((o) => o.mark)).toEqual(['0x00000003', '0x00000002', '0x00000000']);
  });
});

// nft --debug=netlink (1.0.6): a ct_label literal names one bit: `ct label 5` loads the labels
// and tests `& 0x20 != 0`, `ct label == 5` and `!= 5` compare them with 0x20, a set of labels
// looks the labels up among 0x20 and 0x40; `ct label set 5` adds bit 5 (nf_connlabels_replace
// with the bit as its mask), on the connection: a later packet of it reads it. Checked on
// Linux 6.18 (test/kernel/differential.test.ts, 'ct label set adds a bit').
describe("a connection's labels", () => {
  const LABELS = `table inet m { chain pre { type filter hook prerouting priority mangle; policy accept;
    ct state new ct label set 5
    ct label 5 meta mark set mark or 0x1
    ct label 3 meta mark set mark or 0x2
    ct label == 5 meta mark set mark or 0x4
    ct label != 5 meta mark set mark or 0x8
    ct label { 5, 6 } meta mark set mark or 0x10
    ct direction reply ct label set 100
    ct label 100 meta mark set mark or 0x20
  } }`;
  it.each([
    ['the first packet: bit 5 alone', 0, '0x00000015'],
    ['the reply: bit 5, then bit 100 too', 1, '0x00000035'],
    ['the next packet: bits 5 and 100', 2, '0x00000029'],
  ])('%s', (_, index, mark) => {
    expect(only(LABELS, [UDP, { reply: true }, UDP])[index]!.mark).toBe(mark);
  });
});

describe('conntrack across the packets of a flow', () => {
  // Checked on Linux 6.18 in a namespace pair (udp 10.9.0.1:5555 → 10.9.0.2:9999 twice, one
  // answer, once more): counters for new/original 2, established/original 1, confirmed 2,
  // seen-reply 1 at prerouting; established/reply, seen-reply and ct mark 0x42 on the answer.
  it.each([
    ['the first packet opens the connection: new, not yet confirmed', 0, 0x01],
    ['a second original packet before any reply is still new (resolve_normal_ct: IP_CT_NEW until IPS_SEEN_REPLY), confirmed, sees the ct mark the first set', 1, 0x31],
    ['the reply is established in direction reply and has set seen-reply (nf_conntrack_in)', 2, 0x3e],
    ['an original packet after the reply is established', 3, 0x3a],
  ])('%s', (_name, i, mark) => {
    const packets = only(OBSERVE, [UDP, UDP, { reply: true }, UDP]);
    expect(packets[i]!.mark).toBe(`0x${mark.toString(16).padStart(8, '0')}`);
    expect(packets[i]!.ctMark).toBe('0x00000042');
  });

  // nf_conntrack_proto_tcp.c tcp_conntracks[0][*][sSS]: before any reply, a SYN again stays
  // SYN_SENT and an RST closes; a SYN-ACK, FIN, ACK or no flag is invalid, without the entry.
  // A connection picked up by a bare ACK starts established and is not held to it. The
  // kernel rows: test/kernel/differential.test.ts, "a SYN whose reply conntrack never saw".
  const TCP = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'tcp', sport: 5555, dport: 80 } as const;
  it.each([
    ['syn', 'syn', 0x31],
    ['syn', 'rst', 0x31],
    ['syn', 'ack', 0],
    ['syn', ['fin', 'ack'], 0],
    ['syn', ['syn', 'ack'], 0],
    ['ack', 'ack', 0x31],
  ] as const)('a connection opened by %s: before any reply, a packet with %s sees mark %i', (first, next, mark) => {
    const packets = only(OBSERVE, [{ ...TCP, tcpFlags: first }, { ...TCP, tcpFlags: next }]);
    expect(packets[1]!.mark).toBe(`0x${mark.toString(16).padStart(8, '0')}`);
  });

  it('builds the reply from the previous packet as it left: addresses and ports swapped, on the interface it left by', () => {
    const [, reply] = only(OBSERVE, [UDP, { reply: true }]);
    expect(reply).toMatchObject({ iif: 'cni0', oif: 'eth0', packet: { src: '10.244.1.5', dst: '192.0.2.99', protocol: 'udp', sport: 9999, dport: 5555 } });
  });

  it('answers a TCP SYN with SYN/ACK and anything else with ACK', () => {
    const text = 'table ip t { chain p { type filter hook prerouting priority 0; tcp flags & (syn | ack) == syn | ack meta mark set 1; tcp flags & (syn | ack) == ack meta mark set 2; ct state new } }';
    const [, synAck, , ack] = only(text, [{ iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5' }, { reply: true }, { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', tcpFlags: 'ack' }, { reply: true }]);
    expect([synAck!.mark, ack!.mark]).toEqual(['0x00000001', '0x00000002']);
  });

  it('lets a packet\'s explicit ct override the table (how a single established packet is simulated)', () => {
    const packets = only(OBSERVE, [UDP, { ...UDP, ct: { state: 'established', mark: '0x7' } }]);
    expect(packets[1]!.mark).toBe('0x00000002');
    expect(packets[1]!.ctMark).toBe('0x00000042');
  });

  it('is simulatePacket for a flow of one packet', () => {
    const single = simulatePacket(parse(OBSERVE), { host: HOST, packet: UDP });
    expect(flow(OBSERVE, [UDP])).toEqual([{ probability: 1, packets: single.outcomes }]);
  });
});

// TCP connection tracking (src/sim/tcp-tracking.ts, nf_conntrack_proto_tcp.c
// nf_conntrack_tcp_packet): the last packet of each flow marks what it saw at prerouting after
// conntrack (new 0x1, established 0x2, direction reply 0x4, status assured 0x8, invalid 0x10),
// and its NAT says whether the nat chain ran for it (a new connection) or the connection's
// mapping was applied. The kernel rows for the endings: the generated flows of
// test/kernel/differential.test.ts (differential-arbitraries.ts TCP_ENDINGS).
describe('TCP connection tracking across a flow', () => {
  const TRACKED = `table ip t {
  chain nat { type nat hook prerouting priority dstnat; policy accept; tcp dport 80 dnat to 10.244.1.7 }
  chain pre { type filter hook prerouting priority 0; policy accept;
    ct state new meta mark set mark or 0x1
    ct state established meta mark set mark or 0x2
    ct direction reply meta mark set mark or 0x4
    ct status assured meta mark set mark or 0x8
    ct state invalid meta mark set mark or 0x10
  }
}`;
  const CLIENT = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'tcp', sport: 5555, dport: 80 } as const;
  const client = (tcpFlags: string | readonly string[]) => ({ ...CLIENT, tcpFlags });
  const server = (tcpFlags: string | readonly string[]) => ({ reply: true as const, tcpFlags });
  const HANDSHAKE = [client('syn'), { reply: true as const }, client('ack')];
  it.each([
    ['the handshake\'s ACK completes it: established and assured (SYN_RECV → ESTABLISHED)', HANDSHAKE, 0x0a, 'original'],
    ['the SYN-ACK is not assured yet', HANDSHAKE.slice(0, 2), 0x06, 'reply'],
    ['a reset in ESTABLISHED is still the connection\'s (→ CLOSE)', [...HANDSHAKE, client('rst')], 0x0a, 'original'],
    ['a SYN after the client\'s reset reopens the connection: new, through the nat chain', [...HANDSHAKE, client('rst'), client('syn')], 0x01, 'rule'],
    ['a SYN after the server\'s reset is ignored: the old connection, its mapping', [...HANDSHAKE, server('rst'), client('syn')], 0x0a, 'original'],
    ['a SYN after both FINs and the last ACK (TIME_WAIT) reopens the connection', [...HANDSHAKE, client(['fin', 'ack']), server(['fin', 'ack']), client('ack'), client('syn')], 0x01, 'rule'],
    ['a SYN after the client\'s FIN alone (FIN_WAIT) is ignored', [...HANDSHAKE, client(['fin', 'ack']), client('syn')], 0x0a, 'original'],
    ['a reset before any reply deletes the connection: the next SYN is new', [client('syn'), client('rst'), client('syn')], 0x01, 'rule'],
    ['so does the server\'s reset before any reply', [client('syn'), server('rst'), client('syn')], 0x01, 'rule'],
    ['a server\'s ACK to a SYN (SYN_SENT) is ignored: established, in reply', [client('syn'), server('ack')], 0x06, 'reply'],
    ['a server\'s FIN to a SYN is invalid', [client('syn'), server(['fin', 'ack'])], 0x10, undefined],
    ['a SYN from the server in ESTABLISHED is invalid', [...HANDSHAKE, server('syn')], 0x10, undefined],
    ['a SYN-ACK from the client in ESTABLISHED is invalid', [...HANDSHAKE, client(['syn', 'ack'])], 0x10, undefined],
    ['a FIN without ACK is an invalid flag set (tcp_error), whatever the state', [...HANDSHAKE, client('fin')], 0x10, undefined],
    ['PSH does not count: SYN and PSH opens a connection', [client(['syn', 'psh'])], 0x01, 'rule'],
  ] as const)('%s', (_name, packets, mark, nat) => {
    const last = only(TRACKED, packets).at(-1)!;
    expect(last.mark).toBe(`0x${mark.toString(16).padStart(8, '0')}`);
    expect(last.nat.map((n) => n.conntrack ?? 'rule')[0]).toBe(nat);
  });

  // Conntrack reads the flags the packet has when it reaches it (nf_conntrack_in at priority
  // -200): a rewrite before counts, one after does not (kernel rows: test/kernel/
  // differential.test.ts, "TCP flags rewritten before or after conntrack").
  it.each([
    ['a FIN-ACK made a SYN before conntrack opens a connection', 'prerouting priority -300', 'tcp flags fin | ack tcp flags set syn', [client(['fin', 'ack'])], 0x01],
    ['a SYN made a FIN-ACK before conntrack is invalid', 'prerouting priority -300', 'tcp flags syn tcp flags set fin | ack', [client('syn')], 0x10],
    ['a SYN made an ACK after conntrack opened the connection as a SYN: the next ACK is invalid', 'forward priority 0', 'tcp flags syn tcp flags set ack', [client('syn'), client('ack')], 0x10],
    ['an echo request made an ICMP error before conntrack quotes nothing: invalid', 'prerouting priority -300', 'icmp type echo-request icmp type set destination-unreachable', [{ ...CLIENT, protocol: 'icmp' }], 0x10],
  ] as const)('%s', (_name, where, rewrite, packets, mark) => {
    const text = TRACKED.replace('}\n}', `}\n  chain rw { type filter hook ${where}; policy accept; ${rewrite} }\n}`);
    expect(only(text, packets).at(-1)!.mark).toBe(`0x${mark.toString(16).padStart(8, '0')}`);
  });
});

// tcp_in_window: an end acknowledges everything of the other that reached it; an ACK of a SYN or
// FIN conntrack did not see is "over upper bound", and the packet invalid. Kernel rows:
// test/kernel/differential.test.ts, "a TCP connection whose packets conntrack partly missed".
describe('TCP windows across a flow', () => {
  const ruleset = (extra: string) => `table ip t {
  chain raw { type filter hook prerouting priority -300; policy accept; tcp sport 5555 tcp flags & (fin | syn | rst | ack) == fin | ack notrack }
  chain pre { type filter hook prerouting priority 0; policy accept;
    ct state established meta mark set mark or 0x2
    ct state invalid meta mark set mark or 0x10
    ct state untracked meta mark set mark or 0x20
  }
  chain fwd { type filter hook forward priority 0; policy accept; ${extra} }
}`;
  const CLIENT = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'tcp', sport: 5555, dport: 80 } as const;
  const client = (tcpFlags: string | readonly string[]) => ({ ...CLIENT, tcpFlags });
  const server = (tcpFlags: string | readonly string[]) => ({ reply: true as const, tcpFlags });
  const FIN = client(['fin', 'ack']);
  it.each([
    ['the server acknowledges the client\'s untracked FIN: invalid', '', [client('syn'), server(['syn', 'ack']), client('ack'), FIN, server(['fin', 'ack'])], [0x20, 0x10]],
    ['a FIN dropped after it was untracked never reached the server: established', 'tcp flags fin drop', [client('syn'), server(['syn', 'ack']), client('ack'), FIN, server(['fin', 'ack'])], [0x20, 0x02]],
    ['a connection picked up mid-stream is liberal: established', '', [client('ack'), FIN, server(['fin', 'ack'])], [0x20, 0x02]],
    ['once invalid, the next answer is too: conntrack never sees the FIN', '', [client('syn'), server(['syn', 'ack']), client('ack'), FIN, server(['fin', 'ack']), server('ack')], [0x10, 0x10]],
    // A receiving stack drops a segment without ACK: the server acknowledges only the SYN.
    ['a FIN without ACK (invalid) is not acknowledged', '', [client('syn'), client('fin'), server(['syn', 'ack'])], [0x10, 0x02]],
    // A packet whose ct the input gives reads nothing of the table, and leaves nothing there.
    ['a FIN whose ct the input gives is not counted', '', [client('syn'), server(['syn', 'ack']), client('ack'), { ...FIN, ct: { state: 'untracked' } }, server(['fin', 'ack'])], [0x20, 0x02]],
  ] as const)('%s', (_name, extra, packets, marks) => {
    expect(only(ruleset(extra), packets).slice(-2).map((p) => p.mark)).toEqual(marks.map((m) => `0x${m.toString(16).padStart(8, '0')}`));
  });

  // An untracked packet gets none of the connection's NAT: the FIN went to the address the client
  // used, not to the server the connection was DNATed to, which acknowledges only what it got.
  it('does not count a FIN that missed the DNATed server', () => {
    const text = ruleset('').replace('chain raw', 'chain nat { type nat hook prerouting priority dstnat; policy accept; tcp dport 80 dnat to 10.244.1.7 }\n  chain raw');
    const fromServer = { iif: 'cni0', src: '10.244.1.7', dst: '192.0.2.99', protocol: 'tcp', sport: 80, dport: 5555, tcpFlags: ['fin', 'ack'] } as const;
    const packets = only(text, [client('syn'), server(['syn', 'ack']), client('ack'), FIN, fromServer]);
    expect(packets.slice(-2).map((p) => [p.mark, p.packet.dst])).toEqual([['0x00000020', '10.244.1.5'], ['0x00000002', '192.0.2.99']]);
  });
});

const NAT = `table ip nat {
  chain pre { type nat hook prerouting priority dstnat; policy accept;
    tcp dport 80 dnat to 10.244.1.5:8080
  }
  chain post { type nat hook postrouting priority srcnat; policy accept;
    oifname "cni0" snat to 10.244.0.1
  }
}`;
const SYN = { iif: 'eth0', src: '192.0.2.99', dst: '192.0.2.10', sport: 40000, dport: 80 } as const;

describe('NAT mappings across the packets of a flow', () => {
  const [syn, reply, ack] = only(NAT, [SYN, { reply: true }, { ...SYN, tcpFlags: 'ack' }]);

  it('sets the mapping up on the first packet with the nat chains', () => {
    expect(syn).toMatchObject({ oif: 'cni0', packet: { src: '10.244.0.1', sport: 40000, dst: '10.244.1.5', dport: 8080 } });
    expect(syn!.nat.map((n) => [n.type, n.to, n.conntrack])).toEqual([['dnat', '10.244.1.5:8080', undefined], ['snat', '10.244.0.1', undefined]]);
  });

  // nf_nat_packet: in the reply direction the manipulation of a hook applies when the entry has
  // the other kind of NAT (statusbit ^= IPS_NAT_MASK), rewriting to the inverted original tuple.
  it('undoes both on the reply without running a nat chain: dst back to the client, src back to the address the client used', () => {
    expect(reply).toMatchObject({ iif: 'cni0', oif: 'eth0', packet: { src: '192.0.2.10', sport: 80, dst: '192.0.2.99', dport: 40000 } });
    expect(reply!.nat.map((n) => [n.type, n.to, n.conntrack])).toEqual([['snat', '192.0.2.99:40000', 'reply'], ['dnat', '192.0.2.10:80', 'reply']]);
    expect(steps(reply!)).toEqual([]);
  });

  // nf_nat_inet_fn: the nat chains run only for a new connection whose mapping is not set up.
  it('gives later original packets the same mapping without the nat chains', () => {
    expect(ack!.packet).toEqual(syn!.packet);
    expect(ack!.nat.map((n) => [n.type, n.to, n.conntrack])).toEqual([['dnat', '10.244.1.5:8080', 'original'], ['snat', '10.244.0.1:40000', 'original']]);
    expect(steps(ack!)).toEqual([]);
  });

  // Later packets carry the entry's reply tuple as the first packet's mappings altered it
  // (nf_conntrack_alter_reply). Kernel row: test/kernel/differential.test.ts, "a stray ACK from
  // the node after a REDIRECT" (seed 1541172547, case 1937: nftsim read the inverted original).
  // The first packet meets the forward chain before its SNAT is set up at postrouting.
  it('shows later packets, both ways, the reply tuple with the mappings', () => {
    const text = `${NAT}\ntable ip f {\n  chain fwd { type filter hook forward priority 0; policy accept;\n    ct reply ip saddr 10.244.1.5 ct reply ip daddr 10.244.0.1 ct reply proto-src 8080 ct reply proto-dst 40000 meta mark set mark or 0x1\n  }\n}`;
    expect(only(text, [SYN, { reply: true }, { ...SYN, tcpFlags: 'ack' }]).map((p) => p.mark)).toEqual(['0x00000000', '0x00000001', '0x00000001']);
  });

  // nf_nat_register_fn registers every NAT hook of the family once it has a nat chain at one:
  // with a DNAT at prerouting only, the reply's source is still rewritten at postrouting.
  it.each([
    ['ip', 'dnat to 10.244.1.5', { ...SYN, protocol: 'udp' }, '192.0.2.10'],
    ['ip6', 'dnat to [2001:db8::5]:8080', { iif: 'eth0', src: '2001:db8::99', dst: '2001:db8::10', protocol: 'udp', sport: 40000, dport: 80 }, '2001:db8::10'],
  ] as const)('undoes a %s DNAT on the reply at postrouting, where no nat chain is', (family, dnat, first, server) => {
    const text = `table ${family} nat {\n  chain pre { type nat hook prerouting priority dstnat; policy accept; ${dnat} }\n}`;
    const [, reply] = only(text, [first, { reply: true }]);
    expect(reply!.packet).toMatchObject({ src: server, sport: 80, dst: first.src });
    expect(reply!.nat.map((n) => [n.type, n.conntrack])).toEqual([['dnat', 'reply']]);
  });

  // The connection keeps the address the kernel picked from the range (pick-range-address.ts):
  // the reply comes from it and later packets go to it (seed 11 of the generated flows, where
  // nftsim kept the range's first address).
  it('keeps the address picked from a range as the mapping of the connection', () => {
    const text = 'table ip nat {\n  chain pre { type nat hook prerouting priority dstnat; policy accept; dnat to 10.244.1.5-10.244.1.12 }\n}';
    const udp = { ...SYN, protocol: 'udp' } as const;
    const [first, reply, next] = only(text, [udp, { reply: true }, udp]);
    const picked = first!.packet.dst;
    expect(picked).not.toBe('10.244.1.5');
    expect(first!.nat.map((n) => n.to)).toEqual([picked]);
    expect(reply).toMatchObject({ iif: 'cni0', packet: { src: '192.0.2.10', sport: 80, dst: '192.0.2.99' } });
    expect(reply!.nat.map((n) => [n.type, n.to, n.conntrack])).toEqual([['dnat', '192.0.2.10:80', 'reply']]);
    expect(next!.packet.dst).toBe(picked);
    expect(next!.nat.map((n) => [n.type, n.to, n.conntrack])).toEqual([['dnat', `${picked}:80`, 'original']]);
  });

  // get_unique_tuple → find_appropriate_src: a new connection from the same source address and
  // port reuses the address an earlier one was mapped to, where its own hash picks another
  // (kernel flow row "SNAT to a range: a second connection …").
  it('maps a second connection from the same source address and port to the first one\'s SNAT address', () => {
    const text = 'table ip nat {\n  chain post { type nat hook postrouting priority srcnat; policy accept; snat to 10.244.0.50-10.244.0.59 }\n}';
    const udp = { iif: 'eth0', src: '192.0.2.99', protocol: 'udp', sport: 5555, dport: 53 } as const;
    const [first, second] = only(text, [{ ...udp, dst: '10.244.1.5' }, { ...udp, dst: '10.244.1.6' }]);
    const ownPick = pickRangeAddress({ src: parseAddress('192.0.2.99')!, dst: parseAddress('10.244.1.6')!, zone: 0 }, 'src', parseAddress('10.244.0.50')!.n, parseAddress('10.244.0.59')!.n, false);
    expect(formatAddress({ family: 'ip', n: ownPick })).not.toBe(first!.packet.src);
    expect(second!.packet.src).toBe(first!.packet.src);
    expect(second!.nat.map((n) => [n.type, n.to, n.conntrack])).toEqual([['snat', first!.packet.src, undefined]]);
  });

  // same_src compares the tuple's source part, an echo's identifier for ICMP: two echo requests
  // of one identifier to two destinations share the mapping (seed 1346823647, case 205, where
  // nftsim compared the absent port and the second took its own hash's address).
  it('maps a second ICMP echo connection from the same source to the first one\'s SNAT address', () => {
    const text = 'table ip nat {\n  chain post { type nat hook postrouting priority srcnat; policy accept; snat to 10.244.0.50-10.244.0.59 }\n}';
    const echo = { iif: 'eth0', src: '192.0.2.99', protocol: 'icmp', icmpType: 'echo-request' } as const;
    const [first, second] = only(text, [{ ...echo, dst: '10.244.1.5' }, { ...echo, dst: '10.244.1.6' }]);
    const ownPick = pickRangeAddress({ src: parseAddress('192.0.2.99')!, dst: parseAddress('10.244.1.6')!, zone: 0 }, 'src', parseAddress('10.244.0.50')!.n, parseAddress('10.244.0.59')!.n, false);
    expect(formatAddress({ family: 'ip', n: ownPick })).not.toBe(first!.packet.src);
    expect(second!.packet).toEqual({ ...first!.packet, dst: '10.244.1.6' });
    expect(second!.nat.map((n) => [n.type, n.to])).toEqual([['snat', first!.packet.src]]);
  });

  it('opens no connection for a dropped packet: the next one is new and meets the nat chains again', () => {
    const text = `${NAT}\ntable ip f { chain fwd { type filter hook forward priority 0; meta mark 0x1 drop } }`;
    const [dropped, again] = only(text, [{ ...SYN, mark: 1 }, SYN]);
    expect(dropped!.disposition).toBe('dropped');
    expect(again!.nat.map((n) => n.conntrack)).toEqual([undefined, undefined]);
    expect(steps(again!)).toContain('nat pre rule accept');
  });
});

// icmp_pkt_to_tuple: an echo connection is keyed on its identifier (kernel flow row "ICMP echo:
// another identifier is another connection").
describe('ICMP echo connections', () => {
  const STATES = 'table inet s {\n  chain fw { type filter hook forward priority 0; ct state new meta mark set mark or 0x10; ct state established meta mark set mark or 0x20 }\n}';
  const ECHO = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'icmp' } as const;

  it('opens another connection for another identifier; the first one\'s is established', () => {
    const [, reply, other, again] = only(STATES, [ECHO, { reply: true }, { ...ECHO, icmpId: 40001 }, ECHO]);
    expect(reply!.packet).toMatchObject({ icmpId: 40000 });
    expect([reply!.mark, other!.mark, again!.mark]).toEqual(['0x00000020', '0x00000010', '0x00000020']);
  });

  // Linux answers an echo with the request's code (icmp_echo copies the header), which the tuple
  // keeps: the answer to an echo of code 5 is established.
  it('answers an echo with its code, as Linux does', () => {
    const [, reply] = only(STATES, [{ ...ECHO, icmpCode: 5 }, { reply: true }]);
    expect(reply!.packet).toMatchObject({ icmpId: 40000 });
    expect(reply!.mark).toBe('0x00000020');
  });

  it('keeps the identifier in a reply whose type the step gives', () => {
    const [, reply] = only(STATES, [{ ...ECHO, icmpId: 7 }, { reply: true, icmpType: 'echo-reply' }]);
    expect(reply!.packet).toMatchObject({ icmpId: 7 });
    expect(reply!.mark).toBe('0x00000020');
  });

  // The quoted query's code is part of the tuple conntrack relates the error to.
  it('relates an ICMP error quoting an echo of code 5 to its connection', () => {
    const related = 'table inet r {\n  chain fw { type filter hook forward priority 0; ct state related meta mark set 0x1 }\n}';
    const error = { iif: 'cni0', src: '10.244.1.5', dst: '192.0.2.99', protocol: 'icmp', icmpType: 'time-exceeded', quoted: { src: '192.0.2.99', dst: '10.244.1.5', protocol: 'icmp', icmpCode: 5 } } as const;
    const [, err] = only(related, [{ ...ECHO, icmpCode: 5 }, error]);
    expect(err!.mark).toBe('0x00000001');
  });

  // icmpv6_manip_pkt rewrites the identifier of echoes only: a node information query's moves in
  // the tuple, not in the packet.
  it('does not model NAT moving an ICMPv6 node information query\'s identifier', () => {
    const text = 'table ip6 nat {\n  chain post { type nat hook postrouting priority srcnat; policy accept; masquerade random }\n}';
    const query = { iif: 'eth0', src: '2001:db8::99', dst: '2001:db8::5', protocol: 'icmpv6', icmpType: 139 } as const;
    const [outcome] = only(text, [query]);
    expect(outcome!.trace.find((e) => e.kind === 'unsupported')?.reason).toContain('ICMPv6 node information');
  });

  // A payload statement before conntrack's place changes what conntrack reads (kernel flow row
  // "icmp id set before conntrack: …").
  it('reads the identifier a rule before conntrack set', () => {
    const text = `${STATES}\ntable inet raw {\n  chain pre { type filter hook prerouting priority raw - 10; icmp type echo-request icmp id set 7 }\n}`;
    const [first, reply, second] = only(text, [{ ...ECHO, icmpId: 1 }, { reply: true }, { ...ECHO, icmpId: 2 }]);
    expect(reply!.packet).toMatchObject({ icmpId: 7 });
    expect([first!.mark, second!.mark]).toEqual(['0x00000010', '0x00000020']);
    expect(second!.packet).toMatchObject({ icmpId: 7 });
  });
});

// NAT maps the connection's tuple, and nf_nat_packet rewrites the packet's side from the new tuple
// only when it differs from the old (IPS_SRC_NAT): a payload statement's rewrite after
// conntrack's place is undone where NAT changes that side, kept otherwise (kernel flow rows
// "… set after conntrack, then masquerade …").
describe('NAT of a packet a rule rewrote after conntrack', () => {
  const rewrite = (stmt: string, nat: string): string =>
    `table ip f {\n  chain fw { type filter hook forward priority 0; ${stmt} }\n}\ntable ip nat {\n  chain post { type nat hook postrouting priority srcnat; ${nat} }\n}`;
  it.each([
    ['masquerade undoes `tcp sport set`', 'tcp sport set 7', 'masquerade', { src: '10.244.0.1', sport: 5555 }],
    ['an SNAT to the packet\'s own address keeps it', 'tcp sport set 7', 'snat to 192.0.2.99', { src: '192.0.2.99', sport: 7 }],
    ['masquerade keeps `tcp dport set` on the other side', 'tcp dport set 7', 'masquerade', { src: '10.244.0.1', dport: 7 }],
    ['masquerade undoes `icmp id set`', 'icmp type echo-request icmp id set 7', 'masquerade', { src: '10.244.0.1', icmpId: 40000 }, 'icmp'],
  ])('%s', (_name, stmt, nat, packet, protocol = 'tcp') => {
    const input = protocol === 'icmp' ? { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'icmp' } as const : { ...UDP, protocol: 'tcp' } as const;
    const [outcome] = only(rewrite(stmt, nat), [input]);
    expect(outcome!.packet).toMatchObject(packet);
  });
});

// get_unique_tuple moves a mapping on when the tuple it makes is another connection's already
// (nf_nat_used_tuple): the kernel rows "… the second connection's tuple is taken …" check each.
describe('NAT mappings that clash with a connection of the flow', () => {
  const MASQUERADE = 'table ip nat {\n  chain post { type nat hook postrouting priority srcnat; policy accept; masquerade }\n}';
  const other = { ...UDP, src: '192.0.2.98' } as const;

  // nf_nat_l4proto_unique_tuple: a random port of 1024-65535, shown as the range; the connection
  // is confirmed with it, so its next packet and its reply meet its mapping.
  it('gives a second client with the same source port a port the kernel picks', () => {
    const [first, second, reply, next] = only(MASQUERADE, [UDP, other, { reply: true }, other]);
    expect(first!.packet).toMatchObject({ src: '10.244.0.1', sport: 5555 });
    expect(second!.packet).toMatchObject({ src: '10.244.0.1', sport: '1024-65535' });
    expect(second!.nat.map((n) => n.to)).toEqual(['10.244.0.1:1024-65535']);
    expect(reply!.packet).toMatchObject({ dst: '192.0.2.98', dport: 5555 });
    expect(next!.nat.map((n) => [n.type, n.conntrack])).toEqual([['masquerade', 'original']]);
  });

  // An ICMP query's identifier is the port NAT moves, 0-65535 at random for SNAT
  // (nf_nat_l4proto_unique_tuple); the reply gets the second client's own back (kernel flow row
  // "masquerade: a second client's echo with a taken identifier …").
  it('gives a second client\'s echo with the same identifier one the kernel picks', () => {
    const echo = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'icmp' } as const;
    const [first, second, reply] = only(MASQUERADE, [echo, { ...echo, src: '192.0.2.98' }, { reply: true }]);
    expect(first!.packet).toMatchObject({ src: '10.244.0.1', icmpId: 40000 });
    expect(second!.packet).toMatchObject({ src: '10.244.0.1', icmpId: '0-65535' });
    expect(second!.nat.map((n) => n.to)).toEqual(['10.244.0.1']);
    expect(reply!.packet).toMatchObject({ dst: '192.0.2.98', icmpId: 40000 });
  });

  it('does not guess what a later `icmp id` reads of an identifier the kernel picked', () => {
    const text = `${MASQUERADE}\ntable ip f {\n  chain late { type filter hook postrouting priority 200; icmp id 40000 meta mark set 0x1 }\n}`;
    const echo = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'icmp' } as const;
    const [first, second] = flow(text, [echo, { ...echo, src: '192.0.2.98' }])[0]!.packets;
    expect(first!.mark).toBe('0x00000001');
    expect(second!.uncertain).toBe(true);
    expect(second!.trace.find((e) => e.kind === 'unsupported')?.reason).toContain('after NAT picked a random ICMP identifier (0-65535)');
  });

  // DNAT moves it too, from 0 on (find_free_id's offset 0 for DNAT without random flags); the
  // reply gets the client's own back (kernel flow row "DNAT: a second echo to the same server …").
  it.each([
    [40000, 0],
    [0, 1],
  ])('gives a second echo with identifier %i to the same server through DNAT the first free one, %i', (icmpId, moved) => {
    const text = 'table ip nat {\n  chain pre { type nat hook prerouting priority dstnat; policy accept; dnat to 10.244.1.5 }\n}';
    const echo = { iif: 'eth0', src: '192.0.2.99', protocol: 'icmp', icmpId } as const;
    const [first, second, reply] = only(text, [{ ...echo, dst: '10.244.1.8' }, { ...echo, dst: '10.244.1.9' }, { reply: true }]);
    expect(first!.packet).toMatchObject({ dst: '10.244.1.5', icmpId });
    expect(second!.packet).toMatchObject({ dst: '10.244.1.5', icmpId: moved });
    expect(reply!.packet).toMatchObject({ src: '10.244.1.9', dst: '192.0.2.99', icmpId });
  });

  // A reply carries the pick of the connection it answers, which no other connection's range holds:
  // the node's SYN back, put in zone 1 as the first SYN was, is not the zone-1 connection's reply
  // (seed 42306950, case 1892, where the kernel's packet opened a connection of its own).
  it('does not take a reply to one connection\'s random pick for another connection\'s', () => {
    const text = `table ip raw {\n  chain out { type filter hook output priority raw; tcp flags & (syn | rst | ack) == syn ct zone set 1 }\n}\ntable ip nat {\n  chain post { type nat hook postrouting priority srcnat; masquerade fully-random }\n}`;
    const syn = { src: '192.0.2.10', dst: '192.0.2.10', protocol: 'tcp', sport: 40001, dport: 80 } as const;
    const [, , , back] = only(text, [syn, { reply: true }, { ...syn, tcpFlags: 'ack' }, { reply: true, tcpFlags: 'syn' }]);
    // Set up by the nat chain, not the other connection's mapping (then seen again through lo).
    expect(back!.nat.map((n) => n.conntrack)).toEqual([undefined, 'original']);
    expect(steps(back!)).toContain('nat post rule accept');
  });

  // The second client's port is one of 1024-65535: a third client's 2000 is free, and the reply
  // to it is the third client's, not the second's (whose range holds 2000).
  it('keeps a later client\'s port beside a port the kernel picked, and answers it', () => {
    const third = { ...UDP, src: '192.0.2.97', sport: 2000 } as const;
    const [, , last, reply] = only(MASQUERADE, [UDP, other, third, { reply: true }]);
    expect(last!.packet).toMatchObject({ src: '10.244.0.1', sport: 2000 });
    expect(reply!.packet).toMatchObject({ dst: '192.0.2.97', dport: 2000 });
  });

  // find_appropriate_src: the mapping of the same source address and port is reused, so a third
  // connection from the second client gets the second's port, though its own would be free.
  it('gives a later connection from the same source address and port the moved mapping', () => {
    const [, , third] = only(MASQUERADE, [UDP, other, { ...other, dst: '10.244.1.6' }]);
    expect(third!.packet).toMatchObject({ src: '10.244.0.1', sport: '1024-65535' });
  });

  // In a port range given, the packet's port is kept only while its tuple is free; else the
  // kernel picks one of the range.
  it('moves an SNAT port kept in its range when the tuple is taken', () => {
    const text = 'table ip nat {\n  chain post { type nat hook postrouting priority srcnat; policy accept; snat to 10.244.0.1:5550-5560 }\n}';
    const [first, second] = only(text, [UDP, other]);
    expect(first!.nat.map((n) => n.to)).toEqual(['10.244.0.1:5555']);
    expect(second!.nat.map((n) => n.to)).toEqual(['10.244.0.1:5550-5560']);
    expect(second!.trace.filter((e) => e.kind === 'unsupported').map((e) => e.reason)).toEqual(['NAT to a port range: the kernel picks the port; the trace shows the range']);
  });

  // DNAT without random flags tries the range from its first port (offset 0): the first free one.
  it('gives a DNAT to a port range the first port whose tuple is free', () => {
    const text = 'table ip nat {\n  chain pre { type nat hook prerouting priority dstnat; policy accept; dnat to 10.244.1.5:8000-8001 }\n}';
    const [first, second] = only(text, [UDP, { ...UDP, dst: '10.244.1.6' }]);
    expect(first!.nat.map((n) => n.to)).toEqual(['10.244.1.5:8000']);
    expect(second!.nat.map((n) => n.to)).toEqual(['10.244.1.5:8001']);
  });

  // Without a port range DNAT cannot move the port (nf_nat_l4proto_unique_tuple returns); the
  // null binding at postrouting, where no nat chain is, moves the source port instead (kernel
  // row "DNAT without a port range: the second connection's tuple is taken").
  it('moves the source port of a DNATed connection whose tuple is taken, with no rule', () => {
    const text = 'table ip nat {\n  chain pre { type nat hook prerouting priority dstnat; policy accept; dnat to 10.244.1.5 }\n}';
    const [first, second, again] = only(text, [UDP, { ...UDP, dst: '10.244.1.6' }, { ...UDP, dst: '10.244.1.6' }]);
    expect(first!.nat.map((n) => n.type)).toEqual(['dnat']);
    expect(second!.packet).toMatchObject({ src: '192.0.2.99', sport: '1024-65535', dst: '10.244.1.5', dport: 9999 });
    expect(second!.nat.map((n) => [n.type, n.to, n.at?.line])).toEqual([['dnat', '10.244.1.5', 2], ['snat', '192.0.2.99:1024-65535', undefined]]);
    expect(again!.nat.map((n) => [n.type, n.conntrack])).toEqual([['dnat', 'original'], ['snat', 'original']]);
    expect(steps(again!)).toEqual([]);
  });
});

// An ICMP error quotes the packet it is about; conntrack relates it to that packet's connection
// (nf_conntrack_core.c nf_conntrack_inet_error), and NAT translates it as that connection's
// packets (nf_nat_icmp_reply_translation). Kernel rows "… ICMP error …" check the same.
describe('ICMP errors about the packets of a flow', () => {
  // Mark bits at prerouting: related 0x1, direction reply 0x2, invalid 0x4, ct mark 0x42 (set on
  // the connection's first packet) 0x8.
  const RELATED = `table inet t {
    chain pre { type filter hook prerouting priority 0; policy accept;
      ct state related meta mark set mark or 0x1
      ct direction reply meta mark set mark or 0x2
      ct state invalid meta mark set mark or 0x4
      ct mark 0x42 meta mark set mark or 0x8
      ct state new ct mark set 0x42
    }
  }
  table ip nat { chain post { type nat hook postrouting priority srcnat; policy accept; oifname "cni0" masquerade } }`;
  const UNREACHABLE = { reply: true, protocol: 'icmp', icmpType: 'destination-unreachable', icmpCode: 'port-unreachable' } as const;

  it('relates the server\'s error to the connection, in the reply direction, and un-masquerades it', () => {
    const [, error] = only(RELATED, [UDP, UNREACHABLE]);
    expect(error).toMatchObject({ disposition: 'forwarded', iif: 'cni0', oif: 'eth0', mark: '0x0000000b', ctMark: '0x00000042', packet: { protocol: 'icmp', src: '10.244.1.5', dst: '192.0.2.99' } });
    expect(error!.nat.map((n) => [n.type, n.to, n.conntrack])).toEqual([['masquerade', '192.0.2.99', 'reply']]);
  });

  // The error quotes the IP and UDP headers of the packet: 20 + 8 + 20 + 8 bytes; of a longer
  // packet as much as fits in 576 bytes (icmp_send).
  it.each([
    [UDP, 56],
    [{ ...UDP, length: 1000 }, 576],
  ])('is as long as its headers and the packet it quotes', (packet, length) => {
    const text = `table ip t { chain pre { type filter hook prerouting priority 0; meta length ${length} meta mark set 0x1 } }`;
    const [, error] = only(text, [packet, UNREACHABLE]);
    expect(error!.mark).toBe('0x00000001');
  });

  it('relates the client\'s error about the server\'s reply in the original direction, masqueraded as the connection', () => {
    const [, , error] = only(RELATED, [UDP, { reply: true }, { ...UNREACHABLE, icmpCode: 'host-unreachable' }]);
    expect(error).toMatchObject({ iif: 'eth0', oif: 'cni0', mark: '0x00000009', packet: { src: '10.244.0.1', dst: '10.244.1.5' } });
    expect(error!.nat.map((n) => [n.type, n.conntrack])).toEqual([['masquerade', 'original']]);
  });

  it('relates an error about an ICMP echo request', () => {
    const ping = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'icmp' } as const;
    const [, error] = only(RELATED, [ping, { ...UNREACHABLE, icmpType: 'time-exceeded', icmpCode: 0 }]);
    expect(error!.mark).toBe('0x0000000b');
  });

  // Written out, the error gives the packet it quotes (as it left the node: masqueraded).
  it('relates an error written out with the packet it quotes', () => {
    const error = { iif: 'cni0', src: '10.244.1.5', dst: '10.244.0.1', protocol: 'icmp', icmpType: 'destination-unreachable', quoted: { src: '10.244.0.1', dst: '10.244.1.5', protocol: 'udp', sport: 5555, dport: 9999 } } as const;
    const [, related] = only(RELATED, [UDP, error]);
    expect(related).toMatchObject({ mark: '0x0000000b', packet: { dst: '192.0.2.99' } });
  });

  // nft_ct.c NFT_CT_PROTOCOL reads the entry's tuple (nf_ct_protonum), not the packet: a related
  // error's is its connection's protocol (seed 1303362852, case 302).
  it.each([
    ['udp', '0x00000001'],
    ['icmp', '0x00000000'],
  ])('reads ct protocol %s of a related error from its connection', (protocol, mark) => {
    const text = `table ip t { chain pre { type filter hook prerouting priority 0; ct state related ct protocol ${protocol} meta mark set 0x1 } }`;
    const [, error] = only(text, [UDP, UNREACHABLE]);
    expect(error!.mark).toBe(mark);
  });

  // A reply that gives the packet it quotes keeps it: here one of no connection, so the error
  // relates to nothing and stays invalid.
  it.each([
    ['derived from the previous packet', {}, '0x0000000b'],
    ['given', { quoted: { src: '10.244.0.1', dst: '10.244.1.5', protocol: 'udp', sport: 5555, dport: 9998 } }, '0x00000004'],
  ] as const)('relates a reply\'s error by the packet it quotes, %s', (_name, quote, mark) => {
    const [, error] = only(RELATED, [UDP, { ...UNREACHABLE, ...quote }]);
    expect(error!.mark).toBe(mark);
  });

  it.each([
    ['on a packet that is no ICMP error', { ...UDP, quoted: { src: '10.244.1.5', dst: '192.0.2.99' } }, 'packets[0].quoted: only for an ICMP error'],
    ['without its source', { ...UDP, protocol: 'icmp', icmpType: 'time-exceeded', sport: undefined, dport: undefined, quoted: { dst: '192.0.2.99' } }, 'packets[0].quoted.src: required'],
    ['with a field a quote has not', { ...UDP, protocol: 'icmp', icmpType: 'time-exceeded', sport: undefined, dport: undefined, quoted: { src: '10.244.1.5', dst: '192.0.2.99', mark: 1 } }, 'packets[0].quoted.mark: unknown field'],
  ])('refuses a quoted packet %s', (_name, packet, message) => {
    const result = simulateFlow(parse(RELATED), { host: HOST, packets: [packet as never] });
    expect(result.errors?.map((e) => e.message).join('\n')).toContain(message);
  });

  it.each([
    // "outer daddr != inner": the error goes elsewhere than the quoted packet came from.
    ['to another address than the quoted packet came from', [UDP, { ...UNREACHABLE, dst: '10.244.0.7' }]],
    // No connection: nf_conntrack_inet_error attaches nothing.
    ['about no connection', [{ iif: 'cni0', src: '10.244.1.5', dst: '192.0.2.99', protocol: 'icmp', icmpType: 'destination-unreachable' }]],
  ] as const)('leaves an error %s invalid', (_name, packets) => {
    const outcomes = only(RELATED, packets as unknown as FlowInput['packets']);
    expect(outcomes.at(-1)!.mark).toBe('0x00000004');
  });
});

describe('random choices across a flow', () => {
  const LB = `table ip nat {
    chain pre { type nat hook prerouting priority dstnat; policy accept;
      tcp dport 80 numgen random mod 2 vmap { 0 : jump a, 1 : jump b }
    }
    chain a { dnat to 10.244.1.5 }
    chain b { dnat to 10.244.1.6 }
  }`;

  it('enumerates them jointly: the second packet follows the first one\'s endpoint, with the joint probability', () => {
    // A retransmitted SYN: before any reply an ACK would be invalid (conntrack's SYN_SENT).
    const outcomes = flow(LB, [SYN, SYN]);
    expect(outcomes.map((o) => [o.probability, o.packets.map((p) => `${p.probability} ${p.packet.dst}`)])).toEqual([
      [0.5, ['0.5 10.244.1.5', '0.5 10.244.1.5']],
      [0.5, ['0.5 10.244.1.6', '0.5 10.244.1.6']],
    ]);
  });

  it('picks one combination with a seed', () => {
    const outcomes = flow(LB, [SYN, SYN], { seed: 7 });
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]!.packets[1]!.packet.dst).toBe(outcomes[0]!.packets[0]!.packet.dst);
  });
});

describe('dynamic sets across a flow', () => {
  it('shows an element `add @set` put there to the later packets', () => {
    const text = `table ip t {
      set seen { type ipv4_addr; flags dynamic; }
      chain p { type filter hook prerouting priority 0; policy accept;
        ip saddr @seen meta mark set 7
        add @seen { ip saddr }
      }
    }`;
    expect(only(text, [UDP, UDP]).map((o) => o.mark)).toEqual(['0x00000000', '0x00000007']);
  });

  // Linux 6.18 (kernel rows 'a deleted element holds its slot …'): a dynset delete only marks the
  // element dead; it counts against `size` until the set's garbage collection, about a second
  // later, so whether a later packet's add fits depends on time nftsim has no clock for.
  it('reports an add that only a slot an earlier packet deleted keeps out as not modelled', () => {
    const text = `table ip t {
      set d { type ipv4_addr; size 1; flags dynamic; elements = { 192.0.2.99 } }
      chain p { type filter hook prerouting priority 0; policy accept;
        delete @d { ip saddr }
        ip saddr 198.51.100.7 add @d { ip saddr } meta mark set 7
      }
    }`;
    const [first, second] = only(text, [UDP, { ...UDP, src: '198.51.100.7' }]);
    expect(first!.trace.filter((e) => e.kind === 'unsupported')).toEqual([]);
    expect(second!.uncertain).toBe(true);
    expect(second!.trace.find((e) => e.kind === 'unsupported')?.reason).toMatch(/garbage collection/);
  });
});

describe('flow input errors', () => {
  it.each([
    ['a reply first', [{ reply: true }], /packets\[0\]\.reply: a reply needs a previous packet/],
    ['a reply to a packet routing dropped', [{ ...UDP, dst: '198.51.100.1', iif: 'eth0' }, { reply: true }], /did not leave the node|no route/],
    ['reply: false', [UDP, { reply: false }], /packets\[1\]\.reply: expected true/],
    ['a bad override', [UDP, { reply: true, sport: 70000 }], /packets\[1\]\.sport: expected an integer/],
  ])('names the field for %s', (_name, packets, message) => {
    const host = { ...HOST, routes: [] };
    const result = simulateFlow(parse('table ip t { chain p { type filter hook prerouting priority 0; ct state new } }'), { host, packets: packets as FlowInput['packets'] });
    expect(result.outcomes).toEqual([]);
    expect(result.errors?.map((e) => e.message).join('\n')).toMatch(message);
  });
});
