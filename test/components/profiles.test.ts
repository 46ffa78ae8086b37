import { describe, expect, it } from 'vitest';
import { listProfiles, loadProfile } from '../../src/components/apply-profile.js';
import { renderVersion, resolveParameters } from '../../src/components/render-profile.js';
import { parseNode } from '../../src/parser/parse-ruleset.js';

// Values for every parameter a shipped profile may need, so each line of each template renders.
const SAMPLE: Readonly<Record<string, string>> = {
  address: '100.64.1.1/16',
  routes: '10.20.1.0/24,10.30.0.0/16',
  'inbound-ports': '22,30000-30010',
  'service-cidr': '10.96.0.0/12',
  'pod-cidr': '10.244.0.0/16',
};

const { profiles, diagnostics: listed } = listProfiles();

describe('shipped component profiles', () => {
  it('load without problems', () => {
    expect(listed).toEqual([]);
    expect(profiles.map((p) => p.name).sort()).toEqual(expect.arrayContaining(['kube-proxy-iptables', 'kube-proxy-nftables', 'netbird']));
  });

  const cases = profiles.flatMap((p) => p.versions.map((v) => [`${p.name} ${v.range.text}`, p, v] as const));
  it.each(cases)('%s renders and parses with no error, with and without the list parameters', (_name, profile, version) => {
    for (const given of [SAMPLE, { address: SAMPLE.address! }]) {
      const params = Object.fromEntries(Object.entries(given).filter(([k]) => profile.parameters.some((p) => p.name === k)));
      const { values, diagnostics } = resolveParameters(profile, params);
      expect(diagnostics).toEqual([]);
      const rendered = renderVersion(profile, version, values!);
      expect(rendered.diagnostics).toEqual([]);
      // The insertions need the chains they go into: an iptables-nft filter table.
      const base = { file: 'base.ipt', text: '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n' };
      const parsed = parseNode([base, ...rendered.sources]);
      expect(parsed.diagnostics.filter((d) => d.severity !== 'info')).toEqual([]);
      expect(version.facts.length).toBeGreaterThan(0);
    }
  });
});

describe('loadProfile', () => {
  it.each([
    ['netbird@0.29', '<=0.29'],
    ['netbird@0.24.4', '<=0.29'],
    ['netbird@0.30', '0.30.0'],
    ['netbird@0.30.1', '0.30.1-0.31.0'],
    ['netbird@0.31', '0.30.1-0.31.0'],
    ['netbird@0.31.1', '0.31.1-0.39'],
    ['netbird@0.39.9', '0.31.1-0.39'],
    ['netbird@0.40', '0.40-0.59.11'],
    ['netbird@0.59.12', '>=0.59.12'],
    ['netbird@0.77.1', '>=0.59.12'],
  ])('%s picks the version entry %s', (ref, range) => {
    const { version, diagnostics } = loadProfile(ref);
    expect(diagnostics).toEqual([]);
    expect(version?.range.text).toBe(range);
  });

  it.each([
    ['nosuch@1.0', /no component profile named 'nosuch' \(known: .*netbird/],
    ['netbird', /give a version: netbird@<version> \(e\.g\. netbird@0\.59\)/],
    ['netbird@latest', /give a version/],
  ])('%s is an error that says what is known', (ref, message) => {
    const { diagnostics } = loadProfile(ref);
    expect(diagnostics).toHaveLength(1);
    expect(diagnostics[0]!.message).toMatch(message);
  });
});

describe('componentsFromProfiles', () => {
  it('gives the linter each profile\'s tables, prefixes and mark bits of every version', async () => {
    const { componentsFromProfiles } = await import('../../src/components/components-from-profiles.js');
    const { components, diagnostics } = componentsFromProfiles();
    expect(diagnostics).toEqual([]);
    const netbird = components.find((c) => c.name === 'netbird')!;
    expect(netbird.tables).toEqual(['netbird']);
    expect(netbird.chainPrefixes).toEqual(['netbird-', 'NETBIRD-']);
    expect(netbird.bits.map((b) => b.mask)).toEqual(expect.arrayContaining([0x7e4, 0x1bd00, 0x1bd01, 0x1bd20, 0x1bd21, 0x1bd22]));
    const kubeProxy = components.find((c) => c.name === 'kube-proxy' && c.chainPrefixes.includes('KUBE-'))!;
    expect(kubeProxy).toMatchObject({ chainPrefixes: ['KUBE-'], commentPrefixes: ['kubernetes '], bits: [{ mask: 0x4000, meaning: 'masquerade me' }] });
  });
});

describe('the user-defined profile example of docs/components.md', () => {
  it('reads, renders and applies with no error', async () => {
    const { readFileSync } = await import('node:fs');
    const { readProfile } = await import('../../src/components/profile.js');
    const docs = readFileSync(new URL('../../docs/components.md', import.meta.url), 'utf8');
    const example = /```yaml\n(name: tailscale[\s\S]*?)```/.exec(docs)?.[1];
    expect(example).toBeDefined();
    const { profile, diagnostics } = readProfile(example!, 'docs/components.md');
    expect(diagnostics).toEqual([]);
    const { values } = resolveParameters(profile!, {});
    const rendered = renderVersion(profile!, profile!.versions[0]!, values!);
    const parsed = parseNode(rendered.sources);
    expect(parsed.diagnostics.filter((d) => d.severity !== 'info')).toEqual([]);
    const forward = parsed.ruleset.tables.find((t) => t.name === 'filter')!.chains.find((c) => c.name === 'FORWARD')!;
    expect(forward.rules).toHaveLength(1);
  });
});
