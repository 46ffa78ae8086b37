import { describe, expect, it } from 'vitest';
import { priorityText, resolvePriorityName } from '../../src/model/priorities.js';
import type { Family, Hook } from '../../src/model/ast.js';

// Facts from nftables src/rule.c (std_prios, bridge_std_prios) and probes of nft 1.0.6 quoted in
// ../shared/research/nft-grammar.md section 3.2.
describe('chain priority names', () => {
  it.each<[Family, Hook, string, number | undefined]>([
    ['ip', 'prerouting', 'raw', -300],
    ['inet', 'forward', 'mangle', -150],
    ['ip', 'prerouting', 'dstnat', -100],
    ['ip', 'input', 'dstnat', undefined],
    ['ip6', 'postrouting', 'srcnat', 100],
    ['ip', 'output', 'srcnat', undefined],
    ['inet', 'input', 'security', 50],
    ['bridge', 'prerouting', 'dstnat', -300],
    ['bridge', 'forward', 'filter', -200],
    ['bridge', 'output', 'out', 100],
    ['netdev', 'ingress', 'filter', 0],
    ['netdev', 'ingress', 'mangle', undefined],
  ])('%s %s %s is %s', (family, hook, name, value) => {
    expect(resolvePriorityName(family, hook, name)).toBe(value);
  });

  it.each<[Family, Hook, number, string]>([
    ['ip', 'input', -100, '-100'],
    ['ip', 'prerouting', 100, '100'],
    ['ip', 'forward', -145, 'mangle + 5'],
    ['ip', 'postrouting', 99, 'srcnat - 1'],
    ['inet', 'input', 10, 'filter + 10'],
    ['inet', 'input', 11, '11'],
    ['ip', 'prerouting', -225, '-225'],
    ['bridge', 'forward', 0, '0'],
    ['netdev', 'ingress', 10, 'filter + 10'],
  ])('%s %s %d prints as %s', (family, hook, value, text) => {
    expect(priorityText(family, hook, value)).toBe(text);
  });
});
