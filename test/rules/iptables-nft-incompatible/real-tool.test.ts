// nftsim's verdict against the installed iptables-nft (1.8.9 on the reference machine), row by
// row of a compatibility matrix built in a throwaway network namespace (run-matrix.ts): each
// native construct (constructs.ts) in a built-in chain of every iptables table, in ip and ip6,
// followed by a rule iptables-nft appends; the real outcome comes from `*-save`, `-S`, `-L`,
// `-C` of the appended rule and a save | restore round trip, and nftsim lints the table as
// `nft -a list ruleset` printed it.

import { execFileSync, spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLintRules } from '../../../src/rules/framework/lint-ruleset.js';
import { iptablesNftIncompatible } from '../../../src/rules/iptables-nft-incompatible.js';
import { nftsimOutcome, realOutcome } from './compare-outcome.js';
import { CHAIN_VARIANTS, CONSTRUCTS, L2_CONSTRUCTS } from './constructs.js';
import { IPTABLES_WRITTEN, matrixRows, packRounds, runChainVariants, runIptablesWritten, runMatrix, type ChainResult, type RealResult, type WrittenResult } from './run-matrix.js';
import { parseNode, parseRuleset } from '../../../src/parser/parse-ruleset.js';

const NS = `h12-iptnft-${process.pid}`;
const which = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const canRun = process.getuid?.() === 0 && ['iptables-nft', 'ip6tables-nft', 'arptables-nft', 'ebtables-nft', 'nft', 'ip'].every(which);
if (!canRun) console.warn('iptables-nft-incompatible: not root or iptables-nft/ip6tables-nft/arptables-nft/ebtables-nft/nft missing: the real-tool matrix is not run');

const installedVersion = (): string => /v(\d+\.\d+\.\d+)/.exec(execFileSync('iptables-nft', ['--version'], { encoding: 'utf8' }))?.[1] ?? '1.8.9';

// The full matrix (every construct in every table it belongs in) takes minutes; by default each
// construct goes to one table per family, in turn (NFTSIM_IPTNFT_MATRIX=full for all of them).
// The arp and bridge constructs go to one family each by default. NFTSIM_IPTNFT_FAMILIES=arp,bridge
// runs the rows of those families only.
const MODE = process.env.NFTSIM_IPTNFT_MATRIX === 'full' ? 'full' : 'rotate';
const FAMILIES = process.env.NFTSIM_IPTNFT_FAMILIES?.split(',');
const ROWS = [...matrixRows(CONSTRUCTS, MODE), ...matrixRows(L2_CONSTRUCTS, MODE, true)].filter((row) => !FAMILIES || FAMILIES.includes(row.family));
const ROUNDS = packRounds(ROWS);

describe.runIf(canRun)(`iptables-nft-incompatible against the installed iptables-nft (${ROWS.length} rows)`, () => {
  let results = new Map<string, RealResult>();
  let version = '';
  let chains = new Map<string, ChainResult>();
  let written: WrittenResult | undefined;
  const lint = (listing: string) => {
    const parsed = parseRuleset(listing, { file: 'listing.nft', format: 'nft' });
    expect(parsed.diagnostics.filter((d) => d.severity === 'error').map((d) => d.message), listing).toEqual([]);
    return runLintRules(parsed.ruleset, [iptablesNftIncompatible], { iptablesVersion: version });
  };
  beforeAll(() => {
    execFileSync('ip', ['netns', 'add', NS]);
    version = installedVersion();
    results = runMatrix(NS, ROUNDS);
    chains = runChainVariants(NS, CHAIN_VARIANTS);
    written = runIptablesWritten(NS);
  }, 900_000);
  afterAll(() => {
    spawnSync('ip', ['netns', 'del', NS]);
  });

  it.for(ROWS)('$key', (row) => {
    const real = results.get(row.key)!;
    if (row.construct.refused !== undefined) {
      // Rows the real nft must still refuse (row.construct.refused says why); nothing to compare.
      expect(real.refused, 'nft accepted a construct the matrix lists as refused').toBeDefined();
      return;
    }
    expect(real.refused, `nft refused ${row.rule}`).toBeUndefined();
    const findings = lint(real.listing);
    const context = `\n${real.listing}\nsave: ${real.lines.join(' | ')} ${real.error ?? ''}\nround trip: ${real.before.join(' | ')} -> ${real.after.join(' | ')}\nnftsim: ${findings.map((f) => f.message).join('\n')}`;
    expect(nftsimOutcome(findings), context).toBe(realOutcome(real));
  });

  // Base chains: hidden with a warning ("contains incompatible base-chains"), or a built-in name
  // iptables-nft cannot append to (CHAIN_ADD fails), or fine.
  it.for((['ip', 'ip6'] as const).flatMap((family) => CHAIN_VARIANTS.map((v) => ({ key: `${family} ${v.table} ${v.id}`, ...v }))))('chains: $key', (v) => {
    const real = chains.get(v.key)!;
    const realOutcome = real.incompatible
      ? 'table-unreadable'
      : real.saveStatus !== 0
        ? `save exit ${real.saveStatus}`
        : real.tainted
          ? `base-chain ${real.appendStatus === 0 ? 'hidden' : 'cannot-add'}`
          : real.appendStatus === 0
            ? 'none'
            : `append exit ${real.appendStatus}`;
    const findings = lint(real.listing);
    const nftsim = findings.length === 0 ? 'none' : findings.map((f) => (f.messageId === 'base-chain' ? `base-chain ${f.message.includes('cannot add rules') ? 'cannot-add' : 'hidden'}` : f.messageId)).join(', ');
    expect(nftsim, `${real.listing}\n${findings.map((f) => f.message).join('\n')}`).toBe(realOutcome);
  });

  // Rules iptables-nft wrote look native in `nft list ruleset` (`ct state`, `fib daddr type
  // local`, `reject`, `tcp dport { 22, 80 }`): from the listing alone at most the info-level
  // "cannot tell" finding, and nothing with the iptables-save dumps or `nft -j` beside it.
  it(`iptables-nft's own rules (${IPTABLES_WRITTEN.length} per family): readable by the real tool, never an error for nftsim`, () => {
    const w = written!;
    expect(w.saveStatus).toEqual({ ip: 0, ip6: 0 });
    expect(w.saves.ip + w.saves.ip6).not.toContain('incompatible');
    const alone = lint(w.listing);
    expect(alone.map((f) => [f.messageId, f.severity])).toEqual(alone.length ? alone.map(() => ['origin-unknown', 'info']) : []);
    const node = parseNode([
      { file: 'ruleset.nft', text: w.listing },
      { file: 'iptables.save', text: w.saves.ip },
      { file: 'ip6tables.save', text: w.saves.ip6 },
    ]);
    expect(runLintRules(node.ruleset, [iptablesNftIncompatible], { iptablesVersion: version })).toEqual([]);
    const json = parseRuleset(w.json, { file: 'ruleset.json', format: 'json' });
    expect(runLintRules(json.ruleset, [iptablesNftIncompatible], { iptablesVersion: version })).toEqual([]);
  });
});
