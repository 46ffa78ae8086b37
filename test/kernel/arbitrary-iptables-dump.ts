// fast-check arbitraries for an iptables-save dump loaded beside the generated nft tables
// (kernel-differential tests, issue 4), IPv4 (iptables-nft-restore) or IPv6
// (ip6tables-nft-restore): the raw, mangle, nat and filter tables, their built-in chains and one
// user chain each, with the matches and targets nftsim lowers (mark, connmark, conntrack,
// addrtype, multiport, tcpmss, helper, connbytes, ecn, cluster, connlabel, devgroup, statistic,
// comment, iprange, pkttype, length, ttl / hl, dscp, tos, owner, u32; MARK --set-xmark and
// friends, CONNMARK save/restore with masks and shifts, LOG, DSCP, TOS, ECN, CLASSIFY, TCPMSS,
// TCPOPTSTRIP, HMARK, REJECT, DNAT/SNAT with ranges and a shifted range, NETMAP, MASQUERADE,
// REDIRECT, CT --notrack / --zone / --zone mark / --ctevents and NOTRACK, which raw runs before
// conntrack).
import fc from 'fast-check';
import type { Hook } from './arbitrary-nft-rule.js';
import { ADDRESSES, withPort, type AddressFamily } from './generated-host.js';

type IptTable = 'raw' | 'mangle' | 'nat' | 'filter';

interface IptPart {
  readonly text: string;
  /** Allowed only in these built-in chains' hooks (iptables refuses -i in OUTPUT, …). */
  readonly hooks?: readonly Hook[];
  /** The target needs `-p tcp`/`-p udp` (a port) or `-p tcp` (tcp-reset). */
  readonly needs?: 'port' | 'tcp';
  /** iptables allows each of -s, -d, -i, -o once per rule. */
  readonly option?: string;
}

interface IptRule {
  readonly matches: readonly IptPart[];
  readonly proto?: { readonly text: string; readonly proto: 'tcp' | 'udp' | 'icmp' };
  readonly target: IptPart;
}

interface IptChains {
  readonly builtin: readonly { readonly hook: Hook; readonly policy: 'ACCEPT' | 'DROP'; readonly rules: readonly IptRule[] }[];
  readonly user: readonly IptRule[];
}

export interface GenIptablesDump {
  readonly family: AddressFamily;
  readonly tables: Partial<Record<IptTable, IptChains>>;
  /** Loaded before the nft tables (else after): decides the order of equal-priority chains. */
  readonly first: boolean;
}

/** iptables-nft's built-in chains (iptables/nft.c builtin_table): the hooks of each table. */
const BUILTIN_HOOKS: Readonly<Record<IptTable, readonly Hook[]>> = {
  raw: ['prerouting', 'output'],
  mangle: ['prerouting', 'input', 'forward', 'output', 'postrouting'],
  nat: ['prerouting', 'input', 'output', 'postrouting'],
  filter: ['input', 'forward', 'output'],
};
const IN_HOOKS: readonly Hook[] = ['prerouting', 'input', 'forward'];
const OUT_HOOKS: readonly Hook[] = ['forward', 'output', 'postrouting'];
const USER_CHAIN = 'X';

/** One host address as a source or destination prefix. */
function host(af: AddressFamily, address: string): string {
  return `${address}/${af === 'ip' ? 32 : 128}`;
}

function match(af: AddressFamily): fc.Arbitrary<IptPart> {
  const a = ADDRESSES[af];
  return fc.oneof(
    fc.constantFrom(a.client[0], a.client[2], a.server[1]).map((x) => ({ text: `-s ${host(af, x)}`, option: 's' })),
    fc.constantFrom(a.server[1], a.server[2], a.client[1]).map((x) => ({ text: `-d ${host(af, x)}`, option: 'd' })),
    fc.constant({ text: `! -d ${host(af, a.client[1])}`, option: 'd' }),
    fc.constant({ text: `-d ${a.prefixes[1]}`, option: 'd' }),
    fc.constantFrom('eth0', 'eth1').map((i) => ({ text: `-i ${i}`, hooks: IN_HOOKS, option: 'i' })),
    fc.constantFrom('eth0', 'eth1').map((i) => ({ text: `-o ${i}`, hooks: OUT_HOOKS, option: 'o' })),
    fc.constantFrom('-m mark --mark 0x10/0xff', '-m mark ! --mark 0x4000/0x4000', '-m mark --mark 0x1bd20', '-m connmark --mark 0x7').map((text) => ({ text })),
    fc.constantFrom('NEW', 'RELATED,ESTABLISHED', 'INVALID', 'DNAT').map((s) => ({ text: `-m conntrack --ctstate ${s}` })),
    // The older state match, which older firewalls and Docker's rules still write.
    fc.constantFrom('NEW', 'RELATED,ESTABLISHED', 'INVALID').map((s) => ({ text: `-m state --state ${s}` })),
    // With the other tests, which xt_conntrack makes only for a packet with an entry (a state
    // test passed with and without one is not modelled: docs/simulator-limits.md).
    fc.constantFrom('--ctstatus CONFIRMED', '--ctdir REPLY', '--ctstate NEW --ctdir ORIGINAL', '--ctstate INVALID --ctdir ORIGINAL', '--ctstate ESTABLISHED --ctstatus SEEN_REPLY').map((t) => ({ text: `-m conntrack ${t}` })),
    fc.constantFrom('--dst-type LOCAL', '--src-type LOCAL', '! --dst-type LOCAL').map((t) => ({ text: `-m addrtype ${t}` })),
    // IPv6 has no broadcast type (xt_addrtype.c addrtype_mt_checkentry_v1 refuses it).
    fc.constantFrom('--dst-type UNICAST', af === 'ip' ? '--dst-type BROADCAST,MULTICAST' : '--dst-type MULTICAST', '! --src-type UNICAST', '--src-type UNSPEC').map((t) => ({ text: `-m addrtype ${t}` })),
    // The connection's accounting, as conntrack counts the packet that carries it.
    fc
      .constantFrom('--connbytes 2 --connbytes-mode packets --connbytes-dir original', '! --connbytes 2 --connbytes-mode packets --connbytes-dir both', '--connbytes 1:1 --connbytes-mode packets --connbytes-dir reply', '--connbytes 100 --connbytes-mode bytes --connbytes-dir both', '--connbytes 0:30 --connbytes-mode avgpkt --connbytes-dir both')
      .map((t) => ({ text: `-m connbytes ${t}` })),
    fc.constantFrom('--ecn-ip-ect 0', '! --ecn-ip-ect 2').map((t) => ({ text: `-m ecn ${t}` })),
    // The node of a cluster by the hash of the original source; a connection's label, which the
    // match sets with --set (the negation's answer without an entry); the default interface group.
    fc.constantFrom('--cluster-local-node 1', '--cluster-local-node 2', '! --cluster-local-nodemask 1').map((t) => ({ text: `-m cluster --cluster-total-nodes 2 ${t} --cluster-hash-seed 0xdeadbeef` })),
    fc.constantFrom('--label 5 --set', '--label 5', '! --label 6').map((t) => ({ text: `-m connlabel ${t}` })),
    fc.constant({ text: '-m devgroup --src-group 0x0', hooks: IN_HOOKS }),
    // No connection has a master (no expectations): the match gives its inversion.
    fc.constantFrom('--helper ftp', '! --helper ftp').map((t) => ({ text: `-m helper ${t}` })),
    // The type the input interface's table gives (fib daddr . iif type): only where there is one.
    fc.constant({ text: '-m addrtype --dst-type LOCAL --limit-iface-in', hooks: IN_HOOKS }),
    fc.constant({ text: '-m addrtype --src-type LOCAL --limit-iface-out', hooks: OUT_HOOKS }),
    // The conntrack tuples, which a packet without an entry does not match.
    fc
      .constantFrom(
        `--ctorigdst ${host(af, a.server[1])}`,
        `--ctreplsrc ${host(af, a.server[2])}`,
        '--ctorigdstport 80',
        `--ctstate DNAT --ctorigdst ${host(af, a.server[1])}`,
        // The connection's protocol (an ICMP error related to a TCP connection reads tcp), and
        // its original source.
        '--ctproto tcp',
        `--ctorigsrc ${host(af, a.client[0])}`,
      )
      .map((t) => ({ text: `-m conntrack ${t}` })),
    fc.constant({ text: `-s ${a.prefixes[0]}`, option: 's' }),
    fc.constant({ text: '-m statistic --mode random --probability 0.50000000000' }),
    fc.constant({ text: '-m comment --comment "generated rule"' }),
    // Buckets per key, which every packet of the case moves on: not at prerouting, where the
    // harness's sentinel after each packet would take from them too. (No connlimit: a closed
    // connection's later packet is not modelled, docs/simulator-limits.md.)
    fc
      .constantFrom(
        '-m hashlimit --hashlimit-upto 1/hour --hashlimit-burst 2 --hashlimit-mode srcip --hashlimit-name g1',
        '-m hashlimit --hashlimit-above 1/hour --hashlimit-burst 1 --hashlimit-mode dstip,dstport --hashlimit-name g2',
      )
      .map((text) => ({ text, hooks: ['input', 'forward', 'output', 'postrouting'] as const })),
    fc.constant({ text: `-m iprange --dst-range ${a.range}` }),
    fc.constant({ text: `-m iprange --src-range ${a.range}` }),
    fc.constantFrom('unicast', 'broadcast', 'multicast', 'otherhost', '! otherhost').map((t) => ({ text: t.startsWith('!') ? `-m pkttype ! --pkt-type ${t.slice(2)}` : `-m pkttype --pkt-type ${t}` })),
    fc.constantFrom('0:60', '61:65535').map((r) => ({ text: `-m length --length ${r}` })),
    // The forward path decrements the TTL before the forward hook (ip_forward, ip6_forward).
    fc.constantFrom('64', '63').map((n) => ({ text: af === 'ip' ? `-m ttl --ttl-eq ${n}` : `-m hl --hl-eq ${n}` })),
    fc.constantFrom('0x00', '0x08').map((d) => ({ text: `-m dscp --dscp ${d}` })),
    // The whole byte (DSCP and ECN) under a mask, as iptables-save writes it.
    fc.constantFrom('--tos 0x23/0xff', '! --tos 0x00/0x3f', '--tos 0x20/0xfc').map((t) => ({ text: `-m tos ${t}` })),
    // A forwarded packet has no socket: xt_owner matches when every test is negated.
    fc
      .constantFrom('--uid-owner 0', '--uid-owner 1000', '--gid-owner 0', '! --uid-owner 0', '! --gid-owner 0-5', '! --uid-owner 1000 ! --gid-owner 1000', '! --uid-owner 0 --gid-owner 0')
      .map((o) => ({ text: `-m owner ${o}`, hooks: ['output', 'postrouting'] as const })),
    // Words of the network header (not the ports, which NAT may pick at random, nor a quote).
    fc
      .constantFrom(...(af === 'ip' ? ['--u32 "6&0xFF=6"', '! --u32 "8>>24=64"', '--u32 "0>>28=4&&0&0xFFFF=0:60"'] : ['--u32 "4>>8&0xFF=6"', '! --u32 "4&0xFF=64"']))
      .map((t) => ({ text: `-m u32 ${t}` })),
  );
}

function proto(af: AddressFamily): fc.Arbitrary<NonNullable<IptRule['proto']>> {
  return fc.constantFrom<NonNullable<IptRule['proto']>>(
    { text: '-p tcp -m tcp --dport 80', proto: 'tcp' },
    { text: '-p tcp -m multiport --dports 80,443', proto: 'tcp' },
    { text: '-p tcp -m multiport ! --dports 80,443', proto: 'tcp' },
    { text: '-p udp -m multiport --ports 53,1000:2000', proto: 'udp' },
    // The harness's SYNs have no options: the match gives its inversion.
    { text: '-p tcp -m tcpmss ! --mss 1:500', proto: 'tcp' },
    { text: '-p tcp -m tcpmss --mss 500:536', proto: 'tcp' },
    { text: '-p udp -m udp --dport 53', proto: 'udp' },
    { text: '-p tcp -m tcp --tcp-flags SYN,RST,ACK SYN', proto: 'tcp' },
    // The MSS option by its kind, which some SYNs carry.
    { text: '-p tcp -m tcp --tcp-option 2', proto: 'tcp' },
    // What iptables-save prints for `! --syn`.
    { text: '-p tcp -m tcp ! --tcp-flags FIN,SYN,RST,ACK SYN', proto: 'tcp' },
    af === 'ip' ? { text: '-p icmp -m icmp --icmp-type 8', proto: 'icmp' } : { text: '-p ipv6-icmp -m icmp6 --icmpv6-type 128', proto: 'icmp' },
    // The type by name, as a hand-written restore file gives it.
    af === 'ip' ? { text: '-p icmp -m icmp --icmp-type echo-request', proto: 'icmp' } : { text: '-p ipv6-icmp -m icmp6 --icmpv6-type echo-request', proto: 'icmp' },
    // `any` holds for every type, `! any` for none; a negated type with a code.
    af === 'ip' ? { text: '-p icmp -m icmp ! --icmp-type any', proto: 'icmp' } : { text: '-p ipv6-icmp -m icmp6 ! --icmpv6-type 128', proto: 'icmp' },
    af === 'ip' ? { text: '-p icmp -m icmp ! --icmp-type 3/1', proto: 'icmp' } : { text: '-p ipv6-icmp -m icmp6 ! --icmpv6-type 1/4', proto: 'icmp' },
  );
}

const markTarget = fc.constantFrom(
  '-j MARK --set-xmark 0x10/0xff',
  '-j MARK --set-xmark 0x4000/0x4000',
  '-j MARK --or-mark 0x4000',
  '-j MARK --and-mark 0xffffbfff',
  '-j MARK --xor-mark 0x4000',
  '-j MARK --set-mark 0x20',
  '-j MARK --set-mark 0x20/0xff',
  '-j CONNMARK --save-mark --nfmask 0xff --ctmask 0xff',
  '-j CONNMARK --restore-mark --nfmask 0xffff --ctmask 0xffff',
  '-j CONNMARK --set-xmark 0x7/0xff',
  '-j CONNMARK --set-mark 0x7/0xff',
  '-j CONNMARK --save-mark',
  '-j CONNMARK --restore-mark',
  '-j CONNMARK --save-mark --right-shift-mark 4',
  '-j CONNMARK --restore-mark --left-shift-mark 8',
);

/** The nat table refuses DROP ("The nat table is not intended for filtering"). In raw, before
 * conntrack, CONNMARK would write the mark of a zone template, which the kernel shares between
 * packets (docs/simulator-limits.md): there it only restores. */
function plainTarget(table: IptTable): fc.Arbitrary<IptPart> {
  const verdicts = table === 'nat' ? ['-j ACCEPT', '-j RETURN', '-j LOG --log-prefix "gen "'] : ['-j ACCEPT', '-j DROP', '-j RETURN', '-j LOG --log-prefix "gen "'];
  const marks = table === 'raw' ? markTarget.filter((text) => !text.startsWith('-j CONNMARK') || text.includes('--restore-mark')) : markTarget;
  return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...verdicts).map((text) => ({ text })) }, { weight: 4, arbitrary: marks.map((text) => ({ text })) });
}

/** Targets of a table's built-in chains beyond the plain ones, by hook where it matters. */
function tableTargets(af: AddressFamily, table: IptTable): readonly IptPart[] {
  const a = ADDRESSES[af];
  const unreachable = af === 'ip' ? ['icmp-port-unreachable', 'icmp-host-unreachable'] : ['icmp6-port-unreachable', 'icmp6-addr-unreachable'];
  switch (table) {
    case 'raw':
      // CT --zone mark: the zone is the mark's low 16 bits when conntrack runs; --ctevents: a
      // template of zone 0 all the same.
      return [{ text: '-j CT --notrack' }, { text: '-j NOTRACK' }, { text: '-j CT --zone 1' }, { text: '-j CT --zone mark' }, { text: '-j CT --ctevents new,related' }];
    case 'mangle':
      return [
        { text: '-j DSCP --set-dscp 0x08' },
        ...['--set-tos 0x23/0xff', '--set-tos 0x10/0x3f', '--xor-tos 0x03'].map((t) => ({ text: `-j TOS ${t}` })),
        { text: '-j CLASSIFY --set-class 0001:0002', hooks: ['forward', 'output', 'postrouting'] },
        // Inserts an MSS option into a TCP packet without data (at most 536, 1220 for IPv6), or
        // lowers the one TCPMSS inserted earlier.
        { text: '-j TCPMSS --set-mss 1400', needs: 'tcp' },
        { text: '-j TCPMSS --set-mss 500', needs: 'tcp' },
        { text: '-j TCPMSS --clamp-mss-to-pmtu', hooks: ['forward', 'output', 'postrouting'], needs: 'tcp' },
        // The TTL (hop limit) the routing decision and later tests read: a forwarded packet at 1
        // is dropped.
        ...(af === 'ip' ? ['TTL --ttl-set 1', 'TTL --ttl-dec 1', 'TTL --ttl-inc 1'] : ['HL --hl-set 1', 'HL --hl-dec 1', 'HL --hl-inc 1']).map((t) => ({ text: `-j ${t}` })),
        // ECN (IPv4 only): the ECN field, and the congestion flags of a TCP packet.
        ...(af === 'ip' ? [{ text: '-j ECN --ecn-ip-ect 1' }, { text: '-j ECN --ecn-tcp-remove', needs: 'tcp' as const }, { text: '-j ECN --ecn-tcp-cwr 1', needs: 'tcp' as const }] : []),
        // The MSS option becomes NOPs; the mark becomes a hash of the packet's 5-tuple.
        { text: '-j TCPOPTSTRIP --strip-options mss', needs: 'tcp' },
        { text: '-j HMARK --hmark-tuple src,dst,sport,dport,proto --hmark-rnd 0xcafe --hmark-mod 16 --hmark-offset 0x100' },
      ];
    case 'filter':
      return [
        ...unreachable.map((type) => ({ text: `-j REJECT --reject-with ${type}` })),
        { text: '-j REJECT --reject-with tcp-reset', needs: 'tcp' },
        // Without --reject-with: port unreachable.
        { text: '-j REJECT' },
      ];
    case 'nat':
      return [
        { text: `-j DNAT --to-destination ${withPort(af, a.server[2], '8080')}`, hooks: ['prerouting', 'output'], needs: 'port' },
        { text: `-j DNAT --to-destination ${a.natRange}`, hooks: ['prerouting', 'output'] },
        { text: `-j DNAT --to-destination ${a.server[2]}`, hooks: ['prerouting', 'output'] },
        // A shifted port range: 1000 + (port - 70) modulo the range's size.
        { text: `-j DNAT --to-destination ${withPort(af, a.server[2], '1000-2000/70')}`, hooks: ['prerouting', 'output'], needs: 'port' },
        { text: `-j NETMAP --to ${a.natPrefix}`, hooks: ['prerouting', 'output'] },
        { text: '-j REDIRECT --to-ports 8080', hooks: ['prerouting', 'output'], needs: 'port' },
        { text: '-j MASQUERADE', hooks: ['postrouting'] },
        { text: '-j MASQUERADE --random-fully', hooks: ['postrouting'] },
        { text: '-j MASQUERADE --to-ports 10000-10100', hooks: ['postrouting'], needs: 'port' },
        { text: `-j SNAT --to-source ${a.snatRange}`, hooks: ['postrouting', 'input'] },
        { text: `-j SNAT --to-source ${withPort(af, a.snat[1], '2000-3000')}`, hooks: ['postrouting', 'input'], needs: 'port' },
      ];
  }
}

function rule(af: AddressFamily, table: IptTable, builtin: boolean): fc.Arbitrary<IptRule> {
  const targets = builtin ? tableTargets(af, table) : [];
  const jump = builtin ? [{ weight: 2, arbitrary: fc.constant({ text: `-j ${USER_CHAIN}` }) }] : [];
  const special = targets.length > 0 ? [{ weight: 3, arbitrary: fc.constantFrom(...targets) }] : [];
  return fc.record(
    {
      matches: fc.uniqueArray(match(af), { maxLength: 2, selector: (m) => m.option ?? m.text }),
      proto: proto(af),
      target: fc.oneof({ weight: 4, arbitrary: plainTarget(table) }, ...jump, ...special),
    },
    { requiredKeys: ['matches', 'target'] },
  );
}

function chains(af: AddressFamily, table: IptTable): fc.Arbitrary<IptChains> {
  return fc.record({
    builtin: fc.subarray([...BUILTIN_HOOKS[table]], { minLength: 1 }).chain((hooks) =>
      fc.tuple(
        ...hooks.map((hook) =>
          fc.record({
            hook: fc.constant(hook),
            policy: table === 'filter' ? fc.constantFrom<'ACCEPT' | 'DROP'>('ACCEPT', 'ACCEPT', 'DROP') : fc.constant<'ACCEPT'>('ACCEPT'),
            rules: fc.array(rule(af, table, true), { maxLength: 3 }),
          }),
        ),
      ),
    ),
    user: fc.array(rule(af, table, false), { maxLength: 3 }),
  });
}

export const arbitraryIptablesDump: fc.Arbitrary<GenIptablesDump> = fc.constantFrom<AddressFamily>('ip', 'ip6').chain((af) =>
  fc.record({
    family: fc.constant(af),
    tables: fc.record({ raw: chains(af, 'raw'), mangle: chains(af, 'mangle'), nat: chains(af, 'nat'), filter: chains(af, 'filter') }, { requiredKeys: [] }),
    first: fc.boolean(),
  }),
);

function renderRule(chain: string, r: IptRule, hook: Hook | undefined): string | undefined {
  const fits = (part: IptPart): boolean => part.hooks === undefined || (hook !== undefined && part.hooks.includes(hook));
  if (!fits(r.target)) return undefined;
  const needs = r.target.needs;
  const protocol = needs === 'tcp' ? (r.proto?.proto === 'tcp' ? r.proto : undefined) : needs === 'port' ? (r.proto?.proto === 'icmp' ? undefined : r.proto) : r.proto;
  if (needs && !protocol) return undefined;
  const parts = [`-A ${chain}`, ...r.matches.filter(fits).map((m) => m.text), ...(protocol ? [protocol.text] : []), r.target.text];
  return parts.join(' ');
}

/** iptables-save text; nat user chains hold no NAT (their hooks are their callers'). */
export function renderIptablesDump(dump: GenIptablesDump): string {
  const lines: string[] = [];
  for (const table of ['raw', 'mangle', 'nat', 'filter'] as const) {
    const chainsOf = dump.tables[table];
    if (!chainsOf) continue;
    lines.push(`*${table}`);
    for (const chain of chainsOf.builtin) lines.push(`:${chain.hook.toUpperCase()} ${chain.policy} [0:0]`);
    lines.push(`:${USER_CHAIN} - [0:0]`);
    for (const chain of chainsOf.builtin) {
      for (const r of chain.rules) {
        const text = renderRule(chain.hook.toUpperCase(), r, chain.hook);
        if (text) lines.push(text);
      }
    }
    for (const r of chainsOf.user) {
      const text = renderRule(USER_CHAIN, r, undefined);
      if (text) lines.push(text);
    }
    lines.push('COMMIT');
  }
  return `${lines.join('\n')}\n`;
}
