// `add @m { ip saddr }` where m is a map: the kernel refuses the rule (nft_dynset_init wants a
// data register for a map, whatever the operation: EINVAL, "Could not process rule: Invalid
// argument"), which nft only learns when loading it. nftsim read it, and the element it added had
// no data for a lookup to find.

import type { Diagnostic } from './diagnostic.js';
import type { Ruleset } from './ast.js';

/** An error for each add, update or delete of a named map without data. */
export function dynsetDataErrors(ruleset: Ruleset): Diagnostic[] {
  const errors: Diagnostic[] = [];
  for (const table of ruleset.tables) {
    const maps = new Set(table.sets.filter((s) => s.isMap).map((s) => s.name));
    if (maps.size === 0) continue;
    for (const chain of table.chains) {
      for (const rule of chain.rules) {
        for (const stmt of rule.stmts) {
          if (stmt.kind !== 'set-op' || !maps.has(stmt.set) || stmt.element.data !== undefined) continue;
          errors.push({ severity: 'error', code: 'dynset-data', message: `${stmt.op} @${stmt.set} needs data ({ key : data }): ${stmt.set} is a map, and the kernel refuses the rule without (EINVAL)`, span: stmt.span });
        }
      }
    }
  }
  return errors;
}
