// The contract between the linter and its rules (ESLint's meta + check, graphql-js's one rule per
// file): a rule declares its messages up front and reports findings through the context; the
// framework turns them into the JSON shape of `nftsim lint --format json`.

import type { Ruleset, Span } from '../../model/ast.js';
import type { ChainGraph } from './chain-graph.js';

export type Severity = 'error' | 'warning' | 'info';

export interface LintRuleMeta {
  /** One sentence: what the rule catches. Also SARIF's shortDescription. */
  readonly description: string;
  readonly severity: Severity;
  /** The rule's docs page (docs/rules/ID.md); SARIF's helpUri. */
  readonly docs: string;
  /** Message templates by message id; `{{name}}` is replaced from the report's data. */
  readonly messages: Readonly<Record<string, string>>;
}

export interface LintRule {
  /** The rule's file name in src/rules, without `.ts`. */
  readonly id: string;
  readonly meta: LintRuleMeta;
  readonly check: (context: LintContext) => void;
}

export type MessageData = Readonly<Record<string, string | number>>;

/** A place a finding refers to beside its primary location ("and cleared here"). */
export interface RelatedReport {
  readonly messageId: string;
  readonly data?: MessageData;
  readonly span: Span;
}

/** A fix as shell commands a person runs on the node (`nft delete rule … handle N`). */
export interface Fix {
  readonly description: string;
  readonly commands: readonly string[];
}

export interface Report {
  readonly messageId: string;
  readonly data?: MessageData;
  readonly span: Span;
  readonly related?: readonly RelatedReport[];
  readonly fix?: Fix;
  /** A lower severity than the rule's for this finding (a suspicion rather than a certainty);
   * never raises it, so a rule configured down stays down. */
  readonly severity?: Severity;
}

/** Who owns what, as declared in the configuration: keys are `family table` for tables,
 * `family table chain` for chains, component names for marks (value: the mask they own). */
export interface Ownership {
  readonly tables: Readonly<Record<string, string>>;
  readonly chains: Readonly<Record<string, string>>;
  readonly marks: Readonly<Record<string, number>>;
}

export interface LintContext {
  readonly ruleset: Ruleset;
  /** Jumps and gotos of every table, and which base chains reach each chain; computed once. */
  readonly graph: ChainGraph;
  readonly iptablesVersion: string;
  readonly ownership: Ownership;
  readonly report: (report: Report) => void;
}

/** A location in the JSON output: 1-based line and column, and the UTF-16 offset and length of
 * the span (SARIF's charOffset/charLength) so formatters can underline it. */
export interface FindingLocation {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly charOffset: number;
  readonly charLength: number;
}

export interface Finding {
  readonly rule: string;
  readonly messageId: string;
  readonly severity: Severity;
  readonly message: string;
  readonly location: FindingLocation;
  readonly related: readonly { readonly message: string; readonly location: FindingLocation }[];
  readonly fix?: Fix;
}

const SEVERITY_RANK: Readonly<Record<Severity, number>> = { info: 0, warning: 1, error: 2 };

/** True when `severity` is `threshold` or worse (`--fail-on`). */
export function isAtLeast(severity: Severity, threshold: Severity): boolean {
  return SEVERITY_RANK[severity] >= SEVERITY_RANK[threshold];
}

export function isSeverity(value: unknown): value is Severity {
  return value === 'error' || value === 'warning' || value === 'info';
}

export function locationOf(span: Span): FindingLocation {
  return { file: span.file, line: span.line, column: span.column, charOffset: span.start, charLength: span.end - span.start };
}

/** Fills a message template. A placeholder without data is a bug in the rule, not user input. */
export function formatMessage(template: string, data: MessageData = {}): string {
  return template.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, name: string) => {
    const value = data[name];
    if (value === undefined) throw new Error(`message '${template}' needs data '${name}'`);
    return String(value);
  });
}
