import type { Finding } from '../rules/framework/lint-rule.js';
import { summarizeFindings } from '../rules/framework/lint-ruleset.js';

/** `nftsim lint --format json`: `{ findings, summary }`, the findings as lintRuleset returns them. */
export function formatFindingsJson(findings: readonly Finding[]): string {
  return `${JSON.stringify({ findings, summary: summarizeFindings(findings) }, null, 2)}\n`;
}
