// nft's `ct count` (nft_connlimit.c) and iptables' connlimit match (xt_connlimit.c): how many
// connections a counter holds once the packet's is added. nf_conncount_add (__nf_conncount_add)
// goes through the counted connections in the order they came: one whose entry is gone (dropped
// before conntrack confirmed it) or closed (TCP TIME_WAIT, CLOSE) is dropped from the count; at
// the packet's own it stops, counting nothing new and leaving those after it as they are (checked
// on Linux 6.18: a connection dropped unconfirmed still counts for an earlier connection's later
// packet); without it, it adds the packet's connection (its original tuple and zone) at the end.
// A counter belongs to a statement, to a set element (each element its own), or to a connlimit
// key; it lives in the run's state (SimState dynamicSets), a new list at each change.

import type { CtCountStmt, XtExtensionStmt } from '../model/ast.js';
import { familyBits, prefixMask } from './address.js';
import { tupleOf, type ConntrackTable, type CtTuple } from './conntrack-table.js';
import { TCP_STATE } from './tcp-tracking.js';
import { NotModelled, type SimContext } from './sim-context.js';

/** The connections `owner` counts once the packet's is added. */
export function countConnections(owner: object, ctx: SimContext): number {
  const conn = ctx.conn;
  // Whether the counter still holds a connection that closed depends on when the kernel's
  // garbage collection ran, and a packet of one it dropped is itself dropped (insert_tree's
  // hotdrop; a 2000-case run of 1cfb449, seed 1424417605).
  const state = conn.entry?.tcp?.state;
  if (state === TCP_STATE.timeWait || state === TCP_STATE.close) throw new NotModelled('counting connections for a packet of a closed TCP connection (the kernel may have collected it, and then drops the packet)');
  const own = conn.entry?.original ?? conn.tuple ?? tupleOf(ctx.family, ctx.pkt, ctx.ct.zone);
  // An ICMP error has no tuple of its own here; the kernel counts one from its headers.
  if (!own) throw new NotModelled('counting connections for a packet without a connection of its own (an ICMP error)');
  const counted = (ctx.dynamicSets.get(owner) ?? []) as readonly CtTuple[];
  const kept: CtTuple[] = [];
  for (let i = 0; i < counted.length; i++) {
    const t = counted[i]!;
    if (isSameTuple(t, own)) {
      kept.push(...counted.slice(i));
      ctx.dynamicSets.set(owner, kept);
      return kept.length;
    }
    if (isCounted(t, conn.table)) kept.push(t);
  }
  kept.push(own);
  ctx.dynamicSets.set(owner, kept);
  return kept.length;
}

/** Whether a counted connection still counts: its entry is there, not closed (already_closed). */
function isCounted(t: CtTuple, table: ConntrackTable): boolean {
  const tcp = table.lookup(t)?.entry.tcp;
  if (!tcp) return table.isTaken(t);
  return tcp.state !== TCP_STATE.timeWait && tcp.state !== TCP_STATE.close;
}

/** `ct count N` holds for at most N connections, `ct count over N` for more. */
export function isCtCountPassed(stmt: CtCountStmt, owner: object, ctx: SimContext): boolean {
  const count = countConnections(owner, ctx);
  return stmt.over ? count > stmt.count : count <= stmt.count;
}

/** iptables' connlimit (xt_connlimit.c connlimit_mt): the connections of the packet's source (or
 * `--connlimit-daddr` destination) address cut to `--connlimit-mask`, in its zone, one counter
 * per such key; `--connlimit-above N` holds for more than N, `--connlimit-upto N` for at most N,
 * `!` inverts. */
export function matchConnlimit(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  let limit: number | undefined;
  let invert = false;
  let daddr = false;
  let mask: number | undefined;
  for (const o of stmt.options) {
    const n = o.value.type === 'number' ? o.value.n : undefined;
    if ((o.name === 'connlimit-above' || o.name === 'connlimit-upto') && n !== undefined) {
      limit = n;
      invert = (o.name === 'connlimit-upto') !== o.negated;
    } else if (o.name === 'connlimit-mask' && n !== undefined) mask = n;
    else if (o.name === 'connlimit-daddr') daddr = true;
    else if (o.name !== 'connlimit-saddr') throw new NotModelled(`iptables match connlimit --${o.name}`);
  }
  if (limit === undefined) throw new NotModelled('iptables match connlimit without a limit');
  const bits = familyBits(ctx.family);
  const address = (daddr ? ctx.pkt.dst : ctx.pkt.src).n & prefixMask(bits, mask ?? bits);
  return countConnections(keyOwner(stmt, `${address}/${ctx.ct.zone}`, ctx), ctx) > limit !== invert;
}

/** The counter of a connlimit statement for a key: one object per key for the run, found through
 * the run's state (a record per statement, a new one at each key it meets), so that nothing
 * outlives the run. */
function keyOwner(stmt: object, key: string, ctx: SimContext): object {
  const owners = (ctx.dynamicSets.get(stmt)?.[0] as Readonly<Record<string, object>> | undefined) ?? {};
  const known = owners[key];
  if (known) return known;
  const owner = { key };
  ctx.dynamicSets.set(stmt, [{ ...owners, [key]: owner }]);
  return owner;
}

function isSameTuple(a: CtTuple, b: CtTuple): boolean {
  return a.family === b.family && a.l4proto === b.l4proto && a.src === b.src && a.dst === b.dst && a.sport === b.sport && a.dport === b.dport && a.zone === b.zone;
}
