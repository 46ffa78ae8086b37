// The nexthop routing picks on a multipath route. The kernel hashes the packet (with the default
// fib_multipath_hash_policy 0: its addresses, for IPv6 its flow label and protocol too; a
// received ICMP error's those of the packet it quotes) and takes the nexthop whose share of the
// hash space holds the hash (fib_select_multipath, fib6_select_path; the shares are the weights',
// fib_rebalance). The hash has a seed each network namespace draws at random, so which nexthop a
// packet takes is not known offline: it is a random branch, each nexthop with its weight's share.
// The hash is the same for both directions (flow_hash_from_keys orders the addresses), and so is
// it for every packet of a run with the same addresses (and protocol, for IPv6: nftsim's packets
// have flow label 0): those take the nexthop the first took.

import { formatCidr, type HostRoute, type RouteNexthop } from './host.js';
import type { SimContext } from './sim-context.js';

/** The nexthop of `route` the packet takes: the only one of a plain route. */
export function chooseNexthop(ctx: SimContext, route: HostRoute): Pick<RouteNexthop, 'dev' | 'via'> {
  const nexthops = route.nexthops;
  if (!nexthops) return route;
  const key = `${route.table} ${formatCidr(route.dst)} ${hashInputs(ctx)}`;
  const paths = (ctx.paths ??= new Map());
  let chosen = paths.get(key);
  if (chosen === undefined) {
    const total = nexthops.reduce((sum, nexthop) => sum + nexthop.weight, 0);
    chosen = ctx.choose(nexthops.map((nexthop) => nexthop.weight / total));
    paths.set(key, chosen);
  }
  return nexthops[chosen]!;
}

/** The nexthop of `route` through `dev` (a socket bound to a device, a forced `oif`: with the
 * flow's output interface set, fib_select_path takes no hash), else its first. */
export function nexthopThrough(route: HostRoute, dev: string): Pick<RouteNexthop, 'dev' | 'via'> {
  return route.nexthops?.find((nexthop) => nexthop.dev === dev) ?? route;
}

/** What fib_multipath_hash reads of the packet under policy 0 (ip_multipath_l3_keys,
 * ip6_multipath_l3_keys), the addresses in order: the addresses, for IPv6 the protocol too; a
 * received ICMP error's inner packet's (a local packet's route is hashed from its flow, without
 * the packet). */
function hashInputs(ctx: SimContext): string {
  const inner = ctx.iif !== undefined ? ctx.conn.quoted : undefined;
  const a = (inner ?? ctx.pkt).src.n;
  const b = (inner ?? ctx.pkt).dst.n;
  const addresses = a < b ? `${a} ${b}` : `${b} ${a}`;
  return ctx.family === 'ip' ? addresses : `${addresses} ${inner ? inner.l4proto : ctx.pkt.l4proto}`;
}
