import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { applyProfile } from '../../src/components/apply-profile.js';
import { parseNode, type NodeSource } from '../../src/parser/parse-ruleset.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import type { HostInput } from '../../src/sim/host.js';

// The diff cases built with agent profiles (corpus/diff/netbird-*): `after/` must be what
// `apply` renders on `before`, and the flows their READMEs describe must do what they say when
// simulated on both sides. (The diff's own expected output is checked with the diff.)

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DIFF = path.join(projectRoot, 'corpus/diff');

interface Case {
  readonly before: readonly string[];
  readonly after: readonly string[];
  readonly apply: { readonly ref: string; readonly set: Readonly<Record<string, string>> };
}

function load(name: string): { dir: string; c: Case; host: HostInput; sources: (files: readonly string[]) => NodeSource[] } {
  const dir = path.join(DIFF, name);
  const c = JSON.parse(readFileSync(path.join(dir, 'case.json'), 'utf8')) as Case;
  const hostFile = c.before.find((f) => f.endsWith('host.yaml'))!;
  const host = parseYaml(readFileSync(path.join(dir, hostFile), 'utf8')) as HostInput;
  const sources = (files: readonly string[]) =>
    files.filter((f) => !f.endsWith('host.yaml')).map((file) => ({ file, text: readFileSync(path.join(dir, file), 'utf8') }));
  return { dir, c, host, sources };
}

const CASES = ['netbird-0.40-apply-nodeport', 'netbird-0.30-apply-forward', 'netbird-0.30.1-to-0.31.1-noop'];

describe.each(CASES)('corpus/diff/%s', (name) => {
  const { c, host, sources } = load(name);
  const before = sources(c.before);
  const applied = applyProfile({ label: 'before', sources: before }, c.apply.ref, c.apply.set);

  it('after/ is what the profile renders on before/', () => {
    expect(applied.diagnostics.filter((d) => d.severity !== 'info')).toEqual([]);
    const rendered = applied.snapshot!.sources.slice(before.length);
    const checkedIn = sources(c.after).filter((s) => s.file.startsWith('after/'));
    expect(rendered.map((s) => [`after/${s.file}`, s.text])).toEqual(checkedIn.map((s) => [s.file, s.text]));
  });

  it('the applied snapshot and the after/ file list simulate alike', () => {
    const fromApply = parseNode(applied.snapshot!.sources).ruleset;
    const fromFiles = parseNode(sources(c.after)).ruleset;
    const probe = { host, packet: { iif: 'wt0', src: '100.64.2.2', dst: '192.0.2.10', protocol: 'tcp', sport: 41000, dport: 30080, tcpFlags: 'syn', ct: { state: 'new' as const } } };
    const fate = (r: typeof fromApply) => simulatePacket(r, probe).outcomes.map((o) => [o.disposition, o.nat.map((n) => n.type)]);
    expect(fate(fromApply)).toEqual(fate(fromFiles));
  });
});

describe('what the cases show, by simulation of the wt0 → NodePort probe', () => {
  const probe = (host: HostInput) => ({ host, packet: { iif: 'wt0', src: '100.64.2.2', dst: '192.0.2.10', protocol: 'tcp', sport: 41000, dport: 30080, tcpFlags: 'syn', ct: { state: 'new' as const } } });
  const outcomes = (name: string, side: 'before' | 'after') => {
    const { c, host, sources } = load(name);
    const { ruleset } = parseNode(sources(side === 'before' ? c.before : c.after));
    return simulatePacket(ruleset, probe(host)).outcomes;
  };

  it('netbird@0.40: masqueraded before, not after (the platform rule cleared 0x4000)', () => {
    const before = outcomes('netbird-0.40-apply-nodeport', 'before');
    const after = outcomes('netbird-0.40-apply-nodeport', 'after');
    expect(before.length).toBeGreaterThan(0);
    for (const o of before) expect(o.nat.map((n) => n.type)).toContain('masquerade');
    for (const o of after) {
      expect(o.disposition).toBe(before[0]!.disposition);
      expect(o.nat.map((n) => n.type)).not.toContain('masquerade');
    }
  });

  it('netbird@0.30: NodePort traffic from wt0 its route ACL does not cover is dropped after', () => {
    const before = outcomes('netbird-0.30-apply-forward', 'before');
    const after = outcomes('netbird-0.30-apply-forward', 'after');
    expect(before.length * after.length).toBeGreaterThan(0);
    for (const o of before) expect(o.verdict).toBe('accept');
    for (const o of after) expect(o.verdict).toBe('drop');
  });

  it('0.30.1 → 0.31.1 without routes: the same fate on both sides', () => {
    const fate = (side: 'before' | 'after') => outcomes('netbird-0.30.1-to-0.31.1-noop', side).map((o) => [o.verdict, o.nat.map((n) => n.type), o.oif]);
    expect(fate('before').length).toBeGreaterThan(0);
    expect(fate('after')).toEqual(fate('before'));
  });
});
