// @ts-check
// `npm run bench`: nftsim reading kube-proxy-sized rulesets, beside the kernel tools that read
// the same files.
//
// 1. Generate a kube-proxy iptables dump of 10,000 services × 5 endpoints (bench/gen/).
// 2. Load it into a throwaway network namespace with iptables-nft-restore and save
//    `nft list ruleset` — the listing a real node of that size gives (~17 MB).
// 3. Parse that listing with nftsim (built, from dist/) in a fresh child process per run: wall
//    time, user CPU and peak RSS. Likewise the iptables dump itself, parsed and lowered into the
//    model (parseRuleset does both).
// 4. The reference for each: `nft -c -f` on the listing (nft's own parse + evaluation, checked by
//    the kernel but not committed) and `iptables-legacy-restore --test` on the dump (parsed and
//    built into the table blobs, not committed; issue 3 asks nftsim to be no slower), each in a
//    fresh namespace per run.
//
// Generated files are cached in bench/out/ (gitignored) and made again when missing or when the
// options change. Steps 2 and 4 need root and network namespaces; without them the kernel steps
// are skipped, said so, and nftsim is measured on what exists.
//
//   node bench/run.mjs [--services 10000] [--runs 3]
//
// NFTSIM_NETNS_PREFIX sets the namespace name prefix (default nftsim-bench); the pid is appended.

import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateKubeProxyDump } from './gen/kube-proxy-dump.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH, '..');
const OUT = path.join(BENCH, 'out');
const NS_PREFIX = process.env.NFTSIM_NETNS_PREFIX ?? 'nftsim-bench';

const { values: args } = parseArgs({
  options: {
    services: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '3' },
  },
});
const runs = Math.max(1, Number(args.runs));
/** @type {import('./gen/kube-proxy-dump.mjs').KubeProxyDumpOptions} */
const dumpOptions = {
  services: Number(args.services),
  endpointsPerService: 5,
  seed: 1,
  nodePorts: true,
  // `-m recent` lists as `xt match recent`, which `nft -f` refuses: without affinity the
  // listing loads back into nft, so step 4 can time it.
  sessionAffinity: false,
};
const base = dumpOptions.services % 1000 === 0 ? `kube-${dumpOptions.services / 1000}k` : `kube-${dumpOptions.services}`;
const files = {
  dump: path.join(OUT, `${base}.save`),
  listing: path.join(OUT, `${base}.nft`),
  // what made the cached files, and how long the kernel tools took
  meta: path.join(OUT, `${base}.meta.json`),
};

// Ctrl-C also reaches the tool running in the foreground; it stops, `run` throws, and the
// namespace is deleted on the way out. Without a listener Node would die at once and leave it.
process.on('SIGINT', () => {});
try {
  main();
} catch (error) {
  console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 2;
}

function main() {
  if (!existsSync(path.join(ROOT, 'dist', 'index.js'))) {
    throw new Error('dist/index.js is missing: run `npm run build` first (`npm run bench` does)');
  }
  mkdirSync(OUT, { recursive: true });
  const kernel = findKernelSkipReason();
  if (kernel) console.log(`note: ${kernel}; the nft steps are skipped.\n`);

  const meta = ensureFiles(kernel === undefined);
  const inputs = [files.listing, files.dump].filter((file) => existsSync(file));
  const restoreMissing = kernel === undefined && !hasCommand('iptables-legacy-restore');
  if (restoreMissing) console.log('note: iptables-legacy-restore is not installed; the dump has no reference time.\n');
  const rows = inputs.map((file) => ({
    file,
    nftsim: measureNftsim(file),
    reference: kernel !== undefined ? undefined : file === files.listing ? measureNftCheck(file) : restoreMissing ? undefined : measureRestoreTest(file),
  }));
  printReport(meta, rows);
}

// ---------------------------------------------------------------------------------------------
// The inputs

/**
 * @typedef {object} Meta
 * @property {import('./gen/kube-proxy-dump.mjs').KubeProxyDumpOptions} options
 * @property {number} generateMs
 * @property {number} [restoreMs]   iptables-nft-restore of the dump
 * @property {number} [listMs]      nft list ruleset
 * @property {string} [nftVersion]
 * @property {string} [iptablesVersion]
 */

/** Makes the dump and (with a kernel) the listing when missing or stale; returns how they were
 * made. @param {boolean} haveKernel @returns {Meta} */
function ensureFiles(haveKernel) {
  /** @type {Meta | undefined} */
  let meta = existsSync(files.meta) ? JSON.parse(readFileSync(files.meta, 'utf8')) : undefined;
  if (!meta || JSON.stringify(meta.options) !== JSON.stringify(dumpOptions) || !existsSync(files.dump)) {
    step(`generating ${rel(files.dump)}`);
    const start = performance.now();
    writeFileSync(files.dump, generateKubeProxyDump(dumpOptions));
    meta = { options: dumpOptions, generateMs: performance.now() - start };
    writeFileSync(files.meta, JSON.stringify(meta, null, 2));
  }
  const listingStale = !existsSync(files.listing) || statSync(files.listing).mtimeMs < statSync(files.dump).mtimeMs;
  if (haveKernel && (listingStale || meta.listMs === undefined)) {
    step(`loading it with iptables-nft-restore and listing ${rel(files.listing)} with nft`);
    meta = { ...meta, ...makeListing(), nftVersion: versionOf('nft'), iptablesVersion: versionOf('iptables-nft') };
    writeFileSync(files.meta, JSON.stringify(meta, null, 2));
  } else if (!existsSync(files.listing)) {
    console.log(`note: no ${rel(files.listing)}: making it needs the kernel.`);
  }
  return meta;
}

/** @returns {{ restoreMs: number, listMs: number }} */
function makeListing() {
  return withNamespace((ns) => {
    const restore = timed(() => run('ip', ['netns', 'exec', ns, 'iptables-nft-restore'], { stdin: files.dump }));
    const list = timed(() => run('ip', ['netns', 'exec', ns, 'nft', 'list', 'ruleset'], { stdout: files.listing }));
    return { restoreMs: restore.ms, listMs: list.ms };
  });
}

// ---------------------------------------------------------------------------------------------
// Measurements

/**
 * @typedef {object} Measure
 * @property {number} ms          median wall time over the runs
 * @property {number} userMs      median user CPU time over the runs (NaN when not measured)
 * @property {number} maxRssKb    highest over the runs
 * @property {string} [tool]      what was measured, for the reference tools
 * @property {string} [detail]
 */

/** nftsim's parse, in a fresh process per run. A run that crashes (say, out of memory) is
 * reported in the table instead of ending the benchmark; the remaining runs are skipped.
 * @param {string} file @returns {Measure | { failure: string }} */
function measureNftsim(file) {
  step(`nftsim: parsing ${rel(file)} ${runs}×`);
  const results = [];
  for (let i = 0; i < runs; i++) {
    const { ms, value: child } = timed(() =>
      spawnSync(process.execPath, [path.join(BENCH, 'measure-parse.mjs'), file], { encoding: 'utf8', maxBuffer: 1 << 26 }));
    if (child.status !== 0) {
      const fatal = child.stderr.split('\n').find((line) => /FATAL|Error/.test(line)) ?? child.stderr.trim().split('\n').pop();
      return { failure: `run ${i + 1} failed after ${seconds(ms)}: ${child.signal ?? `status ${child.status}`}, ${fatal}` };
    }
    results.push(JSON.parse(child.stdout));
  }
  const last = results[results.length - 1];
  const errors = last.errors > 0 ? `, ${last.errors} errors (first: ${last.firstError})` : '';
  return {
    ms: median(results.map((r) => r.parseMs)),
    userMs: median(results.map((r) => r.userMs)),
    maxRssKb: Math.max(...results.map((r) => r.maxRssKb)),
    detail: `${last.tables} tables, ${last.chains} chains, ${last.rules} rules, ${last.warnings} warnings${errors}`,
  };
}

/** `nft -c -f` (parse, evaluate, kernel check without commit). @param {string} file */
function measureNftCheck(file) {
  return measureTool('nft -c -f', (ns) => ['ip', 'netns', 'exec', ns, 'nft', '-c', '-f', file], undefined, file);
}

/** `iptables-legacy-restore --test` (parse, build the tables, no commit), the dump on stdin.
 * @param {string} file */
function measureRestoreTest(file) {
  return measureTool('iptables-legacy-restore --test', (ns) => ['ip', 'netns', 'exec', ns, 'iptables-legacy-restore', '--test'], file, file);
}

/** A kernel tool on `file`, in a fresh namespace per run, timed by the clock and by
 * /usr/bin/time when present (user CPU and peak RSS).
 * @param {string} tool @param {(ns: string) => string[]} commandIn
 * @param {string | undefined} stdin @param {string} file @returns {Measure} */
function measureTool(tool, commandIn, stdin, file) {
  step(`${tool} ${rel(file)} ${runs}×`);
  const withTime = existsSync('/usr/bin/time');
  const results = [];
  for (let i = 0; i < runs; i++) {
    results.push(withNamespace((ns) => {
      const command = commandIn(ns);
      const { ms, value } = timed(() => withTime ? run('/usr/bin/time', ['-v', ...command], { stdin }) : run(command[0], command.slice(1), { stdin }));
      const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(value.stderr);
      const user = /User time \(seconds\): ([\d.]+)/.exec(value.stderr);
      return { ms, userMs: user ? Number(user[1]) * 1000 : NaN, maxRssKb: rss ? Number(rss[1]) : NaN };
    }));
  }
  return {
    ms: median(results.map((r) => r.ms)),
    userMs: median(results.map((r) => r.userMs)),
    maxRssKb: Math.max(...results.map((r) => r.maxRssKb)),
    tool,
    detail: withTime ? undefined : 'user CPU and peak RSS need /usr/bin/time',
  };
}

// ---------------------------------------------------------------------------------------------
// Report

/** @param {Meta} meta @param {{ file: string, nftsim: Measure | { failure: string }, reference?: Measure }[]} rows */
function printReport(meta, rows) {
  const o = meta.options;
  console.log(`\nkube-proxy iptables dump: ${o.services} services × ${o.endpointsPerService} endpoints, seed ${o.seed}`);
  console.log(`  generate ${seconds(meta.generateMs)}` +
    (meta.restoreMs === undefined ? '' : `, iptables-nft-restore ${seconds(meta.restoreMs)}`) +
    (meta.listMs === undefined ? '' : `, nft list ruleset ${seconds(meta.listMs)}`) +
    ' (made once, then cached in bench/out/)');
  if (meta.nftVersion) console.log(`  ${meta.nftVersion}; ${meta.iptablesVersion}; node ${process.version}`);
  console.log(`  nftsim: median of ${runs} runs of parseRuleset (for the dump: parse and lower into the model), each in a`);
  console.log('  fresh process; user CPU counts every thread (the garbage collector\'s too); peak RSS includes Node itself (~40 MB)');
  console.log(`  reference: median of ${runs} runs, each in a fresh network namespace; ratios are nftsim / reference\n`);

  const table = [['input', 'size', 'lines', 'nftsim', 'user CPU', 'peak RSS', 'RSS/size', 'reference', 'time', 'user CPU', 'peak RSS', 'time ratio', 'CPU ratio']];
  for (const { file, nftsim, reference: ref } of rows) {
    const { size } = statSync(file);
    const ok = 'ms' in nftsim ? nftsim : undefined;
    table.push([
      rel(file),
      megabytes(size),
      countLines(file).toLocaleString('en-US'),
      ok ? seconds(ok.ms) : 'failed',
      ok ? seconds(ok.userMs) : '–',
      ok ? megabytes(ok.maxRssKb * 1024) : '–',
      ok ? `${(ok.maxRssKb * 1024 / size).toFixed(1)}×` : '–',
      ref?.tool ?? '–',
      ref ? seconds(ref.ms) : '–',
      ref ? seconds(ref.userMs) : '–',
      ref ? megabytes(ref.maxRssKb * 1024) : '–',
      ref && ok ? `${(ok.ms / ref.ms).toFixed(2)}×` : '–',
      ref && ok ? `${(ok.userMs / ref.userMs).toFixed(2)}×` : '–',
    ]);
  }
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
  for (const row of table) console.log(row.map((cell, c) => (c === 0 || c === 7 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '));
  console.log('');
  for (const { file, nftsim, reference } of rows) {
    console.log(`${rel(file)}: ${'ms' in nftsim ? nftsim.detail : nftsim.failure}${reference?.detail ? `; ${reference.tool}: ${reference.detail}` : ''}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

/** Why the kernel steps cannot run, or undefined when they can. @returns {string | undefined} */
function findKernelSkipReason() {
  if (process.getuid?.() !== 0) return 'not root, so no network namespace';
  for (const tool of ['ip', 'nft', 'iptables-nft-restore']) {
    if (!hasCommand(tool)) return `${tool} is not installed`;
  }
  const probe = `${NS_PREFIX}-${process.pid}-probe`;
  const added = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (added.status !== 0) return `cannot create a network namespace (${added.stderr.trim()})`;
  spawnSync('ip', ['netns', 'del', probe]);
  return undefined;
}

/** @param {string} tool */
function hasCommand(tool) {
  return spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
}

/** Runs `body` in a new network namespace, deleted afterwards whatever happens.
 * @template T @param {(ns: string) => T} body @returns {T} */
function withNamespace(body) {
  const ns = `${NS_PREFIX}-${process.pid}`;
  run('ip', ['netns', 'add', ns]);
  try {
    return body(ns);
  } finally {
    spawnSync('ip', ['netns', 'del', ns]);
  }
}

/**
 * Runs a command to completion; throws with its stderr when it does not succeed.
 * @param {string} command @param {string[]} commandArgs
 * @param {{ stdin?: string, stdout?: string }} [redirect] files for stdin / stdout
 */
function run(command, commandArgs, redirect = {}) {
  const stdin = redirect.stdin === undefined ? 'ignore' : openSync(redirect.stdin, 'r');
  const stdout = redirect.stdout === undefined ? 'pipe' : openSync(redirect.stdout, 'w');
  try {
    const result = spawnSync(command, commandArgs, { stdio: [stdin, stdout, 'pipe'], encoding: 'utf8', maxBuffer: 1 << 30 });
    if (result.status !== 0) {
      const why = result.error?.message ?? (result.signal ? `killed by ${result.signal}` : `status ${result.status}`);
      throw new Error(`${command} ${commandArgs.join(' ')} failed (${why}):\n${(result.stderr ?? '').slice(0, 2000)}`);
    }
    return { stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
  } finally {
    if (typeof stdin === 'number') closeSync(stdin);
    if (typeof stdout === 'number') closeSync(stdout);
  }
}

/** @template T @param {() => T} body @returns {{ ms: number, value: T }} */
function timed(body) {
  const start = performance.now();
  const value = body();
  return { ms: performance.now() - start, value };
}

/** @param {string} tool */
function versionOf(tool) {
  return spawnSync(tool, ['--version'], { encoding: 'utf8' }).stdout.trim();
}

/** @param {string} file */
function countLines(file) {
  const text = readFileSync(file);
  let lines = 0;
  for (let i = text.indexOf(10); i !== -1; i = text.indexOf(10, i + 1)) lines++;
  return lines;
}

/** @param {number[]} values */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** @param {number} ms */
function seconds(ms) {
  return `${(ms / 1000).toFixed(2)} s`;
}
/** @param {number} bytes */
function megabytes(bytes) {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}
/** @param {string} file */
function rel(file) {
  return path.relative(ROOT, file);
}
/** @param {string} message */
function step(message) {
  console.log(`… ${message}`);
}
