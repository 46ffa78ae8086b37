import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseNode } from '../../src/parser/parse-ruleset.js';
import { runLintRules } from '../../src/rules/framework/lint-ruleset.js';
import { iptablesNftIncompatible } from '../../src/rules/iptables-nft-incompatible.js';
import { lintCode, testRule } from './rule-tester.js';

// A filter FORWARD chain as iptables-nft creates it, holding `rules` (one per line, from line 4).
const forward = (...rules: string[]): string =>
  `table ip filter {\n\tchain FORWARD {\n\t\ttype filter hook forward priority filter; policy accept;\n${rules.map((r) => `\t\t${r}\n`).join('')}\t}\n}\n`;

// arptables-nft's INPUT and ebtables-nft's FORWARD, as those tools create them.
const arpInput = (...rules: string[]): string =>
  `table arp filter {\n\tchain INPUT {\n\t\ttype filter hook input priority filter; policy accept;\n${rules.map((r) => `\t\t${r}\n`).join('')}\t}\n}\n`;
const bridgeForward = (...rules: string[]): string =>
  `table bridge filter {\n\tchain FORWARD {\n\t\ttype filter hook forward priority filter; policy accept;\n${rules.map((r) => `\t\t${r}\n`).join('')}\t}\n}\n`;

testRule(iptablesNftIncompatible, {
  valid: [
    { name: 'arptables-nft reads a rule shaped like its own', code: arpInput('arp htype 1 arp hlen 6 arp plen 4 arp saddr ip 10.0.0.1 arp operation request accept') },
    { name: 'ebtables-nft reads ether matches, among sets, limit and continue', code: bridgeForward('ether saddr 00:11:22:33:44:55 ether type arp accept', 'ether saddr { 00:11:22:33:44:55, 00:11:22:33:44:66 } drop', 'limit rate 10/second accept', 'iifname "eth0" continue') },
    { name: 'bridge broute before 1.8.10 (no such ebtables-nft table)', code: 'table bridge broute {\n\tchain BROUTING {\n\t\ttype filter hook prerouting priority 0;\n\t\tct state new accept\n\t}\n}\n' },
    { name: 'a native rule iptables-nft reads faithfully', code: forward('iifname "wt0" accept', 'tcp dport 22 ip saddr 10.0.0.0/8 accept', 'meta mark & 0x4000 == 0x4000 accept') },
    { name: 'ct in a table iptables-nft does not look at', code: 'table ip netbird {\n\tchain FORWARD {\n\t\ttype filter hook forward priority filter;\n\t\tct state established accept\n\t}\n}\n' },
    { name: 'ct in an inet table named filter', code: 'table inet filter {\n\tchain forward {\n\t\ttype filter hook forward priority 10;\n\t\tct state established accept\n\t}\n}\n' },
    { name: "iptables-nft's own conntrack match (blank xt comment beside it)", code: forward('ct state new  counter packets 0 bytes 0 jump KUBE-SERVICES'), },
    { name: "iptables-nft's own MARK target (word operator)", code: 'table ip nat {\n\tchain KUBE-MARK-MASQ {\n\t\tcounter packets 0 bytes 0 meta mark set mark or 0x4000\n\t}\n}\n' },
    { name: 'rules from an iptables-save dump', format: 'iptables', code: '*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n-A FORWARD -p tcp -m multiport --dports 22,80 -j REJECT\nCOMMIT\n' },
    { name: 'meta mark set <const> from 1.8.10', code: forward('meta mark set 0x1 accept'), options: { iptablesVersion: '1.8.10' } },
    { name: 'tcp flags != X no longer crashes from 1.8.11', code: forward('tcp flags != syn drop'), options: { iptablesVersion: '1.8.11' } },
    { name: 'an icmp code beside its type', code: forward('icmp type destination-unreachable icmp code 1 accept') },
    { name: 'drop in a filter OUTPUT chain (only nat refuses DROP)', code: 'table ip filter {\n\tchain OUTPUT {\n\t\ttype filter hook output priority filter; policy accept;\n\t\toifname "wt0" drop\n\t}\n}\n' },
  ],
  invalid: [
    {
      name: "the Netbird rule: ct makes the table unreadable",
      code: forward('oifname "wt0" ct state established,related accept'),
      errors: [{ messageId: 'table-unreadable', line: 4, column: 17, message: "Table `filter' is incompatible" }],
    },
    {
      name: 'a ct-first rule also breaks iptables -C',
      code: forward('ct state established,related accept'),
      errors: [{ messageId: 'table-unreadable', line: 4, column: 3, message: 'cmp sreg undef' }],
    },
    {
      name: 'statements outside the whitelist',
      code: forward('log prefix "x" accept', 'limit rate over 10/second drop', 'reject', 'fib daddr type local accept', 'counter name "c" accept', 'meta length > 1000 drop'),
      errors: [
        { messageId: 'table-unreadable', line: 4, column: 3, message: '`log` without `group`' },
        // The parser's span of a limit statement starts after the `limit` keyword.
        { messageId: 'table-unreadable', line: 5, column: 9 },
        { messageId: 'table-unreadable', line: 6, column: 3 },
        { messageId: 'table-unreadable', line: 7, column: 3, message: 'fib' },
        { messageId: 'table-unreadable', line: 8, column: 3, message: 'objref' },
        { messageId: 'table-unreadable', line: 9, column: 3, message: 'byteorder' },
      ],
    },
    {
      name: 'a nat statement in nat POSTROUTING',
      code: 'table ip nat {\n\tchain POSTROUTING {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\toifname "eth0" masquerade\n\t}\n}\n',
      errors: [{ messageId: 'table-unreadable', line: 4, column: 18, message: 'masq' }],
    },
    {
      name: 'log with a group from 1.8.8 passes gate 1 but is read without its log',
      code: forward('log group 2 accept'),
      errors: [{ messageId: 'lossy', line: 4, column: 3 }],
    },
    {
      name: 'log with a group before 1.8.8',
      code: forward('log group 2 accept'),
      options: { iptablesVersion: '1.8.7' },
      errors: [{ messageId: 'table-unreadable', line: 4, column: 3 }],
    },
    {
      name: 'fatal parses from 1.8.9',
      code: forward('meta skuid 0 accept', 'th dport 53 accept', 'meta mark set 0x1 accept', 'ip dscp cs1 accept', 'ip saddr != 10.0.0.1-10.0.0.9 drop'),
      errors: [
        { messageId: 'fatal-parse', line: 4, column: 3, message: 'unknown ipv4 meta key' },
        { messageId: 'fatal-parse', line: 5, column: 3, message: 'unsupported layer 4 protocol value' },
        { messageId: 'fatal-parse', line: 6, column: 3, message: 'meta sreg key not supported' },
        { messageId: 'fatal-parse', line: 7, column: 3, message: 'unknown payload offset' },
        { messageId: 'fatal-parse', line: 8, column: 3, message: 'range with unknown payload base' },
      ],
    },
    {
      name: 'an unknown meta key is silently dropped before 1.8.9',
      code: forward('meta skuid 0 accept'),
      options: { iptablesVersion: '1.8.8' },
      errors: [{ messageId: 'lossy', line: 4, column: 3 }],
    },
    {
      name: 'silently lossy forms',
      code: forward('tcp dport { 22, 80 } accept', 'ip saddr 10.0.0.1-10.0.0.9 accept', 'iifname "eth0" continue', 'ip dscp set cs1', 'tcp dport vmap { 22 : accept }'),
      errors: [
        { messageId: 'lossy', line: 4, column: 3, message: 'sets and maps are dropped' },
        { messageId: 'lossy', line: 5, column: 3, message: 'upper bound' },
        { messageId: 'lossy', line: 6, column: 18 },
        { messageId: 'lossy', line: 7, column: 3 },
        { messageId: 'lossy', line: 8, column: 3 },
      ],
    },
    {
      name: 'readable rules iptables-restore rejects: -i in OUTPUT, DROP in nat',
      code:
        'table ip filter {\n\tchain OUTPUT {\n\t\ttype filter hook output priority filter; policy accept;\n\t\tiifname "wt0" accept\n\t}\n}\n' +
        'table ip nat {\n\tchain PREROUTING {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t\tip saddr 10.0.0.1 drop\n\t}\n}\n',
      errors: [
        { messageId: 'unrestorable', line: 4, column: 3, message: "Can't use -i with OUTPUT" },
        { messageId: 'unrestorable', line: 10, column: 21, message: 'not intended for filtering' },
      ],
    },
    {
      name: 'tcp flags != X crashes iptables-nft-save 1.8.9',
      code: forward('tcp flags != syn drop'),
      errors: [{ messageId: 'crash', line: 4, column: 3, message: 'exit 139' }],
    },
    {
      name: 'icmp: a code alone reads as type any, other fields are fatal, icmpv6 code alone is fatal',
      code: forward('icmp code 1 accept', 'icmp type echo-request icmp id 1 accept') + 'table ip6 filter {\n\tchain FORWARD {\n\t\ticmpv6 code 1 accept\n\t}\n}\n',
      errors: [
        { messageId: 'lossy', line: 4, column: 3, message: '--icmp-type any' },
        { messageId: 'fatal-parse', line: 5, column: 26, message: 'unexpected payload offset' },
        { messageId: 'fatal-parse', line: 10, column: 3, message: 'icmp6 code with any type' },
      ],
    },
    {
      name: 'link-layer raw payload is ignored outside the bridge family',
      code: forward('@ll,0,8 1 accept'),
      errors: [{ messageId: 'lossy', line: 4, column: 3, message: 'link-layer' }],
    },
    {
      name: 'an ordered compare on a meta key the parser does not know also breaks iptables -C',
      code: forward('meta skuid > 1000 accept', 'meta mark > 1 accept'),
      errors: [
        { messageId: 'table-unreadable', line: 4, column: 3, message: 'when they reach it' },
        { messageId: 'table-unreadable', line: 5, column: 3 },
      ],
    },
    {
      name: 'base chains iptables-nft cannot represent',
      code: 'table ip filter {\n\tchain FORWARD {\n\t\ttype filter hook forward priority 10; policy accept;\n\t}\n\tchain vpn {\n\t\ttype filter hook forward priority filter;\n\t}\n}\n',
      errors: [
        { messageId: 'base-chain', line: 2, column: 2, message: 'cannot add rules' },
        { messageId: 'base-chain', line: 5, column: 2, message: 'hides it' },
      ],
    },
    {
      name: 'arptables-nft: no `arp hlen` is unrestorable, an address without it a fatal parse, limit aborts',
      code: arpInput('arp operation request accept', 'arp saddr ip 10.0.0.1 accept', 'arp htype 1 arp hlen 6 arp plen 4 limit rate 10/second accept', 'meta skuid 0 accept'),
      errors: [
        { messageId: 'unrestorable', line: 4, column: 3, message: '--h-length 0/0' },
        { messageId: 'fatal-parse', line: 5, column: 3, message: 'unknown payload offset' },
        { messageId: 'crash', line: 6, column: 43, message: 'nft_parse_limit' },
        { messageId: 'fatal-parse', line: 7, column: 3, message: 'Unknown arp meta key' },
      ],
    },
    {
      name: 'ebtables-nft: unknown meta keys, iif crashes, network fields misread, non-ether sets',
      code: bridgeForward('meta mark 0x1 accept', 'iif "lo" accept', 'ip saddr 10.0.0.1 accept', 'iifname { "a", "b" } accept', 'ether type { ip, arp } accept', 'log prefix "x" accept'),
      errors: [
        { messageId: 'fatal-parse', line: 4, column: 3, message: 'unknown bridge meta key' },
        { messageId: 'crash', line: 5, column: 3, message: 'ebtables-nft 1.8.9 crashes' },
        { messageId: 'lossy', line: 6, column: 3, message: 'ether type' },
        { messageId: 'fatal-parse', line: 7, column: 3, message: 'lookup reg is not payload type' },
        { messageId: 'fatal-parse', line: 8, column: 3, message: 'unsupported lookup key length' },
        { messageId: 'table-unreadable', line: 9, column: 3, message: "libvirt's nwfilter" },
      ],
    },
    {
      name: 'ebtables-nft: -i in OUTPUT cannot be restored',
      code: 'table bridge filter {\n\tchain OUTPUT {\n\t\ttype filter hook output priority filter; policy accept;\n\t\tiifname "eth0" accept\n\t}\n}\n',
      errors: [{ messageId: 'unrestorable', line: 4, column: 3, message: 'ebtables-restore' }],
    },
    {
      name: 'bridge broute is an ebtables-nft table from 1.8.10',
      code: 'table bridge broute {\n\tchain BROUTING {\n\t\ttype filter hook prerouting priority 0;\n\t\tlog prefix "x"\n\t}\n}\n',
      options: { iptablesVersion: '1.8.10' },
      errors: [
        { messageId: 'base-chain', line: 2, column: 2, message: 'cannot add rules' },
        { messageId: 'table-unreadable', line: 4, column: 3 },
      ],
    },
    {
      name: 'a bridge base chain at the ip filter priority',
      code: 'table bridge filter {\n\tchain FORWARD {\n\t\ttype filter hook forward priority 0; policy accept;\n\t}\n}\n',
      errors: [{ messageId: 'base-chain', line: 2, column: 2, message: 'ebtables-nft expects type filter hook forward priority -200' }],
    },
    {
      name: 'a listing that cannot tell who wrote a counted ct rule',
      code: forward('ct state established counter packets 0 bytes 0 accept', 'fib daddr type local counter packets 0 bytes 0 drop'),
      errors: [{ messageId: 'origin-unknown', line: 4, column: 3, related: 1, message: 'cannot tell' }],
    },
  ],
});

describe('iptables-nft-incompatible severities and fixes', () => {
  it.each([
    ['a set lookup on ct compares nothing', 'ct state { established, related } accept', false],
    ['mark is parsed behind byteorder', 'meta mark > 1 accept', false],
    ['a ct comparison first reads an undefined register', 'ct state established accept', true],
    ['meta mark set ct mark fails the meta statement', 'meta mark set ct mark', true],
  ])('-C breaks on a table-unreadable rule: %s', (_, rule, breaks) => {
    const [finding] = lintCode(iptablesNftIncompatible, { name: '', code: forward(rule) });
    expect(finding?.messageId).toBe('table-unreadable');
    expect(finding?.message.includes('`-D` on FORWARD exit 3')).toBe(breaks);
  });

  it.each([
    ['table-unreadable', forward('oifname "wt0" ct state established accept'), 'error'],
    ['broadening lossy', forward('tcp dport { 22, 80 } accept'), 'error'],
    ['non-broadening lossy', forward('iifname "eth0" continue'), 'warning'],
    ['hidden base chain', 'table ip filter {\n\tchain vpn {\n\t\ttype filter hook forward priority 10;\n\t}\n}\n', 'warning'],
    ['origin unknown', forward('ct state established counter packets 0 bytes 0 accept'), 'info'],
  ])('%s is reported as %s', (_, code, severity) => {
    expect(lintCode(iptablesNftIncompatible, { name: '', code }).map((f) => f.severity)).toEqual([severity]);
  });

  it('offers nft delete commands for the rule and its twin in the other family', () => {
    const rule = 'oifname "wt0" ct state established,related accept';
    const code = `table ip filter {\n\tchain FORWARD {\n\t\t${rule} # handle 36\n\t}\n}\ntable ip6 filter {\n\tchain FORWARD {\n\t\t${rule} # handle 22\n\t}\n}\n`;
    expect(lintCode(iptablesNftIncompatible, { name: '', code }).map((f) => f.fix?.commands)).toEqual([
      ['nft delete rule ip filter FORWARD handle 36', 'nft delete rule ip6 filter FORWARD handle 22'],
      ['nft delete rule ip6 filter FORWARD handle 22', 'nft delete rule ip filter FORWARD handle 36'],
    ]);
  });
});

const CORPUS = join(resolve(import.meta.dirname, '../..'), 'corpus/real/kube-proxy-wt0-native-rules');
describe('the wt0 incident (corpus/real/kube-proxy-wt0-native-rules)', () => {
  const lint = (...files: string[]) =>
    runLintRules(parseNode(files.map((f) => ({ file: f, text: readFileSync(join(CORPUS, f), 'utf8') }))).ruleset, [iptablesNftIncompatible]).filter(
      (f) => f.severity === 'error',
    );
  it.runIf(existsSync(CORPUS)).each([['ruleset-handles.nft'], ['ruleset.json']])('fires on the ct rule in ip and ip6 filter FORWARD, with the fix, from %s', (file) => {
    expect(lint(file).map((f) => [f.messageId, f.message.slice(f.message.indexOf(' in ') + 4, f.message.indexOf(' is ')), f.fix?.commands])).toEqual([
      ['table-unreadable', 'ip filter FORWARD', ['nft delete rule ip filter FORWARD handle 36', 'nft delete rule ip6 filter FORWARD handle 22']],
      ['table-unreadable', 'ip6 filter FORWARD', ['nft delete rule ip6 filter FORWARD handle 22', 'nft delete rule ip filter FORWARD handle 36']],
    ]);
  });
});
