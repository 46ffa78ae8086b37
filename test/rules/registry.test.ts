// Keeps the rule files, the registry, the docs pages and the tests in step (graphql-js keeps
// specifiedRules the same way): adding a rule means all four.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { runLintRules } from '../../src/rules/framework/lint-ruleset.js';
import { LINT_RULES } from '../../src/rules/framework/registry.js';

const ROOT = resolve(import.meta.dirname, '../..');
const baseNames = (dir: string, ext: string): string[] =>
  readdirSync(join(ROOT, dir)).filter((f) => f.endsWith(ext)).map((f) => f.slice(0, -ext.length)).sort();
const ids = LINT_RULES.map((r) => r.id).sort();

describe('the rule registry', () => {
  it('holds exactly the rule files of src/rules', () => {
    expect(baseNames('src/rules', '.ts')).toEqual(ids);
  });

  it('has a docs page and a test file per rule, and nothing else', () => {
    expect(baseNames('docs/rules', '.md')).toEqual(ids);
    expect(baseNames('test/rules', '.test.ts').filter((n) => n !== 'registry' && n !== 'corpus')).toEqual(ids);
  });

  it.each(LINT_RULES.map((r) => [r.id, r] as const))('%s: exported from its file under its id, with docs and messages', async (id, rule) => {
    const module = (await import(`../../src/rules/${id}.ts`)) as Record<string, unknown>;
    expect(Object.values(module)).toContain(rule);
    expect(rule.meta.docs).toBe(`docs/rules/${id}.md`);
    expect(existsSync(join(ROOT, rule.meta.docs))).toBe(true);
    expect(Object.keys(rule.meta.messages).length).toBeGreaterThan(0);
    expect(rule.meta.description).toMatch(/\.$/);
  });

  it.each(LINT_RULES.map((r) => [r.id, r] as const))('%s: docs page has the four sections and an example that fires', (id, rule) => {
    const page = readFileSync(join(ROOT, 'docs/rules', `${id}.md`), 'utf8');
    for (const heading of ['## What it catches', '## Why it matters', '## Example', '## Fix']) expect(page).toContain(heading);
    const example = /## Example\n[\s\S]*?```(nft|iptables)\n([\s\S]*?)```/.exec(page);
    expect(example, 'the Example section needs an ```nft or ```iptables block').not.toBeNull();
    const parsed = parseRuleset(example![2]!, { file: `${id}.md`, format: example![1] as 'nft' | 'iptables' });
    expect(parsed.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(runLintRules(parsed.ruleset, [rule]).length).toBeGreaterThan(0);
  });
});
