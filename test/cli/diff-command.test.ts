import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { expectedDiffText } from '../diff/corpus-cases.js';

const ROOT = resolve(import.meta.dirname, '../..');
const EXAMPLE = join(ROOT, 'corpus/examples/nodeport-masquerade');
const CASE = join(ROOT, 'corpus/diff/nodeport-masquerade-lost');
const BEFORE = [join(EXAMPLE, 'kube-proxy.ipt'), join(CASE, 'host.yaml')].join(',');
const AFTER = [join(EXAMPLE, 'node.nft'), join(EXAMPLE, 'node.ipt'), join(CASE, 'host.yaml')].join(',');

async function diff(args: string[]) {
  let out = '';
  let err = '';
  const code = await main(['node', 'nftsim', 'diff', ...args], { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

describe('nftsim diff', () => {
  it('reports the NodePort incident as masquerade lost from wt0 with both deciding rules, exit 1', async () => {
    const { code, out, err } = await diff([BEFORE, AFTER, '--probes-report']);
    expect(err).toBe('');
    expect(code).toBe(1);
    expect(out).toMatch(/masquerade lost: \d+ flows? from wt0 to 192\.0\.2\.10 tcp ports? [^,]*30080/);
    expect(out).toContain('POSTROUTING rule at');
    expect(out).toMatch(/kube-proxy\.ipt:31/);
    expect(out).toMatch(/node\.ipt:8/);
    expect(out).toMatch(/rule-match/);
  });

  it('gives the issue\'s JSON shape with --format json', async () => {
    const { code, out } = await diff([BEFORE, AFTER, '--format', 'json']);
    expect(code).toBe(1);
    const json = JSON.parse(out) as Record<string, unknown>;
    expect(Object.keys(json).sort()).toEqual(['changedFlows', 'findings', 'probes', 'structural']);
    const flows = json.changedFlows as { probe: { iif?: string }; class: string; before: { outcomes: unknown[] }; after: { outcomes: unknown[] } }[];
    expect(flows.length).toBeGreaterThan(0);
    expect(flows[0]).toHaveProperty('before.outcomes');
    expect((json.findings as { new: unknown[] }).new.length).toBeGreaterThan(0);
    expect((json.probes as { count: number }).count).toBeGreaterThan(0);
  });

  it('reports the same changed flows with --exhaustive, every probe simulated on both sides', async () => {
    const changed = (out: string) => (JSON.parse(out) as { changedFlows: unknown[] }).changedFlows;
    const pruned = await diff([BEFORE, AFTER, '--format', 'json']);
    const all = await diff([BEFORE, AFTER, '--format', 'json', '--exhaustive']);
    expect(all.code).toBe(1);
    expect(changed(all.out)).toEqual(changed(pruned.out));
    const probes = (out: string) => (JSON.parse(out) as { probes: { unreached: number; reused: number } }).probes;
    expect(probes(pruned.out).unreached + probes(pruned.out).reused).toBeGreaterThan(0);
    expect(probes(all.out)).toMatchObject({ unreached: 0, reused: 0 });
  });

  it('exits 0 and reports nothing when both sides are the same snapshot', async () => {
    const { code, out } = await diff([AFTER, AFTER]);
    expect(code).toBe(0);
    expect(out).toContain('changed flows: 0');
    expect(out).toContain('lint findings: 0 new, 0 resolved');
    expect(out).toContain('structural changes: 0');
  });

  it.each([
    [['only-one'], /give the AFTER snapshot/],
    [['/nonexistent/x.nft', '/nonexistent/y.nft'], /cannot read/],
    [[BEFORE, AFTER, '--max-probes', '0'], /--max-probes expects/],
    [['--before', BEFORE, AFTER, AFTER], /give one AFTER snapshot after it/],
  ])('exits 2 on bad input %#', async (args, message) => {
    const { code, err } = await diff(args);
    expect(code).toBe(2);
    expect(err).toMatch(message);
  });

  it('names file:line:col for a ruleset syntax error', async () => {
    const bad = join(mkdtempSync(join(tmpdir(), 'nftsim-diff-')), 'bad.nft');
    writeFileSync(bad, 'table ip t {\n\tchain c {\n\t\tbogus stuff here\n\t}\n}\n');
    const { code, err } = await diff([bad, AFTER]);
    expect(code).toBe(2);
    expect(err).toMatch(/bad\.nft:\d+:\d+: error/);
  });
});

describe('nftsim diff --apply', () => {
  // corpus/diff/netbird-0.40-apply-nodeport, through the command line.
  const APPLIED = join(ROOT, 'corpus/diff/netbird-0.40-apply-nodeport');
  const SNAPSHOT = [join(EXAMPLE, 'kube-proxy.ipt'), join(CASE, 'host.yaml')].join(',');
  const SET = ['--set', 'wt0=100.64.1.1/16', '--set', 'routes=10.244.0.0/16', '--set', 'inbound-ports=30080'];

  it('reports NodePort traffic from wt0 losing masquerade after netbird@0.40, with both deciding rules, exit 1', async () => {
    const { code, out, err } = await diff(['--before', SNAPSHOT, '--apply', 'netbird@0.40', ...SET]);
    expect(err).toBe('');
    expect(code).toBe(1);
    expect(out).toMatch(/masquerade lost: \d+ flows? from wt0 to 192\.0\.2\.10 tcp ports? 30080, decided by nat KUBE-POSTROUTING rule at \S*kube-proxy\.ipt:31 \(before\) and mangle POSTROUTING rule at \S*kube-proxy\.ipt:7 \(after\)/);
    expect(out).toMatch(/\+ netbird@0\.40-0\.59\.11-insert\.nft:2:\d+: error iptables-nft-incompatible/);
  });

  it('prints with --format json what the corpus case expects (expected-diff.json, paths made relative)', async () => {
    const { code, out } = await diff(['--before', SNAPSHOT, '--apply', 'netbird@0.40', ...SET, '--format', 'json']);
    expect(code).toBe(1);
    const relative = out.replaceAll(`${join(ROOT, 'corpus/examples')}/`, '../../examples/');
    expect(expectedDiffText(JSON.parse(relative))).toBe(readFileSync(join(APPLIED, 'expected-diff.json'), 'utf8'));
  });

  it.each([
    ['a missing parameter', ['--apply', 'netbird@0.40'], /netbird needs address: .*--set address=100\.64\.1\.1\/16/],
    ['a malformed parameter', ['--apply', 'netbird@0.40', '--set', 'address=300.1.1.1/16'], /address='300\.1\.1\.1\/16' .*--set address=/],
    ['a --set without =', ['--apply', 'netbird@0.40', '--set', 'wt0'], /--set expects NAME=VALUE, got 'wt0'/],
    ['an unknown profile', ['--apply', 'nosuch@1'], /no component profile named 'nosuch'/],
    ['an AFTER snapshot beside --apply', [AFTER, '--apply', 'netbird@0.40', ...SET], /--apply makes the AFTER side/],
  ])('exits 2 on %s, naming it', async (_name, args, message) => {
    const { code, out, err } = await diff(['--before', SNAPSHOT, ...args]);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(message);
  });
});
