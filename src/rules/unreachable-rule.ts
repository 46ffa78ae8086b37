import type { Expr, Rule, Stmt } from '../model/ast.js';
import { formatRule } from '../model/format-ruleset.js';
import type { LintRule } from './framework/lint-rule.js';
import { visitExpr } from './framework/walk-rule.js';

// Sound rather than complete: a rule is reported only when an earlier rule of the same chain
// ends evaluation for every packet it could match. That holds when every match of the earlier
// rule appears, identical, among the later rule's leading matches, the earlier rule has nothing
// but matches, counters and logs before a terminal verdict, matches are deterministic, and no
// rule in between can change the packet, the connection or a set before continuing. Negated
// matches and bitmask tests (`tcp flags syn / syn,ack`) compare as whole expressions, never as
// values, so they cannot yield a false positive.
export const unreachableRule: LintRule = {
  id: 'unreachable-rule',
  meta: {
    description: 'A rule that can never match because an earlier rule in the same chain ends evaluation for every packet it would match.',
    severity: 'warning',
    docs: 'docs/rules/unreachable-rule.md',
    messages: {
      shadowed: 'this rule never matches: the rule at line {{line}} ({{shadow}}) already ends the chain for every packet it matches',
      shadow: 'every packet is decided here first',
    },
  },
  check(context) {
    for (const table of context.ruleset.tables) {
      for (const chain of table.chains) {
        let shadows: { rule: Rule; keys: readonly string[] }[] = [];
        for (const rule of chain.rules) {
          // Keys are JSON text: made only when some earlier rule could shadow this one.
          const leading = shadows.length === 0 ? NO_KEYS : leadingMatchKeys(rule);
          const shadow = shadows.find((s) => s.keys.every((k) => leading.includes(k)));
          if (shadow) {
            context.report({
              messageId: 'shadowed',
              data: { line: shadow.rule.span.line, shadow: formatRule(shadow.rule, {}, table.family).trim() },
              span: rule.span,
              related: [{ messageId: 'shadow', span: shadow.rule.span }],
            });
            continue;
          }
          if (shadows.length > 0 && !isContained(rule)) shadows = [];
          const keys = shadowKeys(rule);
          if (keys) shadows.push({ rule, keys });
        }
      }
    }
  },
};

const NO_KEYS: readonly string[] = [];

/** Statements that neither change the packet nor end evaluation. */
function isInert(stmt: Stmt): boolean {
  return stmt.kind === 'match' || stmt.kind === 'counter' || stmt.kind === 'log' || stmt.kind === 'last' || (stmt.kind === 'verdict' && stmt.verdict === 'continue');
}

const TERMINAL_VERDICTS: ReadonlySet<string> = new Set(['accept', 'drop', 'return', 'goto']);

function isTerminal(stmt: Stmt): boolean {
  return stmt.kind === 'reject' || (stmt.kind === 'verdict' && TERMINAL_VERDICTS.has(stmt.verdict));
}

/** Statements that change the packet or its connection and always let evaluation go on
 * (nft_meta_set_eval, nft_ct_set_eval: no conntrack entry means nothing to set, not a miss). */
function isUnconditionalEffect(stmt: Stmt): boolean {
  return stmt.kind === 'meta-set' || stmt.kind === 'ct-set';
}

/** True when the rule ends evaluation for every packet whose matches pass: its matches, then
 * only statements that cannot fail, then a terminal verdict. */
function isDecisive(rule: Rule): boolean {
  const stmts = rule.stmts;
  const last = stmts[stmts.length - 1];
  if (!last || !isTerminal(last)) return false;
  // Indexed, no copies: this runs on every rule of the ruleset.
  let i = 0;
  while (i < stmts.length - 1 && isInert(stmts[i]!)) i++;
  for (; i < stmts.length - 1; i++) {
    const s = stmts[i]!;
    if (!(isUnconditionalEffect(s) || (isInert(s) && s.kind !== 'match'))) return false;
  }
  return true;
}

/** True when whatever the rule changes cannot reach the next rule: it changes nothing, or it
 * decides every packet it changes. */
function isContained(rule: Rule): boolean {
  return rule.stmts.every(isInert) || isDecisive(rule);
}

/** The match keys of a decisive rule with deterministic matches, or undefined. */
function shadowKeys(rule: Rule): string[] | undefined {
  if (!isDecisive(rule)) return undefined;
  const matches = rule.stmts.filter((s): s is Extract<Stmt, { kind: 'match' }> => s.kind === 'match');
  return matches.every((m) => isDeterministic(m.expr)) ? matches.map(keyOf) : undefined;
}

/** The keys of the matches a rule tests before it does anything else. */
function leadingMatchKeys(rule: Rule): string[] {
  const end = rule.stmts.findIndex((s) => !isInert(s));
  return (end < 0 ? rule.stmts : rule.stmts.slice(0, end)).filter((s) => s.kind === 'match').map(keyOf);
}

/** Matches whose result can differ for the same packet from one rule to the next. */
function isDeterministic(expr: Expr): boolean {
  let deterministic = true;
  visitExpr(expr, (e) => {
    if (e.kind === 'numgen' || (e.kind === 'meta' && e.key === 'random') || (e.kind === 'ct' && e.key === 'count')) deterministic = false;
  });
  return deterministic;
}

/** A match's structure without its place; literals by their typed value when known. */
function keyOf(stmt: Stmt): string {
  return JSON.stringify(stmt, (key, value: unknown) => {
    if (key === 'span') return undefined;
    if (value && typeof value === 'object' && (value as { kind?: string }).kind === 'literal' && (value as { value?: unknown }).value !== undefined) {
      const { value: typed, dtype } = value as { value: unknown; dtype?: string };
      return { kind: 'literal', dtype, value: typed };
    }
    return value;
  });
}
