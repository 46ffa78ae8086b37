import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { deriveProbes } from '../../src/diff/derive-probes.js';
import { diffSnapshots, type DiffResult } from '../../src/diff/diff-snapshots.js';
import { compressRanges } from '../../src/diff/format-diff-text.js';
import { indexRules, isSameChain } from '../../src/diff/rule-keys.js';
import { readHost } from '../../src/sim/host.js';
import type { Snapshot } from '../../src/snapshot/snapshot.js';
import { loadDiffCase } from './corpus-cases.js';

const HOST = readHost([{ value: { interfaces: [{ name: 'eth0', addresses: ['192.0.2.10/24'] }, { name: 'wt0', addresses: ['100.64.1.1/16'] }], routes: [{ dst: 'default', via: '192.0.2.1', dev: 'eth0' }] }, path: ['host'] }]).host;

describe('deriveProbes', () => {
  it.each([
    ['a NodePort from the interface a rule names', 'table ip t { chain c { type filter hook prerouting priority 0; iifname "wt0" tcp dport 30080 fib daddr type local accept } }', { iif: 'wt0', dst: '192.0.2.10', dport: 30080 }],
    ['the first host of a matched prefix (not its network address)', 'table ip t { chain c { type filter hook forward priority 0; ip daddr 10.244.0.0/16 accept } }', { dst: '10.244.0.1' }],
    ['the last host of a matched prefix (not its broadcast address)', 'table ip t { chain c { type filter hook forward priority 0; ip daddr 10.244.0.0/16 accept } }', { dst: '10.244.255.254' }],
    ['one address outside a matched prefix', 'table ip t { chain c { type filter hook forward priority 0; ip daddr 10.244.0.0/16 accept } }', { dst: '10.245.0.0' }],
    ['one port outside a matched range', 'table ip t { chain c { type filter hook input priority 0; tcp dport 30000-30023 accept } }', { dport: 30024 }],
    ['a matched source, arriving where it routes from', 'table ip t { chain c { type filter hook input priority 0; ip saddr 100.64.2.2 drop } }', { iif: 'wt0', src: '100.64.2.2' }],
    ['a mark a rule tests and another writes, sent locally', 'table ip t { chain c { type filter hook output priority 0; meta mark & 0x20 == 0x20 drop } chain p { type filter hook prerouting priority 0; iifname "wt0" meta mark set 0x1bd20 } }', { mark: 0x20 }],
    ['a service tuple of a verdict map, and its chain\'s source rule in that context', 'table ip t { map m { type ipv4_addr . inet_proto . inet_service : verdict; elements = { 10.96.0.1 . tcp . 443 : goto svc } } chain svc { ip saddr 10.244.1.5 counter } chain c { type nat hook prerouting priority -100; ip daddr . meta l4proto . th dport vmap @m } }', { dst: '10.96.0.1', dport: 443 }],
  ])('derives %s', (_name, text, wanted) => {
    const { ruleset, diagnostics } = parseRuleset(text, { file: 't.nft' });
    expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const { probes } = deriveProbes([ruleset], HOST);
    expect(probes.map((p) => p.packet)).toContainEqual(expect.objectContaining(wanted));
  });

  it('derives no probe for a mark value no rule writes (no packet of the node carries it)', () => {
    const { ruleset } = parseRuleset('table ip t { chain c { type nat hook postrouting priority 100; meta mark 0x1bd11 masquerade; meta mark set meta mark & 0xffffbfff } }', { file: 't.nft' });
    expect(deriveProbes([ruleset], HOST).probes.filter((p) => p.reason === 'mark')).toEqual([]);
  });

  it('never samples out the probes of a changed chain', () => {
    const rules = (third: number) => Array.from({ length: 300 }, (_, i) => `ip daddr 10.${third}.${i >> 8}.${i & 255} tcp dport 80 accept`).join('\n');
    const { ruleset } = parseRuleset(`table ip t { chain c { type filter hook forward priority 0;\n${rules(96)}\n}\nchain d { type filter hook input priority 0;\n${rules(97)}\n} }`, { file: 't.nft' });
    const { probes, report } = deriveProbes([ruleset], HOST, { maxPerReason: 50, changedChains: new Set(['ip t d']) });
    const fromD = probes.filter((p) => p.reason === 'rule-match' && p.packet.dst.startsWith('10.97.'));
    expect(fromD.length).toBeGreaterThanOrEqual(300);
    expect(report.byReason['rule-match']!.pinned).toBe(fromD.length);
  });

  it('stays bounded: a cap per reason, reported as derived and kept', () => {
    const rules = Array.from({ length: 300 }, (_, i) => `ip daddr 10.96.${i >> 8}.${i & 255} tcp dport 80 accept`).join('\n');
    const { ruleset } = parseRuleset(`table ip t { chain c { type filter hook forward priority 0;\n${rules}\n} }`, { file: 't.nft' });
    const { probes, report } = deriveProbes([ruleset], HOST, { maxPerReason: 50 });
    expect(report.byReason['rule-match']).toEqual({ derived: expect.any(Number), kept: 50 });
    expect(report.byReason['rule-match']!.derived).toBeGreaterThan(300);
    expect(probes.length).toBe(report.count);
  });
});

describe('compressRanges', () => {
  it.each([
    [[30000, 30001, 30002, 30080], '30000–30002, 30080'],
    [[5, 3, 4, 4], '3–5'],
    [[22], '22'],
  ])('%j → %s', (values, text) => expect(compressRanges(values)).toBe(text));
});

describe('properties', () => {
  const { before, after } = loadDiffCase('nodeport-masquerade-lost');
  const summary = (d: DiffResult) => ({
    flows: d.changedFlows.map((f) => JSON.stringify(f.probe)).sort(),
    newFindings: d.findings.new.map((f) => `${f.rule} ${f.message}`).sort(),
    resolved: d.findings.resolved.map((f) => `${f.rule} ${f.message}`).sort(),
  });

  it('a snapshot diffed with itself is empty', () => {
    for (const s of [before, after]) {
      const d = diffSnapshots(s, s).diff!;
      expect(d.changedFlows).toEqual([]);
      expect(d.findings).toEqual({ new: [], resolved: [] });
      expect(d.structural).toEqual([]);
    }
  });

  it('is symmetric: swapping the sides swaps before/after and new/resolved', () => {
    const ab = summary(diffSnapshots(before, after).diff!);
    const ba = summary(diffSnapshots(after, before).diff!);
    expect(ba.flows).toEqual(ab.flows);
    expect(ba.newFindings).toEqual(ab.resolved);
    expect(ba.resolved).toEqual(ab.newFindings);
  });

  it('adding a rule that matches nothing the probes reach changes no flow', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 999 }), fc.integer({ min: 1, max: 65535 }), fc.constantFrom('forward', 'prerouting', 'postrouting', 'input', 'output'), (n, port, hook) => {
        const extra = { file: 'extra.nft', text: `table ip extra {\n\tchain c {\n\t\ttype filter hook ${hook} priority 0; policy accept;\n\t\tiifname "absent${n}" tcp dport ${port} drop\n\t}\n}\n` };
        const widened: Snapshot = { ...after, sources: [...after.sources, extra] };
        expect(diffSnapshots(after, widened).diff!.changedFlows).toEqual([]);
      }),
      { numRuns: 5 },
    );
  });
});

describe('indexRules: a chain is the same on both sides', () => {
  const table = (quota: string, handles: boolean): string =>
    `table ip t {${handles ? ' # handle 3' : ''}\n\tquota q { ${quota} }${handles ? ' # handle 7' : ''}\n\tset s { type ipv4_addr; elements = { 192.0.2.1 } }${handles ? ' # handle 8' : ''}\n\tchain c {${handles ? ' # handle 1' : ''}\n\t\tquota name "q" accept${handles ? ' # handle 9' : ''}\n\t}\n}\n`;
  const chainOf = (text: string) => indexRules(parseRuleset(text, { file: 't.nft' }).ruleset).chains.get('ip t c')!;

  it.each([
    ['a stateful object its rules name changed', table('over 10 mbytes', false), table('over 20 mbytes', false), false],
    ['only the handles differ', table('over 10 mbytes', false), table('over 10 mbytes', true), true],
    ['a set declaration changed', table('over 10 mbytes', false), table('over 10 mbytes', false).replace('type ipv4_addr;', 'type ipv4_addr; flags interval;'), false],
  ])('%s', (_name, a, b, same) => {
    expect(isSameChain(chainOf(a), chainOf(b))).toBe(same);
  });
});

describe('ipsets between two snapshots', () => {
  const dump = { text: '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A INPUT -m set --match-set blocked src -j DROP\nCOMMIT\n', file: 'iptables.save' };
  const snapshot = (label: string, elements: readonly string[]): Snapshot => ({
    label,
    sources: [dump, { text: `create blocked hash:ip family inet\n${elements.map((e) => `add blocked ${e}\n`).join('')}`, file: 'node.ipset' }],
    host: { interfaces: [{ name: 'eth0', addresses: ['192.0.2.10/24'] }], routes: [{ dst: 'default', via: '192.0.2.1', dev: 'eth0' }] },
  });

  it('the same elements in another order change nothing', () => {
    const d = diffSnapshots(snapshot('before', ['192.0.2.7', '192.0.2.8']), snapshot('after', ['192.0.2.8', '192.0.2.7'])).diff!;
    expect(d.structural).toEqual([]);
  });

  it('derives probes from the elements, so a flow a set now drops is a changed flow', () => {
    const d = diffSnapshots(snapshot('before', ['192.0.2.7']), snapshot('after', ['192.0.2.7', '192.0.2.8'])).diff!;
    expect(d.changedFlows.map((f) => [f.probe.src, f.before.outcomes[0]!.disposition, f.after.outcomes[0]!.disposition])).toContainEqual(['192.0.2.8', 'delivered', 'dropped']);
  });

  it('says which elements a set gained and lost, and the chains naming it are no longer taken as unchanged', () => {
    const [before, after] = [snapshot('before', ['192.0.2.7']), snapshot('after', ['192.0.2.8'])];
    const d = diffSnapshots(before, after).diff!;
    expect(d.structural).toEqual([{ kind: 'ipset-changed', level: 'warning', message: 'ipset blocked: added 192.0.2.8; removed 192.0.2.7' }]);
    const rulesets = [before, after].map((s) => parseRuleset(s.sources).ruleset);
    const [b, a] = [indexRules(rulesets[0]!), indexRules(rulesets[1]!)];
    expect(isSameChain(b.chains.get('ip filter INPUT')!, a.chains.get('ip filter INPUT')!)).toBe(false);
  });
});
