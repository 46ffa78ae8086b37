// fast-check arbitraries for the kernel-differential tests (issue 4, (c)): small rulesets over the
// features the simulator models, and packets that meet them, on a dual-stack two-interface router
// (generated-host.ts).
//
// Features: ip, ip6 and inet tables (inet rules about either family), each its own file loaded in
// order, and an iptables-save or ip6tables-save dump loaded with ip(6)tables-nft-restore before
// or after them (arbitrary-iptables-dump.ts); filter base chains at every hook with priorities from a small set
// (equal priorities across tables happen often, and raw-priority chains run before conntrack
// attaches), in inet tables at the ingress of either interface too; route chains at output,
// which re-route by the mark the generated host's routing rule reads; nat base chains at prerouting, input, output and postrouting, at srcnat/dstnat and
// a neighbouring priority; regular chains reached by jump and goto (only towards later chains: no
// loops, which nft refuses); return; accept, drop, reject (plain, tcp reset, icmp, icmpx) and
// the policies; the matches, statements, NAT statements and verdict maps of arbitrary-nft-rule.ts
// (marks and ct marks with every update form, ct state / status / zone / direction, the
// addresses of the original and reply tuples, notrack, addresses, prefixes, ranges, TTL / hop
// limit and DSCP tests and sets, anonymous and named interval sets, concatenations, named and
// anonymous verdict maps, maps, dynamic sets, fib, meta keys, numgen and meta random, tcp flags,
// icmp types and identifiers, port and identifier rewrites, dnat / snat with address and port
// ranges and maps, redirect, masquerade with its flags). Packets:
// IPv4 and IPv6, TCP with several flag sets, UDP and ICMP echo (of a few identifiers), from either side or locally
// generated; two in three TCP SYNs, UDP and ICMP echo packets open a flow: the reply, then the
// client's next packet, which meets the conntrack entry the first packet made, or the client's
// next connection (another source port or echo identifier), which must not; or, with no reply, a connection from the
// same source port of another client or to another destination, whose NAT mapping may clash with
// the first one's (nf_nat_core.c get_unique_tuple); or an ICMP error about the packet, related to
// its connection; or, for TCP, an ending (a reset from either end, before or after the
// handshake, a close by FINs, a half close) and a SYN from the same port, which conntrack
// reopens the connection for, or ignores.
// Locally generated packets to a local address, and output DNAT / redirect to one, come back in
// through lo (prerouting, input). A netdev egress chain on either interface or lo sees packets as
// they leave.
import fc from 'fast-check';
import { arbitraryIptablesDump, renderIptablesDump, type GenIptablesDump } from './arbitrary-iptables-dump.js';
import { NAT_KINDS_AT, arbitraryNftRule, renderNamedSets, renderNftRule, type GenRule, type Hook, type TableFamily } from './arbitrary-nft-rule.js';
import { ADDRESSES, type AddressFamily } from './generated-host.js';
import { DEFAULT_SEQ, type KernelPacket } from './harness/craft-packet.js';
import { REPLY_SEQ, type KernelFlowPacket, type KernelRuleset } from './harness/kernel-harness.js';

export { GENERATED_HOST } from './generated-host.js';

interface GenBase {
  readonly type: 'filter' | 'nat' | 'route';
  readonly hook: Hook;
  /** The device of an ingress chain. */
  readonly device?: 'eth0' | 'eth1';
  readonly priority: number;
  readonly policy: 'accept' | 'drop';
}

interface GenTable {
  readonly family: TableFamily;
  readonly bases: readonly (GenBase & { readonly rules: readonly GenRule[] })[];
  readonly regular: readonly (readonly GenRule[])[];
  readonly set4: readonly string[];
  readonly set6: readonly string[];
}

/** How a generated TCP connection ends before a SYN from the same port: the client resets it,
 * the server does, the client closes it and both ends finish (TIME_WAIT), the client only starts
 * closing (FIN_WAIT), or either end resets it before any reply (the server as a closed port
 * answers a SYN). Conntrack reopens the connection for the SYN where a FIN closed it or the
 * client reset it, deletes it at a reset before a reply, and ignores the SYN otherwise
 * (nf_conntrack_proto_tcp.c nf_conntrack_tcp_packet). Or a stray packet follows: after the
 * handshake a FIN without ACK (a flag set tcp_error refuses), a SYN-ACK from the client or a SYN
 * from the server (invalid in ESTABLISHED); or the server's bare ACK to the SYN (ignored). */
export const TCP_ENDINGS = ['reset', 'reply reset', 'fin', 'half close', 'reset before reply', 'refused', 'bare fin', 'client syn-ack', 'server syn', 'server ack', 'syn answered', 'half close, syn answered'] as const;
export type TcpEnding = (typeof TCP_ENDINGS)[number];

export interface GeneratedCase {
  readonly tables: readonly GenTable[];
  readonly iptables?: GenIptablesDump;
  readonly packet: KernelPacket;
  /** Whether a TCP SYN, UDP or ICMP echo packet opens a flow: its reply, then the client's next
   * packet of the connection, or the first of its next connection (TCP and UDP); or a second
   * connection from the same source port, of another client or to another destination; or an
   * ICMP error about it from where it went. A TCP connection may also end (TCP_ENDINGS), and a
   * SYN from the same port follow; for UDP and ICMP those are the next packet. */
  readonly flow?: 'next packet' | 'next connection' | 'other client' | 'other destination' | 'error' | TcpEnding;
  /** A netdev table with an egress chain. */
  readonly egress?: GenEgress;
}

/** A netdev egress chain on a device (net/core/dev.c nf_hook_egress), with rules of
 * EGRESS_RULES and a regular chain it may jump to. */
interface GenEgress {
  readonly device: 'eth0' | 'eth1' | 'lo';
  readonly priority: number;
  readonly rules: readonly string[];
}

/** What a packet is when it leaves: its translated addresses and ports, the TTL after
 * forwarding, its mark and length, no input device; rewrites the far side sees; drops of TCP only
 * (the harness's sentinel is UDP). */
const EGRESS_RULES: readonly string[] = [
  'meta mark set mark or 0x100',
  'meta mark 0x10 meta mark set 0x11',
  'meta mark & 0x4000 == 0x4000 meta mark set mark xor 0x200',
  `ip saddr { ${ADDRESSES.ip.snat[1]}, 198.51.100.10 } meta mark set mark or 0x400`,
  `ip daddr ${ADDRESSES.ip.natMember[0]} meta mark set mark or 0x800`,
  `ip6 saddr { ${ADDRESSES.ip6.snat[1]}, 2001:db8:2::10 } meta mark set mark or 0x400`,
  'ip ttl 63 meta mark set mark or 0x1000',
  'ip6 hoplimit 63 meta mark set mark or 0x1000',
  'iifname "eth0" meta mark set mark or 0x2000',
  'meta iif 0 meta mark set mark or 0x4',
  'oifname "eth1" meta mark set mark or 0x8',
  'meta length > 60 meta mark set mark or 0x20',
  'ether type ip6 meta mark set mark or 0x40',
  'meta pkttype host meta mark set mark or 0x80',
  'tcp dport 80 drop',
  'tcp flags syn tcp dport 443 drop',
  'meta l4proto tcp meta mark 0x1 drop',
  'tcp dport 8080 tcp dport set 8081',
  'jump sub',
];

const arbitraryEgress: fc.Arbitrary<GenEgress> = fc.record({
  device: fc.constantFrom('eth0' as const, 'eth1' as const, 'eth1' as const, 'lo' as const),
  priority: fc.constantFrom(-10, 0, 10),
  rules: fc.array(fc.constantFrom(...EGRESS_RULES), { minLength: 1, maxLength: 4 }),
});

function renderEgress(egress: GenEgress): string {
  const rules = egress.rules.map((rule) => `    ${rule}\n`).join('');
  return `table netdev e {\n  chain sub {\n    meta mark set mark or 0x10000\n    return\n  }\n  chain out {\n    type filter hook egress device "${egress.device}" priority ${egress.priority}; policy accept;\n${rules}  }\n}\n`;
}

/** A received packet's destination: a unicast one, or for a fifth a broadcast or multicast one. */
function receivedDestination(a: (typeof ADDRESSES)[AddressFamily]): fc.Arbitrary<string> {
  const unicast = fc.constantFrom(a.server[1], a.server[2], a.client[1], a.server[0], a.unroutable);
  return fc.oneof({ arbitrary: unicast, weight: 4 }, { arbitrary: fc.constantFrom(...a.broadcast), weight: 1 });
}

const MARKS = ['0x0', '0x1', '0x10', '0x20', '0x4000', '0x4010', '0x1bd20'];
const FILTER_PRIORITIES = [-300, -150, -150, 0, 0, 10];
const NAT_PRIORITIES: Readonly<Record<'dst' | 'src', readonly number[]>> = { dst: [-100, -100, -101, -99], src: [100, 100, 99, 101] };
const NAT_HOOKS: readonly Hook[] = ['prerouting', 'input', 'output', 'postrouting'];

const arbitraryBase: fc.Arbitrary<GenBase> = fc.oneof(
  fc.record({
    type: fc.constant('filter' as const),
    hook: fc.constantFrom<Hook>('prerouting', 'input', 'forward', 'output', 'postrouting'),
    priority: fc.constantFrom(...FILTER_PRIORITIES),
    policy: fc.constantFrom<GenBase['policy']>('accept', 'accept', 'accept', 'drop'),
  }),
  // A route chain re-routes a local packet whose mark or addresses it changed (the generated
  // host routes by the mark's bit 0x10).
  fc.record({
    type: fc.constant('route' as const),
    hook: fc.constant<Hook>('output'),
    priority: fc.constantFrom(...FILTER_PRIORITIES),
    policy: fc.constantFrom<GenBase['policy']>('accept', 'accept', 'accept', 'drop'),
  }),
  fc.constantFrom(...NAT_HOOKS).chain((hook) =>
    fc.record({
      type: fc.constant('nat' as const),
      hook: fc.constant(hook),
      priority: fc.constantFrom(...NAT_PRIORITIES[hook === 'prerouting' || hook === 'output' ? 'dst' : 'src']),
      policy: fc.constant('accept' as const),
    }),
  ),
);

/** An inet table's ingress chain on one of the interfaces (netdev's ingress hook, in inet tables
 * since Linux 5.10). */
const arbitraryIngressBase: fc.Arbitrary<GenBase> = fc.record({
  type: fc.constant('filter' as const),
  hook: fc.constant('ingress' as const),
  device: fc.constantFrom('eth0' as const, 'eth1' as const),
  priority: fc.constantFrom(...FILTER_PRIORITIES),
  // The harness's sentinel comes in on the same device (arbitrary-nft-rule.ts renderNftRule).
  policy: fc.constant('accept' as const),
});

const arbitraryTable: fc.Arbitrary<GenTable> = fc.constantFrom<TableFamily>('ip', 'ip', 'ip6', 'inet', 'inet').chain((family) =>
  fc.record({
    family: fc.constant(family),
    bases: fc.array(
      fc.tuple(family === 'inet' ? fc.oneof({ arbitrary: arbitraryBase, weight: 5 }, { arbitrary: arbitraryIngressBase, weight: 1 }) : arbitraryBase, fc.array(arbitraryNftRule(family), { maxLength: 4 })).map(([base, rules]) => ({ ...base, rules })),
      { minLength: 1, maxLength: 3 },
    ),
    regular: fc.array(fc.array(arbitraryNftRule(family), { maxLength: 3 }), { maxLength: 3 }),
    set4: fc.subarray([...ADDRESSES.ip.setElements], { minLength: 1 }),
    set6: fc.subarray([...ADDRESSES.ip6.setElements], { minLength: 1 }),
  }),
);

/** First packets of a flow as a client, a server or the node itself sends them. */
function arbitraryPacket(af: AddressFamily): fc.Arbitrary<KernelPacket> {
  const a = ADDRESSES[af];
  const icmp = af === 'ip' ? 'icmp' : 'icmpv6';
  // A transport and its ports; mostly SYNs, also the other first packets conntrack sees.
  const transport = fc.oneof(
    // Some with an MSS option, as a real client's SYN has.
    {
      weight: 6,
      arbitrary: fc.record(
        { protocol: fc.constant('tcp' as const), tcpFlags: fc.constantFrom('syn', 'syn', 'syn', 'ack', 'syn,ack', 'fin,ack', 'rst'), tcpMss: fc.constantFrom(1460, 500) },
        { requiredKeys: ['protocol', 'tcpFlags'] },
      ),
    },
    { weight: 3, arbitrary: fc.record({ protocol: fc.constant('udp' as const) }) },
    { weight: 1, arbitrary: fc.record({ protocol: fc.constant(icmp), icmpId: fc.constantFrom(40000, 0, 7) }, { requiredKeys: ['protocol'] }) },
  );
  const ports = (sports: readonly number[], dports: readonly number[]) => fc.record({ sport: fc.constantFrom(...sports), dport: fc.constantFrom(...dports) });
  const withPorts = (t: fc.Arbitrary<{ protocol: KernelPacket['protocol'] }>, sports: readonly number[], dports: readonly number[]) =>
    fc.tuple(t, ports(sports, dports)).map(([tr, p]) => (tr.protocol === 'icmp' || tr.protocol === 'icmpv6' ? tr : { ...tr, ...p }));
  return fc.oneof(
    fc.tuple(
      fc.record({ iif: fc.constant('eth0'), src: fc.constantFrom(a.client[0], a.client[2]), dst: receivedDestination(a), mark: fc.constantFrom(...MARKS) }),
      withPorts(transport, [40000, 1234], [80, 443, 53, 8080]),
    ).map(([base, tr]) => ({ ...base, ...tr })),
    fc.tuple(
      fc.record({ iif: fc.constant('eth1'), src: fc.constant(a.server[1]), dst: fc.constantFrom(a.client[0], a.server[0]) }),
      withPorts(fc.constant({ protocol: 'tcp' as const }), [443], [80, 40000]),
    ).map(([base, tr]) => ({ ...base, ...tr })),
    // The harness's socket belongs to root: skuid and skgid 0 are what the kernel sees.
    fc.tuple(
      fc.record({ src: fc.constant(a.server[0]), dst: fc.constantFrom(a.server[1], a.client[0], a.server[2], a.client[1], a.server[0]), mark: fc.constantFrom(...MARKS), skuid: fc.constant(0), skgid: fc.constant(0) }),
      withPorts(transport.map(({ protocol }) => ({ protocol })), [40001], [80, 53, 8080]),
    ).map(([base, tr]) => ({ ...base, ...tr })),
  );
}

export const arbitraryCase: fc.Arbitrary<GeneratedCase> = fc.record(
  {
    tables: fc.array(arbitraryTable, { minLength: 1, maxLength: 3 }),
    iptables: arbitraryIptablesDump,
    packet: fc.constantFrom<AddressFamily>('ip', 'ip6').chain(arbitraryPacket),
    flow: fc.constantFrom(undefined, undefined, undefined, 'next packet', 'next packet', 'next connection', 'other client', 'other destination', 'error', ...TCP_ENDINGS),
    egress: fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: arbitraryEgress, weight: 1 }),
  },
  { requiredKeys: ['tables', 'packet'] },
);

function renderTable(table: GenTable, index: number): string {
  const lines = [`table ${table.family} t${index} {`, ...renderNamedSets(table.family, table.set4, table.set6)];
  const regularCount = table.regular.length;
  table.regular.forEach((rules, i) => {
    lines.push(`  chain c${i} {`);
    // Regular chains hold no NAT: nft checks a NAT statement against every chain that can reach it.
    for (const rule of rules) lines.push(`    ${renderNftRule(rule, { family: table.family, from: i, regularCount, natKinds: [] })}`);
    lines.push('  }');
  });
  table.bases.forEach((base, i) => {
    const device = base.device ? ` device "${base.device}"` : '';
    lines.push(`  chain b${i} {`, `    type ${base.type} hook ${base.hook}${device} priority ${base.priority}; policy ${base.policy};`);
    const natKinds = base.type === 'nat' ? NAT_KINDS_AT[base.hook] : [];
    for (const rule of base.rules) lines.push(`    ${renderNftRule(rule, { family: table.family, hook: base.hook, priority: base.priority, from: -1, regularCount, natKinds })}`);
    lines.push('  }');
  });
  lines.push('}', '');
  return lines.join('\n');
}

/** The case's rulesets, one file per table and the iptables dump, loaded in order; its packet,
 * and the packets of its flow when it opens one. */
export function renderCase(testCase: GeneratedCase): { rulesets: (KernelRuleset & { file: string })[]; packet: KernelPacket; flow?: readonly KernelFlowPacket[] } {
  const tables: (KernelRuleset & { file: string })[] = testCase.tables.map((table, i) => ({ kind: 'nft', text: renderTable(table, i), file: `t${i}.nft` }));
  if (testCase.egress) tables.push({ kind: 'nft', text: renderEgress(testCase.egress), file: 'egress.nft' });
  const dump = testCase.iptables && Object.keys(testCase.iptables.tables).length > 0 ? testCase.iptables : undefined;
  const saved = dump && { kind: dump.family === 'ip' ? ('iptables' as const) : ('ip6tables' as const), text: renderIptablesDump(dump), file: 'ipt.save' };
  const rulesets = saved ? (dump.first ? [saved, ...tables] : [...tables, saved]) : tables;
  const flow = testCase.flow && flowOf(testCase.packet, testCase.flow);
  return { rulesets, packet: testCase.packet, ...(flow && { flow }) };
}

/** The flow a first packet opens: the packet, the reply from the peer that captured it, and the
 * client's next packet: for TCP the handshake's ACK, in the windows of the harness's replies; for
 * UDP and ICMP echo the same packet again; or the first packet of the client's next connection,
 * from the next source port (an ICMP echo: with the next identifier). Other
 * TCP first packets open none (TCP tracking refuses what follows an ACK, SYN-ACK, FIN or RST).
 * A second connection from the same source port follows the packet without a reply: from the
 * other client on eth0, else (and for `other destination`) to another server, or from a server
 * to the other side's address. An ICMP error comes from where the packet went: port unreachable
 * about TCP, time exceeded about the rest. */
export function flowOf(packet: KernelPacket, then: NonNullable<GeneratedCase['flow']>): readonly KernelFlowPacket[] | undefined {
  if (packet.protocol === 'tcp' && (packet.tcpFlags ?? 'syn') !== 'syn') return undefined;
  if (then === 'error') {
    const protocol = packet.src.includes(':') ? 'icmpv6' : 'icmp';
    const error = packet.protocol === 'tcp' ? { icmpType: 'destination-unreachable', icmpCode: 'port-unreachable' } as const : { icmpType: 'time-exceeded' } as const;
    return [packet, { reply: true, protocol, ...error }];
  }
  if (then === 'other client' || then === 'other destination') {
    const a = ADDRESSES[packet.src.includes(':') ? 'ip6' : 'ip'];
    if (then === 'other client' && packet.iif === 'eth0') return [packet, { ...packet, src: packet.src === a.client[0] ? a.client[2] : a.client[0] }];
    const dst = packet.iif === 'eth1' ? (packet.dst === a.client[0] ? a.server[0] : a.client[0]) : packet.dst === a.server[1] ? a.server[2] : a.server[1];
    return [packet, { ...packet, dst }];
  }
  if (then === 'next connection' && packet.sport !== undefined) return [packet, { reply: true }, { ...packet, sport: packet.sport + 1 }];
  if (then === 'next connection' && packet.protocol !== 'tcp' && packet.protocol !== 'udp') return [packet, { reply: true }, { ...packet, icmpId: (packet.icmpId ?? 40000) + 1 }];
  if (packet.protocol !== 'tcp') return [packet, { reply: true }, packet];
  const handshake: KernelFlowPacket[] = [packet, { reply: true }, { ...packet, tcpFlags: 'ack', tcpSeq: DEFAULT_SEQ + 1, tcpAck: REPLY_SEQ + 1 }];
  return then === 'next packet' || then === 'next connection' ? handshake : tcpEnding(packet, handshake, then);
}

/** The packets of a TCP ending after `handshake` (or after the SYN alone), each in the windows
 * of the packets before it; a new SYN starts far past the old connection's sequence numbers. */
function tcpEnding(packet: KernelPacket, handshake: readonly KernelFlowPacket[], then: TcpEnding): readonly KernelFlowPacket[] {
  const client = (tcpFlags: string, seq: number, ack?: number): KernelFlowPacket => ({ ...packet, tcpFlags, tcpSeq: DEFAULT_SEQ + seq, ...(ack !== undefined && { tcpAck: REPLY_SEQ + ack }) });
  const reopen = client('syn', 0x10000);
  switch (then) {
    case 'reset':
      return [...handshake, client('rst', 1), reopen];
    case 'reply reset':
      return [...handshake, { reply: true, tcpFlags: 'rst', tcpSeq: REPLY_SEQ + 1 }, reopen];
    case 'fin':
      return [...handshake, client('fin,ack', 1, 1), { reply: true, tcpFlags: 'fin,ack', tcpSeq: REPLY_SEQ + 1, tcpAck: DEFAULT_SEQ + 2 }, client('ack', 2, 2), reopen];
    case 'half close':
      return [...handshake, client('fin,ack', 1, 1), reopen];
    case 'reset before reply':
      return [packet, client('rst', 1), reopen];
    case 'refused':
      return [packet, { reply: true, tcpFlags: 'rst,ack', tcpSeq: 0, tcpAck: DEFAULT_SEQ + 1 }, reopen];
    case 'bare fin':
      return [...handshake, client('fin', 1)];
    case 'client syn-ack':
      return [...handshake, client('syn,ack', 1, 1)];
    case 'server syn':
      return [...handshake, { reply: true, tcpFlags: 'syn', tcpSeq: REPLY_SEQ + 1 }];
    case 'server ack':
      return [packet, { reply: true, tcpFlags: 'ack', tcpSeq: REPLY_SEQ, tcpAck: DEFAULT_SEQ + 1 }];
    // A new SYN conntrack ignores (the connection is not closed), which the server answers: its
    // SYN-ACK brings conntrack back in sync (the reply acknowledges the SYN's sequence number).
    case 'syn answered':
      return [...handshake, reopen, { reply: true }];
    case 'half close, syn answered':
      return [...handshake, client('fin,ack', 1, 1), reopen, { reply: true }];
  }
}
