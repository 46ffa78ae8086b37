// iptables' TCPOPTSTRIP target (xt_TCPOPTSTRIP.c tcpoptstrip_mangle_packet), and nft's `reset
// tcp option` (nft_exthdr_tcp_strip_eval), which do the same: every byte of an option of a kind
// in the list becomes a NOP, the header keeps its length and the checksum is updated for the
// change. The only option nftsim's packets carry is MSS (packet-bytes.ts): stripped, its four
// bytes stay as NOPs, which `tcp option nop` and raw reads of the header see, and neither
// `-m tcpmss` nor `tcp option maxseg` finds an MSS option any more.

import type { XtExtensionStmt } from '../model/ast.js';
import { parseUnsigned } from '../model/xt-option.js';
import { TCP_MSS_LENGTH, TCP_MSS_OPTION } from './packet-bytes.js';
import { NotModelled, type PacketState, type SimContext } from './sim-context.js';

/** libxt_TCPOPTSTRIP.c tcp_optionmap: the names `--strip-options` takes beside kind numbers
 * (iptables-save prints the numbers). */
const OPTION_KINDS: Readonly<Record<string, number>> = { wscale: 3, mss: 2, 'sack-permitted': 4, sack: 5, timestamp: 8, md5: 19 };

export function runTcpOptStripTarget(stmt: XtExtensionStmt, ctx: SimContext): void {
  const option = stmt.options.find((o) => o.name === 'strip-options');
  if (option?.value.type !== 'string') throw new NotModelled('iptables target TCPOPTSTRIP without --strip-options');
  // A rule of `-p tcp` in the mangle table (the target's .proto and .table): a TCP packet.
  if (ctx.pkt.l4proto === 6) stripTcpOptions(ctx.pkt, parseStripList(option.value.s));
}

/** The kinds of `--strip-options mss,3,…` (libxt_TCPOPTSTRIP.c parse_list: a name or a number
 * of 2-255). */
export function parseStripList(text: string): number[] {
  return text.split(',').map((item) => {
    const kind = OPTION_KINDS[item] ?? parseUnsigned(item, 255) ?? NaN;
    if (!(kind >= 2)) throw new NotModelled(`iptables target TCPOPTSTRIP --strip-options ${text} (iptables refuses "${item}")`);
    return kind;
  });
}

/** The options of these kinds become NOPs: of nftsim's, the MSS option. */
export function stripTcpOptions(p: PacketState, kinds: readonly number[]): void {
  if (!kinds.includes(TCP_MSS_OPTION) || p.tcpMss === undefined) return;
  p.tcpMss = undefined;
  p.tcpNops = (p.tcpNops ?? 0) + TCP_MSS_LENGTH;
}
