// The nexthop routing picks on a multipath route. The kernel hashes the packet (with the default
// fib_multipath_hash_policy 0: its addresses, and for IPv6 its flow label and protocol; a
// received ICMP error's those of the packet it quotes) and takes the nexthop whose share of the
// hash space holds the hash (fib_select_multipath, fib6_select_path; the shares are the
// weights', fib_rebalance). The hash has a seed each network namespace draws at random, so which
// nexthop a packet takes is not known offline: it is a random branch, each nexthop with its
// weight's share. The IPv4 packets of one run with the same addresses take the same one, as the
// kernel's do; an IPv6 packet's flow label, which nftsim's packets do not give, makes each take
// its own (kernel-checked: the packets of one flow with flow labels of their own part ways).

import { formatCidr, type HostRoute, type RouteNexthop } from './host.js';
import type { SimContext } from './sim-context.js';

/** The nexthop of `route` the packet takes: the only one of a plain route. */
export function chooseNexthop(ctx: SimContext, route: HostRoute): Pick<RouteNexthop, 'dev' | 'via'> {
  const nexthops = route.nexthops;
  if (!nexthops) return route;
  const key = `${route.table} ${formatCidr(route.dst)} ${hashInputs(ctx)}`;
  const paths = ctx.family === 'ip' ? (ctx.paths ??= new Map()) : (ctx.ownPaths ??= new Map());
  let chosen = paths.get(key);
  if (chosen === undefined) {
    const total = nexthops.reduce((sum, nexthop) => sum + nexthop.weight, 0);
    chosen = ctx.choose(nexthops.map((nexthop) => nexthop.weight / total));
    paths.set(key, chosen);
  }
  return nexthops[chosen]!;
}

/** What fib_multipath_hash reads of the packet under policy 0 (ip_multipath_l3_keys,
 * ip6_multipath_l3_keys), but for the flow label: the addresses, for IPv6 the protocol too; a
 * received ICMP error's inner packet's (a local packet's route is hashed from its flow, without
 * the packet). */
function hashInputs(ctx: SimContext): string {
  const inner = ctx.iif !== undefined ? ctx.conn.quoted : undefined;
  const src = inner ? inner.src : ctx.pkt.src;
  const dst = inner ? inner.dst : ctx.pkt.dst;
  const l4proto = inner ? inner.l4proto : ctx.pkt.l4proto;
  return ctx.family === 'ip' ? `${src.n} ${dst.n}` : `${src.n} ${dst.n} ${l4proto}`;
}
