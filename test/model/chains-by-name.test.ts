import { describe, expect, it } from 'vitest';
import type { Table } from '../../src/model/ast.js';
import { chainsByName } from '../../src/model/chains-by-name.js';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';

// The iptables lowering hands over the Map it kept of its chain states, each replaced by its
// chain (src/model/lower-iptables.ts toTable): it must hold the table's chains and nothing else,
// renamed, continued and deleted chains included.
const DUMP = [
  '*nat',
  ':PREROUTING ACCEPT [0:0]',
  ':KUBE-SERVICES - [0:0]',
  ':OLD - [0:0]',
  ':GONE - [0:0]',
  '-A PREROUTING -j KUBE-SERVICES',
  '-A KUBE-SERVICES -j OLD',
  '-X GONE',
  '-E OLD NEW',
  'COMMIT',
  '',
].join('\n');

function mapOf(byName: ReadonlyMap<string, unknown>): [string, unknown][] {
  return [...byName.keys()].sort().map((name) => [name, byName.get(name)]);
}

describe('chainsByName', () => {
  it('gives each chain of a lowered iptables table under its name, and nothing else', () => {
    const { ruleset } = parseRuleset(DUMP, { file: 'nat.save' });
    const table = ruleset.tables[0]!;
    const byName = chainsByName(table);
    expect(table.chains.map((c) => c.name).sort()).toEqual(['KUBE-SERVICES', 'NEW', 'PREROUTING']);
    expect(byName.size).toBe(table.chains.length);
    for (const chain of table.chains) expect(byName.get(chain.name)).toBe(chain);
  });

  it('makes the map of a table built by hand: of two chains with one name, the last', () => {
    const { ruleset } = parseRuleset('table ip t {\n\tchain a { accept; }\n\tchain b { drop; }\n}\n', { file: 't.nft' });
    const parsed = ruleset.tables[0]!;
    const [a, b] = parsed.chains;
    const table: Table = { ...parsed, chains: [a!, { ...b!, name: 'a' }, b!] };
    expect(mapOf(chainsByName(table))).toEqual([
      ['a', table.chains[1]],
      ['b', b],
    ]);
  });
});
