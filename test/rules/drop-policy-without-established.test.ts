import { dropPolicyWithoutEstablished } from '../../src/rules/drop-policy-without-established.js';
import { testRule } from './rule-tester.js';

const input = (rules: string, extra = ''): string => `table inet fw {\n\tchain input {\n\t\ttype filter hook input priority 0; policy drop;\n${rules}\t}\n${extra}}\n`;

testRule(dropPolicyWithoutEstablished, {
  valid: [
    { name: 'ct state established,related accept', code: input('\t\tct state established,related accept\n') },
    { name: 'an anonymous set of states', code: input('\t\tct state { established, related } accept\n') },
    { name: 'a ct state verdict map', code: input('\t\tct state vmap { invalid : drop, established : accept, related : accept }\n') },
    { name: 'the accept in a jumped-to chain', code: input('\t\tjump ct-check\n', '\tchain ct-check {\n\t\tct state established accept\n\t}\n') },
    { name: 'policy accept', code: 'table ip t {\n\tchain input {\n\t\ttype filter hook input priority 0; policy accept;\n\t}\n}\n' },
    { name: 'output with policy drop', code: 'table ip t {\n\tchain output {\n\t\ttype filter hook output priority 0; policy drop;\n\t}\n}\n' },
    { name: 'iptables -m conntrack --ctstate', format: 'iptables', code: '*filter\n:INPUT DROP [0:0]\n-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\nCOMMIT\n' },
    { name: 'an opaque xt conntrack match from nft -j (cannot tell, so no alarm)', format: 'json', code: JSON.stringify({ nftables: [{ table: { family: 'ip', name: 'filter', handle: 1 } }, { chain: { family: 'ip', table: 'filter', name: 'FORWARD', handle: 1, type: 'filter', hook: 'forward', prio: 0, policy: 'drop' } }, { rule: { family: 'ip', table: 'filter', chain: 'FORWARD', handle: 2, expr: [{ xt: { type: 'match', name: 'conntrack' } }, { counter: { packets: 0, bytes: 0 } }, { accept: null }] } }] }) },
  ],
  invalid: [
    { name: 'a drop policy with only port accepts', code: input('\t\ttcp dport 22 accept\n'), errors: [{ messageId: 'missing', line: 2, column: 2, message: 'inet fw input drops by policy at hook input' }] },
    { name: 'established matched but dropped', code: input('\t\tct state established drop\n'), errors: [{ messageId: 'missing', line: 2, column: 2 }] },
    { name: 'ct state != established accept', code: input('\t\tct state != established accept\n'), errors: [{ messageId: 'missing', line: 2, column: 2 }] },
    { name: 'iptables FORWARD DROP without state accept', format: 'iptables', code: '*filter\n:FORWARD DROP [0:0]\n-A FORWARD -i eth0 -j ACCEPT\nCOMMIT\n', errors: [{ messageId: 'missing', line: 2, column: 1 }] },
  ],
});
