import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ParseOptions, ParseResult } from '../../../src/parser/parse-result.js';
import type { Expr } from '../../../src/model/ast.js';
import { datatypeOf } from '../../../src/model/datatypes.js';
import { parseNftJson } from '../../../src/parser/json/parse-nft-json.js';

// The best test of both readers: nft 1.0.6 listed each kernel ruleset of the corpus twice, as
// text (canonical/X.nft) and as JSON (canonical-json/X.json). Both must read into the same model,
// up to what the two forms cannot both say (see `comparable`).

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const CORPUS = path.resolve(ROOT, '../shared/corpus/nft-testsuite');
const TEXT_PARSER = path.join(ROOT, 'src/parser/nft/parse-nft.ts');
const haveCorpus = existsSync(CORPUS);
const haveParser = existsSync(TEXT_PARSER);
if (!haveCorpus) console.warn(`${CORPUS} not present: JSON/text cross-check not run`);
if (!haveParser) console.warn(`${TEXT_PARSER} not present yet: JSON/text cross-check not run`);

/** Share of the corpus whose two models must agree. */
const FLOOR = 0.92;

function walk(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir).sort()) {
    const p = path.join(dir, entry);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/** Properties that record how something was spelled or where, not what it means. */
const SPELLING = new Set(['span', 'handle', 'quoted', 'slash', 'parens', 'deviceList', 'prefixed']);

/** What nft 1.0.6's JSON does not carry at all (src/json.c at v1.0.6; see also
 * test/model/format-ruleset-json-corpus.test.ts): chain devices, table and chain comments, a
 * set's auto-merge. */
const NOT_IN_JSON: Readonly<Record<string, ReadonlySet<string>>> = {
  table: new Set(['comment']),
  chain: new Set(['comment']),
  set: new Set(['autoMerge']),
};

/** A model reduced to what both listings say: no spans, handles (the text listing has none),
 * spelling, or what JSON leaves out; a literal is its typed value where it has one, else its
 * text; a `typeof` key is the datatype it stands for, which is all 1.0.6's JSON writes. */
function comparable(node: unknown, parent?: string): unknown {
  if (Array.isArray(node)) return node.map((item) => comparable(item));
  if (node === null || typeof node !== 'object') return node;
  const o = node as Record<string, unknown>;
  if (o.kind === 'literal') return o.value !== undefined ? o.value : { text: o.text };
  if (o.kind === 'typeof') return { kind: 'type', names: datatypeOf(o.expr as Expr)?.name.split(' . ') };
  if (parent === 'base') return comparable({ ...o, devices: undefined, devicesUnknown: undefined });
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(o).sort()) {
    if (SPELLING.has(key) || o[key] === undefined || NOT_IN_JSON[o.kind as string]?.has(key)) continue;
    out[key] = comparable(o[key], key === 'base' ? 'base' : undefined);
  }
  return out;
}

/** The first place two comparable models differ, as a path and both values. */
function firstDifference(a: unknown, b: unknown, at = ''): string | undefined {
  if (JSON.stringify(a) === JSON.stringify(b)) return undefined;
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const d = firstDifference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}/${k}`);
      if (d) return d;
    }
  }
  return `${at}: json ${JSON.stringify(a)?.slice(0, 200)} vs text ${JSON.stringify(b)?.slice(0, 200)}`;
}

describe.runIf(haveCorpus && haveParser)('JSON and text listings of the same ruleset', () => {
  it(`read into the same model for at least ${FLOOR * 100}% of the corpus`, async () => {
    // Imported by path so this file compiles before the text parser exists.
    const { parseNft } = (await import(TEXT_PARSER)) as { parseNft: (text: string, options?: ParseOptions) => ParseResult };
    const jsonFiles = walk(path.join(CORPUS, 'canonical-json'));
    const differences: string[] = [];
    let same = 0;
    for (const jsonFile of jsonFiles) {
      const rel = path.relative(path.join(CORPUS, 'canonical-json'), jsonFile).replace(/\.json$/, '.nft');
      const fromJson = comparable(parseNftJson(readFileSync(jsonFile, 'utf8'), { file: jsonFile }).ruleset);
      const textFile = path.join(CORPUS, 'canonical', rel);
      const fromText = comparable(parseNft(readFileSync(textFile, 'utf8'), { file: textFile }).ruleset);
      const d = firstDifference(fromJson, fromText);
      if (d) differences.push(`${rel}${d}`);
      else same++;
    }
    console.log(`JSON/text cross-check: ${same} of ${jsonFiles.length} rulesets read the same`);
    if (differences.length) console.log(`first differences:\n${differences.slice(0, 30).join('\n')}`);
    expect(jsonFiles.length).toBe(377);
    expect(same / jsonFiles.length).toBeGreaterThanOrEqual(FLOOR);
  });
});
