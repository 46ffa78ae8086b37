import { natOutsideNatChain } from '../../src/rules/nat-outside-nat-chain.js';
import { testRule } from './rule-tester.js';

testRule(natOutsideNatChain, {
  valid: [
    { name: 'masquerade in a nat postrouting chain', code: 'table ip t {\n\tchain post {\n\t\ttype nat hook postrouting priority srcnat;\n\t\tmasquerade\n\t}\n}\n' },
    { name: 'dnat in a user chain reached only from nat prerouting', code: 'table ip t {\n\tchain pre {\n\t\ttype nat hook prerouting priority dstnat;\n\t\tjump svc\n\t}\n\tchain svc {\n\t\tdnat to 10.0.0.1\n\t}\n}\n' },
    { name: 'snat in an unreferenced user chain', code: 'table ip t {\n\tchain orphan {\n\t\tsnat to 10.0.0.1\n\t}\n}\n' },
    { name: 'kube-proxy nat table from iptables-save', format: 'iptables', code: '*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-POSTROUTING - [0:0]\n-A POSTROUTING -j KUBE-POSTROUTING\n-A KUBE-POSTROUTING -j MASQUERADE --random-fully\nCOMMIT\n' },
  ],
  invalid: [
    {
      name: 'masquerade in a filter chain',
      code: 'table ip t {\n\tchain post {\n\t\ttype filter hook postrouting priority 0;\n\t\toifname "eth0" masquerade\n\t}\n}\n',
      errors: [{ messageId: 'chainType', line: 4, column: 18, related: 0, message: 'of type filter' }],
    },
    {
      name: 'dnat at postrouting, reached through a jump',
      code: 'table ip t {\n\tchain post {\n\t\ttype nat hook postrouting priority srcnat;\n\t\tjump x\n\t}\n\tchain x {\n\t\tdnat to 10.0.0.1\n\t}\n}\n',
      errors: [{ messageId: 'hook', line: 7, column: 3, related: 1, message: 'dnat works only at prerouting and output' }],
    },
  ],
});
