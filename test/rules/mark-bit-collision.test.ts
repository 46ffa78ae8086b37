import { join, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseNode } from '../../src/parser/parse-ruleset.js';
import { runLintRules } from '../../src/rules/framework/lint-ruleset.js';
import { markBitCollision } from '../../src/rules/mark-bit-collision.js';
import { testRule } from './rule-tester.js';

// kube-proxy's contract in nft words: OR 0x4000 in a chain reached from nat prerouting, test it
// in nat postrouting. CLEAR is the rule under test, in a table of its own at mangle postrouting.
const KUBE = [
  'table ip nat {',
  '\tchain PREROUTING {',
  '\t\ttype nat hook prerouting priority dstnat; policy accept;',
  '\t\tjump KUBE-MARK-MASQ',
  '\t}',
  '\tchain KUBE-MARK-MASQ {',
  '\t\tmeta mark set mark or 0x4000',
  '\t}',
  '\tchain POSTROUTING {',
  '\t\ttype nat hook postrouting priority srcnat; policy accept;',
  '\t\tjump KUBE-POSTROUTING',
  '\t}',
  '\tchain KUBE-POSTROUTING {',
  '\t\tmeta mark & 0x00004000 != 0x00004000 return',
  '\t\tmeta mark set mark xor 0x4000',
  '\t\tmasquerade fully-random',
  '\t}',
  '}',
  '',
].join('\n');
// Netbird 0.40's full-word mark set at mangle prerouting and compared exactly at nat postrouting.
const NETBIRD = 'table ip netbird {\n\tchain pre {\n\t\ttype filter hook prerouting priority mangle; policy accept;\n\t\tiifname "wt0" meta mark set 0x0001bd21\n\t}\n\tchain post {\n\t\ttype nat hook postrouting priority srcnat - 1; policy accept;\n\t\tmeta mark 0x0001bd21 masquerade\n\t}\n}\n';
const other = (hook: string, priority: string, stmt: string): string =>
  `${KUBE}table ip agent {\n\tchain c {\n\t\ttype filter hook ${hook} priority ${priority}; policy accept;\n\t\t${stmt}\n\t}\n}\n`;

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
    { name: 'a full-word value that keeps the bit', code: other('forward', 'filter', 'meta mark set 0x4001') },
  ],
  invalid: [
    {
      name: 'a full-word set at forward',
      code: other('forward', 'filter', 'meta mark set 0x1bd20'),
      errors: [{ messageId: 'fullWord', line: 22, column: 3, related: 2, message: "sets the whole packet mark to 0x1bd20, which clears kube-proxy's masquerade bit 0x4000 between where it is set and where it is tested (on the forward path)" }],
    },
    {
      name: 'a masked clear at mangle postrouting (the NodePort incident)',
      code: other('postrouting', 'mangle', 'meta mark & 0x00000020 == 0x00000020 meta mark set mark and 0xffffbfff'),
      errors: [{ messageId: 'clears', line: 22, column: 40, message: "clears kube-proxy's masquerade bit 0x4000 between where it is set and where it is tested (on the forward and output path)".replace(' and output', '') }],
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
  ],
});

describe('mark-bit-collision on the NodePort masquerade example', () => {
  it('fires on the mangle POSTROUTING rule that clears 0x4000, with kube-proxy\'s set and test as related locations', () => {
    const dir = join(resolve(import.meta.dirname, '../..'), 'corpus/examples/nodeport-masquerade');
    const files = ['node.nft', 'node.ipt'].map((f) => ({ file: f, text: readFileSync(join(dir, f), 'utf8') }));
    const findings = runLintRules(parseNode(files).ruleset, [markBitCollision]);
    expect(findings.map((f) => ({ at: `${f.location.file}:${f.location.line}`, message: f.message, related: f.related.map((r) => `${r.location.file}:${r.location.line} ${r.message}`) }))).toEqual([
      {
        at: 'node.ipt:8',
        message: "clears kube-proxy's masquerade bit 0x4000 between where it is set and where it is tested (on the forward and output path)",
        related: ['node.ipt:42 kube-proxy sets 0x4000 here', 'node.ipt:44 kube-proxy tests 0x4000 here'],
      },
      {
        at: 'node.ipt:42',
        message: 'changes the packet mark netbird set to 0x1bd21, making it 0x1fd21, before netbird compares the whole mark with 0x1bd21: the compare fails (on the forward path)',
        related: ['node.nft:106 netbird sets 0x1bd21 here', 'node.nft:119 netbird tests 0x1bd21 here'],
      },
    ]);
  });
});
