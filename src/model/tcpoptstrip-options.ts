// The `--strip-options` list of iptables' TCPOPTSTRIP target as libxt_TCPOPTSTRIP.c parse_list
// reads it: the lowering refuses what iptables refuses (lower-iptables.ts), the simulator strips
// the kinds (src/sim/xt-tcpoptstrip.ts).

import { parseUnsigned } from './xt-option.js';

/** libxt_TCPOPTSTRIP.c tcp_optionmap: the names `--strip-options` takes beside kind numbers
 * (iptables-save prints the numbers). */
const OPTION_KINDS: Readonly<Record<string, number>> = { wscale: 3, mss: 2, 'sack-permitted': 4, sack: 5, timestamp: 8, md5: 19 };

/** The kinds of `--strip-options mss,3,…`: names or numbers of 2-255, each once; or iptables'
 * message refusing the list (iptables-nft 1.8.9). */
export function readStripList(text: string): number[] | string {
  const kinds: number[] = [];
  for (const item of text.split(',')) {
    const kind = OPTION_KINDS[item] ?? parseUnsigned(item, 255);
    if (kind === undefined) return `Bad TCP option value "${item}"`;
    if (kind < 2) return 'Option value may not be 0 or 1';
    if (kinds.includes(kind)) return `Option "${item}" already specified`;
    kinds.push(kind);
  }
  return kinds;
}
