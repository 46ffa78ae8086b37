// The nft NAT statement an iptables SNAT, DNAT, MASQUERADE or REDIRECT target stands for: its
// address range, port range and flags. The lowering lists it as that statement; a target with a
// shifted port range (`--to-destination 10.0.0.1:1000-2000/70`, NF_NAT_RANGE_PROTO_OFFSET) has
// no nft spelling and stays an xt target, which the simulator runs as this statement with the
// shift (src/sim/xt-shifted-nat.ts).

import type { Expr, NatStmt, Span } from './ast.js';
import { typeWith, type Datatype } from './datatypes.js';
import type { NatRange, XtOptionValue } from './xt-option.js';

/** The address datatypes of the statements that take an address (NAT here, tproxy and dup in
 * lower-iptables.ts). */
export const IPV4_ADDR: Datatype = { name: 'ipv4_addr', bits: 32 };
export const IPV6_ADDR: Datatype = { name: 'ipv6_addr', bits: 128 };
const INET_SERVICE: Datatype = { name: 'inet_service', bits: 16 };

/** The NAT kind of each iptables NAT target. */
const NAT_TYPES: Readonly<Record<string, NatStmt['type']>> = { SNAT: 'snat', DNAT: 'dnat', MASQUERADE: 'masquerade', REDIRECT: 'redirect' };

/** The range the target's `--to-source`, `--to-destination` or `--to-ports` gives (empty when
 * none does). */
export function xtNatRange(options: readonly { readonly value: XtOptionValue }[]): NatRange {
  const to = options.find((o) => o.value.type === 'nat-range')?.value;
  return to?.type === 'nat-range' ? to.range : {};
}

/** The statement of an iptables NAT target `name` in a table of `family`, without the range's
 * shift (its `/base`); undefined for a target that is not one of NAT. */
export function xtNatStatement(name: string, options: readonly { readonly name: string; readonly value: XtOptionValue }[], family: 'ip' | 'ip6', span: Span): NatStmt | undefined {
  const type = NAT_TYPES[name];
  if (type === undefined) return undefined;
  const range = xtNatRange(options);
  const has = (option: string) => options.some((o) => o.name === option);
  // nft prints NAT flags in this order (src/statement.c nat_stmt_print).
  const flags: string[] = [];
  if (has('random')) flags.push('random');
  if (has('random-fully')) flags.push('fully-random');
  if (has('persistent')) flags.push('persistent');
  const literal = (text: string): Expr => ({ kind: 'literal', span, text });
  const addr: Expr | undefined =
    range.addressFrom === undefined
      ? undefined
      : range.addressTo === undefined || range.addressTo === range.addressFrom
        ? literal(range.addressFrom)
        : { kind: 'range', span, low: literal(range.addressFrom), high: literal(range.addressTo) };
  const from = range.portFrom;
  const to = range.portTo ?? from;
  const port: Expr | undefined = from === undefined || to === undefined ? undefined : from === to ? literal(String(from)) : { kind: 'range', span, low: literal(String(from)), high: literal(String(to)) };
  const stmt: { -readonly [K in keyof NatStmt]: NatStmt[K] } = { kind: 'nat', span, type, flags };
  if (addr) stmt.addr = typeWith(addr, family === 'ip' ? IPV4_ADDR : IPV6_ADDR);
  if (port) stmt.port = typeWith(port, INET_SERVICE);
  return stmt;
}

/** The base the kernel shifts a port range from, as it gets it: DNAT's revision 2 keeps the
 * `/base` (struct nf_nat_range2 base_proto); SNAT and MASQUERADE pass the range in the older
 * structs (nf_nat_ipv4_multi_range_compat, nf_nat_range), which have no base: the kernel gets
 * the NF_NAT_RANGE_PROTO_OFFSET flag with a base of 0 (iptables-save prints `/0`, checked with
 * iptables-nft 1.8.9). For SNAT xt_nat_convert_range clears it; MASQUERADE's range is built on
 * the stack by nf_nat_masquerade_ipv4/_ipv6 without one, 0 in a kernel built with
 * CONFIG_INIT_STACK_ALL_ZERO as Debian's and the tests' are. Undefined without a shift.
 * REDIRECT's is refused by iptables (DNAT_fcheck: "Shifted portmap ranges not supported with
 * this kernel"). */
export function xtNatShiftBase(name: string, range: NatRange): number | undefined {
  if (range.portBase === undefined) return undefined;
  return name === 'DNAT' ? range.portBase : 0;
}
