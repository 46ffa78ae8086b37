// Typing of option arguments: from the spelling iptables accepts to the meaning the lowering and
// the simulator use. A parse failure is a message (reported on the argument), never a throw.

import { parseUnsigned, U64_MAX, type AddressSpec, type NatRange, type NumberRange, type RateUnit, type XtOptionValue } from '../../model/xt-option.js';
import { datatypeSymbols } from '../../model/datatypes.js';
import type { OptionSpec } from './iptables-extensions.js';

export type Parsed<T> = T | { readonly error: string };

export function isParseError<T>(x: Parsed<T>): x is { readonly error: string } {
  return typeof x === 'object' && x !== null && 'error' in x;
}

/** Arguments an option of this type takes. */
export function argumentCount(spec: OptionSpec): number {
  switch (spec.type) {
    case 'flag':
      return 0;
    case 'tcp-flags':
    case 'ipset':
    case 'pair':
      return 2;
    default:
      return 1;
  }
}

// The service names iptables-save never prints (it prints numbers) but hand-written restore
// files use; from Debian's /etc/services (netbase).
const SERVICES: ReadonlyMap<string, number> = new Map([
  ['ftp-data', 20], ['ftp', 21], ['ssh', 22], ['telnet', 23], ['smtp', 25], ['domain', 53],
  ['bootps', 67], ['bootpc', 68], ['tftp', 69], ['http', 80], ['www', 80], ['kerberos', 88],
  ['pop3', 110], ['sunrpc', 111], ['auth', 113], ['ntp', 123], ['netbios-ns', 137],
  ['netbios-dgm', 138], ['netbios-ssn', 139], ['imap2', 143], ['imap', 143], ['snmp', 161],
  ['snmp-trap', 162], ['ldap', 389], ['https', 443], ['microsoft-ds', 445], ['isakmp', 500],
  ['syslog', 514], ['submission', 587], ['ldaps', 636], ['imaps', 993], ['pop3s', 995],
  ['openvpn', 1194], ['mysql', 3306], ['postgresql', 5432], ['ipsec-nat-t', 4500],
]);

export function parsePort(text: string): number | undefined {
  return parseUnsigned(text, 65535) ?? SERVICES.get(text.toLowerCase());
}

/** `p`, `p:q`, `:q`, `p:` (the open end is 0 / 65535), as xtables_parse_port_range. */
export function parsePortRange(text: string, max = 65535, parseOne: (s: string) => number | undefined = parsePort): Parsed<NumberRange> {
  const colon = text.indexOf(':');
  if (colon < 0) {
    const n = parseOne(text);
    return n === undefined ? { error: `bad port or number "${text}"` } : { from: n, to: n };
  }
  const a = text.slice(0, colon);
  const b = text.slice(colon + 1);
  const from = a === '' ? 0 : parseOne(a);
  const to = b === '' ? max : parseOne(b);
  if (from === undefined || to === undefined) return { error: `bad range "${text}"` };
  if (from > to) return { error: `range "${text}" is inverted` };
  return { from, to };
}

/** A netmask in dotted (or IPv6) form to its prefix length when contiguous. */
function maskToPrefix(mask: string): number | undefined {
  const bits = mask.includes(':') ? ipv6ToBits(mask) : ipv4ToBits(mask);
  if (bits === undefined) return undefined;
  const ones = bits.indexOf('0');
  const prefix = ones < 0 ? bits.length : ones;
  return bits.slice(prefix).includes('1') ? undefined : prefix;
}

function ipv4ToBits(a: string): string | undefined {
  const parts = a.split('.');
  if (parts.length !== 4) return undefined;
  let bits = '';
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return undefined;
    bits += Number(p).toString(2).padStart(8, '0');
  }
  return bits;
}

function ipv6ToBits(a: string): string | undefined {
  if (!isIpv6(a)) return undefined;
  const [head, tail] = a.includes('::') ? (a.split('::') as [string, string]) : [a, undefined];
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return all.map((g) => parseInt(g, 16).toString(2).padStart(16, '0')).join('');
}

const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

export function isIpv4(a: string): boolean {
  return IPV4.test(a);
}

export function isIpv6(a: string): boolean {
  if (!/^[0-9a-f:]+$/i.test(a) || a.split('::').length > 2) return false;
  const groups = a.split(':').filter((g) => g !== '');
  if (groups.some((g) => g.length > 4)) return false;
  return a.includes('::') ? groups.length < 8 : groups.length === 8;
}

/** `10.0.0.0/8`, `10.1.2.3/255.255.0.0`, `fd00::/64`, `example.org`. */
export function parseAddress(text: string): Parsed<AddressSpec> {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const suffix = slash < 0 ? undefined : text.slice(slash + 1);
  const type = isIpv4(address) ? 'ipv4' : isIpv6(address) ? 'ipv6' : 'hostname';
  // A name of digits and dots only is a mistyped address, not a host name.
  if (type === 'hostname' && (!/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(address) || /^[\d.]+$/.test(address))) {
    return { error: `bad address "${text}"` };
  }
  if (suffix === undefined) return { text, type, address };
  const max = type === 'ipv6' ? 128 : 32;
  if (/^\d+$/.test(suffix)) {
    const prefixLength = Number(suffix);
    if (prefixLength > max) return { error: `prefix length ${suffix} is more than ${max}` };
    return { text, type, address, prefixLength };
  }
  const prefixLength = maskToPrefix(suffix);
  if (prefixLength === undefined && ipv4ToBits(suffix) === undefined && ipv6ToBits(suffix) === undefined) {
    return { error: `bad netmask "${suffix}"` };
  }
  return prefixLength === undefined ? { text, type, address, mask: suffix } : { text, type, address, prefixLength };
}

/** `v`, `v/m` (xtables_parse_mark_mask). */
export function parseMark(text: string): Parsed<{ value: number; mask?: number }> {
  const slash = text.indexOf('/');
  const value = parseUnsigned(slash < 0 ? text : text.slice(0, slash));
  const mask = slash < 0 ? undefined : parseUnsigned(text.slice(slash + 1));
  if (value === undefined || (slash >= 0 && mask === undefined)) return { error: `bad mark "${text}"` };
  return mask === undefined ? { value } : { value, mask };
}

/** libxtables tos_symbol_names. */
const TOS_NAMES: ReadonlyMap<string, number> = new Map([
  ['minimize-delay', 0x10],
  ['maximize-throughput', 0x08],
  ['maximize-reliability', 0x04],
  ['minimize-cost', 0x02],
  ['normal-service', 0x00],
]);

/** `v`, `v/m` or a name (xtopt_parse_tosmask): a number alone has the mask 0xff, a name the
 * tos match's and TOS target's (revision 1) `.max`, 0x3f, which leaves ECN alone (checked with
 * iptables 1.8.9, whose save prints `0x10/0x3f` for `Minimize-Delay`). */
function parseTos(text: string): Parsed<XtOptionValue> {
  const named = TOS_NAMES.get(text.toLowerCase());
  if (named !== undefined) return { type: 'tos', value: named, mask: 0x3f };
  const slash = text.indexOf('/');
  const value = parseUnsigned(slash < 0 ? text : text.slice(0, slash), 0xff);
  const mask = slash < 0 ? 0xff : parseUnsigned(text.slice(slash + 1), 0xff);
  return value === undefined || mask === undefined ? { error: `bad TOS value "${text}"` } : { type: 'tos', value, mask };
}

// libxt_limit.c parse_rate: the unit is matched by prefix of its full name.
const RATE_UNITS: readonly (readonly [string, RateUnit])[] = [
  ['second', 'second'],
  ['minute', 'minute'],
  ['hour', 'hour'],
  ['day', 'day'],
];

export function parseRate(text: string): Parsed<{ count: number; unit: RateUnit } | 'bytes'> {
  const m = /^(\d+)(?:\/([a-z]+))?$/i.exec(text);
  if (m === null) {
    // hashlimit byte rates (`512kb/s`) are kept as written.
    return /^\d+[kmg]?b\/[a-z]+$/i.test(text) ? 'bytes' : { error: `bad rate "${text}"` };
  }
  const count = Number(m[1]);
  const unitText = (m[2] ?? 'second').toLowerCase();
  const unit = RATE_UNITS.find(([full]) => full.startsWith(unitText))?.[1];
  return unit === undefined ? { error: `bad rate unit "${unitText}"` } : { count, unit };
}

// ICMP type names, libipt_icmp.c / libxt_icmp.h icmp_codes: name → type, code range.
type IcmpName = readonly [string, number, number, number];
const ICMP_NAMES: readonly IcmpName[] = [
  ['any', 0xff, 0, 0xff],
  ['echo-reply', 0, 0, 0xff], ['pong', 0, 0, 0xff],
  ['destination-unreachable', 3, 0, 0xff],
  ['network-unreachable', 3, 0, 0], ['host-unreachable', 3, 1, 1], ['protocol-unreachable', 3, 2, 2],
  ['port-unreachable', 3, 3, 3], ['fragmentation-needed', 3, 4, 4], ['source-route-failed', 3, 5, 5],
  ['network-unknown', 3, 6, 6], ['host-unknown', 3, 7, 7], ['network-prohibited', 3, 9, 9],
  ['host-prohibited', 3, 10, 10], ['TOS-network-unreachable', 3, 11, 11], ['TOS-host-unreachable', 3, 12, 12],
  ['communication-prohibited', 3, 13, 13], ['host-precedence-violation', 3, 14, 14], ['precedence-cutoff', 3, 15, 15],
  ['source-quench', 4, 0, 0xff],
  ['redirect', 5, 0, 0xff], ['network-redirect', 5, 0, 0], ['host-redirect', 5, 1, 1],
  ['TOS-network-redirect', 5, 2, 2], ['TOS-host-redirect', 5, 3, 3],
  ['echo-request', 8, 0, 0xff], ['ping', 8, 0, 0xff],
  ['router-advertisement', 9, 0, 0xff], ['router-solicitation', 10, 0, 0xff],
  ['time-exceeded', 11, 0, 0xff], ['ttl-exceeded', 11, 0, 0xff],
  ['ttl-zero-during-transit', 11, 0, 0], ['ttl-zero-during-reassembly', 11, 1, 1],
  ['parameter-problem', 12, 0, 0xff], ['ip-header-bad', 12, 0, 0], ['required-option-missing', 12, 1, 1],
  ['timestamp-request', 13, 0, 0xff], ['timestamp-reply', 14, 0, 0xff],
  ['address-mask-request', 17, 0, 0xff], ['address-mask-reply', 18, 0, 0xff],
];

// libip6t_icmp6.c icmpv6_codes.
const ICMPV6_NAMES: readonly IcmpName[] = [
  ['destination-unreachable', 1, 0, 0xff], ['no-route', 1, 0, 0], ['communication-prohibited', 1, 1, 1],
  ['beyond-scope', 1, 2, 2], ['address-unreachable', 1, 3, 3], ['port-unreachable', 1, 4, 4],
  ['failed-policy', 1, 5, 5], ['reject-route', 1, 6, 6],
  ['packet-too-big', 2, 0, 0xff],
  ['time-exceeded', 3, 0, 0xff], ['ttl-exceeded', 3, 0, 0xff],
  ['ttl-zero-during-transit', 3, 0, 0], ['ttl-zero-during-reassembly', 3, 1, 1],
  ['parameter-problem', 4, 0, 0xff], ['bad-header', 4, 0, 0], ['unknown-header-type', 4, 1, 1], ['unknown-option', 4, 2, 2],
  ['echo-request', 128, 0, 0xff], ['ping', 128, 0, 0xff], ['echo-reply', 129, 0, 0xff], ['pong', 129, 0, 0xff],
  ['mld-listener-query', 130, 0, 0xff], ['mld-listener-report', 131, 0, 0xff],
  ['mld-listener-done', 132, 0, 0xff], ['mld-listener-reduction', 132, 0, 0xff],
  ['router-solicitation', 133, 0, 0xff], ['router-advertisement', 134, 0, 0xff],
  ['neighbour-solicitation', 135, 0, 0xff], ['neighbor-solicitation', 135, 0, 0xff],
  ['neighbour-advertisement', 136, 0, 0xff], ['neighbor-advertisement', 136, 0, 0xff],
  ['redirect', 137, 0, 0xff],
];

function parseIcmpType(text: string, names: readonly IcmpName[]): Parsed<XtOptionValue> {
  const named = names.find(([n]) => n.toLowerCase() === text.toLowerCase());
  if (named) return { type: 'icmp-type', name: named[0], icmpType: named[1], code: { from: named[2], to: named[3] } };
  // `type`, `type/code` or `type/min:max` (libxt_icmp.h ipt_parse_icmp / icmp6 likewise).
  const m = /^(\d+)(?:\/(\d+)(?::(\d+))?)?$/.exec(text);
  const from = Number(m?.[2] ?? 0);
  const to = m?.[3] === undefined ? (m?.[2] === undefined ? 0xff : from) : Number(m[3]);
  if (m === null || Number(m[1]) > 255 || to > 255 || from > to) return { error: `unknown ICMP type "${text}"` };
  return { type: 'icmp-type', icmpType: Number(m[1]), code: { from, to } };
}

/** `[addr[-addr]][:port[-port][/base]]`, IPv6 addresses in brackets when ports follow
 * (libxt_DNAT.c parse_to). */
export function parseNatRange(text: string): Parsed<NatRange> {
  let addressPart: string;
  let portPart: string | undefined;
  const bracketed = /^\[([^\]]+)\](?:-\[([^\]]+)\])?(?::(.*))?$/.exec(text);
  if (bracketed) {
    addressPart = bracketed[2] === undefined ? bracketed[1]! : `${bracketed[1]}-${bracketed[2]}`;
    portPart = bracketed[3];
  } else if ((text.match(/:/g)?.length ?? 0) >= 2) {
    addressPart = text; // bare IPv6, no ports
  } else {
    const colon = text.indexOf(':');
    addressPart = colon < 0 ? text : text.slice(0, colon);
    portPart = colon < 0 ? undefined : text.slice(colon + 1);
  }
  const range: { -readonly [K in keyof NatRange]: NatRange[K] } = {};
  if (addressPart !== '') {
    const [from, to, extra] = addressPart.split('-');
    const valid = (a: string | undefined) => a !== undefined && (isIpv4(a) || isIpv6(a));
    if (!valid(from) || (to !== undefined && !valid(to)) || extra !== undefined) return { error: `bad address range "${addressPart}"` };
    range.addressFrom = from;
    range.addressTo = to ?? from;
  }
  if (portPart !== undefined) {
    const ports = parseNatPorts(portPart);
    if (isParseError(ports)) return ports;
    Object.assign(range, ports);
  }
  return range;
}

/** `port[-port][/base]` (`--to-ports` of MASQUERADE/REDIRECT, the port part of SNAT/DNAT).
 * iptables-restore refuses a base after one port ("Garbage after port value") and a base of 0
 * ("Port `0' not valid"), but iptables-save prints both (a range of one port with a base, and
 * SNAT's and MASQUERADE's shifts, which keep no base), so a capture may hold them: read. */
export function parseNatPorts(text: string): Parsed<NatRange> {
  // A service name may hold `-` (`ftp-data`): a whole name wins over a range.
  const slash = text.indexOf('/');
  const ports = slash < 0 ? text : text.slice(0, slash);
  const m = parsePort(ports) !== undefined ? [text, ports, undefined, slash < 0 ? undefined : text.slice(slash + 1)] : /^([^-:/]+)(?:[-:]([^/]+))?(?:\/(.+))?$/.exec(text);
  const from = m ? parsePort(m[1]!) : undefined;
  const to = m?.[2] === undefined ? from : parsePort(m[2]);
  const base = m?.[3] === undefined ? undefined : parsePort(m[3]);
  if (!m || from === undefined || to === undefined || from > to || (m[3] !== undefined && base === undefined)) {
    return { error: `bad port range "${text}"` };
  }
  return base === undefined ? { portFrom: from, portTo: to } : { portFrom: from, portTo: to, portBase: base };
}

// libxt_tcp.c tcp_flag_names.
const TCP_FLAGS = new Set(['FIN', 'SYN', 'RST', 'PSH', 'ACK', 'URG', 'ALL', 'NONE']);

function parseTcpFlagList(text: string): Parsed<string[]> {
  const names = text.split(',').map((n) => n.toUpperCase());
  const bad = names.find((n) => !TCP_FLAGS.has(n));
  return bad === undefined ? names : { error: `unknown TCP flag "${bad}"` };
}

function parseNames(text: string, allowed: readonly string[] | undefined): Parsed<XtOptionValue> {
  const names = text.split(',');
  if (allowed === undefined) return { type: 'names', names };
  const canonical: string[] = [];
  for (const n of names) {
    const found = allowed.find((a) => a.toLowerCase() === n.toLowerCase());
    if (found === undefined) return { error: `unknown value "${n}" (expected ${allowed.join(', ')})` };
    canonical.push(found);
  }
  return { type: 'names', names: canonical };
}

/** `n`, `n:m`, `:m` (from 0), `n:` (to the largest count), as XTTYPE_UINT64RC reads them (each
 * end as strtoull base 0 does: `0x` hex, a leading 0 octal); iptables refuses the ends out of
 * order ("3 should be less than 2"). */
function parseU64Range(text: string): Parsed<XtOptionValue> {
  const read = (s: string, open: bigint): bigint | undefined => {
    if (s === '') return open;
    const n = /^0x[0-9a-f]+$/i.test(s) ? BigInt(s) : /^0[0-7]+$/.test(s) ? BigInt(`0o${s.slice(1)}`) : /^\d+$/.test(s) ? BigInt(s) : undefined;
    return n !== undefined && n <= U64_MAX ? n : undefined;
  };
  const colon = text.indexOf(':');
  const from = read(colon < 0 ? text : text.slice(0, colon), colon < 0 ? -1n : 0n);
  const to = colon < 0 ? undefined : read(text.slice(colon + 1), U64_MAX);
  if (from === undefined || from < 0n || (colon >= 0 && to === undefined)) return { error: `bad range "${text}"` };
  if (to !== undefined && from > to) return { error: `range "${text}" is inverted` };
  return to === undefined ? { type: 'u64-range', from: from.toString() } : { type: 'u64-range', from: from.toString(), to: to.toString() };
}

function wrapRange(r: Parsed<NumberRange>): Parsed<XtOptionValue> {
  return isParseError(r) ? r : { type: 'range', from: r.from, to: r.to };
}

/** Every flag option has this value: one object, not one per option of a large dump. */
const FLAG_VALUE: XtOptionValue = { type: 'flag' };

/** Types `args` (as many as argumentCount(spec)) by the option's spec. */
export function parseOptionValue(spec: OptionSpec, args: readonly string[]): Parsed<XtOptionValue> {
  const a = args[0] ?? '';
  switch (spec.type) {
    case 'flag':
      return FLAG_VALUE;
    case 'string':
      return { type: 'string', s: a };
    case 'number': {
      const n = parseUnsigned(a);
      return n === undefined ? { error: `bad number "${a}"` } : { type: 'number', n };
    }
    case 'u64':
      return /^\d+$/.test(a) && BigInt(a) < 2n ** 64n ? { type: 'u64', decimal: BigInt(a).toString() } : { error: `bad number "${a}"` };
    case 'u64-range':
      return parseU64Range(a);
    case 'number-range':
      return wrapRange(parsePortRange(a, 0xffffffff, (s) => parseUnsigned(s)));
    case 'port-range':
      return wrapRange(parsePortRange(a));
    case 'port-list': {
      const items: NumberRange[] = [];
      for (const part of a.split(',')) {
        const r = parsePortRange(part);
        if (isParseError(r)) return r;
        items.push(r);
      }
      return { type: 'ranges', items };
    }
    case 'names':
      return parseNames(a, spec.allowed);
    case 'mark': {
      const m = parseMark(a);
      return isParseError(m) ? m : { type: 'mark', ...m };
    }
    case 'devgroup': {
      // iptables-save prints a group by its name in /etc/iproute2/group, which Debian's gives 0
      // as `default`; other names are the node's, kept as written.
      if (a === 'default') return { type: 'mark', value: 0 };
      const m = parseMark(a);
      if (!isParseError(m)) return { type: 'mark', ...m };
      return /^[A-Za-z_][\w.-]*$/.test(a) ? { type: 'string', s: a } : m;
    }
    case 'tos':
      return parseTos(a);
    case 'address': {
      const addr = parseAddress(a);
      return isParseError(addr) ? addr : { type: 'address', address: addr };
    }
    case 'address-range': {
      const [from, to, extra] = a.split('-');
      const valid = (x: string | undefined) => x !== undefined && (isIpv4(x) || isIpv6(x));
      if (!valid(from) || (to !== undefined && !valid(to)) || extra !== undefined) return { error: `bad address range "${a}"` };
      return { type: 'address-range', from: from!, to: to ?? from! };
    }
    case 'tcp-flags': {
      const mask = parseTcpFlagList(a);
      const compare = parseTcpFlagList(args[1] ?? '');
      if (isParseError(mask)) return mask;
      if (isParseError(compare)) return compare;
      return { type: 'tcp-flags', mask, compare };
    }
    case 'probability': {
      const p = Number(a);
      return a === '' || !Number.isFinite(p) || p < 0 || p > 1 ? { error: `bad probability "${a}"` } : { type: 'probability', p };
    }
    case 'rate': {
      const r = parseRate(a);
      if (isParseError(r)) return r;
      return r === 'bytes' ? { type: 'string', s: a } : { type: 'rate', count: r.count, unit: r.unit };
    }
    case 'icmp-type':
      return parseIcmpType(a, ICMP_NAMES);
    case 'icmpv6-type':
      return parseIcmpType(a, ICMPV6_NAMES);
    case 'nat-range': {
      const r = parseNatRange(a);
      return isParseError(r) ? r : { type: 'nat-range', range: r };
    }
    case 'nat-ports': {
      const r = parseNatPorts(a);
      return isParseError(r) ? r : { type: 'nat-range', range: r };
    }
    case 'interface':
      return a.endsWith('+') ? { type: 'interface', name: a.slice(0, -1), wildcard: true } : { type: 'interface', name: a, wildcard: false };
    case 'ipset': {
      const directions = (args[1] ?? '').split(',');
      if (directions.some((d) => d !== 'src' && d !== 'dst')) return { error: `bad set flags "${args[1] ?? ''}" (expected src,dst…)` };
      return { type: 'ipset', set: a, directions: directions as ('src' | 'dst')[] };
    }
    case 'pair':
      return { type: 'names', names: [a, ...(args[1] ?? '').split(',')] };
    default: {
      const exhaustive: never = spec.type;
      return exhaustive;
    }
  }
}

// iptables resolves a `-p` name with getprotobyname() first (libxtables xtables_parse_protocol),
// so with the same /etc/protocols table nft uses (`ipencap` is 4, `ipip` 94), then with
// xtables_chain_protos' own names.
const ETC_PROTOCOLS: ReadonlyMap<string, number> = new Map(datatypeSymbols('inet_proto'));
const XTABLES_CHAIN_PROTOS: ReadonlyMap<string, number> = new Map([['all', 0], ['icmpv6', 58], ['ipv6-mh', 135], ['mh', 135]]);

export function protocolNumber(name: string): number | undefined {
  return ETC_PROTOCOLS.get(name) ?? XTABLES_CHAIN_PROTOS.get(name) ?? parseUnsigned(name, 255);
}
