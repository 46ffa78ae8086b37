// A base chain run as nft_do_chain runs it (net/netfilter/nf_tables_core.c): rules in order,
// jump pushes the next rule on a stack, goto does not, return or the end of a regular chain pops,
// the end of the base chain applies its policy.

import type { Chain, Rule } from '../model/ast.js';
import { enterChain, findNextRule, type ChainIndex } from './chain-index.js';
import { compiledLocId, compileRule, keepRuleEvent, knownRuleEvent, runCompiledRule, type CodeArena } from './compile-rule.js';
import { evaluateRule, reportUnsupported, type RuleResult, type Verdict } from './evaluate-stmt.js';
import { formatMark, type TraceEvent, type Loc } from './outcome.js';
import type { HookEntry } from './pipeline.js';
import { locOf, type SimContext } from './sim-context.js';

/** NFT_JUMP_STACK_SIZE (include/net/netfilter/nf_tables.h): the kernel refuses a ruleset whose
 * jumps nest deeper (nft_chain_validate), and drops at run time if it ever happened. */
export const JUMP_STACK_SIZE = 16;

/** How a base chain ended for the packet; `unknown` when nftsim could not follow it. */
export type ChainVerdict = 'accept' | 'drop' | 'reject' | 'queue' | 'unknown';

export interface ChainResult {
  readonly verdict: ChainVerdict;
  /** The rule or chain (for the policy) that gave the verdict; absent for a rule's accept. */
  readonly by: Rule | Chain | undefined;
}

const ACCEPTED: ChainResult = { verdict: 'accept', by: undefined };

// The jump stack, one for every run: a base chain's evaluation never nests in another's, so
// each call uses it from depth 0 (a stack and a frame object per base chain were a tenth of what
// a packet allocated).
const stackChains: Chain[] = [];
const stackIndexes: (ChainIndex | null)[] = [];
const stackNext: number[] = [];

/** In HookIndex.compiled: a rule whose code fits no chunk of the arena, interpreted for good. */
const UNCOMPILABLE = -1;

/** Where the rule at `position` of an indexed chain is compiled, -1 when it is interpreted: it is
 * compiled when a packet first reaches it. Interpreting a rule's first run and compiling it at its
 * second read the cold rule twice; compiling at once is faster though most rules of a big ruleset
 * are met by a packet or two (bench packets, first pass, both builds interleaved in one process:
 * 10,000 services 59,350-59,792 packets/s against 54,958-56,517, 1,000 and 50,000 the same). */
function compiledAt(index: ChainIndex, position: number, ctx: SimContext): number {
  const hooks = ctx.index;
  const rule = index.first + position;
  const known = hooks.compiled[rule]!;
  if (known > 0) return known - 1;
  if (known === UNCOMPILABLE) return -1;
  const start = compileRule(index.chain.rules[position]!, hooks.code);
  hooks.compiled[rule] = start >= 0 ? start + 1 : UNCOMPILABLE;
  return start;
}

export function evaluateBaseChain(entry: HookEntry, ctx: SimContext): ChainResult {
  const base = entry.chain;
  ctx.table = entry.table;
  ctx.basePriority = entry.priority;
  ctx.orderDependent = entry.orderDependent;
  if (base.base!.devicesUnknown) {
    ctx.chain = base;
    ctx.position = -1;
    reportUnsupported(ctx, `the input does not say which devices this ${base.base!.hook} chain is on: not run, assumed it does not see the packet`, base);
    return ACCEPTED;
  }
  const arena = ctx.index.code;
  let depth = 0;
  let chain = base;
  const baseIndex = enterChain(entry.index);
  let index = baseIndex;
  let next = 0;
  for (;;) {
    ctx.chain = chain;
    const count = index ? index.count : chain.rules.length;
    if (index) next = findNextRule(index, next, ctx);
    if (next >= count) {
      if (depth === 0) break;
      ctx.position = -1;
      if (index) ctx.trace.push((index.returned = eventOf(index.returned, ctx, entry, 'return', 'continue', (index.loc ??= locOf(chain)))));
      else ctx.trace.push(eventOf(undefined, ctx, entry, 'return', 'continue', locOf(chain)));
      depth--;
      chain = stackChains[depth]!;
      index = stackIndexes[depth]!;
      next = stackNext[depth]!;
      continue;
    }
    const position = next++;
    ctx.position = position;
    // With indexes on, rules run compiled; without them (the reference), interpreted.
    const start = index ? compiledAt(index, position, ctx) : -1;
    const result: RuleResult = start >= 0 ? runCompiledRule(arena, start, ctx) : evaluateRule(chain.rules[position]!, ctx);
    if (!result.matched) continue;
    if (start >= 0) {
      const id = compiledLocId(arena, start);
      ctx.trace.push(knownRuleEvent(arena, start, id, ctx.pkt.mark, entry.id, result) ?? newRuleEvent(arena, start, id, ctx, entry, result));
    } else ctx.trace.push(eventOf(undefined, ctx, entry, 'rule', result.verdict.text, locOf(chain.rules[position]!)));
    const name = result.name;
    switch (name) {
      case 'continue':
        continue;
      case 'accept':
      case 'drop':
      case 'reject':
      case 'queue':
        // The rule is read only for an ending: an accept goes on to the next base chain.
        return name === 'accept' ? ACCEPTED : { verdict: name, by: chain.rules[position]! };
      case 'return': {
        // Back to the caller; from the base chain itself, on to its policy.
        if (depth === 0) {
          chain = base;
          index = null;
          next = base.rules.length;
        } else {
          depth--;
          chain = stackChains[depth]!;
          index = stackIndexes[depth]!;
          next = stackNext[depth]!;
        }
        continue;
      }
      case 'jump':
      case 'goto': {
        const to = result.to;
        if (!to) {
          reportUnsupported(ctx, `${name} to chain ${targetOf(result.verdict)}, which is not in table ${entry.table.family} ${entry.table.name}`, chain.rules[position]);
          return { verdict: 'unknown', by: chain.rules[position]! };
        }
        if (name === 'jump') {
          if (depth >= JUMP_STACK_SIZE) {
            reportUnsupported(ctx, `jumps nest deeper than ${JUMP_STACK_SIZE}: the kernel refuses such a ruleset`, chain.rules[position]);
            return { verdict: 'unknown', by: chain.rules[position]! };
          }
          stackChains[depth] = chain;
          stackIndexes[depth] = index;
          stackNext[depth] = next;
          depth++;
        }
        chain = to.chain;
        index = enterChain(to);
        next = 0;
        continue;
      }
      default: {
        const exhaustive: never = name;
        return exhaustive;
      }
    }
  }
  ctx.chain = base;
  ctx.position = -1;
  const policy = base.base?.policy ?? 'accept';
  if (baseIndex) ctx.trace.push((baseIndex.policy = eventOf(baseIndex.policy, ctx, entry, 'policy', policy, (baseIndex.loc ??= locOf(base)))));
  else ctx.trace.push(eventOf(undefined, ctx, entry, 'policy', policy, locOf(base)));
  return policy === 'accept' ? ACCEPTED : { verdict: policy, by: base };
}

/** The chain a jump or goto verdict names (the result's name tells which verdicts have one). */
function targetOf(verdict: Verdict): string {
  return verdict.name === 'jump' || verdict.name === 'goto' ? verdict.target : '';
}

/** A compiled rule's trace event when its last one does not fit (knownRuleEvent): made, and kept
 * as its last one. */
function newRuleEvent(arena: CodeArena, start: number, id: number, ctx: SimContext, entry: HookEntry, result: Extract<RuleResult, { matched: true }>): TraceEvent {
  const event = eventOf(undefined, ctx, entry, 'rule', result.verdict.text, arena.locs[id]!);
  keepRuleEvent(arena, start, id, ctx.pkt.mark, entry.id, result, event);
  return event;
}

// The mark changes seldom along a packet's way: its text is made once per value.
let lastMark = 0;
let lastMarkText = formatMark(0);

/** The trace event of the current rule or chain: `known` (the last one made there) when it is the
 * same, else a new one. Events are never changed once made, and most packets through a rule make
 * the same one; `at` (one Loc per rule or chain) stands for the family, table and chain. */
function eventOf(known: TraceEvent | undefined, ctx: SimContext, entry: HookEntry, kind: TraceEvent['kind'], verdict: string, at: Loc): TraceEvent {
  const mark = ctx.pkt.mark;
  if (mark !== lastMark) {
    lastMark = mark;
    lastMarkText = formatMark(mark);
  }
  if (
    known !== undefined &&
    known.at === at &&
    known.mark === lastMarkText &&
    known.verdict === verdict &&
    known.hook === ctx.hook &&
    known.priority === entry.priority &&
    (known.orderDependent === true) === entry.orderDependent
  ) {
    return known;
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
  return entry.orderDependent ? { ...event, orderDependent: true } : event;
}
