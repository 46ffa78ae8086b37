import type { Rule, Span } from '../model/ast.js';
import type { Diagnostic } from '../model/diagnostic.js';

/** A rule the kernel has but nft could not list: nft 1.0.6 prints only its handle in text (`#
 * handle 4` alone on the line) and no "expr" in JSON, for example for a rule matching an
 * anonymous set of ct labels (its stderr says `Unknown data type in set key`). It is kept as a
 * rule nftsim cannot know, so a packet that reaches it is reported, not passed silently. */
export function unlistedRule(span: Span, handle: number | undefined): { rule: Rule; diagnostic: Diagnostic } {
  return {
    rule: { kind: 'rule', span, ...(handle !== undefined && { handle }), stmts: [{ kind: 'unsupported', span, text: '# a rule nft could not list', test: true }] },
    diagnostic: { severity: 'warning', code: 'unlisted-rule', message: 'a rule nft could not list (it printed only the handle): nftsim cannot know what it does', span },
  };
}
