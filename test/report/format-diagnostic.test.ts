import { describe, expect, it } from 'vitest';
import { formatDiagnostic } from '../../src/report/format-diagnostic.js';
import type { Diagnostic } from '../../src/model/diagnostic.js';

const text = 'table ip filter {\n\tchain INPUT {\n\t\tip saddr foo bar accept\n\t}\n}\n';
const sources = new Map([['rules.nft', text]]);

function at(token: string, line: number): Diagnostic {
  const start = text.indexOf(token);
  const lineStart = text.lastIndexOf('\n', start - 1) + 1;
  return {
    severity: 'error',
    code: 'syntax',
    message: `unexpected '${token}'`,
    span: { file: 'rules.nft', start, end: start + token.length, line, column: start - lineStart + 1 },
  };
}

describe('formatDiagnostic', () => {
  it('names file:line:column, quotes the line and puts a caret under the token', () => {
    expect(formatDiagnostic(at('bar', 3), sources)).toBe(
      "rules.nft:3:16: error: unexpected 'bar'\n\t\tip saddr foo bar accept\n\t\t             ^~~",
    );
  });

  it('prints only the head when the source text is unknown', () => {
    expect(formatDiagnostic(at('bar', 3), new Map())).toBe("rules.nft:3:16: error: unexpected 'bar'");
  });

  it('prints severity and message for a diagnostic without a place', () => {
    expect(formatDiagnostic({ severity: 'error', code: 'read-error', message: "cannot read 'x'" }, sources)).toBe(
      "error: cannot read 'x'",
    );
  });
});
