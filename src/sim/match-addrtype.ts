// ip6tables' addrtype match. The lowering writes it as nft lists it, a test of fib's address
// type, but the kernel runs xt_addrtype.c, whose match_type6 tests classes of the address
// (ipv6_addr_type), so UNICAST holds for one of the host's own addresses too, and asks the route
// only for LOCAL, ANYCAST and UNREACHABLE. For IPv4 match_type reads the one RTN_* of
// inet_dev_addr_type, which is what fib's type says.

import type { Expr, Relational } from '../model/ast.js';
import type { Address } from './address.js';
import { literalValue } from './evaluate-expr.js';
import { anycastInterfaceOf, isMulticastAddress, localInterfaceOf, lookupRoute } from './host.js';
import { HOST_KEY } from './route-rules.js';
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
  const address = fib.flags.includes('saddr') ? ctx.pkt.src : ctx.pkt.dst;
  const dev = fib.flags.includes('iif') ? ctx.iif : fib.flags.includes('oif') ? ctx.oif : undefined;
  return matchType6(address, mask, dev, ctx) !== (rel.op === '!=');
}

/** match_type6: each class the mask names must be the address's (ipv6_addr_type: every address
 * but ::, a multicast one and a v4-mapped one is unicast), and of the types the route gives one
 * must be in the mask. */
function matchType6(address: Address, mask: number, dev: string | undefined, ctx: SimContext): boolean {
  const multicast = isMulticastAddress(address);
  const unspec = address.n === 0n;
  const unicast = !multicast && !unspec && address.n >> 32n !== 0xffffn;
  if ((mask & BIT.MULTICAST) !== 0 && !multicast) return false;
  if ((mask & BIT.UNICAST) !== 0 && !unicast) return false;
  if ((mask & BIT.UNSPEC) !== 0 && !unspec) return false;
  if ((mask & (BIT.LOCAL | BIT.ANYCAST | BIT.UNREACHABLE)) === 0) return true;
  return (mask & routeType6(address, mask, dev, ctx)) !== 0;
}

/** match_lookup_rt6: the route's local and anycast flags; no route, or one that rejects, is
 * UNREACHABLE. Through an interface the lookup is strict (ip6_route_output_flags, no source):
 * only that interface's own address is local there. */
function routeType6(address: Address, mask: number, dev: string | undefined, ctx: SimContext): number {
  const owner = localInterfaceOf(ctx.host, address);
  if (dev !== undefined) {
    if ((mask & (BIT.ANYCAST | BIT.UNREACHABLE)) !== 0) throw new NotModelled('iptables match addrtype of IPv6 with --limit-iface and ANYCAST or UNREACHABLE (a route lookup through one interface)');
    return owner?.name === dev ? BIT.LOCAL : 0;
  }
  if (owner) return BIT.LOCAL;
  if (anycastInterfaceOf(ctx.host, address)) return BIT.ANYCAST;
  return lookupRoute(ctx.host, address, HOST_KEY) ? 0 : BIT.UNREACHABLE;
}
