// The library API: what the CLI and the tests call.
export type * from './model/ast.js';
export type { Diagnostic } from './model/diagnostic.js';
export type { ParseResult, ParseOptions } from './parser/parse-result.js';
export type { InputFormat } from './parser/detect-format.js';
export type { ParseRulesetOptions, ParseNodeOptions, NodeSource } from './parser/parse-ruleset.js';
export { parseRuleset, parseNode } from './parser/parse-ruleset.js';
export { detectFormat } from './parser/detect-format.js';
export { composeRulesets } from './model/compose-rulesets.js';
export type { NodeInput, MergeNodeResult, TableId } from './model/merge-node.js';
export { mergeNode } from './model/merge-node.js';
export { formatRuleset } from './model/format-ruleset.js';
export { formatDiagnostic } from './report/format-diagnostic.js';
