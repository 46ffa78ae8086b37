// iptables' `-m recent` (xt_recent.c recent_mt): a per-address list of earlier packets. kube-proxy
// writes it for sessionAffinity: ClientIP (`--rcheck` in the service chain sends a client back to
// the endpoint it had, `--set` in the endpoint chain records it), so a simulation of a client's
// first packet must see the list empty, and a later packet of the same simulated run must see
// what the earlier one set.

import type { XtExtensionStmt } from '../model/ast.js';
import { parseAddress } from './address.js';
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
 * every packet of a run counts as within `--seconds` of the earlier ones. */
export function matchRecent(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  const option = (name: string) => stmt.options.find((o) => o.name === name);
  if (option('rttl')) throw new NotModelled('iptables match recent --rttl (the TTL of earlier packets)');
  const mode = ['set', 'rcheck', 'update', 'remove'].map(option).find((o) => o !== undefined);
  if (!mode) throw new NotModelled('iptables match recent without --set, --rcheck, --update or --remove');
  const nameValue = option('name')?.value;
  // xt_recent's default list name (XT_RECENT_NAME_DEFAULT… "DEFAULT").
  const key = listKey(nameValue?.type === 'string' ? nameValue.s : 'DEFAULT');
  const address = option('rdest') ? ctx.pkt.dst : ctx.pkt.src;
  const maskValue = option('mask')?.value;
  const mask = maskValue?.type === 'address' ? parseAddress(maskValue.address.address) : undefined;
  // The mask is an address of the family; the IPv4 default 255.255.255.255 leaves an IPv4
  // address as it is, and does not apply to IPv6 (xt_recent keeps a mask per family).
  const entry = mask && mask.family === address.family ? `${address.family} ${address.n & mask.n}` : `${address.family} ${address.n}`;
  const hits = (ctx.dynamicSets.get(key) ?? []) as string[];
  const count = hits.reduce((n, h) => (h === entry ? n + 1 : n), 0);
  const hitcount = option('hitcount')?.value;
  let matched: boolean;
  switch (mode.name) {
    case 'set':
      ctx.dynamicSets.set(key, [...hits, entry]);
      matched = true;
      break;
    case 'rcheck':
    case 'update':
      matched = count > 0 && count >= (hitcount?.type === 'number' ? hitcount.n : 0);
      // A hit is recorded for a known address when the result, `!` applied, is a match.
      if (mode.name === 'update' && count > 0 && matched !== mode.negated) ctx.dynamicSets.set(key, [...hits, entry]);
      break;
    default:
      matched = count > 0;
      if (matched) ctx.dynamicSets.set(key, hits.filter((h) => h !== entry));
  }
  return matched !== mode.negated;
}
