// iptables' tos match and TOS target on the IPv4 TOS byte or the IPv6 traffic class, DSCP and ECN
// together: the match tests `(byte & mask) == value` (xt_dscp.c tos_mt, `!` inverts), the target
// writes `(byte & ~mask) ^ value` (xt_DSCP.c tos_tg, tos_tg6). The parser reads `VALUE[/MASK]`
// and the RFC 1349 names (parse-option-value.ts parseTos); iptables-save writes `--and-tos`,
// `--or-tos` and `--xor-tos` as the `--set-tos` they stand for. And the ECN target, which writes
// the byte's ECN field and the TCP flags of congestion notification.

import type { XtExtensionStmt, XtOption } from '../model/ast.js';
import { optionNumber } from '../model/xt-option.js';
import { L4_NUMBERS } from './packet.js';
import { readTrafficClass, writeTrafficClass } from './packet-bytes.js';
import { NotModelled, type SimContext } from './sim-context.js';

/** `-m tos [!] --tos VALUE[/MASK]`. */
export function matchTos(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  const [option] = stmt.options;
  if (option?.value.type !== 'tos' || stmt.options.length !== 1) throw new NotModelled('iptables match tos without one --tos');
  return ((readTrafficClass(ctx) & option.value.mask) === option.value.value) !== option.negated;
}

/** `-j TOS --set-tos VALUE[/MASK]` (or `--and-tos`, `--or-tos`, `--xor-tos N`). */
export function setTos(stmt: XtExtensionStmt, ctx: SimContext): void {
  const [option] = stmt.options;
  if (!option || stmt.options.length !== 1) throw new NotModelled('iptables target TOS without one of --set-tos, --and-tos, --or-tos, --xor-tos');
  const [value, mask] = option.value.type === 'tos' ? [option.value.value, option.value.mask] : shortcut(option);
  writeTrafficClass(ctx, (readTrafficClass(ctx) & ~mask & 0xff) ^ value);
}

/** libxt_TOS.c tos_tg_parse: `--and-tos N` is 0/~N, `--or-tos N` N/N, `--xor-tos N` N/0. */
function shortcut(option: XtOption): readonly [number, number] {
  const n = option.value.type === 'number' ? option.value.n : undefined;
  if (n === undefined || n > 0xff) throw new NotModelled(`iptables target TOS --${option.name} '${option.args.join(' ')}' (iptables refuses it)`);
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

/** ipt_ECN.c ecn_tg (IPv4 only): `--ecn-ip-ect N` sets the header's ECN field; on a TCP packet
 * `--ecn-tcp-ece N` and `--ecn-tcp-cwr N` set those flags (`--ecn-tcp-remove` is both 0). */
export function setEcn(stmt: XtExtensionStmt, ctx: SimContext): void {
  const remove = stmt.options.some((o) => o.name === 'ecn-tcp-remove');
  const flag = (name: string): number | undefined => (remove ? 0 : optionNumber(stmt.options, name));
  const ect = optionNumber(stmt.options, 'ecn-ip-ect');
  if (ect !== undefined) writeTrafficClass(ctx, (readTrafficClass(ctx) & ~3) | (ect & 3));
  if (ctx.pkt.l4proto !== L4_NUMBERS.tcp) return;
  for (const [name, bit] of [['ecn-tcp-ece', TCP_ECE], ['ecn-tcp-cwr', TCP_CWR]] as const) {
    const value = flag(name);
    if (value !== undefined) ctx.pkt.tcpFlags = value ? ctx.pkt.tcpFlags | bit : ctx.pkt.tcpFlags & ~bit;
  }
}

// The TCP header's ECN-Echo and Congestion Window Reduced flags.
const TCP_ECE = 0x40;
const TCP_CWR = 0x80;
