import { priorityTie } from '../../src/rules/priority-tie.js';
import { testRule } from './rule-tester.js';

const chain = (table: string, name: string, spec: string): string => `table ${table} {\n\tchain ${name} {\n\t\t${spec}\n\t}\n}\n`;

testRule(priorityTie, {
  valid: [
    { name: 'different priorities at one hook', code: chain('ip a', 'in', 'type filter hook input priority 0;') + chain('ip b', 'in', 'type filter hook input priority 10;') },
    { name: 'ip and ip6 tables never see the same packet', code: chain('ip a', 'in', 'type filter hook input priority 0;') + chain('ip6 b', 'in', 'type filter hook input priority 0;') },
    { name: 'different hooks', code: chain('ip a', 'in', 'type filter hook input priority 0;') + chain('ip b', 'fw', 'type filter hook forward priority 0;') },
    { name: 'two chains of one table', code: 'table ip a {\n\tchain x { type filter hook input priority 0; }\n\tchain y { type filter hook input priority 0; }\n}\n' },
    { name: 'nat chains at srcnat - 1 and srcnat', code: chain('ip a', 'post', 'type nat hook postrouting priority srcnat - 1;') + chain('ip b', 'post', 'type nat hook postrouting priority srcnat;') },
    { name: 'netdev ingress chains on different devices', code: chain('netdev a', 'in', 'type filter hook ingress device "eth0" priority 0;') + chain('netdev b', 'in', 'type filter hook ingress device "eth1" priority 0;') },
    { name: 'netdev egress chains on different devices', code: chain('netdev a', 'out', 'type filter hook egress device "eth0" priority 0;') + chain('netdev b', 'out', 'type filter hook egress device "eth1" priority 0;') },
  ],
  invalid: [
    {
      name: 'ip and inet filter chains at input priority 0',
      code: chain('ip filter', 'INPUT', 'type filter hook input priority filter;') + chain('inet fw', 'input', 'type filter hook input priority 0;'),
      errors: [{ messageId: 'tie', line: 8, column: 35, related: 1, message: 'inet fw input and ip filter INPUT both run at input priority 0' }],
    },
    {
      name: 'two nat chains at dstnat, reported once for both address families',
      code: chain('inet a', 'pre', 'type nat hook prerouting priority dstnat;') + chain('inet b', 'pre', 'type nat hook prerouting priority -100;'),
      errors: [{ messageId: 'tie', line: 8, column: 37 }],
    },
    {
      name: 'two netdev egress chains on one device',
      code: chain('netdev a', 'out', 'type filter hook egress device "eth1" priority 0;') + chain('netdev b', 'out', 'type filter hook egress device "eth1" priority 0;'),
      errors: [{ messageId: 'tie', line: 8, column: 50, message: 'netdev b out and netdev a out both run at egress priority 0' }],
    },
    {
      name: 'a filter chain in the NAT hook slot',
      code: chain('ip a', 'post', 'type nat hook postrouting priority srcnat - 1;') + chain('ip b', 'post', 'type filter hook postrouting priority 100;'),
      errors: [{ messageId: 'tie', line: 8, column: 41, message: 'postrouting priority 100' }],
    },
  ],
});
