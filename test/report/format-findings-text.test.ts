import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { formatFindingsJson } from '../../src/report/format-findings-json.js';
import { formatFindingsText } from '../../src/report/format-findings-text.js';
import { lintRuleset } from '../../src/rules/framework/lint-ruleset.js';

const A = 'table ip t {\n\tchain a {\n\t\tjump gone\n\t}\n}\n';
const B = 'table ip u {\n\tchain b {\n\t\tjump b\n\t}\n}\n';
const sources = new Map([['a.nft', A], ['b.nft', B]]);
const findings = lintRuleset(parseRuleset([{ file: 'b.nft', text: B }, { file: 'a.nft', text: A }]).ruleset).findings;

describe('formatFindingsText', () => {
  it('groups by file and prints file:line:col severity rule-id message, the line, a caret and the related notes', () => {
    expect(formatFindingsText(findings, sources)).toBe(
      [
        "a.nft:3:3 error undefined-reference jump to chain 'gone', which table ip t does not define",
        '\t\tjump gone',
        '\t\t^~~~~~~~~',
        '  a.nft:1:1 note: table ip t is here',
        '  table ip t {',
        '  ^~~~~~~~~~~~',
        '',
        "b.nft:3:3 error jump-loop jump to 'b' closes a loop: b → b",
        '\t\tjump b',
        '\t\t^~~~~~',
        '',
        '2 problems (2 errors, 0 warnings, 0 infos)',
        '',
      ].join('\n'),
    );
  });

  it('colours severities only when asked', () => {
    expect(formatFindingsText(findings, sources)).not.toContain('\x1b[');
    expect(formatFindingsText(findings, sources, { color: true })).toContain('\x1b[31merror\x1b[0m');
  });

  it('prints nothing when there is nothing to report', () => {
    expect(formatFindingsText([], sources)).toBe('');
  });
});

describe('formatFindingsJson', () => {
  it('prints the findings in the documented shape with a summary', () => {
    const json = JSON.parse(formatFindingsJson(findings));
    expect(json.summary).toEqual({ errors: 2, warnings: 0, infos: 0 });
    expect(json.findings[0]).toEqual({
      rule: 'undefined-reference',
      messageId: 'chain',
      severity: 'error',
      message: "jump to chain 'gone', which table ip t does not define",
      location: { file: 'a.nft', line: 3, column: 3, charOffset: 26, charLength: 9 },
      related: [{ message: 'table ip t is here', location: { file: 'a.nft', line: 1, column: 1, charOffset: 0, charLength: 12 } }],
    });
  });
});
