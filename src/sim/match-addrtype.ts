// ip6tables' addrtype match. The lowering writes it as nft lists it, a test of fib's address
// type, but the kernel runs xt_addrtype.c, whose match_type6 tests classes of the address
// (ipv6_addr_type), so UNICAST holds for one of the host's own addresses too, and asks the route
// only for LOCAL, ANYCAST and UNREACHABLE. For IPv4 match_type reads the one RTN_* of
// inet_dev_addr_type, which is what fib's type says.

import type { Expr, Relational } from '../model/ast.js';
import { fibFlagBits, fibTypeOf, literalValue } from './evaluate-expr.js';
import { isMulticastAddress } from './host.js';
import { NotModelled, type SimContext } from './sim-context.js';

/** Whether a match is iptables' addrtype as the lowering writes it: a test of fib's type. */
export function isAddrtypeMatch(rel: Relational): boolean {
  return rel.left.kind === 'fib' && rel.left.result === 'type';
}

/** XT_ADDRTYPE_* (include/uapi/linux/netfilter/xt_addrtype.h): 1 << RTN_*. */
const BIT = { UNSPEC: 1 << 0, UNICAST: 1 << 1, LOCAL: 1 << 2, ANYCAST: 1 << 4, MULTICAST: 1 << 5, UNREACHABLE: 1 << 7 } as const;

/** addrtype_mt_v1 for an IPv6 packet, one of `--src-type` and `--dst-type` as the lowering
 * writes it (`fib daddr . iif type != { unicast, local }`): the types make the mask, `!=` inverts,
 * `iif` and `oif` are `--limit-iface-in` and `-out`, which look the route up through the packet's
 * interface. */
export function matchAddrtype6(rel: Relational, ctx: SimContext): boolean {
  const fib = rel.left as Extract<Expr, { kind: 'fib' }>;
  const right = rel.right;
  const types = right.kind === 'set' ? right.elements.map((e) => e.key) : [right];
  let mask = 0;
  for (const type of types) {
    const n = type.kind === 'literal' ? literalValue(type) : undefined;
    if (typeof n !== 'bigint') throw new NotModelled('iptables match addrtype with a type that is not a name');
    mask |= 1 << Number(n);
  }
  return matchType6(fib, mask, ctx) !== (rel.op === '!=');
}

/** match_type6: each class the mask names must be the address's (ipv6_addr_type: every address
 * but ::, a multicast one and a v4-mapped one is unicast), and of the types the route gives
 * (match_lookup_rt6: LOCAL, ANYCAST, or UNREACHABLE for no route) one must be in the mask. The
 * route's type is the one fib reads; through an interface (`--limit-iface`) the kernel's lookup
 * is strict, which fib's is not but for a local address. */
function matchType6(fib: Extract<Expr, { kind: 'fib' }>, mask: number, ctx: SimContext): boolean {
  const address = fib.flags.includes('saddr') ? ctx.pkt.src : ctx.pkt.dst;
  const multicast = isMulticastAddress(address);
  const unspec = address.n === 0n;
  const unicast = !multicast && !unspec && address.n >> 32n !== 0xffffn;
  if ((mask & BIT.MULTICAST) !== 0 && !multicast) return false;
  if ((mask & BIT.UNICAST) !== 0 && !unicast) return false;
  if ((mask & BIT.UNSPEC) !== 0 && !unspec) return false;
  const routed = BIT.LOCAL | BIT.ANYCAST | BIT.UNREACHABLE;
  if ((mask & routed) === 0) return true;
  const throughDevice = fib.flags.includes('iif') || fib.flags.includes('oif');
  if (throughDevice && (mask & (BIT.ANYCAST | BIT.UNREACHABLE)) !== 0) {
    throw new NotModelled('iptables match addrtype of IPv6 with --limit-iface and ANYCAST or UNREACHABLE (a route lookup through one interface)');
  }
  return (mask & routed & (1 << fibTypeOf(fibFlagBits(fib.flags), ctx))) !== 0;
}
