// @ts-check
// The CPU cost of one packet when nothing is cold: a few packets simulated again and again, so
// every chain they meet is indexed and compiled and in the cache. It isolates what a packet costs
// by itself (objects made, hooks walked, routing, the outcome) from what meeting a rule the first
// time costs, which bench/measure-simulate.mjs's first pass adds. Two inputs:
//
//   - a ruleset without chains, and one of a single filter chain and two nat chains: the fixed
//     cost of a packet's way through the hooks;
//   - RULESET (a kube-proxy iptables dump, as bench/run.mjs generates): 20 ClusterIP:port hits,
//     10 NodePort hits, 10 misses in the service range and 10 packets to the node's port 22.
//
// Each is timed in rounds of process CPU time (user + system, less sensitive than the clock to
// what else the machine runs); the median round is printed, with the fastest.
//
//   node bench/measure-packet-cost.mjs [RULESET] [--rounds 9] [--packets 200000] [--dist DIR]

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CLIENT_IP, loadLibrary, NODE_IP, readTargets, resolveNodeHost } from './kube-node.mjs';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '9' },
    packets: { type: 'string', default: '200000' },
    dist: { type: 'string' },
  },
});

const library = await loadLibrary(args.dist);
const { parseRuleset, readPacket, simulateResolved } = library;
const nodeHost = resolveNodeHost(library);

/** @param {{ dst: string, protocol: string, dport: number }} target @param {number} i */
function packetTo(target, i) {
  const { packet } = readPacket({ iif: 'eth0', src: CLIENT_IP, sport: 40000 + i, ...target }, nodeHost);
  if (!packet) throw new Error(`bad packet ${JSON.stringify(target)}`);
  return packet;
}

/** Median and fastest µs of CPU per packet over the rounds.
 * @param {import('../src/index.js').Ruleset} ruleset @param {ReturnType<typeof packetTo>[]} packets */
function cost(ruleset, packets) {
  const count = Number(args.packets);
  /** @type {number[]} */
  const rounds = [];
  for (let round = 0; round < Number(args.rounds); round++) {
    const start = process.cpuUsage();
    for (let i = 0; i < count; i++) simulateResolved(ruleset, nodeHost, packets[i % packets.length], { seed: i });
    const used = process.cpuUsage(start);
    rounds.push((used.user + used.system) / count);
  }
  rounds.sort((a, b) => a - b);
  return { medianMicroseconds: Number(rounds[rounds.length >> 1].toFixed(2)), fastestMicroseconds: Number(rounds[0].toFixed(2)) };
}

const forwarded = [packetTo({ dst: '172.30.9.1', protocol: 'tcp', dport: 80 }, 0)];
const without = {
  'no chains': '',
  'a filter chain and two nat chains':
    'table ip nat {\n\tchain pre { type nat hook prerouting priority -100; }\n\tchain post { type nat hook postrouting priority 100; }\n}\ntable ip f {\n\tchain fwd { type filter hook forward priority 0; }\n}\n',
};
/** @type {Record<string, unknown>} */
const result = {};
for (const [name, text] of Object.entries(without)) result[name] = cost(parseRuleset(text, { file: 'fixed.nft' }).ruleset, forwarded);

const file = positionals[0];
if (file !== undefined) {
  const text = readFileSync(file, 'utf8');
  const { services, nodePorts } = readTargets(text, file);
  const targets = [
    ...services.slice(0, 20).map((s) => ({ dst: s.ip, protocol: s.protocol, dport: s.port })),
    ...nodePorts.slice(0, 10).map((n) => ({ dst: NODE_IP, protocol: n.protocol, dport: n.port })),
    ...Array.from({ length: 10 }, (_, i) => ({ dst: `172.30.9.${i}`, protocol: 'tcp', dport: 7 + i })),
    ...Array.from({ length: 10 }, () => ({ dst: NODE_IP, protocol: 'tcp', dport: 22 })),
  ];
  result[file] = cost(parseRuleset(text, { file }).ruleset, targets.map(packetTo));
}
console.log(JSON.stringify(result));
