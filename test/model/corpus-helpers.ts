import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// The nft test-suite corpus lives outside the project, in ../shared (see ../shared/corpus/
// nft-testsuite/SOURCES.md): `canonical/` is what nft 1.0.6 listed for each upstream dump,
// `canonical-json/` the same ruleset as `nft -j`, `dumps/` the upstream dumps.
const PROJECT_ROOT = resolve(fileURLToPath(import.meta.url), '../../..');
export const CORPUS = resolve(PROJECT_ROOT, '../shared/corpus/nft-testsuite');
export const HAVE_CORPUS = existsSync(CORPUS);
if (!HAVE_CORPUS) console.warn(`${CORPUS} not present: nft corpus conformance not run`);

function walk(dir: string): string[] {
  return readdirSync(dir)
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : [path];
    })
    .sort();
}

/** Files under a corpus folder, as [path relative to the folder, text]. */
export function corpusFiles(folder: string, suffix: string): [string, string][] {
  const dir = join(CORPUS, folder);
  if (!existsSync(dir)) return [];
  return walk(dir)
    .filter((p) => p.endsWith(suffix))
    .map((p) => [relative(dir, p), readFileSync(p, 'utf8')]);
}

export function readCorpusFile(path: string): string {
  return readFileSync(join(CORPUS, path), 'utf8');
}

/** The first differing line of two texts, for a readable failure report. */
export function firstDifference(expected: string, actual: string): string {
  const e = expected.split('\n');
  const a = actual.split('\n');
  let i = 0;
  while (i < e.length && e[i] === a[i]) i++;
  return `line ${i + 1}\n    expected: ${JSON.stringify(e[i])}\n    actual:   ${JSON.stringify(a[i])}`;
}
