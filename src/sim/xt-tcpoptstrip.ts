// iptables' TCPOPTSTRIP target (xt_TCPOPTSTRIP.c tcpoptstrip_mangle_packet), and nft's `reset
// tcp option` (nft_exthdr_tcp_strip_eval), which do the same: every byte of an option of a kind
// in the list becomes a NOP, the header keeps its length and the checksum is updated for the
// change. The only option nftsim's packets carry is MSS (packet-bytes.ts): stripped, its four
// bytes stay as NOPs, which `tcp option nop` and raw reads of the header see, and neither
// `-m tcpmss` nor `tcp option maxseg` finds an MSS option any more.

import type { XtExtensionStmt } from '../model/ast.js';
import { readStripList } from '../model/tcpoptstrip-options.js';
import { TCP_MSS_LENGTH, TCP_MSS_OPTION } from './packet-bytes.js';
import { NotModelled, type PacketState, type SimContext } from './sim-context.js';

export function runTcpOptStripTarget(stmt: XtExtensionStmt, ctx: SimContext): void {
  const option = stmt.options.find((o) => o.name === 'strip-options');
  if (option?.value.type !== 'string') throw new NotModelled('iptables target TCPOPTSTRIP without --strip-options');
  // A rule of `-p tcp` in the mangle table (the target's .proto and .table): a TCP packet.
  const kinds = readStripList(option.value.s);
  // The lowering refuses such a rule (iptables does): a model built otherwise.
  if (typeof kinds === 'string') throw new NotModelled(`iptables target TCPOPTSTRIP: ${kinds}`);
  if (ctx.pkt.l4proto === 6) stripTcpOptions(ctx.pkt, kinds);
}

/** The options of these kinds become NOPs: of nftsim's, the MSS option. */
export function stripTcpOptions(p: PacketState, kinds: readonly number[]): void {
  if (!kinds.includes(TCP_MSS_OPTION) || p.tcpMss === undefined) return;
  p.tcpMss = undefined;
  p.tcpNops = (p.tcpNops ?? 0) + TCP_MSS_LENGTH;
}
