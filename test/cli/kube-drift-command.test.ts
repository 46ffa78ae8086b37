import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { clusterList, FIXTURES, objectOf } from '../kube/kube-drift-fixtures.js';

const CLUSTER = join(FIXTURES, 'cluster.json');
const NODE_1 = join(FIXTURES, 'node-1.save');
const WT0 = join(FIXTURES, 'node-1-wt0');

async function kubeDrift(args: string[]) {
  let out = '';
  let err = '';
  const code = await main(['node', 'nftsim', 'kube-drift', ...args], { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

/** The cluster fixture with default/web's endpoint 10.128.1.6 deleted, in a temporary file. */
function clusterWithoutEndpoint(): string {
  const list = clusterList();
  const slice = objectOf(list, 'EndpointSlice', 'default', 'web');
  slice.endpoints = (slice.endpoints as { addresses: string[] }[]).filter((e) => e.addresses[0] !== '10.128.1.6');
  const file = join(mkdtempSync(join(tmpdir(), 'kdrift-')), 'cluster.json');
  writeFileSync(file, JSON.stringify(list, null, 2));
  return file;
}

describe('nftsim kube-drift', () => {
  it('exits 0 for a node in sync and names it NAME=SNAPSHOT', async () => {
    const { code, out, err } = await kubeDrift(['--cluster', CLUSTER, `node-1=${NODE_1}`]);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out.split('\n')[0]).toBe('node-1: in sync (9 endpoints across 5 services)');
    expect(out).toMatch(/^summary: 1 node \(1 in sync, 0 drifting\)/m);
  });

  it('names a node by its snapshot directory', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'kdrift-')), 'node-1');
    mkdirSync(dir);
    copyFileSync(NODE_1, join(dir, 'iptables.save'));
    const { code, out } = await kubeDrift(['--cluster', CLUSTER, dir]);
    expect(code).toBe(0);
    expect(out.split('\n')[0]).toBe('node-1: in sync (9 endpoints across 5 services)');
  });

  it('exits 1 when a node drifts, linking it to the lint finding', async () => {
    const { code, out, err } = await kubeDrift(['--cluster', clusterWithoutEndpoint(), `node-1=${WT0}`]);
    // The parser says where it took table filter from, as a warning.
    expect(err).toMatch(/iptables\.save:1:1: warning: iptables-nft-save could not list table "filter"/);
    expect(err).not.toMatch(/error/);
    expect(code).toBe(1);
    expect(out.split('\n')[0]).toMatch(/^node-1: 1 stale endpoint across 1 service; .*; kube-proxy has probably not synced — see iptables-nft-incompatible finding at .*ruleset\.nft:17$/);
    expect(out).toMatch(/^ {2}default\/web:http\/tcp: stale 10\.128\.1\.6:8080 \(DNAT at .*iptables\.save:\d+\)/m);
  });

  it('prints the issue\'s JSON shape with --format json', async () => {
    const { code, out } = await kubeDrift(['--cluster', clusterWithoutEndpoint(), '--format', 'json', `node-1=${NODE_1}`]);
    expect(code).toBe(1);
    const json = JSON.parse(out) as { nodes: Record<string, unknown>[] };
    expect(Object.keys(json)).toEqual(['nodes']);
    const [node] = json.nodes;
    expect(node).toMatchObject({ node: 'node-1', verdict: 'node-1: 1 stale endpoint across 1 service', summary: { services: 5, endpointsExpected: 8, missing: 0, stale: 1, wrongShare: 0 } });
    expect(node!.services).toMatchObject([{ namespace: 'default', name: 'web', port: 80, protocol: 'tcp', missing: [], stale: ['10.128.1.6:8080'], wrongShare: [], explainedBy: [] }]);
  });

  it('checks several nodes against several cluster files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kdrift-'));
    const list = clusterList();
    const nodes = { apiVersion: 'v1', kind: 'List', items: list.items.filter((o) => o.kind === 'Node') };
    const rest = { apiVersion: 'v1', kind: 'List', items: list.items.filter((o) => o.kind !== 'Node') };
    writeFileSync(join(dir, 'nodes.json'), JSON.stringify(nodes));
    writeFileSync(join(dir, 'services.json'), JSON.stringify(rest));
    const { code, out } = await kubeDrift(['--cluster', join(dir, 'services.json'), '--cluster', join(dir, 'nodes.json'), `node-1=${NODE_1}`, `node-2=${NODE_1}`]);
    expect(code).toBe(1);
    expect(out).toMatch(/^node-1: in sync/m);
    // node-1's rules on node-2: its Local service sends outside traffic to node-1's endpoint.
    expect(out).toMatch(/^node-2: 1 of 9 endpoints missing across 1 service; 1 endpoint with a wrong share across 1 service$/m);
    expect(out).toMatch(/^summary: 2 nodes \(1 in sync, 1 drifting\)/m);
  });

  it.each([
    [[NODE_1], /give the cluster with --cluster FILE/],
    [['--cluster', '/nonexistent/cluster.json', NODE_1], /cannot read '\/nonexistent\/cluster\.json'/],
    [['--cluster', CLUSTER, '/nonexistent/node'], /cannot read '\/nonexistent\/node'/],
    [['--cluster', CLUSTER, `a=${NODE_1}`, `a=${NODE_1}`], /two snapshots are named 'a'/],
    [['--cluster', CLUSTER, '--iptables-version', 'new', NODE_1], /--iptables-version expects/],
  ])('exits 2 on bad input %#', async (args, message) => {
    const { code, err } = await kubeDrift(args);
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err).not.toMatch(/\n\s+at /);
  });

  it('exits 2 with file:line:col and a caret for a cluster file that is not JSON', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kdrift-')), 'cluster.json');
    writeFileSync(file, '{\n  "kind": "List",\n  "items": [ oops ]\n}\n');
    const { code, err, out } = await kubeDrift(['--cluster', file, NODE_1]);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:3:\\d+: error: `));
    expect(err).toContain('^');
  });

  it('exits 2 with file:line:col and a caret for a snapshot that does not parse', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kdrift-')), 'bad.nft');
    writeFileSync(file, 'table ip t {\n  chain c {\n    bogus rule\n  }\n}\n');
    const { code, err } = await kubeDrift(['--cluster', CLUSTER, file]);
    expect(code).toBe(2);
    expect(err).toMatch(/bad\.nft:3:\d+: error: /);
    expect(err).toContain('^');
  });

  it('exits 0 and says so when a node has no kube-proxy rules (not checked)', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kdrift-')), 'cilium.save');
    writeFileSync(file, '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:CILIUM_FORWARD - [0:0]\n-A FORWARD -j CILIUM_FORWARD\nCOMMIT\n');
    const { code, out } = await kubeDrift(['--cluster', CLUSTER, `node-1=${file}`]);
    expect(code).toBe(0);
    expect(out).toMatch(/^node-1: not checked — kube-proxy replacement \(eBPF\)/);
    expect(out).toMatch(/^summary: 1 node \(0 in sync, 0 drifting, 1 not checked\)/m);
  });
});
