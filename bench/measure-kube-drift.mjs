// @ts-check
// `nftsim kube-drift` at scale (issue 7 asks for 10,000 services × 5 endpoints, one node, under
// 30 s): a kube-proxy iptables dump of N services (bench/gen/kube-proxy-dump.mjs) and the cluster
// it was written for (bench/gen/kube-cluster.mjs: `kubectl get services,endpointslices -A -o
// json` and `kubectl get nodes -o json`), written to a temporary directory, then read and checked
// with the built library (dist/): readCluster, readSnapshot, kubeDrift. The node is in sync, so
// the drift found must be 0. With --perturbed, a second node whose rules predate a few rollouts,
// scale-ups, scale-downs, created and deleted Services (bench/gen/perturb-plan.mjs) is timed the
// same way and its drift compared with what the perturbation says. Prints one JSON line.
//
//   node bench/measure-kube-drift.mjs [--services 10000] [--endpoints 5] [--perturbed]
//
// `npm run bench` runs it (bench/run.mjs); it needs `npm run build` first. NFTSIM_DIST names another
// build directory (`npx tsc -p tsconfig.build.json --outDir /tmp/x/dist`, then NFTSIM_DIST=/tmp/x/dist),
// for measuring a build while dist/ is shared.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { formatKubeProxyDump, planServices } from './gen/kube-proxy-dump.mjs';
import { generateCluster, nodeName, nodePlan } from './gen/kube-cluster.mjs';
import { driftTruth, evolveCluster } from './gen/perturb-plan.mjs';

const { values: args } = parseArgs({
  options: {
    services: { type: 'string', default: '10000' },
    endpoints: { type: 'string', default: '5' },
    perturbed: { type: 'boolean', default: false },
  },
});
const services = Number(args.services);
const endpointsPerService = Number(args.endpoints);

const dist = process.env.NFTSIM_DIST ? pathToFileURL(`${path.resolve(process.env.NFTSIM_DIST)}/`) : new URL('../dist/', import.meta.url);
/** @type {typeof import('../src/kube/read-cluster.js')} */
const { readCluster } = await import(new URL('kube/read-cluster.js', dist).href);
/** @type {typeof import('../src/snapshot/read-snapshot.js')} */
const { readSnapshot } = await import(new URL('snapshot/read-snapshot.js', dist).href);
/** @type {typeof import('../src/kube/kube-drift.js')} */
const { kubeDrift } = await import(new URL('kube/kube-drift.js', dist).href);

// Every pod on a node of its own /24: 250 pods a node, and node-1 for the local endpoints.
const nodes = 1 + Math.ceil((services * endpointsPerService) / 250);
const plan = planServices({ services, endpointsPerService, seed: 1, nodes });
// What a node that missed a few changes still has; the cluster is the same for both nodes.
const EVENTS = /** @type {const} */ ([['rollout', 5], ['scale-up', 5], ['scale-down', 5], ['created', 2], ['deleted', 2]]);
const { before, after } = args.perturbed
  ? evolveCluster(plan, EVENTS.map(([kind, count]) => ({ kind, count })), { seed: 1, nodes })
  : { before: plan, after: plan };

const dir = mkdtempSync(path.join(tmpdir(), 'nftsim-measure-kube-drift-'));
try {
  const cluster = generateCluster(after, { nodes });
  const clusterFiles = [['cluster.json', cluster.services], ['nodes.json', cluster.nodes]].map(([name, value]) => {
    const file = path.join(dir, /** @type {string} */ (name));
    // Indented as kubectl prints it: what a user captures (and twice the bytes of compact JSON).
    writeFileSync(file, JSON.stringify(value, null, 4));
    return file;
  });
  /** @param {number} node @param {import('./gen/kube-cluster.mjs').StateServicePort[]} state */
  const writeNode = (node, state) => {
    const nodeDir = path.join(dir, nodeName(node));
    mkdirSync(nodeDir);
    writeFileSync(path.join(nodeDir, 'iptables.save'), formatKubeProxyDump(nodePlan(state, node), `nftsim bench/measure-kube-drift.mjs ${nodeName(node)}`));
    return nodeDir;
  };
  const inSync = writeNode(0, after);
  const stale = args.perturbed ? writeNode(1, before) : undefined;

  const start = performance.now();
  const cpuStart = process.cpuUsage();
  const read = readCluster(clusterFiles.map((file) => ({ file, text: readFileSync(file, 'utf8') })));
  const readClusterMs = performance.now() - start;
  if (!read.cluster) throw new Error(JSON.stringify(read.diagnostics.filter((d) => d.severity === 'error')));
  const checked = measureNode(read.cluster, inSync);
  const ms = performance.now() - start;
  // CPU time beside wall time: on a shared machine the wall time says more about the neighbours.
  const cpu = process.cpuUsage(cpuStart);
  const perturbed = stale && measureNode(read.cluster, stale);
  const truth = stale && driftTruth({ cluster: after, node: 1, rulesFrom: before });

  console.log(JSON.stringify({
    services,
    endpointsPerService,
    nodes,
    readClusterMs: Math.round(readClusterMs),
    ...checked,
    totalMs: Math.round(ms),
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    ...(perturbed && truth && {
      perturbed: {
        ...perturbed,
        truth: { missing: truth.missing, stale: truth.stale, wrongShare: truth.wrongShare, drifting: truth.services.length },
      },
    }),
    maxRssKb: Math.round(process.resourceUsage().maxRSS),
  }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * readSnapshot and kubeDrift of one node directory; what was checked and found.
 * @param {import('../src/kube/cluster.js').Cluster} cluster @param {string} nodeDir
 */
function measureNode(cluster, nodeDir) {
  const start = performance.now();
  const snap = readSnapshot(nodeDir);
  const readSnapshotMs = performance.now() - start;
  if (!snap.snapshot) throw new Error(JSON.stringify(snap.diagnostics));
  const result = kubeDrift(cluster, [{ name: path.basename(nodeDir), snapshot: snap.snapshot }]);
  const kubeDriftMs = performance.now() - start - readSnapshotMs;
  const node = result.nodes[0];
  if (node.status === 'unchecked') throw new Error(node.verdict);
  return {
    readSnapshotMs: Math.round(readSnapshotMs),
    kubeDriftMs: Math.round(kubeDriftMs),
    servicePorts: node.summary.services,
    probes: probesOf(cluster),
    endpointsExpected: node.summary.endpointsExpected,
    drift: { missing: node.summary.missing, stale: node.summary.stale, wrongShare: node.summary.wrongShare, noRules: node.summary.noRules, orphans: node.summary.orphans, drifting: node.summary.drifting },
    verdict: node.verdict,
  };
}

/** The probes kubeDrift simulates: a pod and the node to each ClusterIP:port, an outside client
 * to each NodePort (on the node's one address), LoadBalancer IP and external IP.
 * @param {import('../src/kube/cluster.js').Cluster} cluster */
function probesOf(cluster) {
  let n = 0;
  for (const s of cluster.services) {
    for (const port of s.ports) {
      n += 2 * s.clusterIPs.length + (port.nodePort !== undefined ? 1 : 0) + s.loadBalancerIPs.length + s.externalIPs.length;
    }
  }
  return n;
}
