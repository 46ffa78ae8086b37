// iptables' `-m recent` (xt_recent.c recent_mt): a per-address list of earlier packets. kube-proxy
// writes it for sessionAffinity: ClientIP (`--rcheck` in the service chain sends a client back to
// the endpoint it had, `--set` in the endpoint chain records it), so a simulation of a client's
// first packet must see the list empty, and a later packet of the same simulated run must see
// what the earlier one set.

import type { XtExtensionStmt } from '../model/ast.js';
import { parseAddress, type Address } from './address.js';
import type { HookIndex } from './pipeline.js';
import { NotModelled, type SimContext } from './sim-context.js';

// The lists live in the run's dynamic state beside dynamic set elements (SimState.dynamicSets),
// keyed by one object per list name: xt_recent's lists are per network namespace, shared by
// every rule that names them.
const LISTS = new Map<string, object>();

function listKey(name: string): object {
  let key = LISTS.get(name);
  if (!key) {
    key = { name: `recent ${name}` };
    LISTS.set(name, key);
  }
  return key;
}

/** recent_mt: `--set` records the address and matches; `--rcheck` matches when the address is
 * in the list (with at least `--hitcount` hits), `--update` also records a hit, `--remove`
 * matches and forgets it. A `!` on the mode inverts the result. The simulation has no clock:
 * every packet of a run counts as within `--seconds` of the earlier ones. An entry keeps the TTL
 * of the packet that set or updated it last, and `--rttl` finds an entry only of the packet's. */
export function matchRecent(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  const option = (name: string) => stmt.options.find((o) => o.name === name);
  const mode = ['set', 'rcheck', 'update', 'remove'].map(option).find((o) => o !== undefined);
  if (!mode) throw new NotModelled('iptables match recent without --set, --rcheck, --update or --remove');
  const name = listName(stmt);
  const key = listKey(name);
  const ttlKey = listKey(`${name} ttl`);
  const address = option('rdest') ? ctx.pkt.dst : ctx.pkt.src;
  const entry = `${address.family} ${masked(address, listMasks(ctx.index).get(name))}`;
  const hits = (ctx.dynamicSets.get(key) ?? []) as string[];
  const ttls = (ctx.dynamicSets.get(ttlKey)?.[0] as Readonly<Record<string, number>> | undefined) ?? {};
  const ttl = seenTtl(ctx);
  // recent_entry_lookup: with --rttl, an entry of another TTL is none (a TTL of 0 is any).
  const other = option('rttl') !== undefined && ttl !== 0 && ttls[entry] !== undefined && ttls[entry] !== 0 && ttls[entry] !== ttl;
  const count = other ? 0 : hits.reduce((n, h) => (h === entry ? n + 1 : n), 0);
  const hitcount = option('hitcount')?.value;
  const record = (): void => {
    ctx.dynamicSets.set(key, [...hits, entry]);
    ctx.dynamicSets.set(ttlKey, [{ ...ttls, [entry]: ttl }]);
  };
  let matched: boolean;
  switch (mode.name) {
    case 'set':
      if (other) throw new NotModelled('iptables match recent --set --rttl of an address listed with another TTL (the kernel adds a second entry)');
      record();
      matched = true;
      break;
    case 'rcheck':
    case 'update':
      matched = count > 0 && count >= (hitcount?.type === 'number' ? hitcount.n : 0);
      // A hit is recorded for a known address when the result, `!` applied, is a match.
      if (mode.name === 'update' && count > 0 && matched !== mode.negated) record();
      break;
    default:
      matched = count > 0;
      if (matched) ctx.dynamicSets.set(key, hits.filter((h) => h !== entry));
  }
  return matched !== mode.negated;
}

/** The packet's TTL (hop limit) as recent_mt reads it: as it was before forwarding, one more
 * after the routing decision lowered it, for a packet leaving without a socket (forwarded). */
function seenTtl(ctx: SimContext): number {
  const leaving = ctx.hook === 'forward' || ctx.hook === 'output' || ctx.hook === 'postrouting';
  return (ctx.pkt.ttl + (leaving && ctx.iif !== undefined ? 1 : 0)) & 0xff;
}

/** A rule's list name: `--name`, else xt_recent's default ("DEFAULT"). */
function listName(stmt: XtExtensionStmt): string {
  const value = stmt.options.find((o) => o.name === 'name')?.value;
  return value?.type === 'string' ? value.s : 'DEFAULT';
}

/** The mask of each list: the first rule naming it, in load order, makes it with its own
 * `--mask` (recent_mt_check; libxt_recent's default is all 16 bytes ones, whatever the family),
 * and every
 * rule of that name, of either family, masks with the list's (recent_mt). The lists a node had
 * before its rules were loaded are not in a capture: a fresh load is what nftsim models. */
const MASKS = new WeakMap<HookIndex, ReadonlyMap<string, Address>>();

const ALL_ONES: Address = { family: 'ip6', n: (1n << 128n) - 1n };

function listMasks(index: HookIndex): ReadonlyMap<string, Address> {
  let masks = MASKS.get(index);
  if (masks) return masks;
  const made = new Map<string, Address>();
  const tables = [...new Set([...index.byHook.values()].flat().sort((a, b) => a.order - b.order).map((r) => r.table))];
  for (const table of tables) {
    if (table.family !== 'ip' && table.family !== 'ip6') continue;
    for (const chain of table.chains) {
      for (const rule of chain.rules) {
        for (const stmt of rule.stmts) {
          if (stmt.kind !== 'xt-extension' || stmt.name !== 'recent' || made.has(listName(stmt))) continue;
          const given = stmt.options.find((o) => o.name === 'mask')?.value;
          const mask = given?.type === 'address' ? parseAddress(given.address.address) : undefined;
          made.set(listName(stmt), mask ?? ALL_ONES);
        }
      }
    }
  }
  MASKS.set(index, (masks = made));
  return masks;
}

/** nf_inet_addr_mask of the address with the list's mask. Both are 16 bytes in the kernel, an
 * IPv4 one its first 4: an IPv4 mask keeps the first 32 bits of an IPv6 address, and an IPv4
 * address takes the first 32 bits of an IPv6 mask. */
function masked(address: Address, mask: Address | undefined): bigint {
  if (!mask) return address.n;
  if (mask.family === address.family) return address.n & mask.n;
  return address.family === 'ip6' ? address.n & (mask.n << 96n) : address.n & (mask.n >> 96n);
}
