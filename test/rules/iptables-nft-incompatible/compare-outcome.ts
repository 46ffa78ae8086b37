// How a row of the iptables-nft matrix compares: the real tools' outcome and nftsim's verdict,
// each as one string of nftsim's message ids.

import type { Finding } from '../../../src/rules/framework/lint-rule.js';
import type { RealResult } from './run-matrix.js';

// A rule's words, sorted, without what a round trip changes only in spelling: the counter
// iptables-nft adds, a rule comment (restored as an xt comment match, which nft 1.0.6 prints as
// nothing), the order of matches, `meta`, `ip protocol` for `meta l4proto`, `iif` for
// `iifname`, `lt` for `<`, `> N` for `N+1-65535` on ports, and the l4proto dependency nft prints
// before a transport match.
function words(rules: readonly string[]): string {
  const text = rules
    .join(' \n ')
    .replace(/counter packets \d+ bytes \d+/g, '')
    .replace(/comment "[^"]*"/g, '')
    .replace(/\bip protocol\b/g, 'l4proto')
    .replace(/\b(i|o)if\b/g, '$1ifname')
    .replace(/\bmeta /g, '')
    .replace(/\bipv6-icmp\b/g, 'icmpv6')
    .replace(/\blt\b/g, '<')
    // ebtables writes a MAC mask that nft prints as a prefix.
    .replace(/& ((?:ff:)*ff(?::00)+) == ([0-9a-f:]{17})/g, (_, mask: string, mac: string) => `${mac}/${mask.split(':').filter((b) => b === 'ff').length * 8}`)
    .replace(/\bgt\b/g, '>')
    .replace(/\b(sport|dport) > (\d+)/g, (_, field: string, n: string) => `${field} ${Number(n) + 1}-65535`);
  const list = text.split(/[ \t]+/).filter(Boolean);
  const dependency = (i: number) => list[i] === 'l4proto' && list.filter((w) => w === list[i + 1]).length > 1;
  return list.filter((_, i) => !dependency(i) && !dependency(i - 1)).sort().join(' ');
}

/** The real outcome in nftsim's terms: the message id, `+check` when `-C` of the rule appended
 * after it exits 3, and any command status that does not fit the outcome. */
export function realOutcome(r: RealResult): string {
  const odd = (expected: { S: number; L: number; C: number }): string =>
    (r.showStatus !== expected.S ? ` -S=${r.showStatus}` : '') + (r.listStatus !== expected.L ? ` -L=${r.listStatus}` : '') + (r.checkStatus !== expected.C ? ` -C=${r.checkStatus}` : '');
  if (r.incompatible) return 'table-unreadable' + (r.checkStatus === 3 ? ' +check' : '') + odd({ S: 1, L: 1, C: r.checkStatus === 3 ? 3 : 0 });
  if (r.saveStatus === 3) return `fatal-parse${odd({ S: 3, L: 3, C: 3 })}`;
  // A segfault while printing: -S prints the rule too, -L prints it another way, -C never does.
  // A crash in the rule parser (ebtables' iif, arptables' limit: exit 1) hits every command.
  if (r.saveStatus === 139 && r.listStatus === 0) return `crash${odd({ S: 139, L: 0, C: 0 })}`;
  if (r.saveStatus === 139 || r.saveStatus === 1) return `crash${odd({ S: r.saveStatus, L: r.saveStatus, C: r.saveStatus })}`;
  if (r.saveStatus !== 0) return `save exit ${r.saveStatus}`;
  const base = r.restoreStatus === 2 ? 'unrestorable' : r.restoreStatus !== 0 ? `restore exit ${r.restoreStatus}` : words(r.before) === words(r.after) ? 'none' : 'lossy';
  return base + odd({ S: 0, L: 0, C: 0 });
}

export function nftsimOutcome(findings: readonly Finding[]): string {
  if (findings.length === 0) return 'none';
  return findings.map((f) => f.messageId + (f.messageId === 'table-unreadable' && f.message.includes('when they reach it') ? ' +check' : '')).join(', ');
}

