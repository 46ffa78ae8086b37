import { describe, expect, it } from 'vitest';
import { ConntrackTable, IPS, invertTuple, tupleOf, type CtEntry, type CtTuple } from '../../src/sim/conntrack-table.js';
import { openTcp, TCP_STATE } from '../../src/sim/tcp-tracking.js';
import { parseAddress } from '../../src/sim/address.js';

const a = (text: string) => parseAddress(text)!;
const tcp = (src: string, sport: number | string, dst: string, dport: number | string): CtTuple => ({ family: 'ip', l4proto: 6, src: a(src).n, dst: a(dst).n, sport, dport, zone: 0 });

function entry(original: CtTuple, reply: CtTuple = invertTuple(original)): CtEntry {
  return { original, reply, mark: 0, labels: undefined, status: IPS.confirmed, natDone: 0, nat: [], tcp: openTcp(0x02), packets: [1, 0], bytes: [40, 0] };
}

describe('conntrack tuples', () => {
  // nf_ct_invert_tuple: addresses and ports swapped; ICMP queries answered by their reply type,
  // identifier and code kept (nf_conntrack_proto_icmp.c icmp_invert_tuple and invmap,
  // nf_conntrack_proto_icmpv6.c). An ICMP tuple's dport is `type << 8 | code`.
  it.each([
    ['tcp', { l4proto: 6, sport: 40000, dport: 80 }, { sport: 80, dport: 40000 }],
    ['icmp echo-request → echo-reply', { l4proto: 1, sport: 7, dport: 8 << 8 }, { sport: 7, dport: 0 }],
    ['icmp echo-reply → echo-request', { l4proto: 1, sport: 7, dport: 0 }, { sport: 7, dport: 8 << 8 }],
    ['icmp timestamp → timestamp-reply, code kept', { l4proto: 1, sport: 7, dport: (13 << 8) | 1 }, { sport: 7, dport: (14 << 8) | 1 }],
    ['icmpv6 echo-request → echo-reply', { l4proto: 58, sport: 7, dport: 128 << 8 }, { sport: 7, dport: 129 << 8 }],
  ])('inverts %s', (_name, t, inverted) => {
    const tuple = { family: 'ip' as const, src: 1n, dst: 2n, zone: 0, ...t };
    expect(invertTuple(tuple)).toEqual({ ...tuple, src: 2n, dst: 1n, ...inverted });
  });

  // icmp_pkt_to_tuple: the identifier in src.u.icmp.id, type and code in dst.u.icmp.
  it.each([
    ['an ICMP echo-request', 8, { sport: 1234, dport: 0x800 }],
    ['an ICMP timestamp request', 13, { sport: 1234, dport: 0xd00 }],
    ['an ICMP error (destination unreachable), which nftsim does not track', 3, undefined],
  ])('takes the tuple of %s', (_name, icmpType, ports) => {
    const tuple = tupleOf('ip', { src: a('192.0.2.1'), dst: a('192.0.2.2'), l4proto: 1, icmpType, icmpCode: 0, icmpId: 1234 }, 0);
    expect(tuple && { sport: tuple.sport, dport: tuple.dport }).toEqual(ports);
  });
});

describe('ConntrackTable', () => {
  const original = tcp('192.0.2.99', 40000, '192.0.2.10', 80);
  const reply = tcp('10.244.1.5', 8080, '10.244.0.1', '1024-65535');

  it.each([
    ['the original tuple', original, 0],
    ['the reply tuple', tcp('10.244.1.5', 8080, '10.244.0.1', '1024-65535'), 1],
    ['a reply to any port of a NAT port range (the kernel picked one)', tcp('10.244.1.5', 8080, '10.244.0.1', 31000), 1],
  ])('finds an entry by %s, with its direction', (_name, tuple, direction) => {
    const table = new ConntrackTable();
    table.insert(entry(original, reply));
    expect(table.lookup(tuple)?.direction).toBe(direction);
  });

  it.each([
    ['another port', tcp('192.0.2.99', 40001, '192.0.2.10', 80)],
    ['another zone', { ...original, zone: 1 }],
    ['a port outside the range', tcp('10.244.1.5', 8080, '10.244.0.1', 80)],
  ])('finds nothing for %s', (_name, tuple) => {
    const table = new ConntrackTable();
    table.insert(entry(original, reply));
    expect(table.lookup(tuple)).toBeUndefined();
  });

  it('refuses an entry whose tuple is taken (__nf_conntrack_confirm clash)', () => {
    const table = new ConntrackTable();
    expect(table.insert(entry(original))).toBe(true);
    expect(table.insert(entry(original))).toBe(false);
    expect(table.entries).toHaveLength(1);
  });

  it('clones: entries of the copy change without touching the original table', () => {
    const table = new ConntrackTable();
    table.insert(entry(original));
    const copy = table.clone();
    copy.lookup(original)!.entry.mark = 7;
    expect(table.lookup(original)!.entry.mark).toBe(0);
    expect(copy.lookup(invertTuple(original))!.entry.mark).toBe(7);
  });

  it('clones a TCP connection\'s tracking too (each random branch moves its own)', () => {
    const table = new ConntrackTable();
    table.insert(entry(original));
    const copy = table.clone();
    copy.lookup(original)!.entry.tcp!.state = TCP_STATE.close;
    expect(table.lookup(original)!.entry.tcp!.state).toBe(TCP_STATE.synSent);
  });

  it('removes an entry by both tuples, freeing them (nf_ct_kill)', () => {
    const table = new ConntrackTable();
    const first = entry(original, reply);
    table.insert(first);
    table.insert(entry(tcp('192.0.2.99', 40001, '192.0.2.10', 80)));
    table.remove(first);
    expect([table.lookup(original), table.lookup(reply), table.isTaken(original)]).toEqual([undefined, undefined, false]);
    expect(table.entries).toHaveLength(1);
    expect(table.insert(entry(original, reply))).toBe(true);
  });
});
