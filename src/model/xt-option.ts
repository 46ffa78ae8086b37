// The typed value of an iptables match or target option, as the model keeps it in
// `xt-extension` statements (ast.ts XtOption) for the simulator. It lives in the model, not in
// the iptables parser, because the model is what parsers produce and never depends on one
// (DESIGN.md, pipeline): the iptables parser (src/parser/iptables) types option arguments into
// these values, the lowering and the simulator read them.

const UINT = /^(?:0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*)$/i;

/** strtoul(…, 0) as xtables_strtoui uses it: decimal, 0x hex, leading-0 octal; undefined above
 * `max` or for anything else. */
export function parseUnsigned(text: string, max = 0xffffffff): number | undefined {
  if (!UINT.test(text)) return undefined;
  const n = text.length > 1 && text[0] === '0' && (text[1] === 'x' || text[1] === 'X') ? parseInt(text.slice(2), 16) : text[0] === '0' ? parseInt(text, 8) : parseInt(text, 10);
  return n <= max ? n : undefined;
}

/** An address as iptables reads it after `-s`/`-d` or as an option value (`--ctorigdst`). */
export interface AddressSpec {
  /** As written (`10.0.0.0/8`). */
  readonly text: string;
  /** `ipv4`, `ipv6`, or `hostname` (iptables resolves names when it loads the rule). */
  readonly type: 'ipv4' | 'ipv6' | 'hostname';
  /** The address without its prefix or mask. */
  readonly address: string;
  /** The prefix length: `/24` directly, or from a contiguous netmask `/255.255.255.0`; absent
   * for a single address written without one. */
  readonly prefixLength?: number;
  /** A netmask written as an address (`/255.0.255.0`), kept when not contiguous. */
  readonly mask?: string;
}

/** Port ranges, number ranges: `22`, `1000:2000`, `:1024` (from 0), `1024:` (to the maximum). */
export interface NumberRange {
  readonly from: number;
  readonly to: number;
}

export type RateUnit = 'second' | 'minute' | 'hour' | 'day';

/** `--to-destination 10.0.0.1-10.0.0.9:8000-8009`, `[fd00::1]:80`, `:80` (ports only),
 * `--to-ports 1000-2000`. Port `/base` (shift, 1.8.6+) is kept in `portBase`. */
export interface NatRange {
  readonly addressFrom?: string;
  readonly addressTo?: string;
  readonly portFrom?: number;
  readonly portTo?: number;
  readonly portBase?: number;
}

/** What an option's arguments mean, by the type its extension gives it
 * (src/parser/iptables/iptables-extensions.ts). `raw` when nftsim does not know the option. */
export type XtOptionValue =
  | { readonly type: 'flag' }
  | { readonly type: 'string'; readonly s: string }
  | { readonly type: 'number'; readonly n: number }
  /** A 64-bit count (quota bytes), as a decimal string: beyond 2^53 a number would round. */
  | { readonly type: 'u64'; readonly decimal: string }
  /** 64-bit counts as decimals; `to` absent for a single value, up to the largest count where
   * `n:` leaves it open. */
  | { readonly type: 'u64-range'; readonly from: string; readonly to?: string }
  | { readonly type: 'range'; readonly from: number; readonly to: number }
  | { readonly type: 'ranges'; readonly items: readonly NumberRange[] }
  | { readonly type: 'names'; readonly names: readonly string[] }
  | { readonly type: 'mark'; readonly value: number; readonly mask?: number }
  /** A TOS byte under a mask, the mask filled in as iptables does (0xff, 0x3f for a name). */
  | { readonly type: 'tos'; readonly value: number; readonly mask: number }
  | { readonly type: 'address'; readonly address: AddressSpec }
  | { readonly type: 'address-range'; readonly from: string; readonly to: string }
  | { readonly type: 'tcp-flags'; readonly mask: readonly string[]; readonly compare: readonly string[] }
  | { readonly type: 'probability'; readonly p: number }
  | { readonly type: 'rate'; readonly count: number; readonly unit: RateUnit }
  | { readonly type: 'icmp-type'; readonly name?: string; readonly icmpType?: number; readonly code?: NumberRange }
  | { readonly type: 'nat-range'; readonly range: NatRange }
  | { readonly type: 'interface'; readonly name: string; readonly wildcard: boolean }
  | { readonly type: 'ipset'; readonly set: string; readonly directions: readonly ('src' | 'dst')[] }
  | { readonly type: 'raw' };

/** The largest 64-bit count: an open upper end of a 64-bit range (connbytes). */
export const U64_MAX = 2n ** 64n - 1n;

/** An option's number, undefined when it is absent or not a number. */
export function optionNumber(options: readonly { readonly name: string; readonly value: XtOptionValue }[], name: string): number | undefined {
  const value = options.find((o) => o.name === name)?.value;
  return value?.type === 'number' ? value.n : undefined;
}

/** CONNMARK's masks (libxt_CONNMARK.c): `--mask` gives both, else `--nfmask` and `--ctmask`, each
 * all ones when absent. Read by the lowering and by the simulator of the forms it keeps as xt. */
export function connmarkMasks(options: readonly { readonly name: string; readonly value: XtOptionValue }[]): { readonly nfmask: number; readonly ctmask: number } {
  const shared = optionNumber(options, 'mask');
  return { nfmask: shared ?? optionNumber(options, 'nfmask') ?? 0xffffffff, ctmask: shared ?? optionNumber(options, 'ctmask') ?? 0xffffffff };
}

/** The conntrack helpers that act on a connection's payload only (nf_conntrack_ftp.c, _tftp.c,
 * _irc.c, _sip.c, _sane.c, _amanda.c, _pptp.c, _h323_main.c's RAS and Q.931, nf_nat_snmp_basic):
 * netbios-ns expects replies to any broadcast a local socket sends, whatever it carries. */
const PAYLOAD_HELPERS: ReadonlySet<string> = new Set(['ftp', 'tftp', 'irc', 'sip', 'sane', 'amanda', 'pptp', 'RAS', 'Q.931', 'snmp']);

/** The zone of the template an iptables CT target attaches, when that is all it does to a
 * packet's way: `--zone N` (0 without it), or `mark` for `--zone mark` (the packet's mark when
 * conntrack looks it up), with `--ctevents` and `--expevents`, which choose the netlink events
 * of the connection, and `--helper` of a helper that reads the connection's payload (nftsim's
 * packets carry none that a helper acts on) to expect other connections (xt_CT.c
 * xt_ct_tg_check gives every CT but `--notrack` a template, in zone 0 unless a zone is given).
 * Undefined for a CT doing more or other (`--notrack`, `--timeout`, a zone of one direction) or
 * a zone libxt_CT would not read. */
export function ctTemplateZone(options: readonly { readonly name: string; readonly value: XtOptionValue }[]): number | 'mark' | undefined {
  let zone: number | 'mark' = 0;
  for (const o of options) {
    if (o.name === 'ctevents' || o.name === 'expevents') continue;
    if (o.name === 'helper' && o.value.type === 'string' && PAYLOAD_HELPERS.has(o.value.s)) continue;
    if (o.name !== 'zone' || o.value.type !== 'string') return undefined;
    const text = o.value.s;
    // ct_parse_zone_id: `mark` in any case, else a number of 0-65535 (strtoul of base 0).
    const n = text.toLowerCase() === 'mark' ? 'mark' : parseUnsigned(text, 0xffff);
    if (n === undefined) return undefined;
    zone = n;
  }
  return zone;
}
