// nftsim's verdict against the installed iptables-nft (1.8.9 on the reference machine): each
// native rule form is added with nft to `ip filter FORWARD` (after a rule iptables-nft wrote) in
// a throwaway network namespace, then iptables-nft-save and a save | restore round trip tell
// what the real tool does with it.

import { execFileSync, spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iptablesNftIncompatible } from '../../../src/rules/iptables-nft-incompatible.js';
import { lintCode } from '../rule-tester.js';

const NS = `nftsim-iptnft-${process.pid}`;
const which = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const canRun = process.getuid?.() === 0 && which('iptables-nft') && which('nft') && which('ip');
if (!canRun) console.warn('iptables-nft-incompatible: not root or iptables-nft/nft missing: the real-tool comparison is not run');

const installedVersion = (): string => /v(\d+\.\d+\.\d+)/.exec(execFileSync('iptables-nft', ['--version'], { encoding: 'utf8' }))?.[1] ?? '1.8.9';

// stdout only: nft warns on stderr about tables holding xt expressions.
function inNs(script: string): { status: number; stdout: string } {
  const r = spawnSync('ip', ['netns', 'exec', NS, 'sh', '-c', script], { encoding: 'utf8' });
  return { status: r.status ?? -1, stdout: r.stdout };
}

// The rule's words, sorted, without what a round trip changes only in spelling: the counter
// iptables-nft adds, the order of matches, `meta`, `ip protocol` for `meta l4proto`, `iif` for `iifname`, and the
// l4proto dependency nft prints before a transport match (`meta l4proto icmp icmp type …`).
function words(listing: string): string {
  const text = listing
    .replace(/counter packets \d+ bytes \d+/g, '')
    .replace(/\bip protocol\b/g, 'l4proto')
    .replace(/\b(i|o)if\b/g, '$1ifname')
    .replace(/\bmeta /g, '')
    .replace(/\bipv6-icmp\b/g, 'icmpv6');
  const list = text.split(/\s+/).filter(Boolean);
  const dependency = (i: number) => list[i] === 'l4proto' && list.filter((w) => w === list[i + 1]).length > 1;
  return list.filter((_, i) => !dependency(i) && !dependency(i - 1)).sort().join(' ');
}

/** What iptables-nft does with `rule`: the message id nftsim should report, or 'none'. */
function realOutcome(family: 'ip' | 'ip6', rule: string): string | undefined {
  const tool = family === 'ip' ? 'iptables-nft' : 'ip6tables-nft';
  inNs(`${tool} -F FORWARD; ${tool} -A FORWARD -j ACCEPT`);
  // Not through sh: `>` in `tcp dport > 1024` is the rule's, not a redirection.
  if (spawnSync('ip', ['netns', 'exec', NS, 'nft', 'add', 'rule', family, 'filter', 'FORWARD', rule]).status !== 0) return undefined;
  const listed = (): string => inNs(`nft list chain ${family} filter FORWARD`).stdout;
  const before = listed();
  const save = inNs(`${tool}-save -t filter 2>/dev/null`);
  if (save.stdout.includes('is incompatible')) return 'table-unreadable';
  if (save.status === 3) return 'fatal-parse';
  inNs(`${tool}-save -t filter | ${tool}-restore`);
  return words(listed()) === words(before) ? 'none' : 'lossy';
}

const ROWS: readonly (readonly ['ip' | 'ip6', string])[] = [
  ['ip', 'iifname "wt0" accept'],
  ['ip', 'oifname "wt0" ct state established,related accept'],
  ['ip', 'ct state established,related accept'],
  ['ip', 'ct mark 0x1 accept'],
  ['ip', 'ct mark set 0x1'],
  ['ip', 'meta mark set ct mark'],
  ['ip', 'tcp dport 22 ip saddr 10.0.0.0/8 accept'],
  ['ip', 'tcp dport 1-1023 accept'],
  ['ip', 'tcp dport != 1-1023 accept'],
  ['ip', 'udp sport 53 drop'],
  ['ip', 'tcp flags syn / syn,ack drop'],
  ['ip', 'meta mark & 0x4000 == 0x4000 accept'],
  ['ip', 'meta mark 0x1 accept'],
  ['ip', 'meta l4proto udp accept'],
  ['ip', 'meta pkttype broadcast drop'],
  ['ip', 'meta skuid 0 accept'],
  ['ip', 'meta iiftype ether accept'],
  ['ip', 'meta length > 1000 drop'],
  ['ip', 'meta mark set 0x1'],
  ['ip', 'meta priority set 1:1'],
  ['ip', 'meta nftrace set 1'],
  ['ip', 'ip protocol tcp accept'],
  ['ip', 'ip ttl 64 accept'],
  ['ip', 'ip dscp cs1 accept'],
  ['ip', 'ip length 100 accept'],
  ['ip', 'ip saddr 10.0.0.1-10.0.0.9 accept'],
  ['ip', 'ip saddr != 10.0.0.1-10.0.0.9 drop'],
  ['ip', 'icmp type echo-request accept'],
  ['ip', 'th dport 53 accept'],
  ['ip', 'tcp dport { 22, 80 } accept'],
  ['ip', 'iifname { "eth0", "eth1" } accept'],
  ['ip', 'tcp dport vmap { 22 : accept }'],
  ['ip', 'tcp window 100 drop'],
  ['ip', 'iifname "eth0" continue'],
  ['ip', 'ip dscp set cs1'],
  ['ip', 'ip ttl set 1'],
  ['ip', 'log prefix "x" accept'],
  ['ip', 'log group 2 accept'],
  ['ip', 'limit rate 10/second accept'],
  ['ip', 'limit rate over 10/second drop'],
  ['ip', 'limit rate 1 mbytes/second accept'],
  ['ip', 'reject'],
  ['ip', 'reject with tcp reset'],
  ['ip', 'fib daddr type local accept'],
  ['ip', 'tcp option maxseg size 1400 drop'],
  ['ip', 'quota 10 mbytes drop'],
  ['ip', 'notrack'],
  ['ip', 'counter accept'],
  ['ip', 'iifname "eth0" comment "a comment" accept'],
  ['ip6', 'iifname "wt0" accept'],
  ['ip6', 'oifname "wt0" ct state established,related accept'],
  ['ip6', 'ip6 saddr fe80::/64 accept'],
  ['ip6', 'ip6 hoplimit 1 drop'],
  ['ip6', 'ip6 dscp cs1 accept'],
  ['ip6', 'ip6 flowlabel 1 accept'],
  ['ip6', 'meta skuid 0 accept'],
  ['ip6', 'icmpv6 type nd-neighbor-solicit accept'],
  ['ip6', 'tcp dport { 22, 80 } accept'],
  ['ip6', 'reject'],
  ['ip', 'oifname "eth0*" accept'],
  ['ip', 'iifname != "lo" accept'],
  ['ip', 'iif "lo" accept'],
  ['ip', 'ip daddr 192.0.2.0/24 drop'],
  ['ip', 'ip saddr != 10.0.0.0/8 drop'],
  ['ip', 'ip saddr & 255.0.0.255 == 10.0.0.1 drop'],
  ['ip', 'ip frag-off & 0x1fff != 0 drop'],
  ['ip', 'ip id 1 drop'],
  ['ip', 'ip version 4 accept'],
  ['ip', 'ip ecn ce drop'],
  ['ip', 'ip saddr { 10.0.0.1, 10.0.0.2 } drop'],
  ['ip', 'ip saddr . tcp dport { 10.0.0.1 . 22 } accept'],
  ['ip', 'udp dport 53 accept'],
  ['ip', 'udp length 100 drop'],
  ['ip', 'tcp sport 1024-65535 accept'],
  // (`tcp dport > 1024` reads back as 1025-65535: same rule, other spelling, not compared here.)
  ['ip', 'tcp flags syn drop'],
  ['ip', 'tcp flags & (syn | ack) == syn drop'],
  ['ip', 'sctp dport 80 accept'],
  ['ip', 'udplite dport 80 accept'],
  ['ip', 'meta l4proto { tcp, udp } th dport 53 accept'],
  ['ip', 'meta mark != 0x1 accept'],
  ['ip', 'meta mark set meta mark | 0x4000'],
  ['ip', 'meta mark > 1 accept'],
  ['ip', 'meta cgroup 1 accept'],
  ['ip', 'meta skgid 0 accept'],
  ['ip', 'meta protocol ip accept'],
  ['ip', 'meta nfproto ipv4 accept'],
  ['ip', 'meta day "Monday" accept'],
  ['ip', 'ct state new drop'],
  ['ip', 'ct status dnat accept'],
  ['ip', 'ct direction original accept'],
  ['ip', 'ct count over 10 drop'],
  ['ip', 'ct state vmap { established : accept, invalid : drop }'],
  ['ip', 'ct zone set 1'],
  ['ip', 'iifname vmap { "lo" : accept }'],
  ['ip', 'fib saddr . iif oif missing drop'],
  ['ip', 'rt mtu 1500 accept'],
  ['ip', 'exthdr frag exists drop'],
  ['ip', 'log level warn accept'],
  ['ip', 'log group 2 prefix "x" accept'],
  ['ip', 'limit rate 10/minute burst 5 packets accept'],
  ['ip', 'reject with icmp host-unreachable'],
  ['ip', 'dup to 10.0.0.1'],
  ['ip', 'numgen random mod 2 0 accept'],
  ['ip', 'jhash ip saddr mod 2 0 accept'],
  ['ip', 'socket transparent 1 accept'],
  ['ip', 'meta random 1 accept'],
  ['ip', 'iifname "eth0" return'],
  ['ip', 'iifname "eth0" drop'],
  ['ip', 'accept'],
  ['ip', 'drop'],
  ['ip', 'meta nftrace set 1 accept'],
  ['ip6', 'ip6 nexthdr tcp accept'],
  ['ip6', 'ip6 daddr ::1 accept'],
  ['ip6', 'ip6 saddr fe80::1-fe80::9 accept'],
  ['ip6', 'ct state established accept'],
  ['ip6', 'meta mark set 0x1'],
  ['ip6', 'th dport 53 accept'],
  ['ip6', 'log prefix "y"'],
  ['ip6', 'exthdr frag exists drop'],
];

describe.runIf(canRun)('iptables-nft-incompatible against the installed iptables-nft', () => {
  beforeAll(() => {
    execFileSync('ip', ['netns', 'add', NS]);
    inNs('iptables-nft -L >/dev/null; ip6tables-nft -L >/dev/null');
  });
  afterAll(() => {
    spawnSync('ip', ['netns', 'del', NS]);
  });

  it.each(ROWS)('%s filter FORWARD: %s', (family, rule) => {
    const real = realOutcome(family, rule);
    if (real === undefined) return; // nft itself refuses the form on this kernel
    const code = `table ${family} filter {\n\tchain FORWARD {\n\t\ttype filter hook forward priority filter; policy accept;\n\t\t${rule}\n\t}\n}\n`;
    const findings = lintCode(iptablesNftIncompatible, { name: rule, code, options: { iptablesVersion: installedVersion() } });
    expect(findings.map((f) => f.messageId)).toEqual(real === 'none' ? [] : [real]);
  });
});
