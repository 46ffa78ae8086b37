// What each iptables-nft version can read back from a native nft rule, gate by gate. Source:
// ../shared/research/iptables-nft-compat.md sections 3 and 4, which cite iptables' own code
// (mirror PKRoma/iptables): gate 1 is `nft_is_expr_compatible` in iptables/nft.c (v1.8.4
// l.3258-3330, v1.8.8 l.3774-3839, v1.8.9 l.3795-3860, v1.8.12 l.4005-4073), gate 2 is
// `nft_is_chain_compatible` (<= 1.8.7, iptables/nft.c) and `nft_cache_add_base_chain` (>= 1.8.8,
// iptables/nft-cache.c v1.8.9 l.207-248), gate 3 is `nft_rule_to_iptables_command_state`
// (iptables/nft-shared.c v1.8.9 l.1316-1410, iptables/nft-ruleparse.c from v1.8.10) with the
// per-family payload parsers in nft-ipv4.c / nft-ipv6.c (nft-ruleparse-ipv4.c/-ipv6.c from 1.8.10).
// The 1.8.9 rows are checked against the installed tool by the compatibility matrix in
// test/rules/iptables-nft-incompatible/real-tool.test.ts (docs/rules/iptables-nft-incompatible.md).

export interface IptablesNftReadback {
  /** Gate 1 accepts the `range` expression (`tcp dport != 1-1023`): 1.8.8, commit in nft.c. */
  readonly range: boolean;
  /** Gate 1 accepts `log` when it has a group (`-j NFLOG`): 1.8.8. */
  readonly logGroup: boolean;
  /** Gate 1 accepts `bitwise` only in its mask/xor form (shifts rejected): 1.8.12, 58f2a220. */
  readonly bitwiseMaskXorOnly: boolean;
  /** A non-built-in base chain is hidden with a warning instead of making the table
   * incompatible: 1.8.8, f9b33967 (nft-cache.c). */
  readonly hidesBaseChains: boolean;
  /** The rule parser fails (exit 3) instead of dropping what it does not know: 1.8.9,
   * 9075c3aa and ec869370 (nft-shared.c). */
  readonly fatalParse: boolean;
  /** `meta mark set <const>` reads as `-j MARK --set-xmark`: 1.8.10, 7304f198. */
  readonly metaMarkSetConst: boolean;
  /** tcp/udp ports, tcp flags and `meta mark` are parsed (dropped before): 1.8.8. */
  readonly portsAndMark: boolean;
  /** icmp type/code, `ip ttl`, `ip6 hoplimit` and `meta pkttype` are parsed: 1.8.9, d96d0791. */
  readonly icmpTtlPkttype: boolean;
  /** `ip6 nexthdr X` falls through into the hop-limit case (missing `break`, nft-ipv6.c v1.8.9
   * l.170-178, still at HEAD in nft-ruleparse-ipv6.c l.91-99). */
  readonly ip6NexthdrBug: boolean;
  /** Printing `tcp flags != X` read back as `-m tcp ! --tcp-flags` crashes iptables-nft-save and
   * `-S` (segfault, exit 139): measured with 1.8.9 here; 1.8.10 too, gone in 1.8.11 (research
   * section 4, replayed with upstream builds). */
  readonly tcpFlagsNeqCrash: boolean;
  /** ebtables-nft has a `broute` table (BROUTING): 1.8.10, 73611d55 (nft.c xtables_bridge). */
  readonly bridgeBroute: boolean;
}

/** Versions in ascending order; a version reads with the facts of the last row at or below it. */
const READBACK: readonly (readonly [version: string, facts: IptablesNftReadback])[] = [
  ['1.8.4', { range: false, logGroup: false, bitwiseMaskXorOnly: false, hidesBaseChains: false, fatalParse: false, metaMarkSetConst: false, portsAndMark: false, icmpTtlPkttype: false, ip6NexthdrBug: false, tcpFlagsNeqCrash: false, bridgeBroute: false }],
  ['1.8.8', { range: true, logGroup: true, bitwiseMaskXorOnly: false, hidesBaseChains: true, fatalParse: false, metaMarkSetConst: false, portsAndMark: true, icmpTtlPkttype: false, ip6NexthdrBug: false, tcpFlagsNeqCrash: false, bridgeBroute: false }],
  ['1.8.9', { range: true, logGroup: true, bitwiseMaskXorOnly: false, hidesBaseChains: true, fatalParse: true, metaMarkSetConst: false, portsAndMark: true, icmpTtlPkttype: true, ip6NexthdrBug: true, tcpFlagsNeqCrash: true, bridgeBroute: false }],
  ['1.8.10', { range: true, logGroup: true, bitwiseMaskXorOnly: false, hidesBaseChains: true, fatalParse: true, metaMarkSetConst: true, portsAndMark: true, icmpTtlPkttype: true, ip6NexthdrBug: true, tcpFlagsNeqCrash: true, bridgeBroute: true }],
  ['1.8.11', { range: true, logGroup: true, bitwiseMaskXorOnly: false, hidesBaseChains: true, fatalParse: true, metaMarkSetConst: true, portsAndMark: true, icmpTtlPkttype: true, ip6NexthdrBug: true, tcpFlagsNeqCrash: false, bridgeBroute: true }],
  ['1.8.12', { range: true, logGroup: true, bitwiseMaskXorOnly: true, hidesBaseChains: true, fatalParse: true, metaMarkSetConst: true, portsAndMark: true, icmpTtlPkttype: true, ip6NexthdrBug: true, tcpFlagsNeqCrash: false, bridgeBroute: true }],
];

function versionParts(version: string): number[] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(version.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : undefined;
}

function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/** The read-back facts of `version` (`1.8.9`, `v1.8.11`); versions before 1.8.4 read as 1.8.4,
 * and an unparsable version as 1.8.9, the default (configuration is user input: never throws). */
export function iptablesNftReadback(version: string): IptablesNftReadback {
  const wanted = versionParts(version) ?? [1, 8, 9];
  let facts = READBACK[0]![1];
  for (const [since, row] of READBACK) if (compareVersions(versionParts(since)!, wanted) <= 0) facts = row;
  return facts;
}

/** Expressions and statements outside gate 1's whitelist in every version, by model kind, with
 * the kernel expression nft lowers them to (the name iptables' code checks). */
export const UNREADABLE_EXPRS: Readonly<Record<string, string>> = {
  ct: 'ct',
  fib: 'fib',
  rt: 'rt',
  socket: 'socket',
  osf: 'osf',
  ipsec: 'xfrm',
  numgen: 'numgen',
  hash: 'hash',
  exthdr: 'exthdr',
  'tcp-option': 'exthdr',
  'ip-option': 'exthdr',
  'sctp-chunk': 'exthdr',
};

/** Meta keys the rule parser understands (nft-shared.c parse_meta / nft-ruleparse.c), with the
 * fact that gates them; any other key fails with "unknown ipv4|ipv6 meta key" from 1.8.9. */
export const PARSED_META_KEYS: Readonly<Record<string, keyof IptablesNftReadback | 'always'>> = {
  iifname: 'always',
  oifname: 'always',
  iif: 'always',
  oif: 'always',
  l4proto: 'always',
  mark: 'portsAndMark',
  pkttype: 'icmpTtlPkttype',
};

/** Header fields the rule parser understands, by payload protocol; other offsets of ip/ip6 fail
 * with "unknown payload offset" from 1.8.9, other tcp/udp offsets are silently ignored in every
 * version, and other protocols fail with "unsupported layer 4 protocol value". */
export const PARSED_PAYLOAD_FIELDS: Readonly<Record<string, Readonly<Record<string, keyof IptablesNftReadback | 'always'>>>> = {
  ip: { saddr: 'always', daddr: 'always', protocol: 'always', 'frag-off': 'always', ttl: 'icmpTtlPkttype' },
  ip6: { saddr: 'always', daddr: 'always', nexthdr: 'always', hoplimit: 'icmpTtlPkttype' },
  tcp: { sport: 'portsAndMark', dport: 'portsAndMark', flags: 'portsAndMark' },
  udp: { sport: 'portsAndMark', dport: 'portsAndMark' },
  icmp: { type: 'icmpTtlPkttype', code: 'icmpTtlPkttype' },
  icmpv6: { type: 'icmpTtlPkttype', code: 'icmpTtlPkttype' },
};

/** The programs that read these tables through iptables-nft, named in findings. */
export const IPTABLES_NFT_CONSUMERS = 'kube-proxy (iptables mode), Docker, Calico, firewalld and kube-router';

// arptables-nft and ebtables-nft (iptables 1.8.9; facts measured against the installed 1.8.9 by
// the real-tool matrix, L2_CONSTRUCTS). Other versions: the arp and bridge parsers moved to
// nft-ruleparse-arp.c / nft-ruleparse-bridge.c in 1.8.10 without changing these cases, and
// 1.8.10 added the bridge `broute` table (73611d55); the rule applies the 1.8.9 facts otherwise.

/** Fields of the arp header nft-arp.c v1.8.9 nft_arp_parse_payload (l.209-296) reads; the
 * address fields sit at offsets that depend on the hardware length, which it knows only from an
 * `arp hlen` match earlier in the rule (arptables-nft writes `arp htype 1 arp hlen 6 arp plen 4`
 * before every rule): without it `arp saddr ip`, `arp daddr ether` and `arp daddr ip` fail with
 * "unknown payload offset". */
export const ARP_FIELDS: Readonly<Record<string, 'plain' | 'after-hlen' | 'plen'>> = {
  htype: 'plain',
  ptype: 'plain',
  hlen: 'plain',
  operation: 'plain',
  plen: 'plen',
  'saddr ether': 'plain',
  'saddr ip': 'after-hlen',
  'daddr ether': 'after-hlen',
  'daddr ip': 'after-hlen',
};

/** Byte offsets of network-header fields (linux/if_arp.h, ip.h, ipv6.h). nft-bridge.c v1.8.9
 * nft_bridge_parse_payload (l.237-295) ignores the payload base: a network-header field at 0,
 * 6 or 12 is read as the ethernet destination, source or type (`ip saddr 10.0.0.1` reads as
 * `-p 0xa00`); any other offset fails with "unknown payload offset". */
export const NETWORK_OFFSETS: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  ip: { version: 0, hdrlength: 0, dscp: 1, ecn: 1, length: 2, id: 4, 'frag-off': 6, ttl: 8, protocol: 9, checksum: 10, saddr: 12, daddr: 16 },
  ip6: { version: 0, dscp: 0, ecn: 1, flowlabel: 1, length: 4, nexthdr: 6, hoplimit: 7, saddr: 8, daddr: 24 },
  arp: { htype: 0, ptype: 2, hlen: 4, plen: 5, operation: 6, 'saddr ether': 8, 'saddr ip': 14, 'daddr ether': 18, 'daddr ip': 24 },
};

/** The ethernet header offsets ebtables-nft reads, and what it reads there. */
export const ETHER_OFFSETS: Readonly<Record<number, string>> = { 0: 'the destination MAC (`-d`)', 6: 'the source MAC (`-s`)', 12: 'the ether type (`-p`)' };

/** Meta keys ebtables-nft reads (nft-bridge.c v1.8.9 nft_bridge_parse_meta l.191-235):
 * `meta protocol` is skipped without a word, iif/oif crash the parser (parse_meta writes the
 * interface mask through the NULL ebtables passes, segfault, exit 139), mark and pkttype are
 * "unknown bridge meta key", every other key "unknown meta key". */
export const BRIDGE_META_KEYS: Readonly<Record<string, 'read' | 'ignored' | 'crash' | 'unknown bridge meta key'>> = {
  iifname: 'read',
  oifname: 'read',
  ibrname: 'read',
  obrname: 'read',
  protocol: 'ignored',
  iif: 'crash',
  oif: 'crash',
  mark: 'unknown bridge meta key',
  pkttype: 'unknown bridge meta key',
};

/** Meta keys arptables-nft reads (nft-arp.c v1.8.9 nft_arp_parse_meta l.163-179, through
 * parse_meta): mark and pkttype are parsed into matches arptables never prints, so they are
 * silently dropped; other keys are "Unknown arp meta key". */
export const ARP_META_KEYS: Readonly<Record<string, 'read' | 'dropped'>> = {
  iifname: 'read',
  oifname: 'read',
  iif: 'read',
  oif: 'read',
  mark: 'dropped',
  pkttype: 'dropped',
};

/** Who reads these tables through each tool, named in findings. libvirt's nwfilter drives
 * ebtables (../shared/research/marks.tsv, libvirt row); nothing in the research names an
 * arptables-nft consumer. */
export function iptablesNftConsumers(family: string): string {
  if (family === 'bridge') return "libvirt's nwfilter and other ebtables-nft users";
  if (family === 'arp') return 'arptables-nft users';
  return IPTABLES_NFT_CONSUMERS;
}
