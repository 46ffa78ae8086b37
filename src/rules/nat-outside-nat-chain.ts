import type { Chain, Hook, NatStmt, Table } from '../model/ast.js';
import type { LintRule } from './framework/lint-rule.js';

// Where the kernel accepts each nat statement: in chains of type nat only, at these hooks
// (net/netfilter/nft_nat.c nft_nat_validate: snat at postrouting and input, dnat at prerouting
// and output; nft_masq.c nft_masq_validate: postrouting; nft_redir.c nft_redir_validate:
// prerouting and output). Elsewhere the rule fails to load with "Operation not supported".
const NAT_HOOKS: Readonly<Record<NatStmt['type'], readonly Hook[]>> = {
  snat: ['postrouting', 'input'],
  dnat: ['prerouting', 'output'],
  masquerade: ['postrouting'],
  redirect: ['prerouting', 'output'],
};

export const natOutsideNatChain: LintRule = {
  id: 'nat-outside-nat-chain',
  meta: {
    description: 'A snat, dnat, masquerade or redirect statement in a chain that is not of type nat, or at a hook where that statement cannot run.',
    severity: 'error',
    docs: 'docs/rules/nat-outside-nat-chain.md',
    messages: {
      chainType: '{{nat}} in a chain reached from {{base}}, of type {{type}}: nat statements work only in chains of type nat',
      hook: '{{nat}} in a chain reached from {{base}} at hook {{hook}}: {{nat}} works only at {{hooks}}',
      base: '{{base}} is declared here',
    },
  },
  check(context) {
    for (const { table, reachedFrom } of context.graph.tables) {
      for (const chain of table.chains) {
        const bases = reachedFrom.get(chain) ?? [];
        // Indexed: every statement of the ruleset, and a for-of loop not yet optimised makes an
        // iterator result per step.
        for (let r = 0; r < chain.rules.length; r++) {
          const stmts = chain.rules[r]!.stmts;
          for (let s = 0; s < stmts.length; s++) {
            const stmt = stmts[s]!;
            if (stmt.kind !== 'nat') continue;
            const problem = bases.map((base) => problemOf(stmt, base)).find((p) => p !== undefined);
            if (!problem) continue;
            const base = baseName(table, problem.base);
            context.report({
              messageId: problem.messageId,
              data: { nat: stmt.type, base, type: problem.base.base!.type, hook: problem.base.base!.hook, hooks: NAT_HOOKS[stmt.type].join(' and ') },
              span: stmt.span,
              related: problem.base === chain ? [] : [{ messageId: 'base', data: { base }, span: problem.base.span }],
            });
          }
        }
      }
    }
  },
};

function problemOf(stmt: NatStmt, base: Chain): { messageId: 'chainType' | 'hook'; base: Chain } | undefined {
  const spec = base.base!;
  if (spec.type !== 'nat') return { messageId: 'chainType', base };
  if (!NAT_HOOKS[stmt.type].includes(spec.hook)) return { messageId: 'hook', base };
  return undefined;
}

function baseName(table: Table, chain: Chain): string {
  return `${table.family} ${table.name} ${chain.name}`;
}
