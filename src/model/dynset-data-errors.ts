// `add @m { ip saddr }` where m is a map: the kernel refuses the rule (nft_dynset_init wants a
// data register for a map, whatever the operation: EINVAL, "Could not process rule: Invalid
// argument"), which nft only learns when loading it. nftsim read it, and the element it added had
// no data for a lookup to find. A verdict map takes no dynset at all (EOPNOTSUPP; nft 1.0.6
// cannot even parse a verdict there).

import type { Diagnostic } from './diagnostic.js';
import type { Ruleset } from './ast.js';

/** An error for each add, update or delete of a named map without data, or of a verdict map. */
export function dynsetDataErrors(ruleset: Ruleset): Diagnostic[] {
  const errors: Diagnostic[] = [];
  for (const table of ruleset.tables) {
    const maps = new Map(table.sets.filter((s) => s.isMap).map((s) => [s.name, s.data?.kind === 'type' && s.data.names[0] === 'verdict']));
    if (maps.size === 0) continue;
    for (const chain of table.chains) {
      for (const rule of chain.rules) {
        for (const stmt of rule.stmts) {
          if (stmt.kind !== 'set-op' || !maps.has(stmt.set)) continue;
          const message =
            stmt.element.data === undefined
              ? `${stmt.op} @${stmt.set} needs data ({ key : data }): ${stmt.set} is a map, and the kernel refuses the rule without (EINVAL)`
              : maps.get(stmt.set)
                ? `${stmt.op} @${stmt.set}: ${stmt.set} is a verdict map, which the kernel refuses to update from a rule (EOPNOTSUPP)`
                : undefined;
          if (message) errors.push({ severity: 'error', code: 'dynset-data', message, span: stmt.span });
        }
      }
    }
  }
  return errors;
}
