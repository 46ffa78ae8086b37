// The linter's configuration (`.nftsimrc.json` or `--config`): which rules run at which severity,
// who owns which tables, chains and mark bits, and the node's iptables-nft version. Read from JSON
// with comments; every problem is a diagnostic pointing into the file, never an exception.

import { parseTree, findNodeAtLocation, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';
import type { Span } from '../../model/ast.js';
import type { Diagnostic } from '../../model/diagnostic.js';
import { LineIndex } from '../../model/line-index.js';
import { isSeverity, type Ownership, type Severity } from './lint-rule.js';

export type RuleSetting = Severity | 'off';

export interface LintConfig {
  /** Per rule id: `off`, or the severity its findings get instead of the rule's default. */
  readonly rules?: Readonly<Record<string, RuleSetting>>;
  readonly owners?: Partial<Ownership>;
  /** The iptables-nft version of the node (`1.8.9`), for what it can read back. */
  readonly iptablesVersion?: string;
}

/** iptables-nft's version as `iptables -V` prints it, without the ` (nf_tables)`. */
export const IPTABLES_VERSION = /^1\.\d+\.\d+$/;

const TOP_LEVEL = ['rules', 'owners', 'iptablesVersion'] as const;
const OWNER_KINDS = ['tables', 'chains', 'marks'] as const;

/** Parses a mark mask as written in the configuration: a number or a decimal/hex string. */
export function parseMarkValue(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^(0x[0-9a-f]+|\d+)$/i.test(value.trim()) ? Number(value.trim()) : NaN;
  return Number.isInteger(n) && n >= 0 && n <= 0xffffffff ? n : undefined;
}

export function readLintConfig(
  text: string,
  file: string,
  ruleIds: readonly string[],
): { readonly config: LintConfig; readonly diagnostics: readonly Diagnostic[] } {
  const lines = new LineIndex(text);
  const spanOf = (node: Node): Span => {
    const line = lines.lineOf(node.offset);
    return { file, start: node.offset, end: node.offset + node.length, line: line + 1, column: node.offset - lines.startOf(line) + 1 };
  };
  const diagnostics: Diagnostic[] = [];
  const problem = (node: Node, message: string): void => {
    diagnostics.push({ severity: 'error', code: 'config', message, span: spanOf(node) });
  };
  const errors: ParseError[] = [];
  const tree = parseTree(text, errors, { allowTrailingComma: true });
  for (const e of errors) {
    problem({ offset: e.offset, length: e.length } as Node, `JSON: ${printParseErrorCode(e.error)}`);
  }
  if (errors.length > 0 || tree === undefined) return { config: {}, diagnostics };
  if (tree.type !== 'object') {
    problem(tree, 'expected an object { "rules": …, "owners": …, "iptablesVersion": … }');
    return { config: {}, diagnostics };
  }
  const entries = (node: Node): [string, Node, Node][] =>
    (node.children ?? []).map((p) => [p.children![0]!.value as string, p.children![0]!, p.children![1]!]);
  const objectAt = (path: string[]): Node | undefined => {
    const node = findNodeAtLocation(tree, path);
    if (node && node.type !== 'object') {
      problem(node, `${path.join('.')}: expected an object`);
      return undefined;
    }
    return node;
  };

  for (const [key, keyNode] of entries(tree)) {
    if (!(TOP_LEVEL as readonly string[]).includes(key)) problem(keyNode, `${key}: unknown field (expected ${TOP_LEVEL.join(', ')})`);
  }

  const rules: Record<string, RuleSetting> = {};
  const rulesNode = objectAt(['rules']);
  for (const [id, keyNode, value] of rulesNode ? entries(rulesNode) : []) {
    if (!ruleIds.includes(id)) problem(keyNode, `rules.${id}: no such rule`);
    else if (value.value === 'off' || isSeverity(value.value)) rules[id] = value.value;
    else problem(value, `rules.${id}: expected "off", "error", "warning" or "info"`);
  }

  const owners: { -readonly [K in keyof Ownership]: Record<string, Ownership[K][string]> } = { tables: {}, chains: {}, marks: {} };
  const ownersNode = objectAt(['owners']);
  for (const [kind, keyNode] of ownersNode ? entries(ownersNode) : []) {
    if (!(OWNER_KINDS as readonly string[]).includes(kind)) problem(keyNode, `owners.${kind}: unknown field (expected ${OWNER_KINDS.join(', ')})`);
  }
  for (const kind of OWNER_KINDS) {
    const node = objectAt(['owners', kind]);
    for (const [name, , value] of node ? entries(node) : []) {
      if (kind === 'marks') {
        const mask = parseMarkValue(value.value);
        if (mask === undefined) problem(value, `owners.marks.${name}: expected a 32-bit mask such as "0x4000"`);
        else owners.marks[name] = mask;
      } else if (typeof value.value === 'string') {
        owners[kind][name] = value.value;
      } else {
        problem(value, `owners.${kind}.${name}: expected a component name`);
      }
    }
  }

  const versionNode = findNodeAtLocation(tree, ['iptablesVersion']);
  let iptablesVersion: string | undefined;
  if (versionNode) {
    if (typeof versionNode.value === 'string' && IPTABLES_VERSION.test(versionNode.value)) iptablesVersion = versionNode.value;
    else problem(versionNode, 'iptablesVersion: expected a version such as "1.8.9"');
  }
  return { config: { rules, owners, ...(iptablesVersion !== undefined && { iptablesVersion }) }, diagnostics };
}
