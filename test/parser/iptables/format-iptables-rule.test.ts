import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IptablesRule } from '../../../src/parser/iptables/iptables-ast.js';
import { formatIptablesCommand, formatIptablesRule, quoteIptablesArgument } from '../../../src/parser/iptables/format-iptables-rule.js';
import { parseIptablesSave } from '../../../src/parser/iptables/parse-iptables-save.js';
import { ruleSpecArb } from './iptables-arbitraries.js';

function parseLine(line: string) {
  const { dump, diagnostics } = parseIptablesSave(`*filter\n${line}\nCOMMIT\n`);
  return { command: dump.tables[0]?.commands[0], errors: diagnostics.filter((d) => d.severity === 'error') };
}

/** The rule without what depends on where it was written. */
function withoutPlaces(rule: IptablesRule | undefined): unknown {
  return JSON.parse(JSON.stringify(rule, (key, value: unknown) => (key === 'span' || key === 'origin' ? undefined : value)));
}

describe('formatIptablesRule', () => {
  it.each([
    ['! -s 10.0.0.0/8 -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y'],
    ['-i veth+ ! -o wt0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT'],
    ['-m comment --comment "a \\"quoted\\" \\\\ word" -j LOG --log-prefix "IN: "'],
    ['-p tcp --dport 22 -j ACCEPT'],
    ['-j MARK --set-xmark 0x4000/0x4000'],
  ])('prints %s as it was read', (spec) => {
    const { command, errors } = parseLine(`-A FORWARD ${spec}`);
    expect(errors).toEqual([]);
    expect(formatIptablesRule(command!.rule!)).toBe(spec);
  });

  it('prints commands with their counters', () => {
    expect(formatIptablesCommand(parseLine('[1:2] -I INPUT 3 -j DROP').command!)).toBe('[1:2] -I INPUT 3 -j DROP');
    expect(formatIptablesCommand(parseLine('-P INPUT DROP').command!)).toBe('-P INPUT DROP');
  });

  it.each([
    ['plain-word_1', 'plain-word_1'],
    ['two words', '"two words"'],
    ['-leading-dash', '"-leading-dash"'],
    ['', '""'],
    ['say "hi" \\o/', '"say \\"hi\\" \\\\o/"'],
    ['!', '"!"'],
  ])('quotes %j as %s', (s, quoted) => {
    expect(quoteIptablesArgument(s)).toBe(quoted);
  });
});

describe('properties', () => {
  it('a generated rule, printed as iptables-save text, re-parses to the same rule', () => {
    fc.assert(
      fc.property(ruleSpecArb, (spec) => {
        const first = parseLine(`-A FORWARD ${spec}`);
        expect(first.errors).toEqual([]);
        const printed = formatIptablesCommand(first.command!);
        const second = parseLine(printed);
        expect(second.errors).toEqual([]);
        expect(withoutPlaces(second.command?.rule)).toEqual(withoutPlaces(first.command?.rule));
      }),
      { numRuns: 500 },
    );
  });

  const mutation = fc.record({
    at: fc.nat(),
    remove: fc.nat(3),
    insert: fc.string({ unit: fc.constantFrom('"', "'", '\\', '!', '-', '--', ' ', '\n', '[', ']', ':', '*', 'COMMIT', '#', 'x', '0'), maxLength: 4 }),
  });

  it('a mutated dump never throws, and reports problems as diagnostics', () => {
    fc.assert(
      fc.property(fc.array(ruleSpecArb, { minLength: 1, maxLength: 5 }), fc.array(mutation, { minLength: 1, maxLength: 6 }), (specs, mutations) => {
        let text = `*filter\n:INPUT ACCEPT [0:0]\n${specs.map((s) => `-A INPUT ${s}`).join('\n')}\nCOMMIT\n`;
        for (const m of mutations) {
          const at = m.at % (text.length + 1);
          text = text.slice(0, at) + m.insert + text.slice(at + m.remove);
        }
        const started = performance.now();
        const { dump, diagnostics } = parseIptablesSave(text);
        expect(performance.now() - started).toBeLessThan(1000);
        expect(Array.isArray(dump.tables)).toBe(true);
        for (const d of diagnostics) expect(d.span?.line).toBeGreaterThan(0);
      }),
      { numRuns: 500 },
    );
  });
});
