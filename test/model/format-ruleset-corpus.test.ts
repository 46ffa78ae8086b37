import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isError } from '../../src/model/diagnostic.js';
import { formatRuleset } from '../../src/model/format-ruleset.js';
import { parseNft } from '../../src/parser/nft/parse-nft.js';
import { corpusFiles, firstDifference, HAVE_CORPUS } from './corpus-helpers.js';

// nft 1.0.6's own listings must print back byte for byte: the text parser keeps element order,
// so no normalisation is needed (hash-ordered sets are listed in the order they were read).
describe.runIf(HAVE_CORPUS)('formatRuleset of nft 1.0.6 listings', () => {
  it('prints at least 95% of the canonical listings byte-identically', () => {
    const files = corpusFiles('canonical', '.nft');
    const failures: string[] = [];
    for (const [rel, text] of files) {
      const actual = formatRuleset(parseNft(text, { file: rel }).ruleset);
      if (actual !== text) failures.push(`${rel}: ${firstDifference(text, actual)}`);
    }
    const identical = files.length - failures.length;
    console.log(`listing → listing: ${identical}/${files.length} identical\n${failures.join('\n')}`);
    expect(files.length).toBeGreaterThan(0);
    expect(identical / files.length).toBeGreaterThanOrEqual(0.95);
  });

  it('is idempotent on every upstream dump that parses', () => {
    const failures: string[] = [];
    let parsed = 0;
    for (const [rel, text] of corpusFiles('dumps', '.nft')) {
      const first = parseNft(text, { file: rel });
      if (first.diagnostics.some(isError)) continue;
      parsed++;
      const once = formatRuleset(first.ruleset);
      const twice = formatRuleset(parseNft(once, { file: rel }).ruleset);
      if (twice !== once) failures.push(`${rel}: ${firstDifference(once, twice)}`);
    }
    console.log(`dumps: ${parsed} parsed, ${failures.length} not idempotent\n${failures.join('\n')}`);
    expect(parsed).toBeGreaterThan(0);
    expect(failures).toEqual([]);
  });
});

// Listings captured from real nodes (corpus/real, with provenance in each NOTES.md), including
// iptables-nft tables with their xlate text and blank comment matches.
const REAL = fileURLToPath(new URL('../../corpus/real', import.meta.url));
const realListings = existsSync(REAL)
  ? readdirSync(REAL).flatMap((dir) =>
      ([['ruleset.nft', false], ['ruleset-handles.nft', true]] as const)
        .filter(([file]) => existsSync(`${REAL}/${dir}/${file}`))
        .map(([file, handles]) => [`${dir}/${file}`, handles] as const),
    )
  : [];

describe('formatRuleset of captured real listings', () => {
  it.each(realListings)('prints %s back byte-identically', (rel, handles) => {
    const text = readFileSync(`${REAL}/${rel}`, 'utf8');
    expect(formatRuleset(parseNft(text, { file: rel }).ruleset, { handles })).toBe(text);
  });
});
