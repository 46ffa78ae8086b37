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
}

/** Versions in ascending order; a version reads with the facts of the last row at or below it. */
const READBACK: readonly (readonly [version: string, facts: IptablesNftReadback])[] = [
  ['1.8.4', { range: false, logGroup: false, bitwiseMaskXorOnly: false, hidesBaseChains: false, fatalParse: false, metaMarkSetConst: false, portsAndMark: false, icmpTtlPkttype: false, ip6NexthdrBug: false, tcpFlagsNeqCrash: false }],
  ['1.8.8', { range: true, logGroup: true, bitwiseMaskXorOnly: false, hidesBaseChains: true, fatalParse: false, metaMarkSetConst: false, portsAndMark: true, icmpTtlPkttype: false, ip6NexthdrBug: false, tcpFlagsNeqCrash: false }],
  ['1.8.9', { range: true, logGroup: true, bitwiseMaskXorOnly: false, hidesBaseChains: true, fatalParse: true, metaMarkSetConst: false, portsAndMark: true, icmpTtlPkttype: true, ip6NexthdrBug: true, tcpFlagsNeqCrash: true }],
  ['1.8.10', { range: true, logGroup: true, bitwiseMaskXorOnly: false, hidesBaseChains: true, fatalParse: true, metaMarkSetConst: true, portsAndMark: true, icmpTtlPkttype: true, ip6NexthdrBug: true, tcpFlagsNeqCrash: true }],
  ['1.8.11', { range: true, logGroup: true, bitwiseMaskXorOnly: false, hidesBaseChains: true, fatalParse: true, metaMarkSetConst: true, portsAndMark: true, icmpTtlPkttype: true, ip6NexthdrBug: true, tcpFlagsNeqCrash: false }],
  ['1.8.12', { range: true, logGroup: true, bitwiseMaskXorOnly: true, hidesBaseChains: true, fatalParse: true, metaMarkSetConst: true, portsAndMark: true, icmpTtlPkttype: true, ip6NexthdrBug: true, tcpFlagsNeqCrash: false }],
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
