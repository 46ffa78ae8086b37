// @ts-check
// Child process of bench/run.mjs: parses one kube-proxy-shaped ruleset with the built library
// (dist/), then simulates many random packets through it and prints one JSON line with the
// rates. The packets come from a fixed seed: ClusterIP:port hits, NodePort hits on the node's
// address, and misses (a ClusterIP-range address or a port no service has). The services are read
// from the iptables dump (TARGETS), so an nft listing of the same dump gets the same packets.
//
//   node bench/measure-simulate.mjs RULESET [--targets DUMP] [--packets 100000] [--seed 1]
//                                           [--all-branches 2000] [--warm-passes 0] [--dist DIR]
//
// `--packets` are simulated with a seed (one outcome per packet, `simulateResolved(…, { seed })`),
// the first of them alone timed too (it builds the indexes of the chains it meets);
// `--warm-passes` runs the same packets again that many times (`warmPassesPerSecond`, each pass's
// rate): every chain they meet is indexed and compiled by then, so the first pass's rate against
// these says what the first meetings cost. `--all-branches` more are simulated listing every random branch (kube-proxy's endpoint choice
// becomes one outcome per endpoint), which is the default mode of `nftsim run`. `--dist` takes
// the library from another build directory (`tsc -p tsconfig.build.json --outDir DIR`), so that a
// change can be measured without rebuilding the shared dist/.

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { CLIENT_IP, loadLibrary, NODE_IP, readTargets, resolveNodeHost } from './kube-node.mjs';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    targets: { type: 'string' },
    packets: { type: 'string', default: '100000' },
    seed: { type: 'string', default: '1' },
    'all-branches': { type: 'string', default: '2000' },
    'warm-passes': { type: 'string', default: '0' },
    dist: { type: 'string' },
  },
});
const file = positionals[0];
if (file === undefined) {
  console.error('usage: node bench/measure-simulate.mjs RULESET [--targets DUMP] [--packets N] [--seed N] [--all-branches N]');
  process.exit(2);
}

const library = await loadLibrary(args.dist);
const { parseRuleset, readPacket, simulateResolved } = library;

const parseStart = performance.now();
const { ruleset } = parseRuleset(readFileSync(file, 'utf8'), { file });
const parseMs = performance.now() - parseStart;

const targets = readTargets(readFileSync(args.targets ?? file, 'utf8'), args.targets ?? file);
const nodeHost = resolveNodeHost(library);
const random = mulberry32(Number(args.seed));
const packetCount = Number(args.packets);
const branchCount = Number(args['all-branches']);
const packets = Array.from({ length: packetCount + branchCount }, () => randomPacket(random));

/** @type {Record<string, number>} */
const kinds = {};
/** @type {Record<string, number>} */
const dispositions = {};
let uncertain = 0;
let firstPacketMs = 0;
const cpuStart = process.cpuUsage();
const simStart = performance.now();
for (let i = 0; i < packetCount; i++) {
  const { packet, kind } = packets[i];
  const [outcome] = simulateResolved(ruleset, nodeHost, packet, { seed: i });
  if (i === 0) firstPacketMs = performance.now() - simStart;
  kinds[kind] = (kinds[kind] ?? 0) + 1;
  const key = `${kind} ${outcome.disposition}${outcome.nat.length > 0 ? ` ${outcome.nat.map((n) => n.type).join('+')}` : ''}`;
  dispositions[key] = (dispositions[key] ?? 0) + 1;
  if (outcome.uncertain) uncertain++;
}
const simMs = performance.now() - simStart;
const cpu = process.cpuUsage(cpuStart);

/** @type {number[]} */
const warmPassesPerSecond = [];
for (let pass = 0; pass < Number(args['warm-passes']); pass++) {
  const start = performance.now();
  for (let i = 0; i < packetCount; i++) simulateResolved(ruleset, nodeHost, packets[i].packet, { seed: i });
  warmPassesPerSecond.push(packetCount / ((performance.now() - start) / 1000));
}

let outcomes = 0;
const branchStart = performance.now();
for (let i = packetCount; i < packets.length; i++) outcomes += simulateResolved(ruleset, nodeHost, packets[i].packet).length;
const branchMs = performance.now() - branchStart;

const rules = ruleset.tables.flatMap((t) => t.chains).reduce((n, c) => n + c.rules.length, 0);
console.log(JSON.stringify({
  parseMs,
  rules,
  services: targets.services.length,
  nodePorts: targets.nodePorts.length,
  packets: packetCount,
  simulateMs: simMs,
  userMs: cpu.user / 1000,
  packetsPerSecond: packetCount / (simMs / 1000),
  // Without the first packet, which builds the indexes of the chains it meets.
  steadyPacketsPerSecond: (packetCount - 1) / ((simMs - firstPacketMs) / 1000),
  firstPacketMs,
  warmPassesPerSecond,
  kinds,
  dispositions,
  uncertain,
  allBranches: { packets: branchCount, ms: branchMs, outcomes, packetsPerSecond: branchCount / (branchMs / 1000) },
  maxRssKb: process.resourceUsage().maxRSS,
}));

/** 45% ClusterIP hits, 25% NodePort hits, 30% misses, from an external client on eth0.
 * @param {() => number} rnd */
function randomPacket(rnd) {
  const roll = rnd();
  const pick = (/** @type {readonly any[]} */ list) => list[Math.floor(rnd() * list.length)];
  const sport = 1024 + Math.floor(rnd() * 60000);
  /** @type {{ kind: string, dst: string, protocol: string, dport: number }} */
  let target;
  if (roll < 0.45) {
    const s = pick(targets.services);
    target = { kind: 'cluster-ip', dst: s.ip, protocol: s.protocol, dport: s.port };
  } else if (roll < 0.7 && targets.nodePorts.length > 0) {
    const n = pick(targets.nodePorts);
    target = { kind: 'node-port', dst: NODE_IP, protocol: n.protocol, dport: n.port };
  } else if (roll < 0.85) {
    // A ClusterIP-range address on a port nobody listens to.
    target = { kind: 'miss', dst: `172.30.${Math.floor(rnd() * 256)}.${Math.floor(rnd() * 256)}`, protocol: 'tcp', dport: 1 + Math.floor(rnd() * 1000) };
  } else {
    target = { kind: 'miss', dst: NODE_IP, protocol: 'tcp', dport: 22 };
  }
  const { packet, errors } = readPacket({ iif: 'eth0', src: CLIENT_IP, dst: target.dst, protocol: target.protocol, sport, dport: target.dport }, nodeHost);
  if (!packet) throw new Error(`bad packet: ${JSON.stringify(errors)}`);
  return { kind: target.kind, packet };
}

/** mulberry32, as the generator uses. @param {number} seed */
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
