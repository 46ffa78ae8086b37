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
// 5. Simulation (issue 4, Speed): for dumps of 1,000, 10,000 and 50,000 services, parse once and
//    simulate 100,000 random packets (ClusterIP:port hits, NodePort hits, misses) with a seed, one
//    outcome each, in a fresh process per size and run, the median run reported
//    (bench/measure-simulate.mjs); also some packets listing every random branch, the listings
//    that bench/out holds, and the same services as kube-proxy's nftables mode writes them
//    (verdict maps; bench/gen/kube-proxy-nft.mjs). The per-packet cost from 1,000 to 50,000
//    services shows what the chain and set indexes buy.
// 6. The alternative a user has today for one packet: load the dump into a namespace, turn on
//    nftrace and read `nft monitor trace` until the packet's first line (bench/trace-one-packet.sh).
// 7. Lint (issue 5): lintRuleset on the parsed dump and on the node (listing + dump), against
//    its parse time (bench/measure-lint.mjs).
// 8. Diff (issue 6): `nftsim diff` of two snapshots of the main size, the second with a few
//    services' endpoints moved (bench/measure-diff.mjs): time, probes, changed flows.
// 9. Kubernetes drift (issue 7): `nftsim kube-drift` of a node of the main size against the
//    cluster its rules were written for (bench/measure-kube-drift.mjs): readCluster, readSnapshot
//    and kubeDrift time, Service ports and probes, drift found (0: the node is in sync); and a
//    second node whose rules predate a few changes, its drift beside what the changes say.
//
// Generated files are cached in bench/out/ (gitignored) and made again when missing or when the
// options change. Steps 2, 4 and 6 need root and network namespaces; without them the kernel steps
// are skipped, said so, and nftsim is measured on what exists.
//
//   node bench/run.mjs [--services 10000] [--runs 3] [--sim-services 1000,10000,50000]
//                      [--sim-packets 100000] [--all-branches 2000]
//
// NFTSIM_NETNS_PREFIX sets the namespace name prefix (default nftsim-bench); the pid is appended.

import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateKubeProxyDump } from './gen/kube-proxy-dump.mjs';
import { generateKubeProxyNft } from './gen/kube-proxy-nft.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH, '..');
const OUT = path.join(BENCH, 'out');
const NS_PREFIX = process.env.NFTSIM_NETNS_PREFIX ?? 'nftsim-bench';

const { values: args } = parseArgs({
  options: {
    services: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '3' },
    'sim-services': { type: 'string', default: '1000,10000,50000' },
    'sim-packets': { type: 'string', default: '100000' },
    'all-branches': { type: 'string', default: '2000' },
  },
});
const runs = Math.max(1, Number(args.runs));
const simSizes = args['sim-services'].split(',').map(Number);

/**
 * The cached files of one dump size.
 * @typedef {object} Inputs
 * @property {import('./gen/kube-proxy-dump.mjs').KubeProxyDumpOptions} options
 * @property {string} dump     the iptables dump
 * @property {string} listing  its `nft list ruleset` after iptables-nft-restore
 * @property {string} meta     what made the cached files, and how long the kernel tools took
 */

/** @param {number} services @returns {Inputs} */
function inputsFor(services) {
  const base = services % 1000 === 0 ? `kube-${services / 1000}k` : `kube-${services}`;
  return {
    options: {
      services,
      endpointsPerService: 5,
      seed: 1,
      nodePorts: true,
      // `-m recent` lists as `xt match recent`, which `nft -f` refuses: without affinity the
      // listing loads back into nft, so step 4 can time it.
      sessionAffinity: false,
    },
    dump: path.join(OUT, `${base}.save`),
    listing: path.join(OUT, `${base}.nft`),
    meta: path.join(OUT, `${base}.meta.json`),
  };
}
const files = inputsFor(Number(args.services));

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

  const meta = ensureFiles(files, kernel === undefined);
  if (!existsSync(files.listing)) console.log(`note: no ${rel(files.listing)}: making it needs the kernel.`);
  const inputs = [files.listing, files.dump].filter((file) => existsSync(file));
  const restoreMissing = kernel === undefined && !hasCommand('iptables-legacy-restore');
  if (restoreMissing) console.log('note: iptables-legacy-restore is not installed; the dump has no reference time.\n');
  const rows = inputs.map((file) => ({
    file,
    nftsim: measureNftsim(file),
    reference: kernel !== undefined ? undefined : file === files.listing ? measureNftCheck(file) : restoreMissing ? undefined : measureRestoreTest(file),
  }));

  const simulations = simSizes.flatMap((services) => {
    const sized = services === files.options.services ? files : inputsFor(services);
    if (sized !== files) ensureFiles(sized, false);
    return [sized.dump, sized.listing].filter((file) => existsSync(file)).map((file) => ({ services, file, result: measureSimulation(file, sized.dump) }));
  });
  // The same services as kube-proxy's nftables mode writes them: verdict maps instead of chains.
  const nftMode = ensureNftablesMode(files);
  simulations.push({ services: files.options.services, file: nftMode, result: measureSimulation(nftMode, files.dump) });
  const traceSkip = kernel ?? (hasCommand('python3') ? undefined : 'python3 is not installed');
  if (traceSkip) console.log(`note: ${traceSkip}; the kernel trace of one packet is skipped.`);
  const trace = traceSkip ? undefined : measureKernelTrace(files.dump);
  const lints = [[files.dump], [files.listing, files.dump]].filter((group) => group.every((file) => existsSync(file))).map((group) => ({ group, result: measureLint(group) }));
  const diff = measureDiff(files.options.services);
  const drift = measureKubeDrift(files.options.services);

  printReport(meta, rows);
  printSimulationReport(simulations, trace);
  printLintReport(lints);
  printDiffReport(diff);
  printKubeDriftReport(drift);
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

/** Makes the dump and (with a kernel, when `listing`) the listing when missing or stale; returns
 * how they were made. @param {Inputs} files @param {boolean} listing @returns {Meta} */
function ensureFiles(files, listing) {
  /** @type {Meta | undefined} */
  let meta = existsSync(files.meta) ? JSON.parse(readFileSync(files.meta, 'utf8')) : undefined;
  if (!meta || JSON.stringify(meta.options) !== JSON.stringify(files.options) || !existsSync(files.dump)) {
    step(`generating ${rel(files.dump)}`);
    const start = performance.now();
    writeFileSync(files.dump, generateKubeProxyDump(files.options));
    meta = { options: files.options, generateMs: performance.now() - start };
    writeFileSync(files.meta, JSON.stringify(meta, null, 2));
  }
  const listingStale = !existsSync(files.listing) || statSync(files.listing).mtimeMs < statSync(files.dump).mtimeMs;
  if (listing && (listingStale || meta.listMs === undefined)) {
    step(`loading it with iptables-nft-restore and listing ${rel(files.listing)} with nft`);
    meta = { ...meta, ...makeListing(files), nftVersion: versionOf('nft'), iptablesVersion: versionOf('iptables-nft') };
    writeFileSync(files.meta, JSON.stringify(meta, null, 2));
  }
  return meta;
}

/** The ruleset kube-proxy's nftables mode writes for the dump's services (the generator shares
 * the plan), made when missing or older than its generator. @param {Inputs} files */
function ensureNftablesMode(files) {
  const file = files.dump.replace(/kube-([^/]*)\.save$/, 'kube-nftables-$1.nft');
  const generator = path.join(BENCH, 'gen', 'kube-proxy-nft.mjs');
  if (!existsSync(file) || statSync(file).mtimeMs < Math.max(statSync(generator).mtimeMs, statSync(files.dump).mtimeMs)) {
    step(`generating ${rel(file)}`);
    writeFileSync(file, generateKubeProxyNft(files.options));
  }
  return file;
}

/** @param {Inputs} files @returns {{ restoreMs: number, listMs: number }} */
function makeListing(files) {
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

/**
 * @typedef {object} Simulation   one line of bench/measure-simulate.mjs
 * @property {number} parseMs
 * @property {number} rules
 * @property {number} packets
 * @property {number} simulateMs
 * @property {number} userMs
 * @property {number} packetsPerSecond
 * @property {number} firstPacketMs
 * @property {number[]} warmPassesPerSecond
 * @property {number} uncertain
 * @property {Record<string, number>} dispositions
 * @property {{ packets: number, ms: number, outcomes: number, packetsPerSecond: number }} allBranches
 * @property {number} maxRssKb
 */

/** Simulation of random packets on `file` (targets read from `dump`), `runs` times, each in a
 * fresh process: the run of the median packets/s (one run's figures, so that a row is of one run;
 * a single run on a shared machine was off by up to half).
 * @param {string} file @param {string} dump @returns {Simulation | { failure: string }} */
function measureSimulation(file, dump) {
  const results = [];
  for (let run = 1; run <= runs; run++) {
    step(`nftsim: simulating ${Number(args['sim-packets']).toLocaleString('en-US')} packets through ${rel(file)} (run ${run} of ${runs})`);
    const child = spawnSync(process.execPath, [
      path.join(BENCH, 'measure-simulate.mjs'), file, '--targets', dump,
      '--packets', args['sim-packets'], '--all-branches', args['all-branches'], '--warm-passes', '2',
    ], { encoding: 'utf8', maxBuffer: 1 << 26 });
    if (child.status !== 0) {
      const fatal = child.stderr.split('\n').find((line) => /FATAL|Error/.test(line)) ?? child.stderr.trim().split('\n').pop();
      return { failure: `${child.signal ?? `status ${child.status}`}, ${fatal}` };
    }
    results.push(JSON.parse(child.stdout));
  }
  const middle = median(results.map((r) => r.packetsPerSecond));
  return results.find((r) => r.packetsPerSecond === middle);
}

/** bench/trace-one-packet.sh on the dump, for a TCP ClusterIP of it.
 * @param {string} dump @returns {{ setupMs: number, restoreMs: number, firstTraceMs: number, totalMs: number, traceLines: number } | { failure: string }} */
function measureKernelTrace(dump) {
  const text = readFileSync(dump, 'utf8');
  const service = /^-A KUBE-SERVICES -d ([\d.]+)\/32 -p tcp .*--dport (\d+) -j KUBE-SVC-/m.exec(text.slice(text.indexOf('\n*nat')));
  if (!service) return { failure: `no TCP ClusterIP service in ${rel(dump)}` };
  step(`the kernel: loading ${rel(dump)} into a namespace and tracing one packet to ${service[1]}:${service[2]}`);
  const child = spawnSync('sh', [path.join(BENCH, 'trace-one-packet.sh'), `${NS_PREFIX}-${process.pid}`, dump, service[1], service[2]], { encoding: 'utf8' });
  if (child.status !== 0) return { failure: `status ${child.status}: ${child.stderr.trim().split('\n').pop()}` };
  return JSON.parse(child.stdout);
}

/** lintRuleset on the parsed files, in a fresh process.
 * @param {string[]} group @returns {{ parseMs: number, lintMs: number, findings: number } | { failure: string }} */
function measureLint(group) {
  step(`nftsim: linting ${group.map(rel).join(' + ')}`);
  const child = spawnSync(process.execPath, [path.join(BENCH, 'measure-lint.mjs'), ...group], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (child.status !== 0) return { failure: `status ${child.status}: ${child.stderr.trim().split('\n').pop()}` };
  return JSON.parse(child.stdout);
}

/**
 * @typedef {object} DiffMeasure   one line of bench/measure-diff.mjs
 * @property {number} services
 * @property {number} changedServices
 * @property {number} diffMs
 * @property {number} cpuMs
 * @property {{ count: number, unreached?: number, simulated?: number }} probes
 * @property {number} changedFlows
 * @property {number} maxRssKb
 */

/** `nftsim diff` of two snapshots of `services` services, a few of them changed, in a fresh
 * process. @param {number} services @returns {DiffMeasure | { failure: string }} */
function measureDiff(services) {
  step(`nftsim: diff of two ${services.toLocaleString('en-US')}-service snapshots`);
  const child = spawnSync(process.execPath, [path.join(BENCH, 'measure-diff.mjs'), '--services', String(services)], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (child.status !== 0) return { failure: `status ${child.status}: ${child.stderr.trim().split('\n').pop()}` };
  return JSON.parse(child.stdout);
}

/**
 * @typedef {object} KubeDriftNode   one node of bench/measure-kube-drift.mjs
 * @property {number} readSnapshotMs
 * @property {number} kubeDriftMs
 * @property {number} servicePorts
 * @property {number} probes
 * @property {number} endpointsExpected
 * @property {{ missing: number, stale: number, wrongShare: number, noRules: number, orphans: number, drifting: number }} drift
 * @property {string} verdict
 */
/**
 * @typedef {KubeDriftNode & { services: number, endpointsPerService: number, readClusterMs: number, totalMs: number, cpuMs: number, maxRssKb: number,
 *   perturbed?: KubeDriftNode & { truth: { missing: number, stale: number, wrongShare: number, drifting: number } } }} KubeDriftMeasure
 */

/** `nftsim kube-drift` of a node of `services` services × 5 endpoints, and of a perturbed one, in
 * a fresh process. @param {number} services @returns {KubeDriftMeasure | { failure: string }} */
function measureKubeDrift(services) {
  step(`nftsim: kube-drift of a ${services.toLocaleString('en-US')}-service node against its cluster`);
  const child = spawnSync(process.execPath, [path.join(BENCH, 'measure-kube-drift.mjs'), '--services', String(services), '--perturbed'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (child.status !== 0) return { failure: `status ${child.status}: ${child.stderr.trim().split('\n').pop()}` };
  return JSON.parse(child.stdout);
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
  printTable(table, [0, 7]);
  console.log('');
  for (const { file, nftsim, reference } of rows) {
    console.log(`${rel(file)}: ${'ms' in nftsim ? nftsim.detail : nftsim.failure}${reference?.detail ? `; ${reference.tool}: ${reference.detail}` : ''}`);
  }
}

/**
 * @param {{ services: number, file: string, result: Simulation | { failure: string } }[]} simulations
 * @param {{ setupMs: number, restoreMs: number, firstTraceMs: number, totalMs: number, traceLines: number } | { failure: string } | undefined} trace
 */
function printSimulationReport(simulations, trace) {
  console.log(`\nsimulation: parse once, then ${Number(args['sim-packets']).toLocaleString('en-US')} random packets from a fixed seed (45% ClusterIP:port,`);
  console.log('  25% NodePort on the node address, 30% misses) from an external client, one outcome each (`seed`);');
  console.log(`  all branches: ${Number(args['all-branches']).toLocaleString('en-US')} more packets listing every random branch (nftsim run's default).`);
  console.log('  packets/s by the clock and by user CPU (the CPU figure is steadier on a busy machine); warm: the same');
  console.log('  packets a third time, once the chains they meet are indexed and their rules compiled (a rule compiles');
  console.log(`  at its first run); all branches run after them; each row is the run of the median packets/s of ${runs},`);
  console.log('  each in a fresh process\n');
  const table = [['input', 'services', 'rules', 'parse', 'packets/s', 'CPU packets/s', 'µs/packet', 'warm packets/s', 'all branches/s', 'outcomes/packet', 'uncertain']];
  for (const { services, file, result } of simulations) {
    if ('failure' in result) {
      table.push([rel(file), services.toLocaleString('en-US'), 'failed', result.failure, '', '', '', '', '', '', '']);
      continue;
    }
    table.push([
      rel(file),
      services.toLocaleString('en-US'),
      result.rules.toLocaleString('en-US'),
      seconds(result.parseMs),
      Math.round(result.packetsPerSecond).toLocaleString('en-US'),
      Math.round(result.packets / (result.userMs / 1000)).toLocaleString('en-US'),
      (1000 * result.simulateMs / result.packets).toFixed(1),
      Math.round(result.warmPassesPerSecond.at(-1) ?? 0).toLocaleString('en-US'),
      Math.round(result.allBranches.packetsPerSecond).toLocaleString('en-US'),
      (result.allBranches.outcomes / Math.max(1, result.allBranches.packets)).toFixed(2),
      `${(100 * result.uncertain / result.packets).toFixed(0)}%`,
    ]);
  }
  printTable(table, [0]);
  const dumps = simulations.filter(({ file, result }) => file.endsWith('.save') && !('failure' in result));
  const smallest = dumps[0];
  const largest = dumps[dumps.length - 1];
  if (smallest && largest && smallest !== largest && !('failure' in smallest.result) && !('failure' in largest.result)) {
    const wall = smallest.result.packetsPerSecond / largest.result.packetsPerSecond;
    const cpu = (largest.result.userMs / largest.result.packets) / (smallest.result.userMs / smallest.result.packets);
    console.log(`\nper-packet cost ${largest.services.toLocaleString('en-US')} / ${smallest.services.toLocaleString('en-US')} services: ${wall.toFixed(2)}× by the clock, ${cpu.toFixed(2)}× by CPU (goal: < 2×)`);
    // The same packets once every rule they meet is compiled: what is left of the growth when
    // no packet meets a service for the first time.
    const smallWarm = smallest.result.warmPassesPerSecond.at(-1);
    const largeWarm = largest.result.warmPassesPerSecond.at(-1);
    if (smallWarm !== undefined && largeWarm !== undefined) {
      console.log(`warm per-packet cost ${largest.services.toLocaleString('en-US')} / ${smallest.services.toLocaleString('en-US')} services: ${(smallWarm / largeWarm).toFixed(2)}× by the clock`);
    }
  }
  const tenK = dumps.find((d) => d.services === 10000);
  if (tenK && !('failure' in tenK.result)) console.log(`10,000 services: ${Math.round(tenK.result.packetsPerSecond).toLocaleString('en-US')} packets/s (goal: ≥ 200,000)`);
  for (const { file, result } of dumps) {
    if (!('failure' in result)) console.log(`${rel(file)}: the first packet took ${(result.firstPacketMs).toFixed(1)} ms (it builds the indexes of the chains it meets)`);
  }
  for (const { file, result } of simulations) {
    if (!('failure' in result) && result.uncertain > 0) {
      console.log(`${rel(file)}: ${result.uncertain} of ${result.packets} outcomes uncertain (an iptables-nft listing prints xt matches such as comments as blanks; the dump is the truth for those tables)`);
    }
  }
  if (trace && 'failure' in trace) console.log(`\nthe kernel, one packet: failed (${trace.failure})`);
  else if (trace) {
    const same = dumps.find((d) => d.file === files.dump);
    const sim = same && !('failure' in same.result) ? same.result : undefined;
    console.log(`\nthe alternative today, for ONE packet through ${rel(files.dump)}: a namespace (${seconds(trace.setupMs)}), iptables-nft-restore`);
    console.log(`  (${seconds(trace.restoreMs)}), nftrace on and \`nft monitor trace\` until the packet's first trace line (${seconds(trace.firstTraceMs)}:`);
    console.log(`  nft reads the whole ruleset first): ${seconds(trace.totalMs)} in all, ${trace.traceLines} trace lines (bench/trace-one-packet.sh)` +
      (sim ? `; nftsim: parse ${seconds(sim.parseMs)} once, then ${(1000 * sim.simulateMs / sim.packets).toFixed(1)} µs per packet` : ''));
  }
}

/** @param {{ group: string[], result: { parseMs: number, lintMs: number, findings: number } | { failure: string } }[]} lints */
function printLintReport(lints) {
  if (lints.length === 0) return;
  console.log('\nlint (issue 5 asks for less than 2× the parse time): parse, then lintRuleset, in a fresh process\n');
  const table = [['input', 'parse', 'lint', 'lint / parse', 'findings']];
  for (const { group, result } of lints) {
    table.push('failure' in result
      ? [group.map(rel).join(' + '), 'failed', result.failure, '', '']
      : [group.map(rel).join(' + '), seconds(result.parseMs), seconds(result.lintMs), `${(result.lintMs / result.parseMs).toFixed(2)}×`, String(result.findings)]);
  }
  printTable(table, [0]);
}

/** @param {DiffMeasure | { failure: string }} diff */
function printDiffReport(diff) {
  console.log('\ndiff (issue 6 asks for under 30 s): two kube-proxy snapshots, the second with a few services\' endpoints moved\n');
  if ('failure' in diff) {
    console.log(`failed: ${diff.failure}`);
    return;
  }
  console.log(`${diff.services.toLocaleString('en-US')} services, ${diff.changedServices} changed: ${seconds(diff.diffMs)} (CPU ${seconds(diff.cpuMs)}), ` +
    `${diff.probes.count.toLocaleString('en-US')} probes (${diff.probes.unreached ?? 0} reach no change, ${diff.probes.simulated ?? 0} simulated on both sides), ` +
    `${diff.changedFlows} changed flows, peak RSS ${Math.round(diff.maxRssKb / 1024)} MB`);
}

/** @param {KubeDriftMeasure | { failure: string }} drift */
function printKubeDriftReport(drift) {
  console.log('\nkube-drift (issue 7 asks for under 30 s): one node against the cluster its rules were written for\n');
  if ('failure' in drift) {
    console.log(`failed: ${drift.failure}`);
    return;
  }
  console.log(`${drift.services.toLocaleString('en-US')} services × ${drift.endpointsPerService} endpoints: ${seconds(drift.totalMs)} (CPU ${seconds(drift.cpuMs)}): ` +
    `readCluster ${seconds(drift.readClusterMs)}, readSnapshot ${seconds(drift.readSnapshotMs)}, kubeDrift ${seconds(drift.kubeDriftMs)}; ` +
    `${drift.servicePorts.toLocaleString('en-US')} service ports, ${drift.probes.toLocaleString('en-US')} probes, ${drift.endpointsExpected.toLocaleString('en-US')} endpoints expected, ` +
    `${drift.drift.drifting} drifting (goal: 0), peak RSS ${Math.round(drift.maxRssKb / 1024)} MB`);
  const p = drift.perturbed;
  if (p) {
    console.log(`perturbed node: kubeDrift ${seconds(p.kubeDriftMs)}; ${p.drift.missing} missing, ${p.drift.stale} stale, ${p.drift.drifting} service ports drifting ` +
      `(the changes say ${p.truth.missing}, ${p.truth.stale}, ${p.truth.drifting}): ${p.verdict}`);
  }
}

/** Columns padded to their widest cell; `left` ones aligned left. @param {string[][]} table @param {number[]} left */
function printTable(table, left) {
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => (row[c] ?? '').length)));
  for (const row of table) console.log(row.map((cell, c) => (left.includes(c) ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '));
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
