import { undefinedReference } from '../../src/rules/undefined-reference.js';
import { testRule } from './rule-tester.js';

const IPSET_RULES = '*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m set --match-set allowed src -j SET --add-set seen src\nCOMMIT\n';

testRule(undefinedReference, {
  valid: [
    { name: 'jumps, gotos and set references that exist', code: 'table ip t {\n\tset s { type ipv4_addr; }\n\tmap m { type inet_service : verdict; }\n\tchain a { ip saddr @s jump b; tcp dport vmap @m; tcp dport vmap { 22 : goto b }; }\n\tchain b { }\n}\n' },
    { name: 'a chain defined after the jump to it', code: 'table inet t {\n\tchain a { jump b }\n\tchain b { }\n}\n' },
    { name: 'an ipset the ipset input creates', code: IPSET_RULES, format: 'iptables', ipsets: 'create allowed hash:net family inet\ncreate seen hash:ip family inet\n' },
    { name: 'ipsets without an ipset input: nothing known, nothing reported', code: IPSET_RULES, format: 'iptables' },
  ],
  invalid: [
    {
      name: 'a jump to a missing chain',
      code: 'table ip t {\n\tchain a {\n\t\tip saddr 10.0.0.1 jump nowhere\n\t}\n}\n',
      errors: [{ messageId: 'chain', line: 3, column: 21, related: 1, message: "jump to chain 'nowhere', which table ip t does not define" }],
    },
    {
      name: 'a goto in a verdict map to a missing chain',
      code: 'table ip t {\n\tchain a {\n\t\ttcp dport vmap { 22 : goto gone, 80 : accept }\n\t}\n}\n',
      errors: [{ messageId: 'chain', line: 3, column: 25 }],
    },
    {
      name: 'a chain in another table does not count',
      code: 'table ip t {\n\tchain a { jump b }\n}\ntable ip u {\n\tchain b { }\n}\n',
      errors: [{ messageId: 'chain', line: 2, column: 12 }],
    },
    {
      name: 'a missing set and a missing map',
      code: 'table ip t {\n\tchain a {\n\t\tip saddr @blocked drop\n\t\tip daddr vmap @dispatch\n\t}\n}\n',
      errors: [
        { messageId: 'set', line: 3, column: 12, message: "set or map '@blocked' is not defined in table ip t" },
        { messageId: 'set', line: 4, column: 17 },
      ],
    },
    {
      name: 'an ipset the ipset input does not create (iptables-restore refuses the rule)',
      code: IPSET_RULES,
      format: 'iptables',
      ipsets: 'create allowed hash:net family inet\n',
      errors: [{ messageId: 'ipset', line: 3, column: 41, message: "ipset 'seen' is not created by the ipset input" }],
    },
  ],
});
