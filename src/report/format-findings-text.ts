import type { Finding, FindingLocation, Severity } from '../rules/framework/lint-rule.js';
import { summarizeFindings } from '../rules/framework/lint-ruleset.js';
import { quoteSpan } from './format-diagnostic.js';

export interface TextFormatOptions {
  /** ANSI colours; the CLI turns them on for a terminal without NO_COLOR. */
  readonly color?: boolean;
}

const COLORS: Readonly<Record<Severity | 'dim', string>> = { error: '\x1b[31m', warning: '\x1b[33m', info: '\x1b[36m', dim: '\x1b[2m' };
const RESET = '\x1b[0m';

/** Findings for people: grouped by file, `file:line:col severity rule-id message`, the source
 * line with a caret under the finding, then its related locations; a count at the end. */
export function formatFindingsText(findings: readonly Finding[], sources: ReadonlyMap<string, string>, options: TextFormatOptions = {}): string {
  if (findings.length === 0) return '';
  const paint = (style: Severity | 'dim', text: string): string => (options.color ? `${COLORS[style]}${text}${RESET}` : text);
  const where = (l: FindingLocation): string => `${l.file}:${l.line}:${l.column}`;
  const quote = (l: FindingLocation, indent: string): string => {
    const excerpt = quoteSpan({ file: l.file, start: l.charOffset, end: l.charOffset + l.charLength, column: l.column }, sources);
    return excerpt === undefined ? '' : `${excerpt.split('\n').map((line) => `${indent}${line}`).join('\n')}\n`;
  };
  const byFile = new Map<string, Finding[]>();
  for (const f of findings) byFile.set(f.location.file, [...(byFile.get(f.location.file) ?? []), f]);
  const groups = [...byFile.values()].map((group) =>
    group
      .map((f) => {
        let text = `${where(f.location)} ${paint(f.severity, f.severity)} ${paint('dim', f.rule)} ${f.message}\n${quote(f.location, '')}`;
        for (const r of f.related) text += `  ${where(r.location)} note: ${r.message}\n${quote(r.location, '  ')}`;
        if (f.fix) text += `  fix: ${f.fix.description}\n${f.fix.commands.map((c) => `    ${c}\n`).join('')}`;
        return text;
      })
      .join(''),
  );
  const { errors, warnings, infos } = summarizeFindings(findings);
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  return `${groups.join('\n')}\n${plural(findings.length, 'problem')} (${plural(errors, 'error')}, ${plural(warnings, 'warning')}, ${plural(infos, 'info')})\n`;
}
