import type { Chain, Expr, Rule } from '../model/ast.js';
import type { LintRule } from './framework/lint-rule.js';
import { visitExpr } from './framework/walk-rule.js';

// A drop policy at input or forward drops the replies of every connection the host (or the
// hosts behind it) opens, unless some rule on the way accepts established traffic first.
const HOOKS = ['input', 'forward'];

export const dropPolicyWithoutEstablished: LintRule = {
  id: 'drop-policy-without-established',
  meta: {
    description: 'An input or forward base chain with policy drop that never accepts established connections.',
    severity: 'warning',
    docs: 'docs/rules/drop-policy-without-established.md',
    messages: {
      missing: '{{chain}} drops by policy at hook {{hook}} but no rule in it, or in the chains it jumps to, accepts ct state established: replies to connections opened from here are dropped',
    },
  },
  check(context) {
    for (const { table, chains, edges } of context.graph.tables) {
      for (const chain of table.chains) {
        const base = chain.base;
        if (!base || base.policy !== 'drop' || !HOOKS.includes(base.hook)) continue;
        // Every chain the base chain reaches: an accept there ends the base chain as well.
        const seen = new Set<Chain>([chain]);
        const stack = [chain];
        let accepts = false;
        while (stack.length > 0 && !accepts) {
          const current = stack.pop()!;
          accepts = current.rules.some(isEstablishedAccept);
          for (const edge of edges.get(current) ?? []) {
            const next = chains.get(edge.target);
            if (next && !seen.has(next)) {
              seen.add(next);
              stack.push(next);
            }
          }
        }
        if (accepts) continue;
        context.report({ messageId: 'missing', data: { chain: `${table.family} ${table.name} ${chain.name}`, hook: base.hook }, span: chain.span });
      }
    }
  },
};

// xt matches that may test the conntrack state. In `nft -j` output and in listings, iptables-nft
// rules keep `-m conntrack`/`-m state` as an opaque xt match (or a blank): what it tests cannot be
// told, so it counts as an established accept rather than raise a false alarm.
const XT_STATE_MATCHES = ['conntrack', 'state'];

/** A rule that accepts some established traffic: `ct state established[,related] accept`,
 * `ct state { established, related } accept`, or a `ct state vmap` with `established : accept`.
 * Other conditions on the rule are allowed: the rule is a deliberate choice either way. */
function isEstablishedAccept(rule: Rule): boolean {
  const accepts = rule.stmts.some((s) => s.kind === 'verdict' && s.verdict === 'accept');
  return rule.stmts.some((stmt) => {
    if (stmt.kind === 'xt' || stmt.kind === 'xt-extension') {
      return accepts && stmt.type === 'match' && (stmt.name === undefined || XT_STATE_MATCHES.includes(stmt.name));
    }
    if (stmt.kind === 'match') {
      const { left, right, op } = stmt.expr;
      return accepts && isCtState(left) && (op === 'implicit' || op === '==') && mentionsEstablished(right);
    }
    if (stmt.kind === 'vmap' && isCtState(stmt.key) && stmt.map.kind === 'set') {
      return stmt.map.elements.some((e) => mentionsEstablished(e.key) && e.data?.kind === 'verdict' && e.data.verdict === 'accept');
    }
    return false;
  });
}

function isCtState(expr: Expr): boolean {
  return expr.kind === 'ct' && expr.key === 'state';
}

function mentionsEstablished(expr: Expr): boolean {
  let found = false;
  visitExpr(expr, (e) => {
    if (e.kind === 'literal' && e.text === 'established') found = true;
  });
  return found;
}
