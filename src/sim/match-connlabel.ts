// iptables' `-m connlabel` (xt_connlabel.c connlabel_mt), which the kernel keeps as an xt match:
// unlike nft's `ct label`, which breaks the rule without an entry, it gives `!`'s answer there.

import type { XtExtensionStmt } from '../model/ast.js';
import { hasConntrackEntry, hasZoneTemplate, NotModelled, type SimContext } from './sim-context.js';

/** A packet without a conntrack entry (untracked, invalid, a zone template) has no labels: the
 * match is `!`'s answer. A set bit matches; with `--set` an unset one is set, and matches. */
export function matchConnlabel(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  const label = stmt.options.find((o) => o.name === 'label');
  const text = label?.value.type === 'string' ? label.value.s : undefined;
  // A name is connlabel.conf's, which a capture does not include.
  if (text === undefined || !/^\d+$/.test(text) || Number(text) > 127) throw new NotModelled(`iptables match connlabel --label ${text ?? ''} (a name of connlabel.conf, or no label)`);
  const invert = label!.negated;
  if (!hasConntrackEntry(ctx) || hasZoneTemplate(ctx)) return invert;
  const bit = 1n << BigInt(text);
  if (((ctx.ct.labels ?? 0n) & bit) !== 0n) return !invert;
  if (!stmt.options.some((o) => o.name === 'set')) return invert;
  ctx.ct.labels = (ctx.ct.labels ?? 0n) | bit;
  return !invert;
}
