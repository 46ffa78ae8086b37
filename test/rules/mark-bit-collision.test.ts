import { join, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseNode } from '../../src/parser/parse-ruleset.js';
import { runLintRules } from '../../src/rules/framework/lint-ruleset.js';
import { markBitCollision } from '../../src/rules/mark-bit-collision.js';
import { testRule } from './rule-tester.js';
import { KUBE, NETBIRD, other } from './mark-fixtures.js';


// Cilium tests its magic nibble, which its BPF programs set (no rule here sets it).
const CILIUM = 'table ip filter {\n\tchain OUTPUT {\n\t\ttype filter hook output priority filter; policy accept;\n\t\tjump CILIUM_OUTPUT\n\t}\n\tchain CILIUM_OUTPUT {\n\t\tmeta mark & 0x00000f00 == 0x00000a00 accept\n\t}\n}\n';
const agent = (hook: string, priority: string, stmt: string): string =>
  `table ip agent {\n\tchain c {\n\t\ttype filter hook ${hook} priority ${priority}; policy accept;\n\t\t${stmt}\n\t}\n}\n`;
// Calico sets its accept bit in mangle prerouting; Tailscale writes its byte 0xff0000 in forward.
const CALICO_TAILSCALE = [
  '*mangle',
  ':PREROUTING ACCEPT [0:0]',
  ':cali-PREROUTING - [0:0]',
  '-A PREROUTING -j cali-PREROUTING',
  '-A cali-PREROUTING -j MARK --set-xmark 0x10000/0x10000',
  'COMMIT',
  '*filter',
  ':FORWARD ACCEPT [0:0]',
  ':ts-forward - [0:0]',
  '-A FORWARD -j ts-forward',
  '-A ts-forward -i tailscale0 -j MARK --set-xmark 0x40000/0xff0000',
  'COMMIT',
  '',
].join('\n');
// The NodePort incident's two sides: Netbird 0.40 marks wt0 traffic with the whole word 0x1bd20
// in mangle prerouting; a platform rule in mangle postrouting tests bit 0x20.
const PLATFORM_TESTS_0X20 =
  'table ip netbird {\n\tchain pre {\n\t\ttype filter hook prerouting priority mangle; policy accept;\n\t\tiifname "wt0" meta mark set 0x0001bd20\n\t}\n}\n' +
  'table ip platform {\n\tchain post {\n\t\ttype filter hook postrouting priority mangle; policy accept;\n\t\tmeta mark & 0x00000020 == 0x00000020 meta mark set mark and 0xffffbfff\n\t}\n}\n';

testRule(markBitCollision, {
  valid: [
    { name: 'kube-proxy alone (its own xor after the test)', code: KUBE },
    { name: 'a full-word set before the bit is set', code: other('prerouting', 'mangle', 'iifname "wt0" meta mark set 0x0001bd20') },
    { name: 'a masked write of other bits', code: other('forward', 'filter', 'meta mark set mark and 0xfffeffff') },
    { name: 'a clear after the test', code: other('postrouting', 'srcnat + 10', 'meta mark set 0x0') },
    { name: 'a copy from the ct mark (unknown value)', code: other('forward', 'filter', 'meta mark set ct mark') },
    { name: 'an ip6 table on the ip path', code: `${KUBE}table ip6 agent {\n\tchain c {\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tmeta mark set 0x1\n\t}\n}\n` },
    { name: 'Netbird alone', code: NETBIRD },
    { name: 'Netbird with a clear of a bit its value does not have', code: NETBIRD + 'table ip agent {\n\tchain c {\n\t\ttype filter hook forward priority 0; policy accept;\n\t\tmeta mark set mark and 0xffffbfff\n\t}\n}\n' },
    { name: 'a full-word value that is just the tested flag, set before the owner sets it', code: other('prerouting', 'mangle', 'meta mark set 0x4000') },
    { name: 'a clear of bits the owner tests, after its test', code: CILIUM + agent('postrouting', 'mangle', 'meta mark set mark and 0xfffff0ff') },
    { name: 'a clear of bits nobody uses', code: CILIUM + agent('output', 'mangle', 'meta mark set mark and 0xfffeffff') },
    {
      name: 'two components OR the same bit (they agree)',
      code: 'table ip nat {\n\tchain PREROUTING {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t\tjump CNI-HOSTPORT-SETMARK\n\t}\n\tchain CNI-HOSTPORT-SETMARK {\n\t\tmeta mark set mark or 0x2000\n\t}\n}\n' +
        'table inet netavark {\n\tchain NETAVARK-HOSTPORT-SETMARK {\n\t\ttype filter hook forward priority 0; policy accept;\n\t\tmeta mark set mark or 0x2000\n\t}\n}\n',
    },
    {
      name: 'Calico alone, its FORWARD rule told by its bits (no comment in nft -j)',
      code: '*filter\n:FORWARD ACCEPT [0:0]\n:cali-FORWARD - [0:0]\n-A FORWARD -j cali-FORWARD\n-A FORWARD -j MARK --set-xmark 0x10000/0x10000\n-A cali-FORWARD -j MARK --set-xmark 0x0/0xe0000\n-A cali-FORWARD -m mark --mark 0x10000/0x10000 -j ACCEPT\nCOMMIT\n',
      format: 'iptables',
    },
    { name: 'a declared owner\'s bits written by the owner', code: agent('forward', '0', 'meta mark set mark and 0xfffffeff'), options: { owners: { chains: { 'ip agent c': 'my-lb' }, marks: { 'my-lb': 0x100 } } } },
  ],
  invalid: [
    {
      name: 'a full-word set at forward',
      code: other('forward', 'filter', 'meta mark set 0x1bd20'),
      errors: [{ messageId: 'fullWord', line: 22, column: 3, related: 2, message: "sets the whole packet mark to 0x1bd20, which clears kube-proxy's masquerade bit 0x4000 between where it is set and where it is tested (forward path: prerouting → forward → postrouting)" }],
    },
    {
      name: 'a masked clear at mangle postrouting (the NodePort incident), only on the forward path: nothing marks at nat output',
      code: other('postrouting', 'mangle', 'meta mark & 0x00000020 == 0x00000020 meta mark set mark and 0xffffbfff'),
      errors: [{ messageId: 'clears', line: 22, column: 40, message: "clears kube-proxy's masquerade bit 0x4000 between where it is set and where it is tested (forward path: prerouting → postrouting)" }],
    },
    {
      name: 'kube-proxy ORs its bit into a mark Netbird compares exactly',
      code: NETBIRD + KUBE,
      errors: [{ messageId: 'exactCompare', line: 17, column: 3, related: 2, message: 'changes the packet mark netbird set to 0x1bd21, making it 0x1fd21' }],
    },
    {
      name: 'an xor in an inet table',
      code: `${KUBE}table inet agent {\n\tchain c {\n\t\ttype filter hook forward priority 0; policy accept;\n\t\tmeta mark set meta mark ^ 0x4000\n\t}\n}\n`,
      errors: [{ messageId: 'clears', line: 22, column: 3, message: 'toggles' }],
    },
    {
      name: 'a full-word value that keeps the bit but carries it to packets kube-proxy never marked',
      code: other('forward', 'filter', 'meta mark set 0x4001'),
      errors: [{ messageId: 'containsTestedBit', line: 22, column: 3, related: 1, message: "sets the whole packet mark to 0x4001, which happens to contain kube-proxy's masquerade bit 0x4000: kube-proxy's test takes these packets for its own (forward path: forward → postrouting)" }],
    },
    {
      name: "Netbird's 0x1bd20 holds the 0x20 a platform rule tests (only on the forward path)",
      code: PLATFORM_TESTS_0X20,
      errors: [{ messageId: 'containsTestedBit', line: 4, column: 17, related: 1, message: "sets the whole packet mark to 0x1bd20, which happens to contain ip platform post's bit 0x20: ip platform post's test takes these packets for its own (forward path: prerouting → postrouting)" }],
    },
    {
      name: 'a masked clear of bits Cilium sets outside the ruleset and tests later',
      code: CILIUM + agent('output', 'mangle', 'meta mark set mark and 0xfffff0ff'),
      errors: [{ messageId: 'foreignClear', line: 13, column: 3, related: 1, message: "clears cilium's magic bits 0xf00, which cilium sets outside this ruleset and tests later (output path: output)" }],
    },
    {
      name: 'an xor of a bit the configuration gives to another component',
      code: agent('forward', '0', 'meta mark set mark xor 0x100'),
      options: { owners: { marks: { 'my-lb': 0x100 } } },
      errors: [{ messageId: 'foreignClear', line: 4, column: 3, related: 0, message: "toggles my-lb's bit 0x100, which the configuration gives to my-lb (forward path: forward)" }],
    },
    {
      name: "Tailscale's masked write over Calico's accept bit",
      code: CALICO_TAILSCALE,
      format: 'iptables',
      errors: [{ messageId: 'overlappingWriters', line: 11, column: 29, related: 1, message: "writes 0x10000 of the packet mark, which calico writes differently: the two masked writes overwrite each other's policy bit (forward path: prerouting → forward)" }],
    },
    {
      name: 'a conntrack-mark bit cleared between set and test',
      code: 'table ip antrea {\n\tchain pre {\n\t\ttype filter hook prerouting priority mangle; policy accept;\n\t\tct mark set ct mark or 0x40000000\n\t}\n\tchain post {\n\t\ttype filter hook postrouting priority mangle; policy accept;\n\t\tct mark & 0x40000000 == 0x40000000 accept\n\t}\n}\n' + agent('forward', '0', 'ct mark set 0x1'),
      errors: [{ messageId: 'fullWord', line: 14, column: 3, related: 2, message: "sets the whole conntrack mark to 0x1, which clears antrea's bit 0x40000000" }],
    },
  ],
});

describe('mark-bit-collision on the NodePort masquerade example', () => {
  it('fires on the mangle POSTROUTING rule that clears 0x4000 (on both paths that mark), on kube-proxy\'s OR into Netbird\'s exact mark and on Netbird\'s values that hold the platform\'s 0x20', () => {
    const dir = join(resolve(import.meta.dirname, '../..'), 'corpus/examples/nodeport-masquerade');
    const files = ['node.nft', 'node.ipt'].map((f) => ({ file: f, text: readFileSync(join(dir, f), 'utf8') }));
    const findings = runLintRules(parseNode(files).ruleset, [markBitCollision]);
    const contains = (value: string, line: number): object => ({
      at: `node.nft:${line}`,
      messageId: 'containsTestedBit',
      message: `sets the whole packet mark to ${value}, which happens to contain ip mangle POSTROUTING's bit 0x20: ip mangle POSTROUTING's test takes these packets for its own (forward path: prerouting → postrouting)`,
      related: ['node.ipt:8 ip mangle POSTROUTING tests 0x20 here'],
    });
    expect(findings.map((f) => ({ at: `${f.location.file}:${f.location.line}`, messageId: f.messageId, message: f.message, related: f.related.map((r) => `${r.location.file}:${r.location.line} ${r.message}`) }))).toEqual([
      {
        at: 'node.ipt:8',
        messageId: 'clears',
        message: "clears kube-proxy's masquerade bit 0x4000 between where it is set and where it is tested (forward path: prerouting → postrouting; output path: output → postrouting)",
        related: ['node.ipt:42 kube-proxy sets 0x4000 here', 'node.ipt:44 kube-proxy tests 0x4000 here'],
      },
      {
        at: 'node.ipt:42',
        messageId: 'exactCompare',
        message: 'changes the packet mark netbird set to 0x1bd21, making it 0x1fd21, before netbird compares the whole mark with 0x1bd21: the compare fails (forward path: prerouting → postrouting)',
        related: ['node.nft:106 netbird sets 0x1bd21 here', 'node.nft:119 netbird tests 0x1bd21 here'],
      },
      contains('0x1bd21', 106),
      contains('0x1bd22', 107),
      contains('0x1bd20', 109),
    ]);
  });
});
