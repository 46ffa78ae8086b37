import type { Chain, Family, NamedSet, Ruleset, Table } from './ast.js';

/** A chain by family, table and name. */
export interface ChainId {
  readonly family: Family;
  readonly table: string;
  readonly chain: string;
}

/** The chain the inputs before this one left (parseNode), or undefined. A rule command on a chain
 * an input does not declare itself (`add rule ip filter FORWARD …` in a file of its own, an
 * `-I FORWARD 1 …` fragment without `:FORWARD`) continues that chain, as `nft -f b` after
 * `nft -f a` (and `iptables-restore --noflush`) would: the input's chain is then the whole chain,
 * earlier rules first, each keeping the span of the file it came from. */
export type EarlierChainLookup = (id: ChainId) => Chain | undefined;

/** A lookup over a composed ruleset (built once, O(1) per call). */
export function earlierChainsOf(ruleset: Ruleset): EarlierChainLookup {
  const chains = new Map<string, Chain>();
  for (const table of ruleset.tables) {
    for (const chain of table.chains) chains.set(chainKey({ family: table.family, table: table.name, chain: chain.name }), chain);
  }
  return (id) => chains.get(chainKey(id));
}

export function chainKey(id: ChainId): string {
  return `${id.family} ${id.table} ${id.chain}`;
}

/** The ruleset that loading `rulesets` one after the other would leave (`nft -f a; nft -f b`):
 * tables, chains and sets with the same identity merge, and what a later file adds to an existing
 * chain comes after that chain's rules. */
export function composeRulesets(rulesets: readonly Ruleset[]): Ruleset {
  const tables: Table[] = [];
  for (const ruleset of rulesets) {
    for (const table of ruleset.tables) {
      const index = tables.findIndex((t) => t.family === table.family && t.name === table.name);
      if (index < 0) tables.push(table);
      else tables[index] = composeTables(tables[index]!, table);
    }
  }
  return { kind: 'ruleset', tables };
}

/** The table loading `from` after `into` leaves, for two tables of the same family and name.
 * `continued` names the chains of `from` that continue `into`'s (EarlierChainLookup): those hold
 * the whole chain and replace it. */
export function composeTables(into: Table, from: Table, continued: ReadonlySet<string> = NONE): Table {
  return {
    ...into,
    flags: [...new Set([...into.flags, ...from.flags])],
    comment: from.comment ?? into.comment,
    // Objects of different types may share a name (`counter c` and `quota c`).
    objects: mergeBy(into.objects, from.objects, (o) => `${o.kind} ${o.name}`, (_a, b) => b),
    sets: mergeBy(into.sets, from.sets, (s) => s.name, mergeSet),
    flowtables: mergeBy(into.flowtables, from.flowtables, (f) => f.name, (_a, b) => b),
    chains: mergeBy(into.chains, from.chains, (c) => c.name, (a, b) => mergeChain(a, b, continued.has(b.name))),
  };
}

const NONE: ReadonlySet<string> = new Set();

function mergeChain(into: Chain, from: Chain, continues: boolean): Chain {
  return { ...into, base: from.base ?? into.base, rules: continues ? from.rules : [...into.rules, ...from.rules] };
}

function mergeSet(into: NamedSet, from: NamedSet): NamedSet {
  const elements = [...(into.elements ?? []), ...(from.elements ?? [])];
  return { ...into, elements: elements.length > 0 ? elements : undefined };
}

function mergeBy<T>(
  into: readonly T[],
  from: readonly T[],
  keyOf: (item: T) => string,
  merge: (a: T, b: T) => T,
): T[] {
  const out = [...into];
  const indexOf = new Map(out.map((item, i) => [keyOf(item), i]));
  for (const item of from) {
    const index = indexOf.get(keyOf(item));
    if (index === undefined) {
      indexOf.set(keyOf(item), out.length);
      out.push(item);
    } else {
      out[index] = merge(out[index]!, item);
    }
  }
  return out;
}
