// iptables' tos match and TOS target on the IPv4 TOS byte or the IPv6 traffic class, DSCP and ECN
// together: the match tests `(byte & mask) == value` (xt_dscp.c tos_mt, `!` inverts), the target
// writes `(byte & ~mask) ^ value` (xt_DSCP.c tos_tg, tos_tg6).
//
// iptables-save writes both as `--tos VALUE/MASK` and `--set-tos VALUE/MASK` in hex, and
// `--and-tos`, `--or-tos` and `--xor-tos` as the `--set-tos` they stand for. Written by hand, a
// number alone has the mask 0xff and a name of RFC 1349 (`Minimize-Delay`…) the mask 0x3f, which
// leaves ECN alone (libxtables xtopt_parse_tosmask, with the match's and target's `.max`; checked
// with iptables 1.8.9).

import type { XtExtensionStmt, XtOption } from '../model/ast.js';
import { readTrafficClass, writeTrafficClass } from './packet-bytes.js';
import { NotModelled, type SimContext } from './sim-context.js';

/** libxtables tos_symbol_names. */
const TOS_NAMES: ReadonlyMap<string, number> = new Map([
  ['minimize-delay', 0x10],
  ['maximize-throughput', 0x08],
  ['maximize-reliability', 0x04],
  ['minimize-cost', 0x02],
  ['normal-service', 0x00],
]);

/** The mask a name gets: the tos match's and TOS target's (revision 1) `.max`. */
const NAMED_MASK = 0x3f;

/** A C number as strtoul base 0 reads it, whole, within a byte. */
function byteOf(text: string): number | undefined {
  if (!/^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$/.test(text)) return undefined;
  const n = /^0[0-7]+$/.test(text) ? parseInt(text, 8) : Number(text);
  return n <= 0xff ? n : undefined;
}

/** `VALUE[/MASK]` or a name: [value, mask]. */
function valueAndMask(option: XtOption): readonly [number, number] {
  const text = option.value.type === 'string' ? option.value.s : option.args.join(' ');
  const named = TOS_NAMES.get(text.toLowerCase());
  if (named !== undefined) return [named, NAMED_MASK];
  const [value, mask] = text.split('/');
  const v = byteOf(value ?? '');
  const m = mask === undefined ? 0xff : byteOf(mask);
  if (v === undefined || m === undefined) throw new NotModelled(`iptables --${option.name} '${text}' (iptables refuses it)`);
  return [v, m];
}

/** `-m tos [!] --tos VALUE[/MASK]`. */
export function matchTos(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  const option = stmt.options.find((o) => o.name === 'tos');
  if (!option || stmt.options.length !== 1) throw new NotModelled('iptables match tos without one --tos');
  const [value, mask] = valueAndMask(option);
  return ((readTrafficClass(ctx) & mask) === value) !== option.negated;
}

/** `-j TOS --set-tos VALUE[/MASK]` (or `--and-tos`, `--or-tos`, `--xor-tos N`). */
export function setTos(stmt: XtExtensionStmt, ctx: SimContext): void {
  const [option] = stmt.options;
  if (!option || stmt.options.length !== 1) throw new NotModelled('iptables target TOS without one of --set-tos, --and-tos, --or-tos, --xor-tos');
  const [value, mask] = option.name === 'set-tos' ? valueAndMask(option) : shortcut(option);
  writeTrafficClass(ctx, (readTrafficClass(ctx) & ~mask & 0xff) ^ value);
}

/** libxt_TOS.c tos_tg_parse: `--and-tos N` is 0/~N, `--or-tos N` N/N, `--xor-tos N` N/0. */
function shortcut(option: XtOption): readonly [number, number] {
  const n = option.value.type === 'number' ? option.value.n : undefined;
  if (n === undefined || n > 0xff) throw new NotModelled(`iptables target TOS --${option.name} '${option.args.join(' ')}'`);
  switch (option.name) {
    case 'and-tos':
      return [0, ~n & 0xff];
    case 'or-tos':
      return [n, n];
    case 'xor-tos':
      return [n, 0];
    default:
      throw new NotModelled(`iptables target TOS --${option.name}`);
  }
}
