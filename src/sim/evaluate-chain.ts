// A base chain run as nft_do_chain runs it (net/netfilter/nf_tables_core.c): rules in order,
// jump pushes the next rule on a stack, goto does not, return or the end of a regular chain pops,
// the end of the base chain applies its policy.

import type { Chain, Rule } from '../model/ast.js';
import { chainIndexOf, findNextRule, type ChainIndex, type JumpTarget } from './chain-index.js';
import { evaluateRule, reportUnsupported, type Verdict } from './evaluate-stmt.js';
import { formatMark, type Loc, type TraceEvent } from './outcome.js';
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

/** Where evaluation is in a chain, with the chain's index (chain-index.ts), if it has one. */
interface Frame {
  readonly chain: Chain;
  readonly index: ChainIndex | null;
  readonly next: number;
}

export function evaluateBaseChain(entry: HookEntry, ctx: SimContext): ChainResult {
  const base = entry.chain;
  ctx.table = entry.table;
  ctx.basePriority = entry.priority;
  ctx.orderDependent = entry.orderDependent;
  const chains = ctx.index.chains.get(entry.table)!;
  const stack: Frame[] = [];
  let chain = base;
  const baseIndex = chainIndexOf(base);
  let index = baseIndex;
  let next = 0;
  for (;;) {
    ctx.chain = chain;
    if (index) next = findNextRule(index, next, ctx);
    if (next >= chain.rules.length) {
      const caller = stack.pop();
      if (!caller) break;
      ctx.rule = undefined;
      pushEvent(ctx, entry, 'return', 'continue', locAt(index, chain.rules.length, chain));
      ({ chain, index, next } = caller);
      continue;
    }
    const rule = chain.rules[next++]!;
    const result = evaluateRule(rule, ctx);
    if (!result.matched) continue;
    const verdict = result.verdict;
    pushEvent(ctx, entry, 'rule', verdictText(verdict), locAt(index, next - 1, rule));
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
        ({ chain, index, next } = stack.pop() ?? { chain: base, index: null, next: base.rules.length });
        continue;
      }
      case 'jump':
      case 'goto': {
        const target = jumpTarget(index, next - 1, verdict.target, chains);
        if (!target) {
          reportUnsupported(ctx, `${verdict.name} to chain ${verdict.target}, which is not in table ${entry.table.family} ${entry.table.name}`, rule);
          return { verdict: 'unknown', by: rule };
        }
        if (verdict.name === 'jump') {
          if (stack.length >= JUMP_STACK_SIZE) {
            reportUnsupported(ctx, `jumps nest deeper than ${JUMP_STACK_SIZE}: the kernel refuses such a ruleset`, rule);
            return { verdict: 'unknown', by: rule };
          }
          stack.push({ chain, index, next });
        }
        ({ chain, index } = target);
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
  pushEvent(ctx, entry, 'policy', policy, locAt(baseIndex, base.rules.length, base));
  return { verdict: policy, by: base };
}

/** The chain a rule jumps or goes to, with its index: remembered per rule, looked up by name when
 * the rule has not jumped there before (a verdict map may send it elsewhere each time). */
function jumpTarget(index: ChainIndex | null, position: number, name: string, chains: ReadonlyMap<string, Chain>): JumpTarget | undefined {
  const known = index?.targets[position];
  if (known && known.name === name) return known;
  const chain = chains.get(name);
  if (!chain) return undefined;
  const target: JumpTarget = { name, chain, index: chainIndexOf(chain) };
  if (index) index.targets[position] = target;
  return target;
}

// The mark changes seldom along a packet's way: its text is made once per value.
let lastMark = 0;
let lastMarkText = formatMark(0);

/** The location of the rule at `position`, or of the chain itself at `chain.rules.length`, made
 * once per chain index (evaluation without indexes makes it each time). */
function locAt(index: ChainIndex | null, position: number, node: Rule | Chain): Loc {
  if (!index) return locOf(node);
  return (index.locs[position] ??= locOf(node));
}

function pushEvent(ctx: SimContext, entry: HookEntry, kind: TraceEvent['kind'], verdict: string, at: Loc): void {
  const mark = ctx.pkt.mark;
  if (mark !== lastMark) {
    lastMark = mark;
    lastMarkText = formatMark(mark);
  }
  const event: TraceEvent = {
    hook: ctx.hook,
    family: entry.table.family,
    table: entry.table.name,
    chain: ctx.chain.name,
    priority: entry.priority,
    kind,
    verdict,
    mark: lastMarkText,
    at,
  };
  ctx.trace.push(entry.orderDependent ? { ...event, orderDependent: true } : event);
}
