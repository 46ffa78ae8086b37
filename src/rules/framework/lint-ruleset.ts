// The linter's entry point: runs the enabled rules over a resolved ruleset, applies the
// configured severities and the inline suppressions, and returns the findings in the JSON shape
// of `nftsim lint --format json`.

import type { Ruleset, Span } from '../../model/ast.js';
import { buildChainGraph } from './chain-graph.js';
import type { LintConfig } from './lint-config.js';
import { formatMessage, isAtLeast, locationOf, type Finding, type LintContext, type LintRule, type Report, type Severity } from './lint-rule.js';
import { LINT_RULES } from './registry.js';

export type LintOptions = LintConfig;

export interface LintResult {
  readonly findings: readonly Finding[];
}

export interface LintSummary {
  readonly errors: number;
  readonly warnings: number;
  readonly infos: number;
}

/** Debian 12's iptables, the one most kube-proxy images carry (issue 5). */
export const DEFAULT_IPTABLES_VERSION = '1.8.9';

export function lintRuleset(ruleset: Ruleset, options: LintOptions = {}): LintResult {
  const settings = options.rules ?? {};
  const enabled = LINT_RULES.filter((rule) => settings[rule.id] !== 'off');
  const severityOf = (rule: LintRule): Severity => {
    const setting = settings[rule.id];
    return setting === undefined || setting === 'off' ? rule.meta.severity : setting;
  };
  return { findings: runLintRules(ruleset, enabled, options, severityOf) };
}

/** Runs `rules` (the linter, or a rule's tests) and returns their unsuppressed findings, sorted
 * by file and position. */
export function runLintRules(
  ruleset: Ruleset,
  rules: readonly LintRule[],
  options: LintOptions = {},
  severityOf: (rule: LintRule) => Severity = (rule) => rule.meta.severity,
): Finding[] {
  const graph = buildChainGraph(ruleset);
  const suppressions = collectSuppressions(ruleset);
  const ownership = { tables: {}, chains: {}, marks: {}, ...options.owners };
  const findings: Finding[] = [];
  for (const rule of rules) {
    const severity = severityOf(rule);
    const message = (messageId: string, data: Report['data']): string => {
      const template = rule.meta.messages[messageId];
      if (template === undefined) throw new Error(`rule ${rule.id} has no message '${messageId}'`);
      return formatMessage(template, data);
    };
    const context: LintContext = {
      ruleset,
      graph,
      iptablesVersion: options.iptablesVersion ?? DEFAULT_IPTABLES_VERSION,
      ownership,
      report: (report) => {
        if (isSuppressed(suppressions, rule.id, report.span)) return;
        findings.push({
          rule: rule.id,
          messageId: report.messageId,
          severity: report.severity !== undefined && !isAtLeast(report.severity, severity) ? report.severity : severity,
          message: message(report.messageId, report.data),
          location: locationOf(report.span),
          related: (report.related ?? []).map((r) => ({ message: message(r.messageId, r.data), location: locationOf(r.span) })),
          ...(report.fix && { fix: report.fix }),
        });
      },
    };
    rule.check(context);
  }
  return findings.sort(
    (a, b) =>
      (a.location.file < b.location.file ? -1 : a.location.file > b.location.file ? 1 : 0) ||
      a.location.charOffset - b.location.charOffset ||
      (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0),
  );
}

export function summarizeFindings(findings: readonly Finding[]): LintSummary {
  const count = (severity: Severity): number => findings.filter((f) => f.severity === severity).length;
  return { errors: count('error'), warnings: count('warning'), infos: count('info') };
}

interface Suppression {
  readonly span: Span;
  /** The rule ids named; empty for all rules. */
  readonly ids: readonly string[];
}

// `comment "nftsim-disable mark-bit-collision"` on an nft rule, or `-m comment --comment` on an
// iptables rule (lowered into the rule's comment); several ids separated by commas or spaces, none
// for every rule. The directive may follow other text in the comment.
const DISABLE = /(?:^|[\s;,])nftsim-disable(?=$|[\s:])((?:[\s,:]+[a-z][a-z0-9-]*)*)/;

function collectSuppressions(ruleset: Ruleset): Suppression[] {
  const suppressions: Suppression[] = [];
  for (const table of ruleset.tables) {
    for (const chain of table.chains) {
      for (const rule of chain.rules) {
        const m = rule.comment === undefined ? null : DISABLE.exec(rule.comment);
        if (m) suppressions.push({ span: rule.span, ids: m[1]!.split(/[\s,:]+/).filter(Boolean) });
      }
    }
  }
  return suppressions;
}

/** A finding is suppressed by a directive on the rule its primary location lies in. */
function isSuppressed(suppressions: readonly Suppression[], id: string, span: Span): boolean {
  return suppressions.some(
    (s) => s.span.file === span.file && s.span.start <= span.start && span.start < s.span.end && (s.ids.length === 0 || s.ids.includes(id)),
  );
}
