// fast-check arbitraries for one rule of a generated nft table (kernel-differential tests, issue 4)
// and its rendering: matches, at most one transport-protocol match, statements, a NAT statement
// and a verdict, for the address family the rule is about.
//
// A part may only be valid (or only mean something) at some hooks (`hooks`): it is rendered only
// in a base chain at one of them, never in a regular chain, whose hooks are those of its callers
// (nft checks every chain that can reach such an expression).
import fc from 'fast-check';
import { ADDRESSES, withPort, type AddressFamily } from './generated-host.js';

export type Hook = 'ingress' | 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';
export type TableFamily = 'ip' | 'ip6' | 'inet';
export type NatKind = 'dnat' | 'snat' | 'masquerade' | 'redirect';

export interface Part {
  readonly text: string;
  readonly hooks?: readonly Hook[];
  /** Only in an inet table (nft: "meta nfproto is only useful in the inet family"). */
  readonly inetOnly?: boolean;
  /** Only in an ip or ip6 table, whose family it takes: nft wants the family named in inet. */
  readonly notInet?: boolean;
  /** Only in a base chain before conntrack (priority below -200): see `ct zone set` in
   * docs/simulator-limits.md. */
  readonly beforeConntrack?: boolean;
  /** A statement on this protocol's header: only in a rule whose transport match is of it (nft
   * refuses conflicting protocols). */
  readonly onProto?: 'tcp' | 'icmp';
}

/** A transport-protocol match; at most one per rule, as nft refuses a rule matching two. */
interface L4Match extends Part {
  readonly proto: 'tcp' | 'udp' | 'icmp' | 'any';
}

export interface GenNat {
  readonly kind: NatKind;
  readonly text: string;
  /** Names a port: needs a tcp or udp match before it. */
  readonly port?: boolean;
  /** Unroutable from the output path: not generated in output chains (see renderNftRule). */
  readonly unroutable?: boolean;
  /** Says its address family itself (`dnat ip addr . port to …`). */
  readonly familied?: boolean;
}

/** `JUMP` in a verdict map stands for a jump to a later regular chain (accept when there is none). */
export type GenVerdict =
  | { readonly kind: 'accept' | 'drop' | 'return' }
  | { readonly kind: 'jump' | 'goto'; readonly target: number }
  | { readonly kind: 'vmap'; readonly text: string }
  | { readonly kind: 'reject'; readonly with: 'plain' | 'tcp reset' | 'icmp' };

export interface GenRule {
  /** The address family its address matches and NAT are about. */
  readonly af: AddressFamily;
  readonly matches: readonly Part[];
  readonly l4?: L4Match;
  readonly stmts: readonly Part[];
  readonly nat?: GenNat;
  readonly verdict?: GenVerdict;
  /** Picks the target of jump / goto / JUMP among the later chains. */
  readonly target: number;
}

const MARKS = ['0x0', '0x1', '0x10', '0x20', '0x4000', '0x4010', '0x1bd20'];
/** Hooks where the generated fib types go (nft_fib.c nft_fib_validate; not ingress). */
const FIB_TYPE_HOOKS: readonly Hook[] = ['prerouting', 'input', 'forward', 'output', 'postrouting'];
/** Hooks where fib's oif results and `fib … . iif` are allowed (nft_fib.c nft_fib_validate). */
const FIB_OIF_HOOKS: readonly Hook[] = ['prerouting', 'input', 'forward'];
/** Before conntrack only: ct zone set (nft_ct.c nft_ct_set_validate) and notrack (meaningful). */
const TEMPLATE_HOOKS: readonly Hook[] = ['prerouting', 'output'];
/** NF_IP_PRI_CONNTRACK (include/uapi/linux/netfilter_ipv4.h). */
const CONNTRACK_PRIORITY = -200;
/** Hooks a packet meets before any source NAT (postrouting's filter chains come before srcnat). */
const BEFORE_SOURCE_NAT: readonly Hook[] = ['forward', 'output', 'postrouting'];
/** Where the generated port and identifier rewrites go: not ingress, where the harness's sentinel
 * must pass as sent. */
const PAYLOAD_SET_HOOKS: readonly Hook[] = ['prerouting', 'input', 'forward', 'output', 'postrouting'];
/** nft_reject_validate: every hook but postrouting. */
const REJECT_HOOKS: readonly Hook[] = ['prerouting', 'input', 'forward', 'output'];

export function setName(kind: 's' | 'c' | 'm' | 'd' | 'n', af: AddressFamily): string {
  return `${kind}${af === 'ip' ? 4 : 6}`;
}

const neutralMatch: fc.Arbitrary<Part> = fc.oneof(
  fc.constantFrom(...MARKS).map((m) => ({ text: `meta mark ${m}` })),
  fc.constantFrom('0x4000', '0x20', '0xff00').map((m) => ({ text: `meta mark & ${m} == ${m}` })),
  fc.constant({ text: 'meta mark & 0x4000 != 0x4000' }),
  fc.constantFrom('0x0', '0x7', '0x4000').map((m) => ({ text: `ct mark ${m}` })),
  fc.constantFrom('new', 'established', 'invalid', 'new,established', 'untracked').map((s) => ({ text: `ct state ${s}` })),
  fc.constant({ text: 'ct state != established' }),
  fc.constantFrom('dnat', 'snat').map((s) => ({ text: `ct status ${s}` })),
  // IPS_SRC_NAT_DONE, IPS_DST_NAT_DONE: set as each NAT hook is passed (nf_nat_setup_info).
  fc.constantFrom('0x80', '0x100', '0x180').map((b) => ({ text: `ct status & ${b} == ${b}` })),
  fc.constant({ text: 'ct zone 1' }),
  fc.constantFrom('original', 'reply').map((d) => ({ text: `ct direction ${d}` })),
  fc.constantFrom('eth0', 'eth1').map((i) => ({ text: `iifname "${i}"` })),
  fc.constantFrom('eth0', 'eth1').map((i) => ({ text: `oifname "${i}"` })),
  fc.constant({ text: 'iifname != "eth0"' }),
  fc.constantFrom('iifname "eth*"', 'oifname "e*"', 'iifname != "l*"').map((text) => ({ text })),
  fc.constant({ text: 'meta pkttype host' }),
  fc.constant({ text: 'meta pkttype { broadcast, multicast }' }),
  fc.constantFrom('0', '1000').map((u) => ({ text: `meta skuid ${u}` })),
  fc.constantFrom('daddr type local', 'daddr type unicast', 'saddr type local').map((f) => ({ text: `fib ${f}`, hooks: FIB_TYPE_HOOKS })),
  fc.constant({ text: 'fib saddr . iif oif missing', hooks: FIB_OIF_HOOKS }),
  fc.constantFrom('fib daddr oif "eth1"', 'fib daddr oif missing').map((text) => ({ text, hooks: FIB_OIF_HOOKS })),
  fc.constant({ text: 'meta random < 2147483648' }),
  fc.constant({ text: 'numgen random mod 2 == 1' }),
  fc.constant({ text: 'ct mark & 0xff == 0x7' }),
  // The network header's protocol byte (IPv4: offset 9; IPv6's next header at 6 reads a tcp
  // packet the same way): a raw payload read of either family's packet.
  fc.constantFrom('@nh,72,8 6', '@nh,48,8 6').map((text) => ({ text })),
  // The whole packet's length: the harness's packets are headers only (IPv4 TCP 40, UDP and
  // echo 28; IPv6 20 more).
  fc.constantFrom('meta length { 28, 40 }', 'meta length > 44').map((text) => ({ text })),
  // The interfaces by index and type, the socket's group.
  fc.constantFrom('meta iif "eth0"', 'meta oif "eth1"', 'meta iif "lo"', 'meta iiftype ether').map((text) => ({ text })),
  fc.constant({ text: 'meta skgid 0' }),
  fc.constant({ text: 'meta priority 1:2' }),
  // The connection's accounting, which counts each packet as conntrack attaches the entry.
  fc.constantFrom('ct original packets 1', 'ct packets 2', 'ct reply packets 1', 'ct bytes > 100').map((text) => ({ text })),
  // The transport header's ports whatever the protocol (an ICMP packet has none: the rule breaks).
  fc.constantFrom('th dport 80', 'th sport != 40000').map((text) => ({ text })),
  fc.constant({ text: 'meta oiftype ether', hooks: ['forward', 'output', 'postrouting'] as const }),
  // The MSS option some generated SYNs carry (1460 or 500).
  fc.constantFrom('tcp option maxseg size < 1000', 'tcp option maxseg exists', 'tcp option maxseg missing').map((text) => ({ text })),
  // What earlier packets of the case used: a bucket that does not refill in the case's time, a
  // quota of a few packets (harness packets are 28 to 60 bytes). Not at ingress and prerouting,
  // where the harness's sentinel after each packet would use them too (seed 1806673399).
  fc
    .constantFrom('limit rate 1/hour burst 2 packets', 'limit rate over 1/hour burst 1 packets', 'limit rate 1 bytes/hour burst 100 bytes', 'quota 100 bytes', 'quota over 80 bytes')
    .map((text) => ({ text, hooks: ['input', 'forward', 'output', 'postrouting'] as const })),
  // The connection's labels: a literal names a bit, tested alone (implicit) or as the whole value.
  fc.constantFrom('ct label 5', 'ct label 0', 'ct label == 5', 'ct label != 70', 'ct label { 5, 70 }').map((text) => ({ text })),

);

function addressMatch(af: AddressFamily): fc.Arbitrary<Part> {
  const a = ADDRESSES[af];
  const hosts = [...a.client, ...a.server];
  return fc.oneof(
    fc.constantFrom(...hosts).map((x) => ({ text: `${af} saddr ${x}` })),
    fc.constantFrom(...hosts).map((x) => ({ text: `${af} daddr ${x}` })),
    // Tells the addresses of a NAT range apart, after a DNAT or SNAT to it.
    fc.constant({ text: `${af} daddr ${a.natMember[0]}` }),
    fc.constant({ text: `${af} saddr ${a.natMember[1]}` }),
    fc.constantFrom(...a.prefixes).map((p) => ({ text: `${af} daddr != ${p}` })),
    fc.constantFrom(...a.prefixes).map((p) => ({ text: `${af} saddr ${p}` })),
    fc.constant({ text: `${af} daddr ${a.range}` }),
    fc.constant({ text: `${af} daddr { ${a.client[1]}, ${a.server[1]} }` }),
    fc.constant({ text: `${af} daddr @${setName('s', af)}` }),
    fc.constant({ text: `${af} saddr != @${setName('s', af)}` }),
    fc.constant({ text: `${af} saddr @${setName('d', af)}` }),
    fc.constant({ text: `${af} daddr . th dport @${setName('c', af)}` }),
    // The conntrack tuples: the original as the first packet came, the reply as NAT made it.
    fc.constantFrom(a.client[0], a.server[1], a.natMember[0]).map((x) => ({ text: `ct original ${af} daddr ${x}` })),
    fc.constantFrom(a.client[0], a.server[2], a.natMember[0]).map((x) => ({ text: `ct reply ${af} saddr ${x}` })),
    fc.constantFrom(a.client[0], a.snat[1], a.natMember[1]).map((x) => ({ text: `ct reply ${af} daddr ${x}` })),
    // The same without a family, as nft lists them in ip and ip6 tables.
    fc.constantFrom(a.client[0], a.server[1]).map((x) => ({ text: `ct original daddr ${x}`, notInet: true })),
    fc.constant({ text: `ct reply saddr ${a.prefixes[1]}`, notInet: true }),
    // The forward path decrements the TTL before the forward hook (ip_forward, ip6_forward).
    fc.constantFrom('64', '63').map((n) => ({ text: af === 'ip' ? `ip ttl ${n}` : `ip6 hoplimit ${n}` })),
    fc.constantFrom('cs0', 'cs1').map((d) => ({ text: `${af} dscp ${d}` })),
    // The rule's own family: nft refuses `ip daddr … meta nfproto ipv6` as conflicting, and so
    // the link's protocol (skb->protocol) and the connection's.
    fc.constant({ text: `meta nfproto ${af === 'ip' ? 'ipv4' : 'ipv6'}`, inetOnly: true }),
    fc.constant({ text: `meta protocol ${af}` }),
    fc.constant({ text: `ct l3proto ${af === 'ip' ? 'ipv4' : 'ipv6'}` }),
  );
}

function l4Match(af: AddressFamily): fc.Arbitrary<L4Match> {
  const a = ADDRESSES[af];
  const icmp = af === 'ip' ? ['icmp type echo-request', 'meta l4proto icmp'] : ['icmpv6 type echo-request', 'meta l4proto ipv6-icmp'];
  const l4icmp = af === 'ip' ? 'meta l4proto icmp' : 'meta l4proto ipv6-icmp';
  // An echo reply's type and code, as the reply tuple of an echo connection has them.
  const echoReply = af === 'ip' ? 0 : 129 << 8;
  return fc.constantFrom<L4Match>(
    { text: 'tcp dport 80', proto: 'tcp' },
    { text: 'tcp dport { 80, 443 }', proto: 'tcp' },
    { text: 'udp dport 53', proto: 'udp' },
    { text: 'tcp dport 1-1000', proto: 'tcp' },
    // Not where a packet may come after a NAT that picked a random source port (a local packet
    // coming back in through lo): docs/simulator-limits.md.
    { text: 'tcp sport != 40000', proto: 'tcp', hooks: BEFORE_SOURCE_NAT },
    { text: 'th dport { 53, 443 }', proto: 'any' },
    { text: 'tcp flags syn', proto: 'tcp' },
    { text: 'tcp flags & (syn | ack) == syn', proto: 'tcp' },
    // iptables-nft's --syn and ! --syn as nft lists them: a chain of three flags or more.
    { text: 'tcp flags & (fin | syn | rst | ack) == syn', proto: 'tcp' },
    { text: 'tcp flags & (fin | syn | rst | ack) != syn', proto: 'tcp' },
    { text: 'tcp flags ack', proto: 'tcp' },
    { text: 'meta l4proto udp', proto: 'udp' },
    { text: 'meta l4proto tcp', proto: 'tcp' },
    // The connection's transport protocol: a protocol to nft (`udp dport` after it conflicts), but
    // not a transport match a NAT port may follow.
    { text: 'ct protocol tcp', proto: 'any' },
    // Set at a TCP handshake's end (nf_conntrack_proto_tcp.c); UDP's depends on time, not modelled.
    { text: 'meta l4proto tcp ct status assured', proto: 'tcp' },
    ...icmp.map((text) => ({ text, proto: 'icmp' as const })),
    { text: `${af} daddr . tcp dport { ${a.server[1]} . 80, ${a.client[1]} . 443 }`, proto: 'tcp' },
    { text: af === 'ip' ? 'ip protocol tcp' : 'ip6 nexthdr tcp', proto: 'tcp' },
    { text: 'tcp dport != { 22, 80 }', proto: 'tcp' },
    { text: 'tcp flags syn / syn,ack', proto: 'tcp' },
    // The transport header's bytes 2-3 (a port, an echo's identifier): a raw payload read.
    { text: '@th,16,16 80', proto: 'any' },
    // The conntrack tuples' ports: the original as the first packet came, the reply as DNAT to a
    // port made it.
    { text: 'meta l4proto tcp ct original proto-dst 80', proto: 'tcp' },
    { text: 'meta l4proto tcp ct reply proto-src 8080', proto: 'tcp' },
    // An echo's identifier, which SNAT may pick at random on a clash (the same hooks as a source
    // port's test), and the echo connection's tuples: the identifier, the reply's type and code.
    { text: `${af === 'ip' ? 'icmp' : 'icmpv6'} id 40000`, proto: 'icmp', hooks: BEFORE_SOURCE_NAT },
    { text: `${l4icmp} ct original proto-src 7`, proto: 'icmp' },
    { text: `${l4icmp} ct reply proto-dst ${echoReply}`, proto: 'icmp' },
  );
}

function statement(af: AddressFamily): fc.Arbitrary<Part> {
  const a = ADDRESSES[af];
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...MARKS).map((m) => ({ text: `meta mark set ${m}` })) },
    { weight: 2, arbitrary: fc.constantFrom('0x4000', '0x20', '0x3').map((m) => ({ text: `meta mark set mark or ${m}` })) },
    { weight: 2, arbitrary: fc.constantFrom('0xffffbfff', '0xff', '0x0').map((m) => ({ text: `meta mark set mark and ${m}` })) },
    { weight: 2, arbitrary: fc.constantFrom('0x4000', '0x1').map((m) => ({ text: `meta mark set mark xor ${m}` })) },
    { weight: 2, arbitrary: fc.constantFrom('0x7', '0x4000').map((m) => ({ text: `ct mark set ${m}` })) },
    { weight: 2, arbitrary: fc.constantFrom('ct mark set meta mark', 'meta mark set ct mark', 'ct mark set meta mark and 0xff', 'meta mark set ct mark and 0xffff', 'meta mark set ct mark or 0x4000').map((text) => ({ text })) },
    { weight: 1, arbitrary: fc.constantFrom('ct label set 5', 'ct label set 70').map((text) => ({ text })) },
    { weight: 1, arbitrary: fc.constant({ text: 'meta mark set meta mark and 0xffff or 0x20' }) },
    { weight: 1, arbitrary: fc.constantFrom('meta mark set mark << 8', 'meta mark set ct mark >> 1').map((text) => ({ text })) },
    { weight: 1, arbitrary: fc.constant({ text: 'meta mark set numgen random mod 2 offset 0x10' }) },
    { weight: 1, arbitrary: fc.constant({ text: `meta mark set ${af} daddr map { ${a.server[1]} : 0x20, ${a.client[1]} : 0x4000 }` }) },
    // (Deletes go to the map, which has no size: a slot an earlier packet deleted from the sized
    // set stays taken until a garbage collection nftsim has no clock for. The kernel wants a
    // map's delete to carry data, which it does not compare.)
    { weight: 1, arbitrary: fc.constantFrom(`add @${setName('d', af)} { ${af} saddr }`, `update @${setName('d', af)} { ${af} daddr }`, `delete @${setName('n', af)} { ${af} saddr : 0x1 }`).map((text) => ({ text })) },
    // An element's own limit, run by the dynset and by lookups that find the element; at the
    // hooks of the other limits.
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(`add @${setName('d', af)} { ${af} daddr limit rate over 1/hour burst 1 packets }`, `update @${setName('d', af)} { ${af} saddr limit rate 1/hour burst 2 packets }`)
        .map((text) => ({ text, hooks: ['input', 'forward', 'output', 'postrouting'] as const })),
    },
    // A dynamic map's data: a constant, and the packet's mark.
    { weight: 1, arbitrary: fc.constantFrom(`add @${setName('n', af)} { ${af} saddr : 0x20 }`, `update @${setName('n', af)} { ${af} daddr : meta mark }`, `meta mark set ${af} saddr map @${setName('n', af)}`).map((text) => ({ text })) },
    { weight: 1, arbitrary: fc.constant({ text: 'notrack', hooks: TEMPLATE_HOOKS }) },
    { weight: 1, arbitrary: fc.constant({ text: 'meta priority set 1:2' }) },
    { weight: 1, arbitrary: fc.constant({ text: `${af} dscp set cs1` }) },
    { weight: 1, arbitrary: fc.constant({ text: af === 'ip' ? 'ip ttl set 1' : 'ip6 hoplimit set 1' }) },
    // Lowers an MSS option the packet has, never raises it.
    { weight: 1, arbitrary: fc.constantFrom('tcp option maxseg size set 1360', 'tcp option maxseg size set 600').map((text) => ({ text })) },
    { weight: 1, arbitrary: fc.constant({ text: 'ct zone set 1', hooks: TEMPLATE_HOOKS, beforeConntrack: true }) },
    // Ports and an echo identifier rewritten (nft adds the protocol dependency, which ends the
    // rule for another packet): before conntrack they are the tuple's, after it NAT undoes them on
    // the side it changes.
    {
      weight: 1,
      arbitrary: fc.constantFrom<Part>(
        { text: 'tcp dport set 8080', onProto: 'tcp', hooks: PAYLOAD_SET_HOOKS },
        { text: 'tcp sport set 7', onProto: 'tcp', hooks: PAYLOAD_SET_HOOKS },
        { text: `${af === 'ip' ? 'icmp' : 'icmpv6'} id set 7`, onProto: 'icmp', hooks: PAYLOAD_SET_HOOKS },
      ),
    },
  );
}

function nat(af: AddressFamily): fc.Arbitrary<GenNat> {
  const a = ADDRESSES[af];
  const dnat: GenNat[] = [
    ...[a.server[2], a.client[2], a.client[1], a.unroutable].map((x) => ({ kind: 'dnat' as const, text: `dnat to ${x}`, unroutable: x === a.unroutable })),
    { kind: 'dnat', text: `dnat to ${withPort(af, a.server[2], '8080')}`, port: true },
    { kind: 'dnat', text: `dnat to ${withPort(af, a.client[1], '22')}`, port: true },
    { kind: 'dnat', text: `dnat to ${a.natRange}` },
    { kind: 'dnat', text: `dnat to ${a.natPrefix}` },
    { kind: 'dnat', text: `dnat to ${withPort(af, a.server[2], '8000-8100')}`, port: true },
    ...(af === 'ip' ? [{ kind: 'dnat' as const, text: `dnat to ${a.natRange}:8000-8100`, port: true }] : []),
    { kind: 'dnat', text: `dnat to ${af} daddr map { ${a.server[1]} : ${a.server[2]}, ${a.client[1]} : ${a.server[1]} }` },
    {
      kind: 'dnat',
      text: `dnat ${af} addr . port to ${af} daddr . tcp dport map { ${a.server[1]} . 80 : ${a.server[2]} . 8080, ${a.client[1]} . 443 : ${a.server[1]} . 8443 }`,
      port: true,
      familied: true,
    },
  ];
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...dnat) },
    { weight: 1, arbitrary: fc.constantFrom<GenNat>({ kind: 'redirect', text: 'redirect' }, { kind: 'redirect', text: 'redirect to :8080', port: true }) },
    {
      weight: 2,
      arbitrary: fc.constantFrom<GenNat>(
        ...a.snat.map((x) => ({ kind: 'snat' as const, text: `snat to ${x}` })),
        { kind: 'snat', text: `snat to ${a.snatRange}` },
        { kind: 'snat', text: `snat to ${withPort(af, a.snat[1], '2000-3000')}`, port: true },
      ),
    },
    {
      weight: 2,
      arbitrary: fc.constantFrom<GenNat>(
        ...['masquerade', 'masquerade random', 'masquerade fully-random', 'masquerade persistent'].map((text) => ({ kind: 'masquerade' as const, text })),
        { kind: 'masquerade', text: 'masquerade to :10000-10100', port: true },
      ),
    },
  );
}

function verdict(af: AddressFamily): fc.Arbitrary<GenVerdict | undefined> {
  const a = ADDRESSES[af];
  const vmaps = [
    `${af} daddr vmap { ${a.server[1]} : accept, ${a.client[1]} : drop }`,
    'meta mark vmap { 0x1 : drop, 0x10 : JUMP }',
    'ct state vmap { established : accept, new : JUMP }',
    'numgen random mod 2 vmap { 0 : accept, 1 : drop }',
    'numgen random mod 3 vmap { 0 : JUMP, 1 : drop, 2 : accept }',
    // A counter the kernel's packets move on: nftsim's branches hold every value.
    'numgen inc mod 2 vmap { 0 : accept, 1 : JUMP }',
    `${af} daddr . meta l4proto . th dport vmap @${setName('m', af)}`,
  ];
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: fc.constantFrom('accept', 'drop', 'return').map((kind) => ({ kind })) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom('jump', 'goto'), target: fc.nat(3) }) },
    { weight: 2, arbitrary: fc.constantFrom(...vmaps).map((text) => ({ kind: 'vmap' as const, text })) },
    { weight: 1, arbitrary: fc.constantFrom('plain', 'tcp reset', 'icmp').map((w) => ({ kind: 'reject' as const, with: w })) },
  );
}

export function arbitraryNftRule(family: TableFamily): fc.Arbitrary<GenRule> {
  const afs: AddressFamily[] = family === 'inet' ? ['ip', 'ip6'] : [family];
  return fc.constantFrom(...afs).chain((af) =>
    fc.record(
      {
        af: fc.constant(af),
        matches: fc.array(fc.oneof(neutralMatch, addressMatch(af)), { maxLength: 2 }),
        l4: l4Match(af),
        stmts: fc.array(statement(af), { maxLength: 2 }),
        nat: nat(af),
        verdict: verdict(af),
        target: fc.nat(3),
      },
      { requiredKeys: ['af', 'matches', 'stmts', 'target'] },
    ),
  );
}

/** The NAT statements a nat chain at each hook may hold (masquerade: postrouting only, as
 * nft_masq_validate allows; redirect: prerouting and output). */
export const NAT_KINDS_AT: Readonly<Record<Hook, readonly NatKind[]>> = {
  ingress: [],
  prerouting: ['dnat', 'redirect'],
  output: ['dnat', 'redirect'],
  input: ['snat'],
  postrouting: ['snat', 'masquerade'],
  forward: [],
};

export interface RenderPlace {
  readonly family: TableFamily;
  /** The base chain's hook and priority; undefined in a regular chain. */
  readonly hook?: Hook;
  readonly priority?: number;
  /** -1 in a base chain, else the regular chain's index: jumps go to later chains only (no loops). */
  readonly from: number;
  readonly regularCount: number;
  readonly natKinds: readonly NatKind[];
}

function fits(part: Part, place: RenderPlace): boolean {
  if (part.inetOnly && place.family !== 'inet') return false;
  if (part.notInet && place.family === 'inet') return false;
  if (part.beforeConntrack && !(place.priority !== undefined && place.priority < CONNTRACK_PRIORITY)) return false;
  return part.hooks === undefined || (place.hook !== undefined && part.hooks.includes(place.hook));
}

export function renderNftRule(rule: GenRule, place: RenderPlace): string {
  const l4 = rule.l4 && fits(rule.l4, place) ? rule.l4 : undefined;
  const proto = l4?.proto;
  const stmts = rule.stmts.filter((stmt) => stmt.onProto === undefined || stmt.onProto === proto);
  const parts = [...rule.matches, ...(l4 ? [l4] : []), ...stmts].filter((part) => fits(part, place)).map((part) => part.text);
  // Excluded from output chains: DNAT to an unroutable address, which makes the harness's sendto
  // fail (ENETUNREACH from the re-route) instead of showing a drop.
  const natRule = rule.nat;
  const hasNat = natRule !== undefined && place.natKinds.includes(natRule.kind) && !(place.hook === 'output' && natRule.unroutable === true);
  if (natRule && hasNat) {
    // In an inet table nft wants the address family of a NAT address said.
    const text = place.family === 'inet' && !natRule.familied ? natRule.text.replace(/^(dnat|snat) to/, `$1 ${rule.af} to`) : natRule.text;
    // A NAT port needs a transport protocol match before it; a udp or icmp packet has no tcp port.
    if (natRule.port && (proto === 'udp' || proto === 'icmp')) {
      if (!natRule.familied) parts.push(withoutPort(text));
    } else parts.push(natRule.port && proto !== 'tcp' ? `meta l4proto tcp ${text}` : text);
  }
  // A NAT statement is terminal (it accepts): nft refuses a verdict after it.
  const verdict = hasNat ? undefined : rule.verdict;
  // At ingress the harness's sentinel (UDP, right after the case packet on the same device) meets
  // the rules too: they drop only TCP, and jump nowhere (a regular chain may drop anything).
  const ingress = place.hook === 'ingress';
  const mayDrop = !ingress || proto === 'tcp';
  const later = ingress ? 0 : place.regularCount - (place.from + 1);
  const jumpTarget = later > 0 ? `c${place.from + 1 + (rule.target % later)}` : undefined;
  if (verdict) {
    switch (verdict.kind) {
      case 'jump':
      case 'goto':
        if (jumpTarget) parts.push(`${verdict.kind} ${jumpTarget}`);
        break;
      case 'vmap':
        if (mayDrop || !verdict.text.includes('drop')) parts.push(verdict.text.replace('JUMP', jumpTarget ? `jump ${jumpTarget}` : 'accept'));
        break;
      case 'reject':
        if (place.hook !== undefined && REJECT_HOOKS.includes(place.hook)) parts.push(renderReject(verdict.with, proto, place.family));
        break;
      case 'accept':
      case 'return':
        parts.push(verdict.kind);
        break;
      case 'drop':
        if (mayDrop) parts.push(verdict.kind);
        break;
      default: {
        const exhaustive: never = verdict;
        throw new Error(`unknown verdict ${String(exhaustive)}`);
      }
    }
  }
  // A rule of nothing but a verdict-less statement list still needs one part: a counter.
  return parts.length > 0 ? parts.join(' ') : 'counter';
}

/** `dnat to [a]:80` → `dnat to a`, `masquerade to :1-2` → `masquerade`. */
function withoutPort(text: string): string {
  return text.replace(/ to :[\d-]+$/, '').replace(/:[\d-]+$/, '').replace(/\[([^\]]+)\]/, '$1');
}

function renderReject(kind: 'plain' | 'tcp reset' | 'icmp', proto: L4Match['proto'] | undefined, family: TableFamily): string {
  if (kind === 'tcp reset' && proto !== 'udp' && proto !== 'icmp') return `${proto === 'tcp' ? '' : 'meta l4proto tcp '}reject with tcp reset`;
  if (kind === 'icmp') {
    if (family === 'inet') return 'reject with icmpx type admin-prohibited';
    return family === 'ip' ? 'reject with icmp type host-unreachable' : 'reject with icmpv6 type admin-prohibited';
  }
  return 'reject';
}

/** The named sets and maps of a table, for the address families it sees. */
export function renderNamedSets(family: TableFamily, s4: readonly string[], s6: readonly string[]): string[] {
  const afs: AddressFamily[] = family === 'inet' ? ['ip', 'ip6'] : [family];
  const lines: string[] = [];
  for (const af of afs) {
    const a = ADDRESSES[af];
    const type = af === 'ip' ? 'ipv4_addr' : 'ipv6_addr';
    const elements = af === 'ip' ? s4 : s6;
    lines.push(
      `  set ${setName('s', af)} {`, `    type ${type}; flags interval;`, `    elements = { ${elements.join(', ')} }`, '  }',
      `  set ${setName('c', af)} {`, `    type ${type} . inet_service; flags interval;`, `    elements = { ${a.prefixes[1]} . 80-443, ${a.client[1]} . 22 }`, '  }',
      `  map ${setName('m', af)} {`, `    type ${type} . inet_proto . inet_service : verdict;`,
      `    elements = { ${a.server[1]} . tcp . 80 : accept, ${a.client[1]} . tcp . 22 : drop, ${a.server[2]} . udp . 53 : drop }`, '  }',
      // The client's address from the start, room for one more (a third breaks the rule).
      `  set ${setName('d', af)} {`, `    type ${type}; size 2; flags dynamic;`, `    elements = { ${a.client[0]} }`, '  }',
      `  map ${setName('n', af)} {`, `    typeof ${af} saddr : meta mark; flags dynamic;`, '  }',
    );
  }
  return lines;
}
