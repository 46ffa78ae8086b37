// @ts-check
// Child process of bench/run.mjs: parses one file with the built library (dist/) and prints one
// JSON line with the time (wall and user CPU), the peak memory and what came out. For an
// iptables-save dump, parseRuleset parses and lowers it into the model. A fresh process per measurement
// keeps the peak RSS that of this parse alone.
//
//   node bench/measure-parse.mjs FILE

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const file = process.argv[2];
if (file === undefined) {
  console.error('usage: node bench/measure-parse.mjs FILE');
  process.exit(2);
}

// The built library; typed from its source (dist/ may not exist when this is typechecked).
/** @type {typeof import('../src/index.js')} */
const { parseRuleset } = await import(new URL('../dist/index.js', import.meta.url).href);

const readStart = performance.now();
const text = readFileSync(file, 'utf8');
const cpuStart = process.cpuUsage();
const parseStart = performance.now();
const { ruleset, diagnostics } = parseRuleset(text, { file });
const parseEnd = performance.now();
// microseconds; all threads of the process, so the garbage collector's helpers too
const cpu = process.cpuUsage(cpuStart);

const chains = ruleset.tables.flatMap((table) => table.chains);
const errors = diagnostics.filter((d) => d.severity === 'error');
console.log(JSON.stringify({
  readMs: parseStart - readStart,
  parseMs: parseEnd - parseStart,
  userMs: cpu.user / 1000,
  // kilobytes, the high-water mark of the whole process (Node itself is ~40 MB of it)
  maxRssKb: process.resourceUsage().maxRSS,
  tables: ruleset.tables.length,
  chains: chains.length,
  rules: chains.reduce((n, chain) => n + chain.rules.length, 0),
  errors: errors.length,
  warnings: diagnostics.length - errors.length,
  firstError: errors[0]?.message,
}));
