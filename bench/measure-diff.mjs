// @ts-check
// `nftsim diff` at scale (issue 6): two kube-proxy iptables dumps of N services (bench/gen/), the
// second with a few services' endpoints moved, diffed with the built library (dist/). Prints one
// JSON line: parse + diff time, the probe count by reason, how many probes were simulated on
// both sides and how many were untouched by any change, and the changed flows found.
//
//   node bench/measure-diff.mjs [--services 10000] [--changed 5]
//
// `npm run bench` runs it (bench/run.mjs); it needs `npm run build` first. NFTSIM_DIST names another
// build directory (`npx tsc -p tsconfig.build.json --outDir /tmp/x/dist`, then NFTSIM_DIST=/tmp/x/dist),
// for measuring a build while dist/ is shared.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { generateKubeProxyDump } from './gen/kube-proxy-dump.mjs';

const { values: args } = parseArgs({ options: { services: { type: 'string', default: '10000' }, changed: { type: 'string', default: '5' } } });
const services = Number(args.services);
const changed = Number(args.changed);

const dist = process.env.NFTSIM_DIST ? pathToFileURL(`${path.resolve(process.env.NFTSIM_DIST)}/`) : new URL('../dist/', import.meta.url);
/** @type {typeof import('../src/diff/diff-snapshots.js')} */
const { diffSnapshots } = await import(new URL('diff/diff-snapshots.js', dist).href);
/** @type {typeof import('../src/snapshot/read-snapshot.js')} */
const { readSnapshot } = await import(new URL('snapshot/read-snapshot.js', dist).href);

const before = generateKubeProxyDump({ services, endpointsPerService: 5, seed: 1, sessionAffinity: false });
// A few services changed: the first `changed` endpoints move to another pod address.
let moved = 0;
const after = before.replace(/--to-destination 10\.128\.(\d+)\.(\d+):(\d+)/g, (all, a, b, port) => (moved++ < changed ? `--to-destination 10.129.${a}.${b}:${port}` : all));

const dir = mkdtempSync(path.join(tmpdir(), 'nftsim-measure-diff-'));
const host = {
  interfaces: [
    { name: 'eth0', addresses: ['192.168.0.2/24'] },
    { name: 'cni0', addresses: ['10.128.0.1/9'] },
  ],
  routes: [{ dst: 'default', via: '192.168.0.1', dev: 'eth0' }],
  forwarding: true,
};
for (const side of ['before', 'after']) {
  writeFileSync(path.join(dir, `${side}.ipt`), side === 'before' ? before : after);
}
writeFileSync(path.join(dir, 'host.json'), JSON.stringify(host));

const start = performance.now();
const cpuStart = process.cpuUsage();
const b = readSnapshot(`${path.join(dir, 'before.ipt')},${path.join(dir, 'host.json')}`);
const a = readSnapshot(`${path.join(dir, 'after.ipt')},${path.join(dir, 'host.json')}`);
if (!b.snapshot || !a.snapshot) throw new Error(JSON.stringify([...b.diagnostics, ...a.diagnostics]));
const { diff, diagnostics } = diffSnapshots(b.snapshot, a.snapshot);
const ms = performance.now() - start;
// CPU time beside wall time: on a shared machine the wall time says more about the neighbours.
const cpu = process.cpuUsage(cpuStart);
if (!diff) throw new Error(JSON.stringify(diagnostics.filter((d) => d.severity === 'error')));
const classes = [...new Set(diff.changedFlows.map((f) => f.class))];
console.log(JSON.stringify({
  services,
  changedServices: changed,
  diffMs: Math.round(ms),
  cpuMs: Math.round((cpu.user + cpu.system) / 1000),
  probes: diff.probes,
  changedFlows: diff.changedFlows.length,
  classes,
  findings: { new: diff.findings.new.length, resolved: diff.findings.resolved.length },
  structural: diff.structural.length,
  maxRssKb: Math.round(process.resourceUsage().maxRSS),
}));
