// Every case under corpus/kube-drift: `nftsim kube-drift` of its cluster (cluster.json,
// nodes.json) and node snapshots, by the library and by the CLI, checked three ways:
// - against truth.json, which corpus/kube-drift/make.mjs derived from the cluster states the
//   case was made of (bench/gen/perturb-plan.mjs driftTruth), not from nftsim: per node the exact
//   missing, stale and wrongly shared endpoints of every Service port, the verdict's words, the
//   summary, the exit code and, for the wt0 incident, explainedBy at the iptables-nft-incompatible
//   finding;
// - against the simulator: every probe the report shows, simulated again, reaches exactly the
//   endpoints it reports; and for every drifting Service port of the truth, a client on each way in
//   reaches exactly the endpoints the truth says the rules hold;
// - against expected-drift.json, `nftsim kube-drift --format json` checked in beside the case.
// File names are relative to the case directory, so the expected files do not depend on where the
// checkout is. After a deliberate change to what kube-drift reports, regenerate them and review
// the diff before committing:
//
//     NFTSIM_UPDATE_EXPECTED=1 npx vitest run test/kube/corpus.test.ts && git diff corpus/kube-drift

import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { readCluster } from '../../src/kube/read-cluster.js';
import { kubeDrift, type NodeDrift, type NodeSnapshot, type ServiceDrift } from '../../src/kube/kube-drift.js';
import type { Diagnostic } from '../../src/model/diagnostic.js';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import type { HostInput } from '../../src/sim/host.js';
import type { PacketInput } from '../../src/sim/packet.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import { readSnapshot } from '../../src/snapshot/read-snapshot.js';
import type { ServiceTruth } from '../../bench/gen/perturb-plan.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const CORPUS = join(ROOT, 'corpus/kube-drift');
const UPDATE = process.env.NFTSIM_UPDATE_EXPECTED === '1';
const CLUSTER_FILES = ['cluster.json', 'nodes.json'];
// kube-drift's share tolerance: iptables stores 1/n as round(p·2^31).
const SHARE_TOLERANCE = 1e-3;

/** corpus/kube-drift/NAME/truth.json (written by make.mjs). */
interface Truth {
  readonly exitCode: number;
  readonly nodes: readonly {
    readonly node: string;
    readonly status: 'in-sync' | 'drift';
    readonly verdictContains: readonly string[];
    readonly summary: { readonly services: number; readonly endpointsExpected: number; readonly missing: number; readonly stale: number; readonly wrongShare: number };
    readonly services: readonly ServiceTruth[];
    readonly explainedBy: readonly { readonly rule: string; readonly file: string; readonly line: number }[];
  }[];
}

const CASES: readonly string[] = readdirSync(CORPUS).filter((name) => existsSync(join(CORPUS, name, 'truth.json'))).sort();

/** The case's cluster and node snapshots, file names relative to the case directory. */
function loadCase(name: string) {
  const dir = join(CORPUS, name);
  const truth = JSON.parse(readFileSync(join(dir, 'truth.json'), 'utf8')) as Truth;
  const diagnostics: Diagnostic[] = [];
  const read = readCluster(CLUSTER_FILES.map((file) => ({ file, text: readFileSync(join(dir, file), 'utf8') })));
  diagnostics.push(...read.diagnostics);
  const nodes: NodeSnapshot[] = truth.nodes.map(({ node }) => {
    const result = readSnapshot(join(dir, node));
    diagnostics.push(...result.diagnostics);
    const snapshot = result.snapshot ?? { label: node, sources: [] };
    return { name: node, snapshot: { ...snapshot, label: node, sources: snapshot.sources.map((s) => ({ ...s, file: relative(dir, s.file) })) } };
  });
  return { dir, truth, cluster: read.cluster, nodes, diagnostics };
}

/** What expected-drift.json holds: the CLI's `--format json`. */
const driftJson = (nodes: readonly NodeDrift[]): string => `${JSON.stringify({ nodes }, null, 2)}\n`;

const keyOf = (s: { namespace: string; name: string; portName: string; protocol: string }): string =>
  `${s.namespace}/${s.name}${s.portName === '' ? '' : `:${s.portName}`} ${s.protocol}`;

/** The endpoints a packet is DNATed to on its first pass, with their shares. */
function dnatShares(outcomes: readonly { probability: number; nat: readonly { type: string; to: string; conntrack?: string }[] }[]): Map<string, number> {
  const shares = new Map<string, number>();
  for (const o of outcomes) {
    const dnat = o.nat.find((n) => n.type === 'dnat' && n.conntrack === undefined);
    if (dnat) shares.set(dnat.to, (shares.get(dnat.to) ?? 0) + o.probability);
  }
  return shares;
}

/** The node as nodes.json describes it: its InternalIP on eth0, its pod CIDR's gateway on cni0. */
function hostOf(dir: string, node: string): { host: HostInput; address: string; podSrc: string } {
  const list = JSON.parse(readFileSync(join(dir, 'nodes.json'), 'utf8')) as { items: { metadata: { name: string }; spec: { podCIDR: string }; status: { addresses: { type: string; address: string }[] } }[] };
  const item = list.items.find((i) => i.metadata.name === node)!;
  const address = item.status.addresses.find((a) => a.type === 'InternalIP')!.address;
  const pods = item.spec.podCIDR.replace(/\.0\/24$/, '');
  return {
    host: { interfaces: [{ name: 'eth0', addresses: [`${address}/24`] }, { name: 'cni0', addresses: [`${pods}.1/24`] }], routes: [{ dst: 'default', via: '192.168.0.1', dev: 'eth0' }], forwarding: true },
    address,
    podSrc: `${pods}.253`,
  };
}

// An off-cluster client inside the LoadBalancerSourceRanges of the generated Services.
const EXTERNAL_CLIENT = '203.0.113.2';

describe.each(CASES)('corpus/kube-drift/%s', (name) => {
  const { dir, truth, cluster, nodes, diagnostics } = loadCase(name);
  const result = kubeDrift(cluster!, nodes);
  const byNode = new Map(result.nodes.map((n) => [n.node, n]));

  it('reads the cluster and the nodes without errors', () => {
    expect([...diagnostics, ...result.diagnostics].filter((d) => d.severity === 'error')).toEqual([]);
    expect(cluster).toBeDefined();
    expect(result.nodes.map((n) => n.node)).toEqual(truth.nodes.map((n) => n.node));
  });

  describe.each(truth.nodes)('$node', (want) => {
    const got = byNode.get(want.node)!;
    const reported = new Map(got.services.map((s) => [keyOf(s), s]));

    it(`is ${want.status}, with the summary of truth.json`, () => {
      expect(got.status).toBe(want.status);
      expect(got.summary).toMatchObject(want.summary);
    });

    // A Service port kube-drift could not decide (a rule nftsim does not model on a probe's way)
    // is listed but is no drift: it must not be one the truth has drift for.
    it('reports exactly the drifting Service ports of truth.json', () => {
      expect(got.services.filter((s) => s.undecided !== true).map(keyOf).sort()).toEqual(want.services.map(keyOf).sort());
    });

    it.each(want.services.map((s) => [keyOf(s), s] as const))('%s: exactly the missing, stale and wrongly shared endpoints of truth.json', (key, svc) => {
      const drift = reported.get(key);
      expect(drift, `${key} is not reported`).toBeDefined();
      expect([...drift!.missing].sort()).toEqual([...svc.missing].sort());
      expect([...drift!.stale].sort()).toEqual([...svc.stale].sort());
      expect([...new Set(drift!.wrongShare.map((w) => w.endpoint))].sort()).toEqual([...svc.wrongShare].sort());
      expect(drift!.port).toBe(svc.port);
      expect(drift!.noRules === true).toBe(svc.noRules === true);
      expect(drift!.orphan === true).toBe(svc.orphan === true);
    });

    it('says so in the verdict', () => {
      for (const words of want.verdictContains) expect(got.verdict).toContain(words);
    });

    it(want.explainedBy.length > 0 ? 'links every drifting Service port to the finding that explains it' : 'links no finding', () => {
      const refs = want.explainedBy.map((e) => ({ rule: e.rule, file: e.file, line: e.line }));
      expect(got.explainedBy.map((e) => ({ rule: e.rule, file: e.location.file, line: e.location.line }))).toEqual(refs.length > 0 ? expect.arrayContaining(refs) : []);
      for (const s of got.services) {
        expect(s.explainedBy.map((e) => ({ rule: e.rule, file: e.file, line: e.line }))).toEqual(refs.length > 0 ? expect.arrayContaining(refs) : []);
      }
    });

    // The report against the simulator: each probe it shows, run again through the node's rules,
    // reaches exactly the endpoints (and shares) it says; its missing endpoints are not reached,
    // its unexpected ones are, and every endpoint listed for the Service port comes from a probe.
    it('shows probes that the simulator reproduces', () => {
      const ruleset = parseRuleset(nodes.find((n) => n.name === want.node)!.snapshot.sources).ruleset;
      const { host } = hostOf(dir, want.node);
      for (const s of got.services) {
        for (const probe of s.probes) {
          const label = `${keyOf(s)} ${probe.client} → ${probe.access} ${probe.packet.dst}:${probe.packet.dport}`;
          const packet: PacketInput = { ...probe.packet, sport: 40000 };
          const shares = dnatShares(simulatePacket(ruleset, { host, packet }).outcomes);
          expect([...shares.keys()].sort(), label).toEqual(probe.observed.map((o) => o.endpoint).sort());
          for (const o of probe.observed) expect(Math.abs(shares.get(o.endpoint)! - o.share), label).toBeLessThan(1e-9);
          for (const e of probe.missing) expect(shares.has(e), `${label}: ${e} is reported missing`).toBe(false);
          for (const e of probe.unexpected) expect(shares.has(e), `${label}: ${e} is reported reached`).toBe(true);
        }
        const fromProbes = (f: (p: ServiceDrift['probes'][number]) => readonly string[]) => new Set(s.probes.flatMap(f));
        for (const e of s.missing) expect(fromProbes((p) => p.missing).has(e), `${keyOf(s)}: missing ${e} comes from no probe`).toBe(true);
        for (const e of s.stale) expect(fromProbes((p) => p.unexpected).has(e), `${keyOf(s)}: stale ${e} comes from no probe`).toBe(true);
      }
    });

    // The truth against the simulator, without the report: a pod sending to the ClusterIP, and an
    // outside client sending to the NodePort and the LoadBalancer IP, reach exactly the endpoints
    // the truth says the node's rules hold on that way in, each with an even share.
    it.each(want.services.map((s) => [keyOf(s), s] as const))('%s: the rules reach what truth.json says they hold', (_, svc) => {
      const ruleset = parseRuleset(nodes.find((n) => n.name === want.node)!.snapshot.sources).ruleset;
      const { host, address, podSrc } = hostOf(dir, want.node);
      const common = { protocol: svc.protocol, sport: 40000 };
      for (const path of svc.paths) {
        const packets: PacketInput[] = path.path === 'internal'
          ? [{ ...common, iif: 'cni0', src: podSrc, dst: svc.addresses.clusterIP, dport: svc.port }]
          : [
              ...(svc.addresses.nodePort !== undefined ? [{ ...common, iif: 'eth0', src: EXTERNAL_CLIENT, dst: address, dport: svc.addresses.nodePort }] : []),
              ...(svc.addresses.loadBalancerIP !== undefined ? [{ ...common, iif: 'eth0', src: EXTERNAL_CLIENT, dst: svc.addresses.loadBalancerIP, dport: svc.port }] : []),
            ];
        for (const packet of packets) {
          const shares = dnatShares(simulatePacket(ruleset, { host, packet }).outcomes);
          expect([...shares.keys()].sort(), `${path.path} ${packet.dst}:${packet.dport}`).toEqual([...path.rules].sort());
          for (const share of shares.values()) expect(Math.abs(share - 1 / path.rules.length)).toBeLessThan(SHARE_TOLERANCE);
        }
      }
    });
  });

  it(`exits ${truth.exitCode} from the CLI, with the library's report`, async () => {
    let out = '';
    let err = '';
    const code = await main(['node', 'nftsim', 'kube-drift', ...CLUSTER_FILES.flatMap((f) => ['--cluster', join(dir, f)]), '--format', 'json', ...truth.nodes.map((n) => join(dir, n.node))], {
      out: (t) => (out += t),
      err: (t) => (err += t),
    });
    // Warnings are fine (the wt0 node's iptables-nft-save could not list its filter table).
    expect(err).not.toMatch(/: error: /);
    expect(code).toBe(truth.exitCode);
    expect(out.split(`${dir}/`).join('')).toBe(driftJson(result.nodes));
  });

  it('reports exactly expected-drift.json', () => {
    const expectedFile = join(dir, 'expected-drift.json');
    const text = driftJson(result.nodes);
    if (UPDATE) writeFileSync(expectedFile, text);
    expect(existsSync(expectedFile), `${expectedFile} is missing: run NFTSIM_UPDATE_EXPECTED=1 npx vitest run test/kube/corpus.test.ts and review it`).toBe(true);
    expect(text).toBe(readFileSync(expectedFile, 'utf8'));
  });
});
