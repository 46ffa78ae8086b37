import type { Chain } from '../model/ast.js';
import type { ChainEdge } from './framework/chain-graph.js';
import type { LintRule } from './framework/lint-rule.js';

// The kernel refuses a ruleset whose jumps and gotos form a loop (nf_tables_api.c
// nf_tables_check_loops → -ELOOP, "Too many levels of symbolic links"), so the whole `nft -f`
// transaction fails.
export const jumpLoop: LintRule = {
  id: 'jump-loop',
  meta: {
    description: 'Jumps and gotos that form a loop between chains, which the kernel refuses to load.',
    severity: 'error',
    docs: 'docs/rules/jump-loop.md',
    messages: {
      loop: "{{verdict}} to '{{target}}' closes a loop: {{cycle}}",
      step: "'{{from}}' {{verdict}}s to '{{target}}' here",
    },
  },
  check(context) {
    for (const { chains, edges } of context.graph.tables) {
      // Iterative depth-first search; an edge to a chain still on the stack closes a cycle.
      const state = new Map<Chain, 'active' | 'done'>();
      // forEach rather than for-of: tens of thousands of chains, and a for-of loop over a map not
      // yet optimised makes an iterator result per step.
      chains.forEach((root) => {
        if (state.has(root)) return;
        const stack: { chain: Chain; next: number; via?: ChainEdge }[] = [{ chain: root, next: 0 }];
        state.set(root, 'active');
        while (stack.length > 0) {
          const top = stack[stack.length - 1]!;
          const out = edges.get(top.chain) ?? [];
          if (top.next >= out.length) {
            state.set(top.chain, 'done');
            stack.pop();
            continue;
          }
          const edge = out[top.next++]!;
          const target = chains.get(edge.target);
          if (!target) continue;
          const seen = state.get(target);
          if (seen === undefined) {
            state.set(target, 'active');
            stack.push({ chain: target, next: 0, via: edge });
          } else if (seen === 'active') {
            const start = stack.findIndex((f) => f.chain === target);
            const steps = stack.slice(start + 1).map((f) => f.via!);
            const names = [...stack.slice(start).map((f) => f.chain.name), target.name];
            context.report({
              messageId: 'loop',
              data: { verdict: edge.verdict, target: edge.target, cycle: names.join(' → ') },
              span: edge.span,
              related: steps.map((s) => ({ messageId: 'step', data: { from: s.from.name, verdict: s.verdict, target: s.target }, span: s.span })),
            });
          }
        }
      });
    }
  },
};
