// The jump graph of a ruleset: every jump and goto (in verdict statements and in verdict maps),
// by table, and which base chains can reach each chain. Rules that reason about where a rule
// runs (nat statements, established-accept, loops) share this one computation.

import type { Chain, Ruleset, Span, Table } from '../../model/ast.js';
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
  for (const rule of chain.rules) {
    for (const stmt of rule.stmts) {
      if (stmt.kind === 'verdict') {
        if ((stmt.verdict === 'jump' || stmt.verdict === 'goto') && stmt.target !== undefined) {
          edges.push({ from: chain, target: stmt.target, verdict: stmt.verdict, span: stmt.span });
        }
        continue;
      }
      forEachExpr(stmt, (expr) => {
        if (expr.kind === 'verdict' && (expr.verdict === 'jump' || expr.verdict === 'goto') && expr.target !== undefined) {
          edges.push({ from: chain, target: expr.target, verdict: expr.verdict, span: expr.span });
        }
      });
    }
  }
  return edges;
}

function buildTableGraph(table: Table): TableGraph {
  const chains = new Map(table.chains.map((c) => [c.name, c]));
  const edges = new Map(table.chains.map((c) => [c, jumpsOf(c)]));
  const reachedFrom = new Map<Chain, Chain[]>();
  for (const base of table.chains) {
    if (!base.base) continue;
    const seen = new Set<Chain>([base]);
    const stack = [base];
    while (stack.length > 0) {
      const chain = stack.pop()!;
      const list = reachedFrom.get(chain) ?? [];
      list.push(base);
      reachedFrom.set(chain, list);
      for (const edge of edges.get(chain) ?? []) {
        const next = chains.get(edge.target);
        if (next && !seen.has(next)) {
          seen.add(next);
          stack.push(next);
        }
      }
    }
  }
  return { table, chains, edges, reachedFrom };
}
