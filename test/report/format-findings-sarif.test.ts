import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import Ajv from 'ajv-draft-04';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { formatFindingsSarif } from '../../src/report/format-findings-sarif.js';
import { lintRuleset } from '../../src/rules/framework/lint-ruleset.js';
import { LINT_RULES } from '../../src/rules/framework/registry.js';

// The SARIF 2.1.0 schema (rtm.5, the one json.schemastore.org serves as sarif-2.1.0.json and
// GitHub code scanning documents), as shipped by Microsoft's @microsoft/jest-sarif.
const require = createRequire(import.meta.url);
const schemaPath = join(require.resolve('@microsoft/jest-sarif/package.json'), '..', 'lib/schemas/sarif-2.1.0-rtm.5.json');
// The schema's language pattern is not valid in Unicode mode (a stray `]`); JSON Schema draft 4
// patterns are ECMA 262 regular expressions without the u flag.
// Both packages are CommonJS: their class and function are `.default` of the module object.
const ajv = new Ajv.default({ allErrors: true, strict: false, unicodeRegExp: false });
addFormats.default(ajv);
const validate = ajv.compile(JSON.parse(readFileSync(schemaPath, 'utf8')));

const CODE = 'table ip t {\n\tchain a {\n\t\tjump b\n\t}\n\tchain b {\n\t\tjump a\n\t\tip saddr @missing drop\n\t}\n}\n';

function sarifOf(file: string): { runs: { results: { ruleId: string; locations: unknown[]; relatedLocations: unknown[] }[]; tool: { driver: { rules: { id: string; help: { text: string } }[] } } }[] } {
  const { ruleset } = parseRuleset(CODE, { file });
  return JSON.parse(formatFindingsSarif(lintRuleset(ruleset).findings, LINT_RULES));
}

describe('formatFindingsSarif', () => {
  it.each([
    ['a relative path', 'rules/node.nft'],
    ['an absolute path', resolve('/tmp/node.nft')],
  ])('is valid SARIF 2.1.0 for findings in %s', (_, file) => {
    const log = sarifOf(file);
    expect(validate(log), JSON.stringify(validate.errors, null, 2)).toBe(true);
  });

  it('lists every rule with help text and gives each result its locations and related locations', () => {
    const run = sarifOf('node.nft').runs[0]!;
    expect(run.tool.driver.rules.map((r) => r.id)).toEqual(LINT_RULES.map((r) => r.id));
    expect(run.tool.driver.rules.every((r) => r.help.text.includes(`docs/rules/${r.id}.md`))).toBe(true);
    expect(run.results.map((r) => r.ruleId)).toEqual(['jump-loop', 'undefined-reference']);
    expect(run.results[0]).toMatchObject({
      level: 'error',
      locations: [{ physicalLocation: { artifactLocation: { uri: 'node.nft', uriBaseId: '%SRCROOT%' }, region: { startLine: 6, startColumn: 3 } } }],
      relatedLocations: [{ id: 0, message: { text: "'a' jumps to 'b' here" }, physicalLocation: { region: { startLine: 3, startColumn: 3 } } }],
    });
  });

  it('fails validation when a result lacks its message (the validator is live)', () => {
    const log = sarifOf('node.nft') as unknown as { runs: { results: Record<string, unknown>[] }[] };
    delete log.runs[0]!.results[0]!.message;
    expect(validate(log)).toBe(false);
  });
});
