import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Ruleset } from '../../src/model/ast.js';
import { applyProfile } from '../../src/components/apply-profile.js';
import { formatRule } from '../../src/model/format-ruleset.js';
import { parseNode, type NodeSource } from '../../src/parser/parse-ruleset.js';
import type { Snapshot } from '../../src/snapshot/snapshot.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLE = path.join(projectRoot, 'corpus/examples/nodeport-masquerade');

function source(name: string): NodeSource {
  return { file: name, text: readFileSync(path.join(EXAMPLE, name), 'utf8') };
}

function snapshotOf(...names: string[]): Snapshot {
  return { label: 'before', sources: names.map(source) };
}

function parsed(snapshot: Snapshot): Ruleset {
  const { ruleset, diagnostics } = parseNode(snapshot.sources);
  expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return ruleset;
}

function chainsOf(ruleset: Ruleset, family: string, table: string): string[] {
  return ruleset.tables.find((t) => t.family === family && t.name === table)?.chains.map((c) => c.name) ?? [];
}

/** A chain's rules as `file text`. */
function rulesOf(ruleset: Ruleset, family: string, table: string, chain: string): string[] {
  const found = ruleset.tables.find((t) => t.family === family && t.name === table)?.chains.find((c) => c.name === chain);
  return found?.rules.map((r) => `${r.span.file} ${formatRule({ ...r, stmts: r.stmts.filter((s) => s.kind !== 'counter') })}`) ?? [];
}

function apply(snapshot: Snapshot, ref: string, params: Record<string, string>): Snapshot {
  const { snapshot: after, diagnostics } = applyProfile(snapshot, ref, params);
  expect(diagnostics.filter((d) => d.severity !== 'info')).toEqual([]);
  expect(after).toBeDefined();
  return after!;
}

const WT0 = { wt0: '100.64.1.1/16' };

describe('applyProfile: Netbird on the NodePort example node', () => {
  const kubeProxyOnly = snapshotOf('kube-proxy.ipt');

  it('netbird@0.40 adds table ip netbird and inserts its native accepts at the top of ip filter FORWARD', () => {
    const after = apply(kubeProxyOnly, 'netbird@0.40', { ...WT0, routes: '10.244.0.0/16', 'inbound-ports': '30080' });
    expect(after.label).toBe('before + netbird@0.40');
    expect(after.sources.map((s) => s.file)).toEqual(['kube-proxy.ipt', 'netbird@0.40-0.59.11.nft', 'netbird@0.40-0.59.11-insert.nft']);
    const ruleset = parsed(after);
    expect(ruleset.tables.map((t) => `${t.family} ${t.name}`)).toEqual(['ip mangle', 'ip nat', 'ip filter', 'ip netbird']);
    expect(chainsOf(ruleset, 'ip', 'netbird')).toEqual([
      'netbird-acl-input-rules', 'netbird-acl-input-filter', 'netbird-acl-forward-filter', 'netbird-rt-fwd',
      'netbird-mangle-prerouting', 'netbird-mangle-postrouting', 'netbird-rt-postrouting',
    ]);
    expect(rulesOf(ruleset, 'ip', 'netbird', 'netbird-mangle-prerouting')).toContain(
      'netbird@0.40-0.59.11.nft iifname "wt0" ip saddr 100.64.0.0/16 tcp dport 30080 fib daddr type local meta mark set 0x0001bd20',
    );
    expect(rulesOf(ruleset, 'ip', 'filter', 'FORWARD')).toEqual([
      'netbird@0.40-0.59.11-insert.nft oifname "wt0" ct state established,related accept',
      'netbird@0.40-0.59.11-insert.nft iifname "wt0" accept',
      'kube-proxy.ipt jump KUBE-FORWARD comment "kubernetes forwarding rules"',
    ]);
  });

  it('netbird@0.29 appends its FORWARD accepts only when it routes a network', () => {
    const without = parsed(apply(kubeProxyOnly, 'netbird@0.29', WT0));
    expect(rulesOf(without, 'ip', 'filter', 'FORWARD')).toHaveLength(1);
    const withRoute = parsed(apply(kubeProxyOnly, 'netbird@0.29', { ...WT0, routes: '10.20.1.0/24' }));
    expect(rulesOf(withRoute, 'ip', 'filter', 'FORWARD').slice(1)).toEqual([
      'netbird@0.29-insert.nft ip saddr 0.0.0.0/0 ip daddr 0.0.0.0/0 accept',
      'netbird@0.29-insert.nft ip saddr 0.0.0.0/0 ip daddr 0.0.0.0/0 accept',
    ]);
  });

  it('netbird@0.59.12 writes its accepts with iptables (iptables-nft rules, at position 1 and 2)', () => {
    const ruleset = parsed(apply(kubeProxyOnly, 'netbird@0.59.12', WT0));
    const forward = ruleset.tables.find((t) => t.name === 'filter')!.chains.find((c) => c.name === 'FORWARD')!;
    expect(forward.rules.map((r) => [r.span.file, r.origin?.format])).toEqual([
      ['netbird@0.59.12-insert.ipt', 'iptables'],
      ['netbird@0.59.12-insert.ipt', 'iptables'],
      ['kube-proxy.ipt', 'iptables'],
    ]);
  });

  it('a node without ip filter gets no FORWARD insertion from netbird@0.30, and is told so', () => {
    const nftOnly: Snapshot = { label: 'b', sources: [{ file: 'n.nft', text: 'table inet filter {\n\tchain forward {\n\t\ttype filter hook forward priority 0; policy drop;\n\t}\n}\n' }] };
    const { snapshot, diagnostics } = applyProfile(nftOnly, 'netbird@0.30', WT0);
    expect(parsed(snapshot!).tables.map((t) => `${t.family} ${t.name}`)).toEqual(['inet filter', 'ip netbird']);
    expect(diagnostics.filter((d) => d.code === 'apply-skipped')).toHaveLength(2);
  });
});

describe('applyProfile: an upgrade replaces what the agent owns', () => {
  // node.nft + node.ipt hold a Netbird 0.40-style table ip netbird already.
  const node = snapshotOf('node.nft', 'node.ipt');

  it('netbird@0.30 over a node with Netbird 0.40 leaves one table ip netbird, 0.30\'s', () => {
    const { snapshot, diagnostics } = applyProfile(node, 'netbird@0.30', WT0);
    expect(diagnostics.find((d) => d.code === 'apply-replaced')?.message).toMatch(/table ip netbird \(node\.nft:\d+\)/);
    const ruleset = parsed(snapshot!);
    expect(ruleset.tables.filter((t) => t.name === 'netbird')).toHaveLength(1);
    expect(chainsOf(ruleset, 'ip', 'netbird')).not.toContain('netbird-mangle-prerouting');
    for (const chain of ruleset.tables.find((t) => t.name === 'netbird')!.chains) {
      for (const rule of chain.rules) expect(rule.span.file).toBe('netbird@0.30.0.nft');
    }
  });

  it('0.30 then 0.40 gives the same rules as 0.40 alone: the 0.30 insertions are recognised by shape, not duplicated', () => {
    const direct = parsed(apply(node, 'netbird@0.40', WT0));
    const viaOld = parsed(apply(apply(node, 'netbird@0.30', WT0), 'netbird@0.40', WT0));
    const texts = (r: Ruleset) => r.tables.map((t) => t.chains.map((c) => `${t.name} ${c.name}: ${rulesOf(r, t.family, t.name, c.name).map((x) => x.split(' ').slice(1).join(' ')).join(' | ')}`));
    expect(texts(viaOld)).toEqual(texts(direct));
    expect(rulesOf(viaOld, 'ip', 'filter', 'FORWARD').filter((r) => r.includes('wt0'))).toHaveLength(2);
  });

  it('applying the same version twice changes nothing', () => {
    const once = apply(node, 'netbird@0.40', WT0);
    const twice = apply(once, 'netbird@0.40', WT0);
    const all = (r: Ruleset) => r.tables.flatMap((t) => t.chains.flatMap((c) => rulesOf(r, t.family, t.name, c.name)));
    expect(all(parsed(twice))).toEqual(all(parsed(once)));
  });

  it('kube-proxy-iptables over kube-proxy keeps the service rules and does not duplicate the skeleton', () => {
    const ruleset = parsed(apply(snapshotOf('kube-proxy.ipt'), 'kube-proxy-iptables@1.30', {}));
    expect(rulesOf(ruleset, 'ip', 'nat', 'KUBE-POSTROUTING')).toHaveLength(3);
    expect(rulesOf(ruleset, 'ip', 'nat', 'PREROUTING')).toHaveLength(1);
    const services = rulesOf(ruleset, 'ip', 'nat', 'KUBE-SERVICES');
    expect(services).toHaveLength(2);
    expect(services[0]).toMatch(/^kube-proxy\.ipt .*10\.96\.12\.34/);
    expect(services[1]).toMatch(/^kube-proxy-iptables@1\.28\.ipt .*jump KUBE-NODEPORTS/);
    expect(rulesOf(ruleset, 'ip', 'filter', 'KUBE-FORWARD')).toHaveLength(3);
    expect(rulesOf(ruleset, 'ip', 'nat', 'KUBE-SVC-7EJNTS7AENER2WX5')).toHaveLength(3);
  });

  it('a JSON listing cannot be edited: the earlier rules stay, with a warning', () => {
    const { diagnostics } = applyProfile(snapshotOf('node.json'), 'netbird@0.40', WT0);
    expect(diagnostics.map((d) => d.code)).toContain('apply-json');
  });
});

describe('applyProfile: parameters', () => {
  const before = snapshotOf('kube-proxy.ipt');
  it.each([
    ['no address', {}, /netbird needs address: .*give --set address=100\.64\.1\.1\/16 \(or --set wt0=100\.64\.1\.1\/16\)/],
    ['a malformed address', { address: '300.1.1.1/16' }, /address='300\.1\.1\.1\/16' is not an IPv4 address with its prefix length/],
    ['an address without its length', { wt0: '100.64.1.1' }, /has no parameter 'wt0' .*INTERFACE=100\.64\.1\.1\/16/],
    ['a bad port list', { ...WT0, 'inbound-ports': '22,70000' }, /inbound-ports='22,70000' is not ports/],
    ['an unknown parameter', { ...WT0, mtu: '1280' }, /has no parameter 'mtu'/],
  ])('%s is an error naming what is needed', (_what, params, message) => {
    const { snapshot, diagnostics } = applyProfile(before, 'netbird@0.40', params);
    expect(snapshot).toBeUndefined();
    expect(diagnostics.every((d) => d.severity === 'error')).toBe(true);
    expect(diagnostics.map((d) => d.message)).toContainEqual(expect.stringMatching(message));
  });

  it('--set IFACE=ADDRESS names the interface too', () => {
    const ruleset = parsed(apply(before, 'netbird@0.40', { nb1: '100.80.0.7/12' }));
    expect(rulesOf(ruleset, 'ip', 'netbird', 'netbird-acl-input-filter')[0]).toBe(
      'netbird@0.40-0.59.11.nft iifname "nb1" ip saddr 100.80.0.0/12 ip daddr 100.80.0.0/12 jump netbird-acl-input-rules',
    );
  });
});
