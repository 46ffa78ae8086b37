// A base chain run as nft_do_chain runs it (net/netfilter/nf_tables_core.c): rules in order,
// jump pushes the next rule on a stack, goto does not, return or the end of a regular chain pops,
// the end of the base chain applies its policy.

import type { Chain, Rule } from '../model/ast.js';
import { evaluateRule, reportUnsupported, type Verdict } from './evaluate-stmt.js';
import { formatMark, type TraceEvent } from './outcome.js';
import type { HookEntry } from './pipeline.js';
import { locOf, type SimContext } from './sim-context.js';

/** NFT_JUMP_STACK_SIZE (include/net/netfilter/nf_tables.h): the kernel refuses a ruleset whose
 * jumps nest deeper (nft_chain_validate), and drops at run time if it ever happened. */
export const JUMP_STACK_SIZE = 16;

/** How a base chain ended for the packet; `unknown` when nftsim could not follow it. */
export type ChainVerdict = 'accept' | 'drop' | 'reject' | 'queue' | 'unknown';

export interface ChainResult {
  readonly verdict: ChainVerdict;
  /** The rule or chain (for the policy) that gave the verdict. */
  readonly by: Rule | Chain;
}

function verdictText(verdict: Verdict): string {
  if (verdict.name === 'jump' || verdict.name === 'goto') return `${verdict.name} ${verdict.target}`;
  // The reject statement ends the packet with NF_DROP (nft_reject_inet.c), which is what the
  // kernel's trace shows.
  return verdict.name === 'reject' ? 'drop' : verdict.name;
}

export function evaluateBaseChain(entry: HookEntry, ctx: SimContext): ChainResult {
  const base = entry.chain;
  ctx.table = entry.table;
  ctx.basePriority = entry.priority;
  ctx.orderDependent = entry.orderDependent;
  const chains = ctx.index.chains.get(entry.table)!;
  const event = (kind: TraceEvent['kind'], verdict: string, at: Rule | Chain): void => {
    ctx.trace.push({
      hook: ctx.hook,
      family: entry.table.family,
      table: entry.table.name,
      chain: ctx.chain.name,
      priority: entry.priority,
      kind,
      verdict,
      mark: formatMark(ctx.pkt.mark),
      at: locOf(at),
      ...(entry.orderDependent && { orderDependent: true }),
    });
  };
  const stack: { chain: Chain; next: number }[] = [];
  let chain = base;
  let next = 0;
  for (;;) {
    ctx.chain = chain;
    if (next >= chain.rules.length) {
      const caller = stack.pop();
      if (!caller) break;
      ctx.rule = undefined;
      event('return', 'continue', chain);
      chain = caller.chain;
      next = caller.next;
      continue;
    }
    const rule = chain.rules[next++]!;
    const result = evaluateRule(rule, ctx);
    if (!result.matched) continue;
    const verdict = result.verdict;
    event('rule', verdictText(verdict), rule);
    switch (verdict.name) {
      case 'continue':
        continue;
      case 'accept':
      case 'drop':
      case 'reject':
      case 'queue':
        return { verdict: verdict.name, by: rule };
      case 'return': {
        // Back to the caller; from the base chain itself, on to its policy.
        const caller = stack.pop() ?? { chain: base, next: base.rules.length };
        chain = caller.chain;
        next = caller.next;
        continue;
      }
      case 'jump':
      case 'goto': {
        const target = chains.get(verdict.target);
        if (!target) {
          reportUnsupported(ctx, `${verdict.name} to chain ${verdict.target}, which is not in table ${entry.table.family} ${entry.table.name}`, rule);
          return { verdict: 'unknown', by: rule };
        }
        if (verdict.name === 'jump') {
          if (stack.length >= JUMP_STACK_SIZE) {
            reportUnsupported(ctx, `jumps nest deeper than ${JUMP_STACK_SIZE}: the kernel refuses such a ruleset`, rule);
            return { verdict: 'unknown', by: rule };
          }
          stack.push({ chain, next });
        }
        chain = target;
        next = 0;
        continue;
      }
      default: {
        const exhaustive: never = verdict;
        return exhaustive;
      }
    }
  }
  ctx.chain = base;
  ctx.rule = undefined;
  const policy = base.base?.policy ?? 'accept';
  event('policy', policy, base);
  return { verdict: policy, by: base };
}
