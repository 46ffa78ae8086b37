// The iptables extensions nftsim reads with typed values: for each match (`-m NAME`) and target
// (`-j NAME`), its options, their aliases and the type of their argument. Facts from the
// iptables 1.8.9 sources, extensions/libxt_*.c, libipt_*.c and libip6t_*.c (the xt_option_entry
// tables and the *_save functions, which print the first name of each entry here). An extension
// missing here still parses, with its options kept raw and an `unsupported` warning.

/** How an option's arguments are read and typed (see XtOptionValue in src/model/xt-option.ts). */
export type ValueType =
  | 'flag' // no argument
  | 'string'
  | 'number' // unsigned integer: decimal, 0x hex, 0 octal (strtoul base 0)
  | 'u64' // 64-bit unsigned decimal (quota bytes)
  | 'u64-range' // n, n:m, :m, n: of 64-bit counts (connbytes; a single value has no upper end)
  | 'number-range' // n or n:m
  | 'port-range' // port or service, p, p:q, :q, p:
  | 'port-list' // multiport: p[,p:q]…
  | 'names' // comma-separated keywords, checked against `allowed` when given
  | 'mark' // value[/mask]
  | 'devgroup' // value[/mask], or a name of /etc/iproute2/group (`default` is 0)
  | 'tos' // value[/mask] or a name of RFC 1349 (libxtables XTTYPE_TOSMASK)
  | 'address' // address[/prefix or /netmask]
  | 'address-range' // from-to
  | 'tcp-flags' // two arguments: mask and compare lists
  | 'probability' // 0.0 … 1.0
  | 'rate' // n[/second|minute|hour|day]
  | 'icmp-type'
  | 'icmpv6-type'
  | 'nat-range' // [addr[-addr]][:port[-port][/base]]
  | 'nat-ports' // port[-port]
  | 'interface' // name, `+` suffix as wildcard
  | 'ipset' // two arguments: set name and src/dst flags
  | 'pair'; // two arguments kept as strings (sctp --chunk-types)

export interface OptionSpec {
  /** Canonical long name (without `--`), as iptables-save prints it. */
  readonly name: string;
  readonly aliases: readonly string[];
  readonly type: ValueType;
  readonly allowed?: readonly string[];
}

export interface ExtensionSpec {
  readonly name: string;
  /** Option lookup by every spelling (canonical and aliases), without `--`. */
  readonly options: ReadonlyMap<string, OptionSpec>;
}

/** Targets of one family only (the ipt_ and ip6t_ extensions): elsewhere the name is a chain's,
 * and one given options says which family a dump is. */
export const FAMILY_TARGETS: Readonly<Record<string, 'ipv4' | 'ipv6'>> = { TTL: 'ipv4', ECN: 'ipv4', CLUSTERIP: 'ipv4', HL: 'ipv6', SNPT: 'ipv6', DNPT: 'ipv6' };

/** Targets whose kernel module allows them in one table only (struct xt_target .table):
 * xt_check_target refuses the rule in any other, and iptables-restore fails (checked with
 * iptables-nft 1.8.9 on Linux 6.18). */
export const TARGET_TABLES: Readonly<Record<string, string>> = {
  DNAT: 'nat', SNAT: 'nat', MASQUERADE: 'nat', REDIRECT: 'nat', NETMAP: 'nat',
  CT: 'raw', NOTRACK: 'raw',
  TCPOPTSTRIP: 'mangle', TPROXY: 'mangle', TTL: 'mangle', HL: 'mangle', DSCP: 'mangle', TOS: 'mangle', ECN: 'mangle', CHECKSUM: 'mangle',
  REJECT: 'filter',
};

/** `'dport|destination-port port-range'`: names separated by `|`, then the value type. */
function defineExtension(name: string, entries: readonly string[], allowed: Record<string, readonly string[]> = {}): ExtensionSpec {
  const options = new Map<string, OptionSpec>();
  for (const entry of entries) {
    const [names, type] = entry.split(' ') as [string, ValueType];
    const [canonical, ...aliases] = names.split('|') as [string, ...string[]];
    const spec: OptionSpec = { name: canonical, aliases, type, allowed: allowed[canonical] };
    for (const n of [canonical, ...aliases]) options.set(n, spec);
  }
  return { name, options };
}

// Keyword lists, from the kernel uapi headers / libxt_conntrack.c, libxt_state.c, libxt_addrtype.c.
const CT_STATES = ['INVALID', 'NEW', 'ESTABLISHED', 'RELATED', 'UNTRACKED', 'SNAT', 'DNAT'];
const STATES = ['INVALID', 'NEW', 'ESTABLISHED', 'RELATED', 'UNTRACKED'];
const CT_STATUS = ['NONE', 'EXPECTED', 'SEEN_REPLY', 'ASSURED', 'CONFIRMED'];
const ADDR_TYPES = ['UNSPEC', 'UNICAST', 'LOCAL', 'BROADCAST', 'ANYCAST', 'MULTICAST', 'BLACKHOLE', 'UNREACHABLE', 'PROHIBIT', 'THROW', 'NAT', 'XRESOLVE'];

const PORTS = ['sport|source-port port-range', 'dport|destination-port port-range'];

const MATCHES: readonly ExtensionSpec[] = [
  defineExtension('tcp', [...PORTS, 'tcp-flags tcp-flags', 'syn flag', 'tcp-option number']),
  defineExtension('udp', PORTS),
  defineExtension('udplite', PORTS),
  defineExtension('sctp', [...PORTS, 'chunk-types pair']),
  defineExtension('dccp', [...PORTS, 'dccp-types names', 'dccp-option number']),
  defineExtension('icmp', ['icmp-type icmp-type']),
  defineExtension('icmp6', ['icmpv6-type icmpv6-type']),
  defineExtension('comment', ['comment string']),
  defineExtension(
    'conntrack',
    [
      'ctstate names',
      'ctproto string',
      'ctorigsrc address',
      'ctorigdst address',
      'ctreplsrc address',
      'ctrepldst address',
      'ctorigsrcport port-range',
      'ctorigdstport port-range',
      'ctreplsrcport port-range',
      'ctrepldstport port-range',
      'ctstatus names',
      'ctexpire number-range',
      'ctdir names',
    ],
    { ctstate: CT_STATES, ctstatus: CT_STATUS, ctdir: ['ORIGINAL', 'REPLY'] },
  ),
  defineExtension('state', ['state names'], { state: STATES }),
  defineExtension('mark', ['mark mark']),
  defineExtension('connmark', ['mark mark']),
  defineExtension('multiport', ['sports|source-ports port-list', 'dports|destination-ports port-list', 'ports port-list']),
  defineExtension(
    'addrtype',
    ['src-type names', 'dst-type names', 'limit-iface-in flag', 'limit-iface-out flag'],
    { 'src-type': ADDR_TYPES, 'dst-type': ADDR_TYPES },
  ),
  defineExtension('statistic', ['mode names', 'probability probability', 'every number', 'packet number'], { mode: ['random', 'nth'] }),
  defineExtension('set', [
    'match-set|set ipset',
    'return-nomatch flag',
    'update-counters flag',
    'update-subcounters flag',
    'packets-eq number',
    'packets-lt number',
    'packets-gt number',
    'bytes-eq number',
    'bytes-lt number',
    'bytes-gt number',
  ]),
  defineExtension('physdev', [
    'physdev-in interface',
    'physdev-out interface',
    'physdev-is-in flag',
    'physdev-is-out flag',
    'physdev-is-bridged flag',
  ]),
  defineExtension('owner', ['uid-owner string', 'gid-owner string', 'socket-exists flag', 'suppl-groups flag']),
  defineExtension('socket', ['transparent flag', 'nowildcard flag', 'restore-skmark flag']),
  defineExtension('iprange', ['src-range address-range', 'dst-range address-range']),
  defineExtension('limit', ['limit rate', 'limit-burst number']),
  defineExtension('recent', [
    'name string',
    'set flag',
    'rcheck flag',
    'update flag',
    'remove flag',
    'seconds number',
    'reap flag',
    'hitcount number',
    'rttl flag',
    'rsource flag',
    'rdest flag',
    'mask address',
  ]),
  defineExtension('length', ['length number-range']),
  defineExtension('frag', ['fragid number-range', 'fraglen number', 'fragres flag', 'fragfirst flag', 'fragmore flag', 'fraglast flag']),
  defineExtension('pkttype', ['pkt-type names'], { 'pkt-type': ['unicast', 'broadcast', 'multicast', 'host', 'otherhost'] }),
  defineExtension('tcpmss', ['mss number-range']),
  defineExtension('hashlimit', [
    'hashlimit-upto|hashlimit rate',
    'hashlimit-above rate',
    'hashlimit-burst string',
    'hashlimit-mode names',
    'hashlimit-name string',
    'hashlimit-htable-size number',
    'hashlimit-htable-max number',
    'hashlimit-htable-gcinterval number',
    'hashlimit-htable-expire number',
    'hashlimit-srcmask number',
    'hashlimit-dstmask number',
    'hashlimit-rate-match flag',
    'hashlimit-rate-interval number',
  ]),
  defineExtension('connlimit', ['connlimit-upto number', 'connlimit-above number', 'connlimit-mask number', 'connlimit-saddr flag', 'connlimit-daddr flag']),
  defineExtension('mac', ['mac-source string']),
  defineExtension('ttl', ['ttl-eq number', 'ttl-lt number', 'ttl-gt number']),
  defineExtension('hl', ['hl-eq number', 'hl-lt number', 'hl-gt number']),
  defineExtension('dscp', ['dscp number', 'dscp-class string']),
  defineExtension('tos', ['tos tos']),
  defineExtension('helper', ['helper string']),
  defineExtension('string', ['algo string', 'from number', 'to number', 'string string', 'hex-string string', 'icase flag']),
  defineExtension('u32', ['u32 string']),
  defineExtension('bpf', ['bytecode string', 'object-pinned string']),
  defineExtension('rpfilter', ['loose flag', 'validmark flag', 'accept-local flag', 'invert flag']),
  defineExtension('cgroup', ['path string', 'cgroup number']),
  defineExtension('quota', ['quota u64']),
  defineExtension('connbytes', ['connbytes u64-range', 'connbytes-dir string', 'connbytes-mode string']),
  defineExtension('esp', ['espspi number-range']),
  defineExtension('ah', ['ahspi number-range', 'ahlen number-range', 'ahres flag']),
  defineExtension('realm', ['realm mark']),
  defineExtension('connlabel', ['label string', 'set flag']),
  defineExtension('cluster', ['cluster-total-nodes number', 'cluster-local-node number', 'cluster-local-nodemask number', 'cluster-hash-seed number']),
  defineExtension('devgroup', ['src-group devgroup', 'dst-group devgroup']),
  defineExtension('cpu', ['cpu number']),
  defineExtension('nfacct', ['nfacct-name string']),
  defineExtension('ecn', ['ecn-tcp-cwr flag', 'ecn-tcp-ece flag', 'ecn-ip-ect number']),
  defineExtension('policy', [
    'dir names',
    'pol names',
    'strict flag',
    'reqid number',
    'spi number',
    'proto string',
    'mode names',
    'tunnel-src address',
    'tunnel-dst address',
    'next flag',
  ]),
];

const TARGETS: readonly ExtensionSpec[] = [
  defineExtension('REJECT', ['reject-with string']),
  defineExtension('LOG', [
    'log-level string',
    'log-prefix string',
    'log-tcp-sequence flag',
    'log-tcp-options flag',
    'log-ip-options flag',
    'log-uid flag',
    'log-macdecode flag',
  ]),
  defineExtension('NFLOG', ['nflog-group number', 'nflog-prefix string', 'nflog-range number', 'nflog-size number', 'nflog-threshold number']),
  defineExtension('MARK', ['set-xmark mark', 'set-mark mark', 'and-mark number', 'or-mark number', 'xor-mark number']),
  defineExtension('CONNMARK', [
    'set-xmark mark',
    'set-mark mark',
    'save-mark flag',
    'restore-mark flag',
    'and-mark number',
    'or-mark number',
    'xor-mark number',
    'mask number',
    'nfmask number',
    'ctmask number',
    'left-shift-mark number',
    'right-shift-mark number',
  ]),
  defineExtension('MASQUERADE', ['to-ports nat-ports', 'random flag', 'random-fully flag']),
  defineExtension('SNAT', ['to-source|to nat-range', 'random flag', 'random-fully flag', 'persistent flag']),
  defineExtension('DNAT', ['to-destination|to nat-range', 'random flag', 'persistent flag']),
  defineExtension('REDIRECT', ['to-ports nat-ports', 'random flag']),
  defineExtension('NETMAP', ['to address']),
  defineExtension('NOTRACK', []),
  defineExtension('CT', ['notrack flag', 'zone string', 'zone-orig string', 'zone-reply string', 'helper string', 'ctevents names', 'expevents names', 'timeout string']),
  defineExtension('TPROXY', ['on-port number', 'on-ip address', 'tproxy-mark mark']),
  defineExtension('TCPMSS', ['set-mss number', 'clamp-mss-to-pmtu flag']),
  defineExtension('TCPOPTSTRIP', ['strip-options string']),
  defineExtension('HMARK', [
    'hmark-tuple string',
    'hmark-src-prefix number',
    'hmark-dst-prefix number',
    'hmark-sport-mask number',
    'hmark-dport-mask number',
    'hmark-spi-mask number',
    'hmark-sport number',
    'hmark-dport number',
    'hmark-spi number',
    'hmark-proto-mask number',
    'hmark-rnd number',
    'hmark-mod number',
    'hmark-offset number',
  ]),
  defineExtension('CHECKSUM', ['checksum-fill flag']),
  defineExtension('TRACE', []),
  defineExtension('NFQUEUE', ['queue-num number', 'queue-balance number-range', 'queue-bypass flag', 'fail-open flag', 'queue-cpu-fanout flag']),
  defineExtension('SET', ['add-set ipset', 'del-set ipset', 'map-set ipset', 'exist flag', 'timeout number', 'map-mark flag', 'map-prio flag', 'map-queue flag']),
  defineExtension('AUDIT', ['type string']),
  defineExtension('CLASSIFY', ['set-class string']),
  defineExtension('DSCP', ['set-dscp number', 'set-dscp-class string']),
  defineExtension('TOS', ['set-tos tos', 'and-tos number', 'or-tos number', 'xor-tos number']),
  defineExtension('ECN', ['ecn-tcp-remove flag', 'ecn-tcp-ece number', 'ecn-tcp-cwr number', 'ecn-ip-ect number']),
  defineExtension('TTL', ['ttl-set number', 'ttl-dec number', 'ttl-inc number']),
  defineExtension('HL', ['hl-set number', 'hl-dec number', 'hl-inc number']),
  defineExtension('SECMARK', ['selctx string']),
  defineExtension('CONNSECMARK', ['save flag', 'restore flag']),
  defineExtension('TEE', ['gateway address', 'oif string']),
];

function indexByName(specs: readonly ExtensionSpec[]): ReadonlyMap<string, ExtensionSpec> {
  return new Map(specs.map((s) => [s.name, s]));
}

export const MATCH_EXTENSIONS = indexByName(MATCHES);
export const TARGET_EXTENSIONS = indexByName(TARGETS);

/** The built-in verdicts of iptables (libiptc's standard target names). */
export const VERDICTS: ReadonlySet<string> = new Set(['ACCEPT', 'DROP', 'RETURN', 'QUEUE']);

/** Protocols whose match iptables loads implicitly after `-p NAME` (xshared.c
 * load_proto), so `-p tcp --dport 22` works without `-m tcp`. */
export const IMPLICIT_PROTOCOL_MATCHES: ReadonlyMap<string, string> = new Map([
  ['tcp', 'tcp'],
  ['udp', 'udp'],
  ['udplite', 'udplite'],
  ['sctp', 'sctp'],
  ['dccp', 'dccp'],
  ['icmp', 'icmp'],
  ['icmpv6', 'icmp6'],
  ['ipv6-icmp', 'icmp6'],
]);
