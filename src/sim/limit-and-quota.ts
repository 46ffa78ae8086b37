// nft's `limit` and `quota` (and iptables' limit and quota matches, which behave the same), with
// what earlier packets of the run used of them. Their state at capture time is not in a listing
// but a quota's `used`: nftsim starts from a freshly loaded ruleset's (a full bucket, the quota's
// `used`), and the run has no clock, so a bucket does not refill between its packets (kernel flow
// rows "limit across a flow", "quota across a flow" in test/kernel/differential.test.ts). What a
// limit or quota used lives in the run's dynamic state beside dynamic set elements
// (SimState.dynamicSets), one count per statement or named object (shared by its rules).

import type { LimitStmt, QuotaStmt } from '../model/ast.js';
import { NotModelled, skbLength, type SimContext } from './sim-context.js';

// Byte units of limit and quota (nft src/parser_bison.y: bytes, kbytes, mbytes as powers of 1024).
const BYTE_UNITS: Readonly<Record<string, number>> = { bytes: 1, kbytes: 1024, mbytes: 1024 * 1024 };

function bytesOf(amount: number, unit: string | undefined): number {
  const factor = BYTE_UNITS[unit ?? 'bytes'];
  if (factor === undefined) throw new NotModelled(`unit ${unit ?? ''}`);
  return amount * factor;
}

/** NFT_LIMIT_PKT_BURST_DEFAULT: a packet limit's burst when none is given. */
const DEFAULT_PACKET_BURST = 5;

// One key per statement or object, named for describeState (scenario.ts), which tells runs apart
// by their dynamic state.
const KEYS = new WeakMap<object, { readonly name: string }>();

function stateKey(owner: object, name: () => string): { readonly name: string } {
  let key = KEYS.get(owner);
  if (!key) {
    key = { name: name() };
    KEYS.set(owner, key);
  }
  return key;
}

function usedOf(ctx: SimContext, key: object): number {
  return (ctx.dynamicSets.get(key)?.[0] as number | undefined) ?? 0;
}

/** nft_limit.c nft_limit_eval: a packet within what is left of the bucket takes its cost from it
 * and is within the limit; one beyond it leaves the bucket as it is. A packet limit's bucket
 * holds `burst` packets, each costing one; a byte limit's holds rate + burst bytes, each packet
 * costing its length. `over` inverts. `owner`: the statement, or the named object it belongs to. */
export function isLimitPassed(limit: LimitStmt, owner: object, ctx: SimContext): boolean {
  const packets = limit.unit === 'packets';
  const capacity = packets ? limit.burst || DEFAULT_PACKET_BURST : bytesOf(limit.rate, limit.unit) + bytesOf(limit.burst ?? 0, limit.burstUnit ?? limit.unit);
  const cost = packets ? 1 : skbLength(ctx);
  const key = stateKey(owner, () => `limit ${limit.span.file}:${limit.span.line}:${limit.span.column}`);
  const used = usedOf(ctx, key);
  const within = used + cost <= capacity;
  if (within) ctx.dynamicSets.set(key, [used + cost]);
  return within !== limit.over;
}

/** nft_quota.c nft_overquota: every packet that reaches the quota adds its length to what was
 * consumed (the listing's `used`); beyond the quota it is over (`consumed > quota`; reaching it
 * exactly only reports depletion, checked with kernel 6.18: `quota 40 bytes` passes a 40-byte
 * packet). `quota over` matches then, `quota` up to it. iptables' quota match, which counts down
 * what is left and stops at the first packet that does not fit (xt_quota.c), answers the same. */
export function isQuotaPassed(quota: Pick<QuotaStmt, 'over' | 'amount' | 'unit' | 'used' | 'usedUnit'>, owner: object & { readonly span: QuotaStmt['span'] }, ctx: SimContext): boolean {
  const key = stateKey(owner, () => `quota ${owner.span.file}:${owner.span.line}:${owner.span.column}`);
  const used = usedOf(ctx, key) + skbLength(ctx);
  ctx.dynamicSets.set(key, [used]);
  const consumed = (quota.used === undefined ? 0 : bytesOf(quota.used, quota.usedUnit ?? quota.unit)) + used;
  return consumed > bytesOf(quota.amount, quota.unit) === quota.over;
}
