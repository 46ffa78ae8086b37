// iptables' `-m cluster` (xt_cluster.c xt_cluster_mt), for nodes that share the traffic of one
// address: each takes the connections whose hash has its bit in the node mask. cluster_xlate's
// nft spelling (`jhash ct original saddr mod N … eq NODE`) compares with the node's number, not
// its bit's, and hashes the whole IPv6 address where the kernel hashes its first word: the
// kernel keeps the xt match, and so does nftsim.

import type { XtExtensionStmt } from '../model/ast.js';
import { IPS } from './conntrack-table.js';
import { evaluateExpr } from './evaluate-expr.js';
import { jhash } from './evaluate-special-expr.js';
import { optionNumber } from '../model/xt-option.js';
import { hasConntrackEntry, hasZoneTemplate, NotModelled, type SimContext } from './sim-context.js';

/** No entry, no match (`!` or not). The hash is jhash of the connection's original source
 * address with the seed: an IPv4 address, or the first 32 bits of an IPv6 one (jhash2 over
 * NF_CT_TUPLE_L3SIZE / sizeof(u32) words, which is 1), scaled to the number of nodes. */
export function matchCluster(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  const total = optionNumber(stmt.options, 'cluster-total-nodes');
  const seed = optionNumber(stmt.options, 'cluster-hash-seed');
  const node = stmt.options.find((o) => o.name === 'cluster-local-node' || o.name === 'cluster-local-nodemask');
  if (total === undefined || seed === undefined || node?.value.type !== 'number') throw new NotModelled('iptables match cluster without --cluster-total-nodes, a local node and --cluster-hash-seed');
  const mask = node.name === 'cluster-local-node' ? 1 << (node.value.n - 1) : node.value.n;
  // An expected connection hashes its master's address (ct->master), which nftsim does not keep.
  if (hasConntrackEntry(ctx) && (ctx.ct.status & IPS.expected) !== 0) throw new NotModelled('iptables match cluster of an expected connection (the kernel hashes its master)');
  // Before conntrack, a zone template (CT --zone) is no entry either: no match, `!` or not
  // (kernel-checked on Linux 6.18, seed 394081397).
  const hash = hasZoneTemplate(ctx) ? undefined : sourceHash(stmt, ctx, seed, total);
  if (hash === undefined) return false;
  return ((mask >>> hash) & 1) === 1 !== node.negated;
}

/** The node the connection's original source hashes to; undefined without an entry. */
function sourceHash(stmt: XtExtensionStmt, ctx: SimContext, seed: number, total: number): number | undefined {
  const source = evaluateExpr({ kind: 'ct', span: stmt.span, key: 'saddr', dir: 'original' }, ctx);
  if (typeof source !== 'bigint') return undefined;
  const word = ctx.family === 'ip' ? source : source >> 96n;
  const h = jhash(Uint8Array.of(Number((word >> 24n) & 0xffn), Number((word >> 16n) & 0xffn), Number((word >> 8n) & 0xffn), Number(word & 0xffn)), seed >>> 0);
  return Number((BigInt(h) * BigInt(total)) >> 32n);
}
