// @ts-check
// Child process of bench/run.mjs: parses one node's files with the built library (dist/) — one
// file with parseRuleset, several as one node with parseNode (the nft listing plus the
// iptables dump, as `nftsim lint` reads them) — then lints the result, and prints one JSON line
// with both times. Issue 5 asks the lint to take less than twice the parse.
//
//   node bench/measure-lint.mjs FILE...

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node bench/measure-lint.mjs FILE...');
  process.exit(2);
}

// The built library; typed from its source (dist/ may not exist when this is typechecked).
/** @type {typeof import('../src/index.js')} */
const { parseNode, parseRuleset, lintRuleset } = await import(new URL('../dist/index.js', import.meta.url).href);

const sources = files.map((file) => ({ file, text: readFileSync(file, 'utf8') }));
const parseStart = performance.now();
const { ruleset } = sources.length === 1 ? parseRuleset(sources[0].text, { file: sources[0].file }) : parseNode(sources);
const lintStart = performance.now();
const { findings } = lintRuleset(ruleset);
const lintEnd = performance.now();

/** @type {Record<string, number>} */
const byRule = {};
for (const finding of findings) byRule[finding.rule] = (byRule[finding.rule] ?? 0) + 1;
console.log(JSON.stringify({
  parseMs: lintStart - parseStart,
  lintMs: lintEnd - lintStart,
  findings: findings.length,
  byRule,
  maxRssKb: process.resourceUsage().maxRSS,
}));
