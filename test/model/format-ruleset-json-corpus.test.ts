import { describe, expect, it } from 'vitest';
import { formatRuleset } from '../../src/model/format-ruleset.js';
import { parseNftJson } from '../../src/parser/json/parse-nft-json.js';
import { corpusFiles, firstDifference, HAVE_CORPUS, readCorpusFile } from './corpus-helpers.js';

// A model read from `nft -j list ruleset` (numbers, no spelling) must print exactly like
// nft 1.0.6's own listing of the same ruleset.
describe.runIf(HAVE_CORPUS)('formatRuleset of nft 1.0.6 JSON listings', () => {
  it('prints at least 84% of the canonical listings byte-identically', () => {
    const files = corpusFiles('canonical-json', '.json');
    const failures: string[] = [];
    for (const [rel, json] of files) {
      const path = rel.replace(/\.json$/, '.nft');
      const expected = readCorpusFile(`canonical/${path}`);
      const actual = formatRuleset(parseNftJson(json, { file: rel }).ruleset);
      if (actual !== expected) failures.push(`${path}: ${firstDifference(expected, actual)}`);
    }
    const identical = files.length - failures.length;
    console.log(`JSON → listing: ${identical}/${files.length} identical\n${failures.join('\n')}`);
    expect(files.length).toBeGreaterThan(0);
    expect(identical / files.length).toBeGreaterThanOrEqual(0.84);
  });
});
