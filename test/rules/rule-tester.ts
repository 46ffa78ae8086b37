// ESLint's RuleTester for nftsim rules: valid rulesets produce no finding, invalid ones produce
// exactly the listed findings (rule id, message id, line, column), in order.

import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import type { LintOptions } from '../../src/rules/framework/lint-ruleset.js';
import { runLintRules } from '../../src/rules/framework/lint-ruleset.js';
import type { Finding, LintRule } from '../../src/rules/framework/lint-rule.js';

export interface ValidCase {
  readonly name: string;
  readonly code: string;
  readonly format?: 'nft' | 'iptables' | 'json';
  readonly options?: LintOptions;
  /** An `ipset save` input beside the code. */
  readonly ipsets?: string;
}

export interface ExpectedFinding {
  readonly messageId: string;
  readonly line: number;
  readonly column: number;
  /** The number of related locations, when the case checks it. */
  readonly related?: number;
  /** A substring of the message, when the case checks it. */
  readonly message?: string;
}

export interface InvalidCase extends ValidCase {
  readonly errors: readonly ExpectedFinding[];
}

export function lintCode(rule: LintRule, c: ValidCase): Finding[] {
  const file = c.format === 'iptables' ? 'test.ipt' : c.format === 'json' ? 'test.json' : 'test.nft';
  const code = { text: c.code, file, format: c.format ?? 'nft' } as const;
  const parsed = c.ipsets === undefined ? parseRuleset(c.code, { file, format: c.format ?? 'nft' }) : parseRuleset([code, { text: c.ipsets, file: 'test.ipset' }]);
  expect(parsed.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return runLintRules(parsed.ruleset, [rule], c.options);
}

export function testRule(rule: LintRule, cases: { valid: readonly ValidCase[]; invalid: readonly InvalidCase[] }): void {
  describe(rule.id, () => {
    it.each(cases.valid)('accepts $name', (c) => {
      expect(lintCode(rule, c)).toEqual([]);
    });
    it.each(cases.invalid)('reports $name', (c) => {
      const findings = lintCode(rule, c);
      expect(
        findings.map((f, i) => ({
          rule: f.rule,
          messageId: f.messageId,
          line: f.location.line,
          column: f.location.column,
          ...(c.errors[i]?.related !== undefined && { related: f.related.length }),
          ...(c.errors[i]?.message !== undefined && { message: f.message.includes(c.errors[i]!.message!) ? c.errors[i]!.message : f.message }),
        })),
      ).toEqual(c.errors.map((e) => ({ rule: rule.id, ...e })));
    });
  });
}
