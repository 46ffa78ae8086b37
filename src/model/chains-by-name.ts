// A table's chains by name, for what finds a chain by the name a jump gives (the simulator, lint's
// chain graph). The iptables lowering holds such a Map when it finishes a table and records it for
// the table's chains array (recordChainsByName), so that a kube-proxy table of 300,000 chains is
// not hashed again: making the Map anew took a quarter of a second at 50,000 services, in the
// first simulated packet. Kept by the chains array, which never changes; a table made with another
// array gets a Map made when first asked for.

import type { Chain, Table } from './ast.js';

const recorded = new WeakMap<readonly Chain[], ReadonlyMap<string, Chain>>();

/** Records `byName` as the chains of `chains` by name: each of them under its own name, and
 * nothing else. */
export function recordChainsByName(chains: readonly Chain[], byName: ReadonlyMap<string, Chain>): void {
  recorded.set(chains, byName);
}

/** The chains of `table` by name; of two chains with one name (only a table built by hand has
 * them: the kernel refuses them, the parsers merge them), the last. */
export function chainsByName(table: Table): ReadonlyMap<string, Chain> {
  const known = recorded.get(table.chains);
  if (known) return known;
  const byName = new Map<string, Chain>();
  for (const chain of table.chains) byName.set(chain.name, chain);
  recorded.set(table.chains, byName);
  return byName;
}
