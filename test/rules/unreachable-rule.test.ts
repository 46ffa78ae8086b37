import { unreachableRule } from '../../src/rules/unreachable-rule.js';
import { testRule } from './rule-tester.js';

const chain = (...rules: string[]): string => `table inet t {\n\tchain c {\n${rules.map((r) => `\t\t${r}\n`).join('')}\t}\n}\n`;

testRule(unreachableRule, {
  valid: [
    { name: 'a narrower rule before a broader one', code: chain('tcp dport 22 ip saddr 10.0.0.1 accept', 'tcp dport 22 drop') },
    { name: 'a negated match is not its positive', code: chain('tcp dport != 22 drop', 'tcp dport 22 accept') },
    { name: 'different tcp flag tests', code: chain('tcp flags syn / syn,ack drop', 'tcp flags syn accept') },
    { name: 'a jump is not terminal', code: chain('tcp dport 22 jump x', 'tcp dport 22 accept') + 'table ip u { chain x { } }\n' },
    { name: 'a continue is not terminal', code: chain('tcp dport 22 counter continue', 'tcp dport 22 accept') },
    { name: 'a mark changed in between', code: chain('meta mark 0x1 drop', 'meta mark set 0x1', 'meta mark 0x1 accept') },
    { name: 'a mark changed before the match', code: chain('meta mark 0x1 drop', 'meta mark set 0x1 meta mark 0x1 accept') },
    { name: 'a mark set before a rate limit that can fail', code: chain('meta mark 0x1 drop', 'tcp dport 22 meta mark set 0x1 limit rate 1/second accept', 'meta mark 0x1 accept') },
    { name: 'a rate limit decides only some packets', code: chain('tcp dport 22 limit rate 10/second accept', 'tcp dport 22 drop') },
    { name: 'a random choice is drawn again', code: chain('numgen random mod 2 0 accept', 'numgen random mod 2 0 drop') },
    { name: 'an iptables xt match', format: 'iptables', code: '*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m recent --rcheck --name x -j DROP\n-A INPUT -m recent --rcheck --name x -j ACCEPT\nCOMMIT\n' },
  ],
  invalid: [
    {
      name: 'a rule after an unconditional drop',
      code: chain('counter drop', 'tcp dport 22 accept'),
      errors: [{ messageId: 'shadowed', line: 4, column: 3, related: 1, message: 'the rule at line 3 (counter drop)' }],
    },
    {
      name: 'a duplicate rule, written with a service name',
      code: chain('ip saddr 10.0.0.1 tcp dport 22 accept', 'tcp dport ssh ip saddr 10.0.0.1 counter drop'),
      errors: [{ messageId: 'shadowed', line: 4, column: 3 }],
    },
    {
      name: 'a rule after a broader accept with changes after its matches',
      code: chain('tcp dport 22 meta mark set 0x1 accept', 'tcp dport 22 ip saddr 10.0.0.0/8 drop'),
      errors: [{ messageId: 'shadowed', line: 4, column: 3 }],
    },
    {
      name: 'duplicate iptables rules',
      format: 'iptables',
      code: '*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp --dport 22 -j ACCEPT\n-A INPUT -p tcp --dport 22 -j ACCEPT\nCOMMIT\n',
      errors: [{ messageId: 'shadowed', line: 4, column: 1 }],
    },
  ],
});
