import { describe, expect, it } from 'vitest';
import { readLintConfig } from '../../../src/rules/framework/lint-config.js';

const IDS = ['jump-loop', 'priority-tie'];

describe('readLintConfig', () => {
  it('reads rules, owners and the iptables version, with comments', () => {
    const text = '{\n  // CI profile\n  "rules": { "priority-tie": "off", "jump-loop": "warning" },\n  "owners": { "tables": { "ip netbird": "netbird" }, "chains": { "ip nat KUBE-MARK-MASQ": "kube-proxy" }, "marks": { "kube-proxy": "0x4000", "calico": 4294901760 } },\n  "iptablesVersion": "1.8.7"\n}\n';
    expect(readLintConfig(text, 'c.json', IDS)).toEqual({
      config: {
        rules: { 'priority-tie': 'off', 'jump-loop': 'warning' },
        owners: { tables: { 'ip netbird': 'netbird' }, chains: { 'ip nat KUBE-MARK-MASQ': 'kube-proxy' }, marks: { 'kube-proxy': 0x4000, calico: 0xffff0000 } },
        iptablesVersion: '1.8.7',
      },
      diagnostics: [],
    });
  });

  it.each([
    ['an unknown rule', '{ "rules": { "no-such": "off" } }', 'rules.no-such: no such rule', 14],
    ['a bad severity', '{ "rules": { "jump-loop": "fatal" } }', 'rules.jump-loop: expected "off", "error", "warning" or "info"', 27],
    ['an unknown field', '{ "rule": {} }', 'rule: unknown field (expected rules, owners, iptablesVersion)', 3],
    ['a bad mark mask', '{ "owners": { "marks": { "x": "bit 14" } } }', 'owners.marks.x: expected a 32-bit mask such as "0x4000"', 31],
    ['a bad version', '{ "iptablesVersion": "nine" }', 'iptablesVersion: expected a version such as "1.8.9"', 22],
    ['broken JSON', '{ "rules": }', 'JSON: ValueExpected', 12],
  ])('reports %s at its place, without throwing', (_, text, message, column) => {
    const { diagnostics } = readLintConfig(text, 'c.json', IDS);
    expect(diagnostics.map((d) => ({ message: d.message, line: d.span?.line, column: d.span?.column }))).toEqual([{ message, line: 1, column }]);
  });
});
