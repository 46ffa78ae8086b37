import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/index.js';
import { createNamespace, deleteNamespace, findKernelSkipReason, runInNamespace } from '../kernel/helpers/network-namespace.mjs';

// A map's add, update or delete needs data: the kernel refuses the rule without (nft_dynset_init,
// EINVAL). The last describe checks each row against `nft -c -f`, which asks the kernel.

function ruleset(rule: string): string {
  return `table ip t {\n  map n { typeof ip saddr : meta mark; flags dynamic; }\n  set d { typeof ip saddr; flags dynamic; }\n  map v { type ipv4_addr : verdict; flags dynamic; }\n  chain c {\n    type filter hook prerouting priority -300; policy accept;\n    ${rule}\n  }\n}\n`;
}

const ROWS: readonly { rule: string; error?: string }[] = [
  { rule: 'add @n { ip saddr : 0x1 }' },
  { rule: 'add @n { ip saddr }', error: 'add @n needs data ({ key : data }): n is a map' },
  { rule: 'update @n { ip saddr }', error: 'update @n needs data' },
  { rule: 'delete @n { ip saddr }', error: 'delete @n needs data' },
  { rule: 'delete @n { ip saddr : 0x1 }' },
  { rule: 'add @d { ip saddr }' },
  { rule: 'add @v { ip saddr : accept }', error: 'add @v: v is a verdict map, which the kernel refuses to update from a rule (EOPNOTSUPP)' },
  { rule: 'delete @v { ip saddr }', error: 'delete @v needs data ({ key : data }): v is a map, and the kernel refuses the rule without (EINVAL)' },
];

describe('dynsets of a map without data', () => {
  it.each(ROWS)('$rule', ({ rule, error }) => {
    const { diagnostics } = parseRuleset(ruleset(rule), { file: 'r.nft' });
    const errors = diagnostics.filter((d) => d.code === 'dynset-data');
    expect(errors.map((d) => d.message)).toEqual(error ? [expect.stringContaining(error)] : []);
    if (error) expect(errors[0]!.span).toMatchObject({ file: 'r.nft', line: 7, column: 5 });
  });
});

const skipReason = findKernelSkipReason(['ip', 'nft']);

describe.skipIf(skipReason !== undefined)('dynsets of a map without data, as nft -c -f says', () => {
  let ns = '';
  beforeAll(() => {
    ns = createNamespace('nftsim-dynset');
  });
  afterAll(() => deleteNamespace(ns));

  it.each(ROWS)('$rule', ({ rule, error }) => {
    const result = runInNamespace(ns, ['nft', '-c', '-f', '-'], ruleset(rule));
    expect({ refused: result.status !== 0 }).toEqual({ refused: error !== undefined });
  });
});
