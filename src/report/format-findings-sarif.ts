// SARIF 2.1.0 as GitHub code scanning accepts it: one run, the tool's rules with their help
// text, results with physical locations (1-based line and column in UTF-16 code units) and
// related locations. test/report/format-findings-sarif.test.ts validates it against the schema.

import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Finding, FindingLocation, LintRule, Severity } from '../rules/framework/lint-rule.js';

const LEVEL: Readonly<Record<Severity, 'error' | 'warning' | 'note'>> = { error: 'error', warning: 'warning', info: 'note' };

export function formatFindingsSarif(findings: readonly Finding[], rules: readonly LintRule[]): string {
  const ruleIndex = new Map(rules.map((r, i) => [r.id, i]));
  const physical = (l: FindingLocation): object => ({
    artifactLocation: isAbsolute(l.file) ? { uri: pathToFileURL(l.file).href } : { uri: l.file.split('\\').join('/'), uriBaseId: '%SRCROOT%' },
    region: { startLine: l.line, startColumn: l.column, charOffset: l.charOffset, charLength: l.charLength },
  });
  const log = {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'nftsim',
            rules: rules.map((r) => ({
              id: r.id,
              shortDescription: { text: r.meta.description },
              help: { text: `${r.meta.description} See ${r.meta.docs}.`, markdown: `${r.meta.description} See [${r.meta.docs}](${r.meta.docs}).` },
              defaultConfiguration: { level: LEVEL[r.meta.severity] },
            })),
          },
        },
        columnKind: 'utf16CodeUnits',
        results: findings.map((f) => ({
          ruleId: f.rule,
          ...(ruleIndex.has(f.rule) && { ruleIndex: ruleIndex.get(f.rule) }),
          level: LEVEL[f.severity],
          message: { text: f.fix ? `${f.message}. Fix: ${f.fix.commands.join('; ')}` : f.message },
          locations: [{ physicalLocation: physical(f.location) }],
          relatedLocations: f.related.map((r, id) => ({ id, physicalLocation: physical(r.location), message: { text: r.message } })),
        })),
      },
    ],
  };
  return `${JSON.stringify(log, null, 2)}\n`;
}
