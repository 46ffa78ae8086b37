import type { Expr, Family, KeyType, Literal, Value } from './ast.js';
import { formatIpv6 } from './format-ipv6.js';

// The typed meaning of values: which nft datatype each left-hand side has, how a literal written
// against it is read, and how nft 1.0.6 prints it back. The widths and symbol tables below are
// what nft 1.0.6 reports with `nft describe EXPR` (src/proto.c `proto_*` templates, src/meta.c
// `meta_templates`, src/ct.c `ct_templates`, src/fib.c, src/rt.c, src/socket.c, src/exthdr.c,
// src/tcpopt.c and the symbol tables in src/datatype.c, src/proto.c, src/ct.c, src/meta.c).

/** An nft datatype: its name (`ipv4_addr`, `mark`…), width in bits and, for a concatenation,
 * its parts (then `name` is the parts' names joined by ` . `). Names are nft's, with two
 * additions nft keeps internal: `xinteger` (an integer printed in hex: raw payloads, nft's
 * `xinteger_type`) and `date` (`meta time`, whose nft name `time` clashes with the duration
 * type `time` used by `ct expiration`). */
export interface Datatype {
  readonly name: string;
  readonly bits: number;
  readonly parts?: readonly Datatype[];
}

type Symbols = readonly (readonly [name: string, value: number])[];

/** How a datatype's values are read and printed. */
type Shape =
  | 'integer' // decimal
  | 'xinteger' // 0x%x
  | 'mark' // 0x%08x (src/datatype.c mark_type basefmt)
  | 'symbolic' // a symbol from the table, else decimal (src/datatype.c symbolic_constant_print)
  | 'bitmask' // symbols for each bit joined by ',' (ct_state, tcp_flag…)
  | 'quoted-symbolic' // symbolic, printed in double quotes (day, devgroup, realm)
  | 'string' // printed in double quotes (ifname, string)
  | 'iface-index' // an interface name, quoted; a bare number stays a number (`fib … oif 0`)
  | 'ipv4'
  | 'ipv6'
  | 'ether'
  | 'inet-proto' // /etc/protocols names
  | 'inet-service' // printed as a number; names from /etc/services accepted on input
  | 'time' // a duration: 1d2h3m4s5ms
  | 'hour' // "HH:MM" / "HH:MM:SS"
  | 'date' // "YYYY-MM-DD HH:MM:SS", kept as written
  | 'classid' // tc handle major:minor, `root`, `none`
  | 'boolean'; // exists / missing

interface DatatypeInfo {
  readonly shape: Shape;
  readonly symbols?: Symbols;
}

// --- symbol tables (nft 1.0.6 `nft describe`) -----------------------------------------------

// src/proto.c dscp_type_tbl. Order matters: the first name of a value is the one printed.
const DSCP: Symbols = [
  ['cs0', 0x00], ['cs1', 0x08], ['cs2', 0x10], ['cs3', 0x18], ['cs4', 0x20], ['cs5', 0x28],
  ['cs6', 0x30], ['cs7', 0x38], ['df', 0x00], ['be', 0x00], ['lephb', 0x01], ['af11', 0x0a],
  ['af12', 0x0c], ['af13', 0x0e], ['af21', 0x12], ['af22', 0x14], ['af23', 0x16], ['af31', 0x1a],
  ['af32', 0x1c], ['af33', 0x1e], ['af41', 0x22], ['af42', 0x24], ['af43', 0x26], ['va', 0x2c],
  ['ef', 0x2e],
];

// src/proto.c ecn_type_tbl.
const ECN: Symbols = [['not-ect', 0], ['ect1', 1], ['ect0', 2], ['ce', 3]];

// src/proto.c tcp_flag_tbl.
const TCP_FLAG: Symbols = [
  ['fin', 0x01], ['syn', 0x02], ['rst', 0x04], ['psh', 0x08], ['ack', 0x10], ['urg', 0x20],
  ['ecn', 0x40], ['cwr', 0x80],
];

// src/proto.c icmp_type_tbl.
const ICMP_TYPE: Symbols = [
  ['echo-reply', 0], ['destination-unreachable', 3], ['source-quench', 4], ['redirect', 5],
  ['echo-request', 8], ['router-advertisement', 9], ['router-solicitation', 10],
  ['time-exceeded', 11], ['parameter-problem', 12], ['timestamp-request', 13],
  ['timestamp-reply', 14], ['info-request', 15], ['info-reply', 16],
  ['address-mask-request', 17], ['address-mask-reply', 18],
];

// src/datatype.c icmp_code_tbl.
const ICMP_CODE: Symbols = [
  ['net-unreachable', 0], ['host-unreachable', 1], ['prot-unreachable', 2],
  ['port-unreachable', 3], ['net-prohibited', 9], ['host-prohibited', 10],
  ['admin-prohibited', 13], ['frag-needed', 4],
];

// src/proto.c icmp6_type_tbl.
const ICMPV6_TYPE: Symbols = [
  ['destination-unreachable', 1], ['packet-too-big', 2], ['time-exceeded', 3],
  ['parameter-problem', 4], ['echo-request', 128], ['echo-reply', 129],
  ['mld-listener-query', 130], ['mld-listener-report', 131], ['mld-listener-done', 132],
  ['mld-listener-reduction', 132], ['nd-router-solicit', 133], ['nd-router-advert', 134],
  ['nd-neighbor-solicit', 135], ['nd-neighbor-advert', 136], ['nd-redirect', 137],
  ['router-renumbering', 138], ['ind-neighbor-solicit', 141], ['ind-neighbor-advert', 142],
  ['mld2-listener-report', 143],
];

// src/datatype.c icmpv6_code_tbl.
const ICMPV6_CODE: Symbols = [
  ['no-route', 0], ['admin-prohibited', 1], ['addr-unreachable', 3], ['port-unreachable', 4],
  ['policy-fail', 5], ['reject-route', 6],
];

// src/datatype.c icmpx_code_tbl (`reject with icmpx …`).
const ICMPX_CODE: Symbols = [
  ['port-unreachable', 1], ['admin-prohibited', 3], ['no-route', 0], ['host-unreachable', 2],
];

// src/proto.c igmp_type_tbl.
const IGMP_TYPE: Symbols = [
  ['membership-query', 0x11], ['membership-report-v1', 0x12], ['membership-report-v2', 0x16],
  ['membership-report-v3', 0x22], ['leave-group', 0x17],
];

// src/proto.c ethertype_tbl.
const ETHER_TYPE: Symbols = [
  ['ip', 0x0800], ['arp', 0x0806], ['ip6', 0x86dd], ['8021q', 0x8100], ['8021ad', 0x88a8],
  ['vlan', 0x8100],
];

// src/proto.c arpop_tbl.
const ARP_OP: Symbols = [
  ['request', 1], ['reply', 2], ['rrequest', 3], ['rreply', 4], ['inrequest', 8],
  ['inreply', 9], ['nak', 10],
];

// src/proto.c dccp_pkttype_tbl.
const DCCP_PKTTYPE: Symbols = [
  ['request', 0], ['response', 1], ['data', 2], ['ack', 3], ['dataack', 4], ['closereq', 5],
  ['close', 6], ['reset', 7], ['sync', 8], ['syncack', 9],
];

// src/datatype.c nfproto_tbl.
const NF_PROTO: Symbols = [['ipv4', 2], ['ipv6', 10]];

// src/meta.c arphrd_tbl.
const IFACE_TYPE: Symbols = [
  ['ether', 0x0001], ['ppp', 0x0200], ['ipip', 0x0300], ['ipip6', 0x0301],
  ['loopback', 0x0304], ['sit', 0x0308], ['ipgre', 0x030a],
];

// src/meta.c pkttype_type_tbl.
const PKT_TYPE: Symbols = [
  ['host', 0], ['unicast', 0], ['broadcast', 1], ['multicast', 2], ['other', 3],
];

// src/meta.c day_type_tbl.
const DAY: Symbols = [
  ['Sunday', 0], ['Monday', 1], ['Tuesday', 2], ['Wednesday', 3], ['Thursday', 4],
  ['Friday', 5], ['Saturday', 6],
];

// src/ct.c ct_state_tbl.
const CT_STATE: Symbols = [
  ['invalid', 0x01], ['new', 0x08], ['established', 0x02], ['related', 0x04],
  ['untracked', 0x40],
];

// src/ct.c ct_dir_tbl.
const CT_DIR: Symbols = [['original', 0], ['reply', 1]];

// src/ct.c ct_status_tbl.
const CT_STATUS: Symbols = [
  ['expected', 0x01], ['seen-reply', 0x02], ['assured', 0x04], ['confirmed', 0x08],
  ['snat', 0x10], ['dnat', 0x20], ['dying', 0x200],
];

// src/ct.c ct_events_tbl.
const CT_EVENT: Symbols = [
  ['new', 0x001], ['related', 0x002], ['destroy', 0x004], ['reply', 0x008], ['assured', 0x010],
  ['protoinfo', 0x020], ['helper', 0x040], ['mark', 0x080], ['seqadj', 0x100],
  ['secmark', 0x200], ['label', 0x400],
];

// src/fib.c addrtype_tbl.
const FIB_ADDRTYPE: Symbols = [
  ['unspec', 0], ['unicast', 1], ['local', 2], ['broadcast', 3], ['anycast', 4],
  ['multicast', 5], ['blackhole', 6], ['unreachable', 7], ['prohibit', 8],
];

// src/exthdr.c mh_type_tbl.
const MH_TYPE: Symbols = [
  ['binding-refresh-request', 0], ['home-test-init', 1], ['careof-test-init', 2],
  ['home-test', 3], ['careof-test', 4], ['binding-update', 5], ['binding-acknowledgement', 6],
  ['binding-error', 7], ['fast-binding-update', 8], ['fast-binding-acknowledgement', 9],
  ['fast-binding-advertisement', 10], ['experimental-mobility-header', 11],
  ['home-agent-switch-message', 12],
];

// /etc/protocols as Debian's netbase ships it (nft resolves inet_proto names with
// getprotobyname()/getprotobynumber(), src/datatype.c inet_protocol_type_print/parse). The
// aliases after the table are extra names nft accepts on input.
const INET_PROTO: Symbols = [
  ['ip', 0], ['icmp', 1], ['igmp', 2], ['ggp', 3], ['ipencap', 4], ['st', 5], ['tcp', 6],
  ['egp', 8], ['igp', 9], ['pup', 12], ['udp', 17], ['hmp', 20], ['xns-idp', 22], ['rdp', 27],
  ['iso-tp4', 29], ['dccp', 33], ['xtp', 36], ['ddp', 37], ['idpr-cmtp', 38], ['ipv6', 41],
  ['ipv6-route', 43], ['ipv6-frag', 44], ['idrp', 45], ['rsvp', 46], ['gre', 47], ['esp', 50],
  ['ah', 51], ['skip', 57], ['ipv6-icmp', 58], ['ipv6-nonxt', 59], ['ipv6-opts', 60],
  ['rspf', 73], ['vmtp', 81], ['eigrp', 88], ['ospf', 89], ['ax.25', 93], ['ipip', 94],
  ['etherip', 97], ['encap', 98], ['pim', 103], ['ipcomp', 108], ['vrrp', 112], ['l2tp', 115],
  ['isis', 124], ['sctp', 132], ['fc', 133], ['mobility-header', 135], ['udplite', 136],
  ['mpls-in-ip', 137], ['manet', 138], ['hip', 139], ['shim6', 140], ['wesp', 141],
  ['rohc', 142], ['ethernet', 143],
  // Aliases: /etc/protocols upper-case aliases and nft's scanner keywords for protocols
  // (`icmpv6`, `comp`) that the grammar turns into protocol values.
  ['IP', 0], ['ICMP', 1], ['IGMP', 2], ['TCP', 6], ['UDP', 17], ['IPv6', 41], ['GRE', 47],
  ['ESP', 50], ['AH', 51], ['IPv6-ICMP', 58], ['icmpv6', 58], ['SCTP', 132], ['UDPLite', 136],
  ['comp', 108], ['IPCOMP', 108], ['DCCP', 33],
];

// A reasonable subset of /etc/services (Debian netbase): names accepted for inet_service on
// input (src/datatype.c inet_service_type_parse uses getaddrinfo). nft 1.0.6 prints ports as
// numbers unless given -S, so this table is only read, never printed.
const SERVICES: Symbols = [
  ['tcpmux', 1], ['echo', 7], ['discard', 9], ['daytime', 13], ['ftp-data', 20], ['ftp', 21],
  ['ssh', 22], ['telnet', 23], ['smtp', 25], ['time', 37], ['whois', 43], ['tacacs', 49],
  ['domain', 53], ['bootps', 67], ['bootpc', 68], ['tftp', 69], ['gopher', 70], ['finger', 79],
  ['http', 80], ['www', 80], ['kerberos', 88], ['pop3', 110], ['sunrpc', 111], ['auth', 113],
  ['nntp', 119], ['ntp', 123], ['epmap', 135], ['netbios-ns', 137], ['netbios-dgm', 138],
  ['netbios-ssn', 139], ['imap2', 143], ['imap', 143], ['snmp', 161], ['snmp-trap', 162],
  ['xdmcp', 177], ['bgp', 179], ['ldap', 389], ['svrloc', 427], ['https', 443], ['snpp', 444],
  ['microsoft-ds', 445], ['kpasswd', 464], ['submissions', 465], ['isakmp', 500],
  ['exec', 512], ['login', 513], ['shell', 514], ['syslog', 514], ['printer', 515],
  ['talk', 517], ['ntalk', 518], ['route', 520], ['uucp', 540], ['klogin', 543],
  ['kshell', 544], ['dhcpv6-client', 546], ['dhcpv6-server', 547], ['afpovertcp', 548],
  ['rtsp', 554], ['nntps', 563], ['submission', 587], ['ipp', 631], ['ldaps', 636],
  ['tinc', 655], ['kerberos-adm', 749], ['domain-s', 853], ['rsync', 873], ['ftps-data', 989],
  ['ftps', 990], ['telnets', 992], ['imaps', 993], ['pop3s', 995], ['socks', 1080],
  ['openvpn', 1194], ['ms-sql-s', 1433], ['ms-sql-m', 1434], ['l2f', 1701], ['l2tp', 1701],
  ['radius', 1812], ['radius-acct', 1813], ['nfs', 2049], ['cvspserver', 2401],
  ['iscsi-target', 3260], ['mysql', 3306], ['ms-wbt-server', 3389], ['svn', 3690],
  ['epmd', 4369], ['ipsec-nat-t', 4500], ['sip', 5060], ['sip-tls', 5061],
  ['xmpp-client', 5222], ['xmpp-server', 5269], ['mdns', 5353], ['postgresql', 5432],
  ['amqps', 5671], ['amqp', 5672], ['x11', 6000], ['redis', 6379], ['ircs-u', 6697],
  ['http-alt', 8080], ['puppet', 8140], ['zabbix-agent', 10050], ['zabbix-trapper', 10051],
  ['hkp', 11371],
];

// /etc/iproute2/group and /etc/iproute2/rt_realms as iproute2 ships them (src/datatype.c
// devgroup_type / rt_realms via rt_symbol_table).
const DEVGROUP: Symbols = [['default', 0]];
const REALM: Symbols = [['cosmos', 0]];

// `exists` / `missing` (src/datatype.c boolean_tbl).
const BOOLEAN: Symbols = [['exists', 1], ['missing', 0]];

/** Every datatype nftsim types literals with, keyed by nft name. */
const DATATYPES: Readonly<Record<string, DatatypeInfo>> = {
  integer: { shape: 'integer' },
  xinteger: { shape: 'xinteger' },
  bitmask: { shape: 'xinteger' },
  string: { shape: 'string' },
  ifname: { shape: 'string' },
  // The kernel holds an index; a listing prints the interface name (all nftsim has), or the
  // number when no interface has it (src/datatype.c ifindex_type_print).
  iface_index: { shape: 'iface-index' },
  cgroupsv2: { shape: 'string' },
  ipv4_addr: { shape: 'ipv4' },
  ipv6_addr: { shape: 'ipv6' },
  ether_addr: { shape: 'ether' },
  inet_proto: { shape: 'inet-proto', symbols: INET_PROTO },
  inet_service: { shape: 'inet-service', symbols: SERVICES },
  mark: { shape: 'mark' },
  dscp: { shape: 'symbolic', symbols: DSCP },
  ecn: { shape: 'symbolic', symbols: ECN },
  tcp_flag: { shape: 'bitmask', symbols: TCP_FLAG },
  icmp_type: { shape: 'symbolic', symbols: ICMP_TYPE },
  icmp_code: { shape: 'symbolic', symbols: ICMP_CODE },
  icmpv6_type: { shape: 'symbolic', symbols: ICMPV6_TYPE },
  icmpv6_code: { shape: 'symbolic', symbols: ICMPV6_CODE },
  icmpx_code: { shape: 'symbolic', symbols: ICMPX_CODE },
  igmp_type: { shape: 'symbolic', symbols: IGMP_TYPE },
  ether_type: { shape: 'symbolic', symbols: ETHER_TYPE },
  arp_op: { shape: 'symbolic', symbols: ARP_OP },
  dccp_pkttype: { shape: 'symbolic', symbols: DCCP_PKTTYPE },
  nf_proto: { shape: 'symbolic', symbols: NF_PROTO },
  iface_type: { shape: 'symbolic', symbols: IFACE_TYPE },
  pkt_type: { shape: 'symbolic', symbols: PKT_TYPE },
  day: { shape: 'quoted-symbolic', symbols: DAY },
  hour: { shape: 'hour' },
  time: { shape: 'time' },
  date: { shape: 'date' },
  ct_state: { shape: 'bitmask', symbols: CT_STATE },
  ct_dir: { shape: 'symbolic', symbols: CT_DIR },
  ct_status: { shape: 'bitmask', symbols: CT_STATUS },
  ct_event: { shape: 'bitmask', symbols: CT_EVENT },
  ct_label: { shape: 'integer' },
  fib_addrtype: { shape: 'symbolic', symbols: FIB_ADDRTYPE },
  mh_type: { shape: 'symbolic', symbols: MH_TYPE },
  uid: { shape: 'integer' },
  gid: { shape: 'integer' },
  devgroup: { shape: 'quoted-symbolic', symbols: DEVGROUP },
  realm: { shape: 'quoted-symbolic', symbols: REALM },
  classid: { shape: 'classid' },
  boolean: { shape: 'boolean', symbols: BOOLEAN },
  // Object maps (`type ipv4_addr : quota`): their data are object names, printed quoted.
  counter: { shape: 'string' },
  quota: { shape: 'string' },
  limit: { shape: 'string' },
  'ct helper': { shape: 'string' },
  'ct timeout': { shape: 'string' },
  'ct expectation': { shape: 'string' },
  secmark: { shape: 'string' },
  synproxy: { shape: 'string' },
};

// --- left-hand sides ------------------------------------------------------------------------

type Typed = readonly [dtype: string, bits: number];

/** Payload fields, keyed `protocol field` (src/proto.c proto_* templates). */
const PAYLOAD_TYPES: Readonly<Record<string, Typed>> = {
  'ip version': ['integer', 4], 'ip hdrlength': ['integer', 4], 'ip dscp': ['dscp', 6],
  'ip ecn': ['ecn', 2], 'ip length': ['integer', 16], 'ip id': ['integer', 16],
  'ip frag-off': ['integer', 16], 'ip ttl': ['integer', 8], 'ip protocol': ['inet_proto', 8],
  'ip checksum': ['integer', 16], 'ip saddr': ['ipv4_addr', 32], 'ip daddr': ['ipv4_addr', 32],
  'ip6 version': ['integer', 4], 'ip6 dscp': ['dscp', 6], 'ip6 ecn': ['ecn', 2],
  'ip6 flowlabel': ['integer', 20], 'ip6 length': ['integer', 16],
  'ip6 nexthdr': ['inet_proto', 8], 'ip6 hoplimit': ['integer', 8],
  'ip6 saddr': ['ipv6_addr', 128], 'ip6 daddr': ['ipv6_addr', 128],
  'tcp sport': ['inet_service', 16], 'tcp dport': ['inet_service', 16],
  'tcp sequence': ['integer', 32], 'tcp ackseq': ['integer', 32], 'tcp doff': ['integer', 4],
  'tcp reserved': ['integer', 4], 'tcp flags': ['tcp_flag', 8], 'tcp window': ['integer', 16],
  'tcp checksum': ['integer', 16], 'tcp urgptr': ['integer', 16],
  'udp sport': ['inet_service', 16], 'udp dport': ['inet_service', 16],
  'udp length': ['integer', 16], 'udp checksum': ['integer', 16],
  'udplite sport': ['inet_service', 16], 'udplite dport': ['inet_service', 16],
  'udplite csumcov': ['integer', 16], 'udplite checksum': ['integer', 16],
  'icmp type': ['icmp_type', 8], 'icmp code': ['icmp_code', 8],
  'icmp checksum': ['integer', 16], 'icmp id': ['integer', 16],
  'icmp sequence': ['integer', 16], 'icmp gateway': ['ipv4_addr', 32],
  'icmp mtu': ['integer', 16],
  'icmpv6 type': ['icmpv6_type', 8], 'icmpv6 code': ['icmpv6_code', 8],
  'icmpv6 checksum': ['integer', 16], 'icmpv6 parameter-problem': ['integer', 32],
  'icmpv6 mtu': ['integer', 32], 'icmpv6 id': ['integer', 16],
  'icmpv6 sequence': ['integer', 16], 'icmpv6 max-delay': ['integer', 16],
  'icmpv6 taddr': ['ipv6_addr', 128], 'icmpv6 daddr': ['ipv6_addr', 128],
  'igmp type': ['igmp_type', 8], 'igmp mrt': ['integer', 8], 'igmp checksum': ['integer', 16],
  'igmp group': ['integer', 32],
  'ether daddr': ['ether_addr', 48], 'ether saddr': ['ether_addr', 48],
  'ether type': ['ether_type', 16],
  'vlan id': ['integer', 12], 'vlan dei': ['integer', 1], 'vlan cfi': ['integer', 1],
  'vlan pcp': ['integer', 3], 'vlan type': ['ether_type', 16],
  'arp htype': ['integer', 16], 'arp ptype': ['ether_type', 16], 'arp hlen': ['integer', 8],
  'arp plen': ['integer', 8], 'arp operation': ['arp_op', 16],
  'arp saddr ip': ['ipv4_addr', 32], 'arp saddr ether': ['ether_addr', 48],
  'arp daddr ip': ['ipv4_addr', 32], 'arp daddr ether': ['ether_addr', 48],
  'sctp sport': ['inet_service', 16], 'sctp dport': ['inet_service', 16],
  'sctp vtag': ['integer', 32], 'sctp checksum': ['integer', 32],
  'dccp sport': ['inet_service', 16], 'dccp dport': ['inet_service', 16],
  'dccp type': ['dccp_pkttype', 4],
  'ah nexthdr': ['inet_proto', 8], 'ah hdrlength': ['integer', 8],
  'ah reserved': ['integer', 16], 'ah spi': ['integer', 32], 'ah sequence': ['integer', 32],
  'esp spi': ['integer', 32], 'esp sequence': ['integer', 32],
  'comp nexthdr': ['inet_proto', 8], 'comp flags': ['bitmask', 8], 'comp cpi': ['integer', 16],
  'th sport': ['inet_service', 16], 'th dport': ['inet_service', 16],
  'gre version': ['integer', 3], 'gre flags': ['integer', 5], 'gre protocol': ['ether_type', 16],
};

/** Meta keys (src/meta.c meta_templates). */
const META_TYPES: Readonly<Record<string, Typed>> = {
  length: ['integer', 32], protocol: ['ether_type', 16], nfproto: ['nf_proto', 8],
  l4proto: ['inet_proto', 8], priority: ['classid', 32], mark: ['mark', 32],
  iif: ['iface_index', 32], iifname: ['ifname', 128], iiftype: ['iface_type', 16],
  oif: ['iface_index', 32], oifname: ['ifname', 128], oiftype: ['iface_type', 16],
  skuid: ['uid', 32], skgid: ['gid', 32], nftrace: ['integer', 1], rtclassid: ['realm', 32],
  ibrname: ['ifname', 128], obrname: ['ifname', 128], ibriport: ['ifname', 128],
  obriport: ['ifname', 128], pkttype: ['pkt_type', 8], cpu: ['integer', 32],
  iifgroup: ['devgroup', 32], oifgroup: ['devgroup', 32], cgroup: ['integer', 32],
  random: ['integer', 32], secpath: ['boolean', 8], ipsec: ['boolean', 8],
  ibrpvid: ['integer', 16], ibrvproto: ['ether_type', 16], time: ['date', 64], day: ['day', 8],
  hour: ['hour', 32], secmark: ['integer', 32], sdif: ['iface_index', 32],
  sdifname: ['ifname', 128], iifkind: ['ifname', 128], oifkind: ['ifname', 128],
  broute: ['integer', 1],
};

/** Conntrack keys (src/ct.c ct_templates). `saddr`/`daddr`/`proto-src`/`proto-dst` depend on
 * the family and are resolved in `ctType`. */
const CT_TYPES: Readonly<Record<string, Typed>> = {
  state: ['ct_state', 32], direction: ['ct_dir', 8], status: ['ct_status', 32],
  mark: ['mark', 32], expiration: ['time', 32], helper: ['string', 128],
  l3proto: ['nf_proto', 8], protocol: ['inet_proto', 8], bytes: ['integer', 64],
  packets: ['integer', 64], avgpkt: ['integer', 64], zone: ['integer', 16],
  label: ['ct_label', 128], id: ['integer', 32], 'proto-src': ['inet_service', 16],
  'proto-dst': ['inet_service', 16], event: ['ct_event', 32], secmark: ['integer', 32],
  count: ['integer', 32],
};

/** fib results (src/fib.c fib_result_typeof). */
const FIB_TYPES: Readonly<Record<string, Typed>> = {
  oif: ['iface_index', 32], oifname: ['ifname', 128], type: ['fib_addrtype', 32],
};

/** rt keys (src/rt.c rt_templates). `nexthop` depends on the family. */
const RT_TYPES: Readonly<Record<string, Typed>> = {
  classid: ['realm', 32], mtu: ['integer', 16], ipsec: ['boolean', 8],
};

/** socket keys (src/socket.c socket_templates). */
const SOCKET_TYPES: Readonly<Record<string, Typed>> = {
  transparent: ['integer', 1], mark: ['mark', 32], wildcard: ['integer', 1],
  cgroupv2: ['cgroupsv2', 64],
};

/** IPv6 extension header fields, keyed `header field` (src/exthdr.c exthdr_protocols). */
const EXTHDR_TYPES: Readonly<Record<string, Typed>> = {
  'hbh nexthdr': ['inet_proto', 8], 'hbh hdrlength': ['integer', 8],
  'rt nexthdr': ['inet_proto', 8], 'rt hdrlength': ['integer', 8], 'rt type': ['integer', 8],
  'rt seg-left': ['integer', 8], 'rt0 addr': ['ipv6_addr', 128], 'rt0 reserved': ['integer', 32],
  'rt2 addr': ['ipv6_addr', 128], 'rt2 reserved': ['integer', 32],
  'srh last-entry': ['integer', 8], 'srh flags': ['integer', 8], 'srh tag': ['integer', 16],
  'srh sid': ['ipv6_addr', 128],
  'frag nexthdr': ['inet_proto', 8], 'frag reserved': ['integer', 8],
  'frag frag-off': ['integer', 13], 'frag reserved2': ['integer', 2],
  'frag more-fragments': ['integer', 1], 'frag id': ['integer', 32],
  'dst nexthdr': ['inet_proto', 8], 'dst hdrlength': ['integer', 8],
  'mh nexthdr': ['inet_proto', 8], 'mh hdrlength': ['integer', 8], 'mh type': ['mh_type', 8],
  'mh reserved': ['integer', 8], 'mh checksum': ['integer', 16],
};

/** TCP option fields, keyed `option field` (src/tcpopt.c tcpopt_protocols). */
const TCP_OPTION_TYPES: Readonly<Record<string, Typed>> = {
  'maxseg size': ['integer', 16], 'window count': ['integer', 8],
  'timestamp tsval': ['integer', 32], 'timestamp tsecr': ['integer', 32],
  'sack left': ['integer', 32], 'sack right': ['integer', 32],
  'mptcp subtype': ['integer', 4],
};

/** The names nft gives TCP option kinds (src/tcpopt.c tcpopt_protocols): `tcp option 2` is
 * `tcp option maxseg`, as nft lists it. */
const TCP_OPTION_NAMES: Readonly<Record<string, string>> = {
  '0': 'eol', '1': 'nop', '2': 'maxseg', '3': 'window', '4': 'sack-perm', '5': 'sack', '8': 'timestamp', '19': 'md5sig', '30': 'mptcp', '34': 'fastopen',
};

/** A TCP option as nft names it: a kind number it has a name for becomes that name. */
export function tcpOptionName(option: string): string {
  return TCP_OPTION_NAMES[option] ?? option;
}

/** IPv4 option fields (src/ipopt.c). */
const IP_OPTION_TYPES: Readonly<Record<string, Typed>> = {
  type: ['integer', 8], length: ['integer', 8], value: ['integer', 16], ptr: ['integer', 8],
  addr: ['integer', 32],
};

// --- public API -----------------------------------------------------------------------------

function datatype(typed: Typed | undefined): Datatype | undefined {
  return typed ? { name: typed[0], bits: typed[1] } : undefined;
}

function addressType(family: 'ip' | 'ip6' | undefined): Datatype | undefined {
  if (family === 'ip') return { name: 'ipv4_addr', bits: 32 };
  if (family === 'ip6') return { name: 'ipv6_addr', bits: 128 };
  return undefined;
}

function ctType(key: string, family: 'ip' | 'ip6' | undefined): Datatype | undefined {
  if (key === 'saddr' || key === 'daddr' || key === 'ip saddr' || key === 'ip daddr') {
    return addressType(family ?? (key.startsWith('ip ') ? 'ip' : undefined));
  }
  return datatype(CT_TYPES[key]);
}

/** The datatype of an expression used as a left-hand side (or set key, or statement target);
 * undefined where nftsim does not know it. */
export function datatypeOf(expr: Expr): Datatype | undefined {
  switch (expr.kind) {
    case 'payload':
      return datatype(PAYLOAD_TYPES[`${expr.protocol} ${expr.field}`]);
    case 'raw-payload':
      return { name: 'xinteger', bits: expr.length };
    case 'exthdr':
      if (expr.field === undefined) return { name: 'boolean', bits: 1 };
      return datatype(EXTHDR_TYPES[`${expr.header} ${expr.field}`]);
    case 'tcp-option': {
      // `tcp option @KIND,OFFSET,LENGTH` loads LENGTH bits, as a raw payload does.
      const raw = /^@\d+,\d+,(\d+)$/.exec(expr.option);
      if (raw) return { name: 'integer', bits: Number(raw[1]) };
      if (expr.field === undefined) return { name: 'boolean', bits: 1 };
      return datatype(TCP_OPTION_TYPES[`${expr.option.replace(/\d+$/, '')} ${expr.field}`]) ??
        { name: 'integer', bits: 8 };
    }
    case 'ip-option':
      if (expr.field === undefined) return { name: 'boolean', bits: 1 };
      return datatype(IP_OPTION_TYPES[expr.field]);
    case 'sctp-chunk':
      if (expr.field === undefined) return { name: 'boolean', bits: 1 };
      return { name: 'integer', bits: 32 };
    case 'meta':
      return datatype(META_TYPES[expr.key]);
    case 'ct':
      return ctType(expr.key, expr.family);
    case 'fib':
      return datatype(FIB_TYPES[expr.result]);
    case 'rt':
      // Without a family, the table's (typeAgainst): `rt nexthop` is valid in ip and ip6 tables.
      if (expr.key === 'nexthop') return addressType(expr.family);
      return datatype(RT_TYPES[expr.key]);
    case 'socket':
      return datatype(SOCKET_TYPES[expr.key]);
    case 'osf':
      return { name: 'string', bits: 128 };
    case 'ipsec':
      if (expr.key === 'saddr' || expr.key === 'daddr') return addressType(expr.family ?? 'ip');
      return { name: 'integer', bits: 32 };
    case 'numgen':
    case 'hash':
      return { name: 'integer', bits: 32 };
    case 'binop':
      // nft keeps the left operand's type through masks and shifts (src/evaluate.c).
      return datatypeOf(expr.left);
    case 'concat': {
      const parts: Datatype[] = [];
      for (const part of expr.parts) {
        const t = datatypeOf(part);
        if (!t) return undefined;
        parts.push(t);
      }
      return {
        name: parts.map((p) => p.name).join(' . '),
        bits: parts.reduce((sum, p) => sum + p.bits, 0),
        parts,
      };
    }
    case 'map':
    case 'literal':
    case 'relational':
    case 'prefix':
    case 'range':
    case 'flag-list':
    case 'set':
    case 'set-ref':
    case 'wildcard':
    case 'verdict':
    case 'element':
      return undefined;
    default: {
      const exhaustive: never = expr;
      return exhaustive;
    }
  }
}

/** The datatype of a set's key or a map's data as declared: `type …` names, `typeof …` an
 * expression's. */
export function keyTypeDatatype(key: KeyType | undefined): Datatype | undefined {
  if (!key) return undefined;
  return key.kind === 'type' ? datatypeNamed(key.names) : datatypeOf(key.expr);
}

/** The datatype named in a set declaration (`type ipv4_addr . inet_service`); undefined when a
 * name is unknown. Only names are known here, so `bits` is 0. */
export function datatypeNamed(names: readonly string[]): Datatype | undefined {
  const parts: Datatype[] = [];
  for (const name of names) {
    if (!(name in DATATYPES)) return undefined;
    parts.push({ name, bits: 0 });
  }
  if (parts.length === 1) return parts[0];
  return { name: names.join(' . '), bits: 0, parts };
}

/** True for flag types whose values combine bits (`ct state`, `tcp flags`…), and for ct_label,
 * whose literal names one bit (`ct label 5` is bit 5, tested as `& 0x20 != 0`: nft
 * --debug=netlink): an implicit comparison with them tests bits. */
export function isBitmaskType(dtype: string): boolean {
  return DATATYPES[dtype]?.shape === 'bitmask' || dtype === 'ct_label';
}

/** True when nft prints values of `dtype` in double quotes (ifname, strings, days…). */
export function isQuotedType(dtype: string): boolean {
  const shape = DATATYPES[dtype]?.shape;
  return shape === 'string' || shape === 'iface-index' || shape === 'quoted-symbolic' || shape === 'hour' || shape === 'date';
}

/** `rhs` with every literal in it typed against `lhs` (sets, ranges, prefixes, flag lists,
 * concatenation parts, map keys and data, binop operands). Never throws: a literal that does
 * not read as the type keeps `dtype` and gets no `value`. */
export function typeAgainst(rhs: Expr, lhs: Expr, tableFamily?: Family): Expr {
  return typeWith(rhs, datatypeOf(lhs) ?? tableAddressType(lhs, tableFamily));
}

/** The address type of a conntrack address or a route's nexthop without a family of its own
 * (`ct original daddr`, `rt nexthop`) in a table of family ip or ip6, which it takes from the
 * table: nft lists the conntrack address so there, iptables-nft writes `--ctorigdst` so, and
 * nft reads both so. Elsewhere (inet, where nft wants the family named) none. */
function tableAddressType(lhs: Expr, family: Family | undefined): Datatype | undefined {
  const familyless = lhs.kind === 'ct' ? lhs.family === undefined && (lhs.key === 'saddr' || lhs.key === 'daddr') : lhs.kind === 'rt' && lhs.key === 'nexthop' && lhs.family === undefined;
  return familyless && (family === 'ip' || family === 'ip6') ? addressType(family) : undefined;
}

/** Like typeAgainst, with the datatype given directly (set declarations, statement targets). */
export function typeWith(rhs: Expr, type: Datatype | undefined): Expr {
  if (!type) return typeInner(rhs);
  switch (rhs.kind) {
    case 'literal':
      return type.parts ? rhs : typeLiteral(rhs, type.name);
    case 'prefix':
      return { ...rhs, expr: typeWith(rhs.expr, type) };
    case 'range':
      return { ...rhs, low: typeWith(rhs.low, type), high: typeWith(rhs.high, type) };
    case 'flag-list':
      return { ...rhs, items: rhs.items.map((i) => typeWith(i, type)) };
    case 'concat': {
      const parts = type.parts;
      // A value of other parts than the key's is no value of it, and stays untyped (nft 1.0.6
      // lists `{ 198.51.100.20 }` for an element of an address . port key).
      if (!parts || parts.length !== rhs.parts.length) return rhs;
      return {
        ...rhs,
        parts: rhs.parts.map((p, i) => {
          const partType = parts[i];
          return partType ? typeWith(p, partType) : p;
        }),
      };
    }
    case 'set':
      return { ...rhs, elements: rhs.elements.map((e) => typeSetElement(e, type, undefined)) };
    case 'element':
      return typeSetElement(rhs, type, undefined);
    case 'binop':
      return typeBinop(rhs, type);
    case 'map':
      return typeMap(rhs, type);
    case 'payload':
    case 'raw-payload':
    case 'exthdr':
    case 'tcp-option':
    case 'ip-option':
    case 'sctp-chunk':
    case 'meta':
    case 'ct':
    case 'fib':
    case 'rt':
    case 'socket':
    case 'osf':
    case 'ipsec':
    case 'numgen':
    case 'hash':
    case 'relational':
    case 'set-ref':
    case 'wildcard':
    case 'verdict':
      return typeInner(rhs);
    default: {
      const exhaustive: never = rhs;
      return exhaustive;
    }
  }
}

/** Types the literals inside an expression that carries its own left-hand sides (`meta mark &
 * 0xff`, `ip saddr map { … }`, `jhash ip saddr mod 2`). */
export function typeInner(expr: Expr): Expr {
  switch (expr.kind) {
    case 'binop':
      return typeBinop(expr, datatypeOf(expr.left));
    case 'map':
      return typeMap(expr, undefined);
    case 'relational':
      return { ...expr, left: typeInner(expr.left), right: typeAgainst(expr.right, expr.left) };
    case 'hash':
      return expr.expr ? { ...expr, expr: typeInner(expr.expr) } : expr;
    case 'concat':
      return { ...expr, parts: expr.parts.map(typeInner) };
    default:
      return expr;
  }
}

function typeBinop(binop: Extract<Expr, { kind: 'binop' }>, type: Datatype | undefined): Expr {
  // An operand that is itself an operation, as a constant chain `(fin | syn | rst) | ack` is,
  // takes the same type: it reaches the chain's leftmost literal.
  const left = binop.left.kind === 'literal' || binop.left.kind === 'binop' ? typeWith(binop.left, type) : typeInner(binop.left);
  const shift = binop.op === '<<' || binop.op === '>>';
  // Shift amounts are plain integers; mask and or operands take the left operand's type.
  const rightType = shift ? { name: 'integer', bits: 32 } : (datatypeOf(binop.left) ?? type);
  return { ...binop, left, right: typeWith(binop.right, rightType) };
}

function typeMap(map: Extract<Expr, { kind: 'map' }>, dataType: Datatype | undefined): Expr {
  const keyType = datatypeOf(map.key);
  const key = typeInner(map.key);
  if (map.map.kind === 'set-ref') return { ...map, key };
  return {
    ...map,
    key,
    map: {
      ...map.map,
      elements: map.map.elements.map((e) => typeSetElement(e, keyType, map.vmap ? undefined : dataType)),
    },
  };
}

type Element = Extract<Expr, { kind: 'element' }>;

/** A set or map element typed against its key and data types (a named set's declaration). */
export function typeSetElement(el: Element, keyType: Datatype | undefined, dataType: Datatype | undefined): Element {
  const key = keyType ? typeWith(el.key, keyType) : el.key;
  if (!el.data) return { ...el, key };
  return { ...el, key, data: dataType ? typeWith(el.data, dataType) : typeInner(el.data) };
}

/** `lit` read as a value of `dtype`: sets `dtype`, and `value` when the spelling is valid for
 * the type (an unknown symbol keeps `dtype` and gets no value). */
export function typeLiteral(lit: Literal, dtype: string): Literal {
  const value = readValue(lit, dtype);
  // One literal per case rather than spreads: iptables lowering types a literal or more per
  // rule of a 240,000-line dump, and a spread copy costs a second object (and its own shape).
  const { span, text } = lit;
  if (lit.invalidType) return { kind: 'literal', span, text, invalidType: true, dtype, ...(value && { value }) };
  if (lit.quoted) {
    return value === undefined ? { kind: 'literal', span, text, dtype, quoted: true } : { kind: 'literal', span, text, dtype, quoted: true, value };
  }
  return value === undefined ? { kind: 'literal', span, text, dtype } : { kind: 'literal', span, text, dtype, value };
}

function lookupSymbol(symbols: Symbols | undefined, name: string): number | undefined {
  if (!symbols) return undefined;
  for (const [n, v] of symbols) if (n === name) return v;
  return undefined;
}

function symbolName(symbols: Symbols | undefined, value: number): string | undefined {
  if (!symbols) return undefined;
  for (const [n, v] of symbols) if (v === value) return n;
  return undefined;
}

const DECIMAL = /^[0-9]+$/;
const HEX = /^0x[0-9a-fA-F]+$/;

// Values are immutable, so the small integers (ports, protocol numbers, marks below 0x10000)
// are one object each rather than one per literal: a large iptables dump types a few per rule.
const SMALL_INTEGERS: Value[] = [];

function integerValue(n: number): Value {
  if (n >= 0 && n < 0x10000 && Number.isInteger(n)) return (SMALL_INTEGERS[n] ??= { type: 'integer', n });
  return { type: 'integer', n };
}

// A function, not a closure in readValue: that would be allocated for every literal typed.
function optionalIntegerValue(n: number | undefined): Value | undefined {
  return n === undefined ? undefined : integerValue(n);
}

/** Reads a decimal or 0x-hex integer; big values become `bigint` hex. */
function readInteger(text: string): Value | undefined {
  if (DECIMAL.test(text)) {
    const n = Number(text);
    if (Number.isSafeInteger(n)) return integerValue(n);
    return { type: 'bigint', hex: BigInt(text).toString(16) };
  }
  if (HEX.test(text)) {
    const n = Number.parseInt(text.slice(2), 16);
    if (Number.isSafeInteger(n)) return integerValue(n);
    return { type: 'bigint', hex: text.slice(2).replace(/^0+(?=.)/, '').toLowerCase() };
  }
  return undefined;
}

function readNumber(text: string): number | undefined {
  const v = readInteger(text);
  return v?.type === 'integer' ? v.n : undefined;
}

/** A dotted-quad IPv4 address (four decimal octets of 1–3 digits, each at most 255) in nft's
 * form, or undefined. Read by hand rather than with a regex: typing a large iptables dump reads
 * one or more addresses per rule, and a match would make an array and four strings each time. */
function readIpv4(text: string): string | undefined {
  let canonical = true;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 0x2e; /* a final '.' closes the last octet */
    if (c >= 0x30 && c <= 0x39) {
      if (digits === 1 && octet === 0) canonical = false;
      octet = octet * 10 + (c - 0x30);
      if (++digits > 3) return undefined;
    } else if (c === 0x2e && digits > 0 && octet <= 255 && (i < text.length ? dots < 3 : dots === 3)) {
      dots++;
      octet = 0;
      digits = 0;
    } else return undefined;
  }
  // Addresses are nearly always written as nft prints them: the text itself, not a copy per
  // literal.
  return canonical ? text : text.split('.').map(Number).join('.');
}

/** Parses an IPv6 address (optionally in brackets, optionally with a dotted IPv4 tail) into
 * its 8 groups, or undefined. */
function ipv6Groups(text: string): number[] | undefined {
  let s = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const lastColon = s.lastIndexOf(':');
  if (lastColon >= 0 && s.includes('.', lastColon)) {
    const v4 = readIpv4(s.slice(lastColon + 1));
    if (!v4) return undefined;
    const [a = 0, b = 0, c = 0, d = 0] = v4.split('.').map(Number);
    s = `${s.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const head = readGroups(halves[0]);
  const tail = halves.length === 2 ? readGroups(halves[1]) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  return [...head, ...new Array<number>(missing).fill(0), ...tail];
}

function readGroups(text: string | undefined): number[] | undefined {
  if (!text) return [];
  const out: number[] = [];
  for (const g of text.split(':')) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    out.push(Number.parseInt(g, 16));
  }
  return out;
}

function readEther(text: string): string | undefined {
  const parts = text.split(':');
  if (parts.length !== 6 || parts.some((p) => !/^[0-9a-fA-F]{1,2}$/.test(p))) return undefined;
  return parts.map((p) => p.toLowerCase().padStart(2, '0')).join(':');
}

const DURATION_UNITS: readonly (readonly [string, number])[] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
  ['ms', 1],
];

/** A duration in milliseconds: `1d2h3m4s5ms`, or a bare number of seconds. */
function readDuration(text: string): number | undefined {
  if (DECIMAL.test(text)) return Number(text) * 1000;
  const re = /(\d+)(ms|d|h|m|s)/gy;
  let total = 0;
  let pos = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const unit = DURATION_UNITS.find(([u]) => u === m?.[2]);
    total += Number(m[1]) * (unit ? unit[1] : 0);
    pos = re.lastIndex;
  }
  return pos === text.length && pos > 0 ? total : undefined;
}

/** nft's time_type print (src/datatype.c time_print): days, hours, minutes, seconds, ms. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const [unit, size] of DURATION_UNITS) {
    const n = Math.floor(rest / size);
    rest -= n * size;
    if (n > 0) out += `${n}${unit}`;
  }
  return out;
}

function readHour(text: string): number | undefined {
  const m = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/.exec(text);
  if (!m) return undefined;
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3] ?? 0);
}

function formatHour(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  const hm = `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`;
  return s ? `${hm}:${String(s).padStart(2, '0')}` : hm;
}

function readClassid(text: string): number | undefined {
  if (text === 'root') return 0xffffffff;
  if (text === 'none') return 0;
  const m = /^([0-9a-fA-F]{0,4}):([0-9a-fA-F]{0,4})$/.exec(text);
  if (!m) return readNumber(text);
  return Number.parseInt(m[1] || '0', 16) * 0x10000 + Number.parseInt(m[2] || '0', 16);
}

/** src/datatype.c tchandle_type_print. */
function formatClassid(n: number): string {
  if (n === 0xffffffff) return 'root';
  if (n === 0) return 'none';
  const major = Math.floor(n / 0x10000);
  const minor = n % 0x10000;
  return `${major.toString(16)}:${minor.toString(16)}`;
}

function readBitmask(text: string, symbols: Symbols | undefined): number | undefined {
  const sym = lookupSymbol(symbols, text);
  return sym ?? readNumber(text);
}

function readValue(lit: Literal, dtype: string): Value | undefined {
  const info = DATATYPES[dtype];
  if (!info) return undefined;
  const text = lit.text;
  if (lit.invalidType) return readBits(text, info.shape);
  switch (info.shape) {
    case 'integer':
    case 'xinteger':
    case 'mark':
      return readInteger(text);
    case 'symbolic':
    case 'quoted-symbolic':
    case 'inet-proto':
    case 'inet-service':
      return optionalIntegerValue(lookupSymbol(info.symbols, text) ?? readNumber(text));
    case 'bitmask':
      return optionalIntegerValue(readBitmask(text, info.symbols));
    case 'boolean': {
      const b = lookupSymbol(info.symbols, text) ?? readNumber(text);
      return b === undefined ? undefined : { type: 'boolean', b: b !== 0 };
    }
    case 'string':
      return { type: 'string', s: text };
    case 'iface-index':
      return !lit.quoted && DECIMAL.test(text) ? { type: 'integer', n: Number(text) } : { type: 'string', s: text };
    case 'ipv4': {
      const addr = readIpv4(text);
      return addr ? { type: 'ipv4', addr } : undefined;
    }
    case 'ipv6': {
      const groups = ipv6Groups(text);
      return groups ? { type: 'ipv6', addr: formatIpv6(groups) } : undefined;
    }
    case 'ether': {
      const addr = readEther(text);
      return addr ? { type: 'ether', addr } : undefined;
    }
    case 'time':
      return optionalIntegerValue(readDuration(text));
    case 'hour':
      return optionalIntegerValue(readHour(text));
    case 'date':
      return { type: 'string', s: text };
    case 'classid':
      return optionalIntegerValue(readClassid(text));
    default: {
      const exhaustive: never = info.shape;
      return exhaustive;
    }
  }
}

/** A value nft listed as its bits (Literal.invalidType): the key's bytes as one big-endian
 * number, which for a number is the number and for an address its octets. */
function readBits(text: string, shape: Shape): Value | undefined {
  if (!DECIMAL.test(text) && !HEX.test(text)) return undefined;
  const bits = BigInt(text);
  const octets = (count: number): number[] | undefined => {
    if (bits >> BigInt(8 * count) !== 0n) return undefined;
    return Array.from({ length: count }, (_, i) => Number((bits >> BigInt(8 * (count - 1 - i))) & 0xffn));
  };
  switch (shape) {
    case 'ipv4': {
      const o = octets(4);
      return o && { type: 'ipv4', addr: o.join('.') };
    }
    case 'ipv6': {
      const o = octets(16);
      return o && { type: 'ipv6', addr: formatIpv6(Array.from({ length: 8 }, (_, i) => o[2 * i]! * 256 + o[2 * i + 1]!)) };
    }
    case 'ether': {
      const o = octets(6);
      return o && { type: 'ether', addr: o.map((b) => b.toString(16).padStart(2, '0')).join(':') };
    }
    case 'string':
    case 'iface-index':
    case 'date':
    case 'boolean':
      return undefined;
    default:
      return readInteger(text);
  }
}

// Symbol tables nft declares with BASE_HEXADECIMAL (`nft describe` says "in hexadecimal"), with
// the width in bytes nft pads a value without a name to (`0x02` for a dscp).
const HEX_SYMBOL_TABLES: ReadonlyMap<string, number> = new Map([
  ['dscp', 1], ['ecn', 1], ['tcp_flag', 1], ['ether_type', 2], ['arp_op', 2], ['dccp_pkttype', 1],
  ['iface_type', 2], ['ct_state', 4], ['ct_status', 4], ['ct_event', 4],
]);

function quote(s: string): string {
  return `"${s}"`;
}

export interface FormatValueOptions {
  /** Symbols as numbers, as nft prints the ends of a range (src/expression.c range_expr_print
   * sets NFT_CTX_OUTPUT_NUMERIC_ALL): decimal, or `0x…` for hex-based symbol tables. */
  readonly numeric?: boolean;
}

/** How nft 1.0.6 prints a literal: from its typed value when it has one, else its spelling
 * (quoted if it was written quoted). */
export function formatValue(lit: Literal, options: FormatValueOptions = {}): string {
  const info = lit.dtype ? DATATYPES[lit.dtype] : undefined;
  const value = lit.value;
  if (!info || !value) return lit.quoted ? quote(lit.text) : lit.invalidType ? `${lit.text} [invalid type]` : lit.text;
  if (value.type === 'bigint') return `0x${value.hex}`;
  if (value.type === 'ipv4' || value.type === 'ipv6' || value.type === 'ether') return value.addr;
  if (value.type === 'boolean') return value.b ? 'exists' : 'missing';
  if (value.type === 'string') {
    return info.shape === 'string' || info.shape === 'iface-index' || info.shape === 'date' ? quote(value.s) : value.s;
  }
  const n = value.n;
  if (options.numeric && info.symbols && info.shape !== 'boolean' && info.shape !== 'inet-service') {
    return HEX_SYMBOL_TABLES.has(lit.dtype ?? '') ? `0x${n.toString(16)}` : String(n);
  }
  const hexBytes = HEX_SYMBOL_TABLES.get(lit.dtype ?? '');
  switch (info.shape) {
    case 'integer':
    case 'inet-service':
    case 'iface-index':
      return String(n);
    case 'xinteger':
      return `0x${n.toString(16)}`;
    case 'mark':
      return `0x${n.toString(16).padStart(8, '0')}`;
    case 'symbolic':
    case 'inet-proto':
    case 'boolean': {
      const name = symbolName(info.symbols, n);
      if (name !== undefined) return name;
      return hexBytes ? `0x${n.toString(16).padStart(hexBytes * 2, '0')}` : String(n);
    }
    case 'quoted-symbolic': {
      const name = symbolName(info.symbols, n);
      return name === undefined ? String(n) : quote(name);
    }
    case 'bitmask':
      return formatBits(n, info.symbols);
    case 'time':
      return formatDuration(n);
    case 'hour':
      return quote(formatHour(n));
    case 'classid':
      return formatClassid(n);
    case 'string':
    case 'date':
    case 'ipv4':
    case 'ipv6':
    case 'ether':
      return lit.quoted ? quote(lit.text) : lit.text;
    default: {
      const exhaustive: never = info.shape;
      return exhaustive;
    }
  }
}

/** A bitmask value as nft lists it in a flag list: the names of its bits joined by `,`, in
 * the symbol table's order; bits without a name in hex. */
function formatBits(n: number, symbols: Symbols | undefined): string {
  if (n === 0) return symbolName(symbols, 0) ?? '0x0';
  const names: string[] = [];
  let rest = n;
  for (const [name, bit] of symbols ?? []) {
    if (bit !== 0 && (rest & bit) === bit) {
      names.push(name);
      rest &= ~bit;
    }
  }
  if (rest !== 0) names.push(`0x${rest.toString(16)}`);
  return names.join(',');
}

/** The symbols a datatype knows (for completion, diagnostics and the simulator). */
export function datatypeSymbols(dtype: string): Symbols {
  return DATATYPES[dtype]?.symbols ?? [];
}

/** True when nftsim knows `dtype` by name. */
export function isKnownDatatype(dtype: string): boolean {
  return dtype in DATATYPES;
}

// --- iptables spellings ---------------------------------------------------------------------

/** An ICMP type (and optional code) as iptables names it: `--icmp-type host-unreachable` is
 * type 3 code 1. */
export interface IptablesIcmp {
  readonly type: number;
  readonly code?: number;
}

type IcmpNames = readonly (readonly [name: string, type: number, code?: number])[];

// iptables extensions/libxt_icmp.c (icmp_codes), including its aliases `pong`, `ping`,
// `ttl-exceeded`.
const IPTABLES_ICMP: IcmpNames = [
  ['echo-reply', 0], ['pong', 0], ['destination-unreachable', 3], ['network-unreachable', 3, 0],
  ['host-unreachable', 3, 1], ['protocol-unreachable', 3, 2], ['port-unreachable', 3, 3],
  ['fragmentation-needed', 3, 4], ['source-route-failed', 3, 5], ['network-unknown', 3, 6],
  ['host-unknown', 3, 7], ['network-prohibited', 3, 9], ['host-prohibited', 3, 10],
  ['TOS-network-unreachable', 3, 11], ['TOS-host-unreachable', 3, 12],
  ['communication-prohibited', 3, 13], ['host-precedence-violation', 3, 14],
  ['precedence-cutoff', 3, 15], ['source-quench', 4], ['redirect', 5],
  ['network-redirect', 5, 0], ['host-redirect', 5, 1], ['TOS-network-redirect', 5, 2],
  ['TOS-host-redirect', 5, 3], ['echo-request', 8], ['ping', 8], ['router-advertisement', 9],
  ['router-solicitation', 10], ['time-exceeded', 11], ['ttl-exceeded', 11],
  ['ttl-zero-during-transit', 11, 0], ['ttl-zero-during-reassembly', 11, 1],
  ['parameter-problem', 12], ['ip-header-bad', 12, 0], ['required-option-missing', 12, 1],
  ['timestamp-request', 13], ['timestamp-reply', 14], ['address-mask-request', 17],
  ['address-mask-reply', 18],
];

// iptables extensions/libip6t_icmp6.c (icmpv6_codes).
const IPTABLES_ICMPV6: IcmpNames = [
  ['destination-unreachable', 1], ['no-route', 1, 0], ['communication-prohibited', 1, 1],
  ['beyond-scope', 1, 2], ['address-unreachable', 1, 3], ['port-unreachable', 1, 4],
  ['failed-policy', 1, 5], ['reject-route', 1, 6], ['packet-too-big', 2], ['time-exceeded', 3],
  ['ttl-exceeded', 3], ['ttl-zero-during-transit', 3, 0], ['ttl-zero-during-reassembly', 3, 1],
  ['parameter-problem', 4], ['bad-header', 4, 0], ['unknown-header-type', 4, 1],
  ['unknown-option', 4, 2], ['echo-request', 128], ['ping', 128], ['echo-reply', 129],
  ['pong', 129], ['mld-listener-query', 130], ['mld-listener-report', 131],
  ['mld-listener-done', 132], ['router-solicitation', 133], ['router-advertisement', 134],
  ['neighbour-solicitation', 135], ['neighbor-solicitation', 135],
  ['neighbour-advertisement', 136], ['neighbor-advertisement', 136], ['redirect', 137],
];

/** Reads an iptables `--icmp-type` / `--icmpv6-type` argument: a name, `TYPE` or
 * `TYPE/CODE`. Undefined when it is neither. */
export function readIptablesIcmpType(text: string, family: 'ip' | 'ip6'): IptablesIcmp | undefined {
  const named = (family === 'ip' ? IPTABLES_ICMP : IPTABLES_ICMPV6).find(([n]) => n === text);
  if (named) return named[2] === undefined ? { type: named[1] } : { type: named[1], code: named[2] };
  const m = /^(\d+)(?:\/(\d+))?$/.exec(text);
  if (!m) return undefined;
  return m[2] === undefined ? { type: Number(m[1]) } : { type: Number(m[1]), code: Number(m[2]) };
}

// REJECT --reject-with names (iptables extensions/libipt_REJECT.c, libip6t_REJECT.c) and the
// nft `reject with` they become.
const IPTABLES_REJECT: Readonly<Record<string, { readonly with: string; readonly code?: string }>> = {
  'icmp-net-unreachable': { with: 'icmp', code: 'net-unreachable' },
  'icmp-host-unreachable': { with: 'icmp', code: 'host-unreachable' },
  'icmp-port-unreachable': { with: 'icmp', code: 'port-unreachable' },
  'icmp-proto-unreachable': { with: 'icmp', code: 'prot-unreachable' },
  'icmp-net-prohibited': { with: 'icmp', code: 'net-prohibited' },
  'icmp-host-prohibited': { with: 'icmp', code: 'host-prohibited' },
  'icmp-admin-prohibited': { with: 'icmp', code: 'admin-prohibited' },
  'tcp-reset': { with: 'tcp reset' },
  'icmp6-no-route': { with: 'icmpv6', code: 'no-route' },
  'no-route': { with: 'icmpv6', code: 'no-route' },
  'icmp6-adm-prohibited': { with: 'icmpv6', code: 'admin-prohibited' },
  'adm-prohibited': { with: 'icmpv6', code: 'admin-prohibited' },
  'icmp6-addr-unreachable': { with: 'icmpv6', code: 'addr-unreachable' },
  'addr-unreach': { with: 'icmpv6', code: 'addr-unreachable' },
  'icmp6-port-unreachable': { with: 'icmpv6', code: 'port-unreachable' },
  'port-unreach': { with: 'icmpv6', code: 'port-unreachable' },
  'icmp6-policy-fail': { with: 'icmpv6', code: 'policy-fail' },
  'policy-fail': { with: 'icmpv6', code: 'policy-fail' },
  'icmp6-reject-route': { with: 'icmpv6', code: 'reject-route' },
  'reject-route': { with: 'icmpv6', code: 'reject-route' },
};

/** The nft reject an iptables `--reject-with NAME` stands for. */
export function readIptablesRejectWith(name: string): { readonly with: string; readonly code?: string } | undefined {
  return IPTABLES_REJECT[name];
}
