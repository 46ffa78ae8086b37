import type { Chain, Expr, Span } from '../model/ast.js';
import type { LintRule } from './framework/lint-rule.js';
import { forEachExpr } from './framework/walk-rule.js';

// nft refuses these at load time ("Could not process rule: No such file or directory"); in a
// captured listing they mean the capture is partial or was edited by hand, and on a script they
// mean `nft -f` will fail as a whole.
export const undefinedReference: LintRule = {
  id: 'undefined-reference',
  meta: {
    description: 'A jump or goto to a chain, or a reference to a set, map or flowtable, that its table does not define; an ipset no ipset input creates.',
    severity: 'error',
    docs: 'docs/rules/undefined-reference.md',
    messages: {
      chain: "{{verdict}} to chain '{{name}}', which table {{table}} does not define",
      set: "set or map '@{{name}}' is not defined in table {{table}}",
      flowtable: "flowtable '@{{name}}' is not defined in table {{table}}",
      ipset: "ipset '{{name}}' is not created by the ipset input",
      table: 'table {{table}} is here',
    },
  },
  check(context) {
    // iptables-restore refuses a rule naming a set that does not exist; without an `ipset save`
    // input nothing is known of the sets, and nothing is reported.
    const ipsets = context.ruleset.ipsets && new Set(context.ruleset.ipsets.map((s) => s.name));
    for (const table of context.ruleset.tables) {
      const chains = new Set(table.chains.map((c) => c.name));
      const sets = new Set(table.sets.map((s) => s.name));
      const flowtables = new Set(table.flowtables.map((f) => f.name));
      const name = `${table.family} ${table.name}`;
      const report = (messageId: string, data: Record<string, string>, span: Span): void =>
        context.report({ messageId, data: { ...data, table: name }, span, related: [{ messageId: 'table', data: { table: name }, span: table.span }] });
      for (const chain of table.chains) {
        checkChain(chain, chains, sets, flowtables, report);
        if (ipsets) checkIpsets(chain, ipsets, report);
      }
    }
  },
};

/** The sets iptables' set match and SET target name (`--match-set`, `--add-set`, `--del-set`,
 * `--map-set`). */
function checkIpsets(chain: Chain, ipsets: ReadonlySet<string>, report: (messageId: string, data: Record<string, string>, span: Span) => void): void {
  for (const rule of chain.rules) {
    for (const stmt of rule.stmts) {
      if (stmt.kind !== 'xt-extension') continue;
      for (const o of stmt.options) {
        if (o.value.type === 'ipset' && !ipsets.has(o.value.set)) report('ipset', { name: o.value.set }, stmt.span);
      }
    }
  }
}

function checkChain(
  chain: Chain,
  chains: ReadonlySet<string>,
  sets: ReadonlySet<string>,
  flowtables: ReadonlySet<string>,
  report: (messageId: string, data: Record<string, string>, span: Span) => void,
): void {
  const checkTarget = (verdict: string, target: string | undefined, span: Span): void => {
    if ((verdict === 'jump' || verdict === 'goto') && target !== undefined && !chains.has(target)) report('chain', { verdict, name: target }, span);
  };
  const checkExpr = (expr: Expr): void => {
    if (expr.kind === 'verdict') checkTarget(expr.verdict, expr.target, expr.span);
    else if (expr.kind === 'set-ref' && !sets.has(expr.name)) report('set', { name: expr.name }, expr.span);
  };
  // Indexed: every statement of the ruleset, and a for-of loop not yet optimised makes an
  // iterator result per step.
  for (let r = 0; r < chain.rules.length; r++) {
    const stmts = chain.rules[r]!.stmts;
    for (let s = 0; s < stmts.length; s++) {
      const stmt = stmts[s]!;
      if (stmt.kind === 'verdict') checkTarget(stmt.verdict, stmt.target, stmt.span);
      // A meter makes its own set.
      if (stmt.kind === 'set-op' && !stmt.meter && !sets.has(stmt.set)) report('set', { name: stmt.set }, stmt.span);
      if (stmt.kind === 'flow-offload' && !flowtables.has(stmt.flowtable)) report('flowtable', { name: stmt.flowtable }, stmt.span);
      forEachExpr(stmt, checkExpr);
    }
  }
}
