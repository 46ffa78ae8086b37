import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/index.js';
import { createNamespace, deleteNamespace, findKernelSkipReason, runInNamespace } from '../kernel/helpers/network-namespace.mjs';

// Constants too wide for their type: nft refuses the ruleset (`nft -c -f`, the last describe
// checks each row against it), and so does nftsim, with the constant's location.

const SETS = `
  set ports { typeof tcp dport; elements = { 65535 } }
  set pairs { typeof ip saddr . tcp dport; elements = { 10.0.0.1 . 80 } }
  set wide { typeof tcp dport; elements = { 70000 } }`;

function ruleset(rule: string, sets = ''): string {
  return `table ip t {${sets}\n  chain c {\n    type filter hook input priority 0; policy accept;\n    ${rule}\n  }\n}\n`;
}

const ROWS: readonly { rule: string; error?: string; sets?: string }[] = [
  { rule: 'tcp dport 65535 accept' },
  { rule: 'tcp dport 65536 accept', error: 'value 65536 exceeds the range 0-65535 of its 16-bit type inet_service' },
  { rule: 'tcp dport { 22, 99999 } accept', error: 'value 99999 exceeds the range 0-65535' },
  { rule: 'tcp dport 1000-70000 accept', error: 'value 70000 exceeds the range 0-65535' },
  { rule: 'ip saddr 10.0.0.0/32 accept' },
  { rule: 'ip saddr 10.0.0.0/33 accept', error: 'prefix length 33 is too long for the 32-bit type ipv4_addr' },
  { rule: 'meta mark 0xffffffff accept' },
  { rule: 'meta mark 0x1ffffffff accept', error: 'value 0x1ffffffff exceeds the range 0-4294967295 of its 32-bit type mark' },
  { rule: 'ip ttl 256 accept', error: 'value 256 exceeds the range 0-255 of its 8-bit type integer' },
  { rule: 'ip saddr . tcp dport { 10.0.0.1 . 65536 } accept', error: 'value 65536 exceeds the range 0-65535' },
  { rule: 'tcp dport @ports accept', sets: SETS.split('\n').slice(0, 3).join('\n') },
  { rule: 'tcp dport @wide accept', error: 'value 70000 exceeds the range 0-65535', sets: SETS },
  { rule: 'tcp dport @named accept', error: 'value 99999 exceeds the range 0-65535 of its 16-bit type inet_service', sets: '\n  set named { type inet_service; elements = { 22, 99999 } }' },
  { rule: 'ip saddr . tcp dport @pairs accept', error: 'value 70000 exceeds the range 0-65535', sets: '\n  set pairs { type ipv4_addr . inet_service; elements = { 10.0.0.1 . 70000 } }' },
  { rule: 'ip saddr @nets accept', error: 'prefix length 40 is too long for the 32-bit type ipv4_addr', sets: '\n  set nets { type ipv4_addr; flags interval; elements = { 10.0.0.0/40 } }' },
];

describe('constants too wide for their type', () => {
  it.each(ROWS)('$rule', ({ rule, error, sets }) => {
    const { diagnostics } = parseRuleset(ruleset(rule, sets), { file: 'r.nft' });
    const errors = diagnostics.filter((d) => d.code === 'value-range');
    expect(errors.map((d) => d.message)).toEqual(error ? [expect.stringContaining(error)] : []);
    if (error) expect(errors[0]!.span).toMatchObject({ file: 'r.nft' });
  });

  it('points at the constant', () => {
    const { diagnostics } = parseRuleset(ruleset('tcp dport 99999 accept'), { file: 'r.nft' });
    expect(diagnostics.find((d) => d.code === 'value-range')?.span).toMatchObject({ line: 4, column: 15 });
  });

  it('checks nft -j listings too', () => {
    const json = JSON.stringify({
      nftables: [
        { table: { family: 'ip', name: 't' } },
        { chain: { family: 'ip', table: 't', name: 'c' } },
        { rule: { family: 'ip', table: 't', chain: 'c', expr: [{ match: { op: '==', left: { payload: { protocol: 'tcp', field: 'dport' } }, right: 99999 } }] } },
      ],
    });
    const { diagnostics } = parseRuleset(json, { file: 'r.json' });
    expect(diagnostics.filter((d) => d.code === 'value-range').map((d) => d.message)).toEqual([expect.stringContaining('value 99999 exceeds')]);
  });
});

const skipReason = findKernelSkipReason(['ip', 'nft']);

describe.skipIf(skipReason !== undefined)('constants too wide for their type, as nft -c -f says', () => {
  let ns = '';
  beforeAll(() => {
    ns = createNamespace('nftsim-range');
  });
  afterAll(() => deleteNamespace(ns));

  it.each(ROWS)('$rule', ({ rule, error, sets }) => {
    const result = runInNamespace(ns, ['nft', '-c', '-f', '-'], ruleset(rule, sets));
    expect({ refused: result.status !== 0 }).toEqual({ refused: error !== undefined });
  });
});
