// The jump graph of a ruleset: every jump and goto (in verdict statements and in verdict maps),
// by table, and which base chains can reach each chain. Rules that reason about where a rule
// runs (nat statements, established-accept, loops) share this one computation.

import type { Chain, Expr, Ruleset, Span, Table } from '../../model/ast.js';
import { chainsByName } from '../../model/chains-by-name.js';
import { forEachExpr } from './walk-rule.js';

export interface ChainEdge {
  readonly from: Chain;
  readonly target: string;
  readonly verdict: 'jump' | 'goto';
  /** The verdict (statement or map element) that jumps. */
  readonly span: Span;
}

export interface TableGraph {
  readonly table: Table;
  readonly chains: ReadonlyMap<string, Chain>;
  /** Outgoing jumps and gotos of each chain, in rule order. */
  readonly edges: ReadonlyMap<Chain, readonly ChainEdge[]>;
  /** The base chains from which each chain is reachable (a base chain reaches itself). */
  readonly reachedFrom: ReadonlyMap<Chain, readonly Chain[]>;
}

export interface ChainGraph {
  readonly tables: readonly TableGraph[];
}

export function buildChainGraph(ruleset: Ruleset): ChainGraph {
  return { tables: ruleset.tables.map(buildTableGraph) };
}

/** The jumps and gotos of one rule's statements, including those in verdict-map data. */
export function jumpsOf(chain: Chain): ChainEdge[] {
  const edges: ChainEdge[] = [];
  const visit = (expr: Expr): void => {
    if (expr.kind === 'verdict' && (expr.verdict === 'jump' || expr.verdict === 'goto') && expr.target !== undefined) {
      edges.push({ from: chain, target: expr.target, verdict: expr.verdict, span: expr.span });
    }
  };
  // Indexed: every statement of the ruleset, and a for-of loop not yet optimised makes an
  // iterator result per step.
  for (let r = 0; r < chain.rules.length; r++) {
    const stmts = chain.rules[r]!.stmts;
    for (let s = 0; s < stmts.length; s++) {
      const stmt = stmts[s]!;
      if (stmt.kind === 'verdict') {
        if ((stmt.verdict === 'jump' || stmt.verdict === 'goto') && stmt.target !== undefined) {
          edges.push({ from: chain, target: stmt.target, verdict: stmt.verdict, span: stmt.span });
        }
        continue;
      }
      forEachExpr(stmt, visit);
    }
  }
  return edges;
}

function buildTableGraph(table: Table): TableGraph {
  const chains = chainsByName(table);
  const edges = new Map<Chain, ChainEdge[]>();
  // Chains by position, each with the positions it jumps to: a kube-proxy nat table has tens of
  // thousands of chains, most reached from two base chains.
  const position = new Map<Chain, number>();
  table.chains.forEach((c, i) => {
    edges.set(c, jumpsOf(c));
    position.set(c, i);
  });
  const next = table.chains.map((c) => {
    const out: number[] = [];
    for (const e of edges.get(c)!) {
      const target = chains.get(e.target);
      if (target) out.push(position.get(target)!);
    }
    return out;
  });
  // The base chains reaching each chain so far; chains reached from the same bases share one list.
  const reached: (Chain[] | undefined)[] = new Array(table.chains.length).fill(undefined);
  const firstReached: number[] = [];
  const seen = new Int32Array(table.chains.length);
  table.chains.forEach((base, b) => {
    if (!base.base) return;
    const extended = new Map<Chain[] | undefined, Chain[]>();
    seen[b] = b + 1;
    const stack = [b];
    while (stack.length > 0) {
      const i = stack.pop()!;
      const before = reached[i];
      if (before === undefined) firstReached.push(i);
      let after = extended.get(before);
      if (!after) extended.set(before, (after = [...(before ?? []), base]));
      reached[i] = after;
      for (const j of next[i]!) {
        if (seen[j] === b + 1) continue;
        seen[j] = b + 1;
        stack.push(j);
      }
    }
  });
  const reachedFrom = new Map<Chain, readonly Chain[]>(firstReached.map((i) => [table.chains[i]!, reached[i]!]));
  return { table, chains, edges, reachedFrom };
}
