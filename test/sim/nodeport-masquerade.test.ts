import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import { main } from '../../src/cli/main.js';

// The incident of DESIGN.md on the bundled example node: kube-proxy's 0x4000 cleared in mangle
// POSTROUTING because Netbird's 0x1bd20 has bit 0x20, so KUBE-POSTROUTING returns before
// MASQUERADE.
const ROOT = resolve(import.meta.dirname, '../..');
const EXAMPLE = join(ROOT, 'corpus/examples/nodeport-masquerade');
const scenario = parseYaml(readFileSync(join(EXAMPLE, 'scenario.yaml'), 'utf8'));
const { ruleset } = parseRuleset(
  ['node.nft', 'node.ipt'].map((file) => ({ text: readFileSync(join(EXAMPLE, file), 'utf8'), file })),
);
const syn = scenario.flows[0].packets[0];
const packet = syn.packet;

describe('NodePort masquerade incident (corpus/examples/nodeport-masquerade)', () => {
  const { outcomes, errors } = simulatePacket(ruleset, { host: scenario.host, packet });

  it('shows both endpoints with probability 0.5 each, DNAT to each, no masquerade', () => {
    expect(errors).toBeUndefined();
    expect(outcomes.map((o) => [o.probability, o.disposition, o.oif, o.nat.map((n) => `${n.type} ${n.to}`)])).toEqual([
      [0.5, 'forwarded', 'cni0', ['dnat 10.244.1.10:8080']],
      [0.5, 'forwarded', 'cni0', ['dnat 10.244.2.11:8080']],
    ]);
    for (const o of outcomes) {
      expect(o.packet).toEqual({ src: '100.64.2.2', dst: o.nat[0]!.to.split(':')[0], protocol: 'tcp', sport: 41000, dport: 8080 });
      expect(o.mark).toBe('0x0001bd20');
      expect(o.ctMark).toBe('0x0001bd10');
      expect(o.uncertain).toBe(false);
    }
  });

  it('passes KUBE-SERVICES → KUBE-NODEPORTS → KUBE-EXT → KUBE-MARK-MASQ → KUBE-SVC → KUBE-SEP', () => {
    for (const o of outcomes) {
      const jumps = o.trace.filter((e) => e.table === 'nat' && e.hook === 'prerouting' && e.kind === 'rule').map((e) => e.verdict.replace(/-[A-Z0-9]{16}$/, ''));
      expect(jumps).toEqual(['jump KUBE-SERVICES', 'jump KUBE-NODEPORTS', 'jump KUBE-EXT', 'jump KUBE-MARK-MASQ', 'continue', 'jump KUBE-SVC', expect.stringMatching(/^(jump KUBE-SEP|continue)/), ...(jumps.length === 8 ? ['accept'] : ['jump KUBE-SEP', 'accept'])]);
    }
  });

  it('shows 0x4000 set in prerouting, then cleared by the platform rule in mangle POSTROUTING, and KUBE-POSTROUTING returning', () => {
    const o = outcomes[0]!;
    const set = o.trace.find((e) => e.chain === 'KUBE-MARK-MASQ' && e.kind === 'rule')!;
    expect(set).toMatchObject({ hook: 'prerouting', mark: '0x0001fd20', at: { file: 'node.ipt', line: 42 } });
    const cleared = o.trace.find((e) => e.table === 'mangle' && e.chain === 'POSTROUTING' && e.kind === 'rule')!;
    expect(cleared).toMatchObject({ hook: 'postrouting', mark: '0x0001bd20', at: { file: 'node.ipt', line: 8 }, orderDependent: true });
    expect(o.trace.find((e) => e.chain === 'KUBE-POSTROUTING')).toMatchObject({ kind: 'rule', verdict: 'return', at: { file: 'node.ipt', line: 44 } });
  });

  it('passes its own scenario expectations through `nftsim run` (exit 0), with a PASS line', async () => {
    let out = '';
    const code = await main(['node', 'nftsim', 'run', join(EXAMPLE, 'scenario.yaml'), join(EXAMPLE, 'node.nft'), join(EXAMPLE, 'node.ipt')], { out: (t) => (out += t), err: () => {} });
    expect(code).toBe(0);
    expect(out).toBe([
      'PASS NodePort connection from a Netbird peer / SYN (broken, no masquerade)',
      'PASS NodePort connection from a Netbird peer / the endpoint answers (SYN/ACK)',
      "PASS NodePort connection from a Netbird peer / the peer's ACK",
      '',
    ].join('\n'));
  });

  it('fails the expectation of a healthy node (masquerade) with exit 1', () => {
    const healthy = { host: scenario.host, packets: [{ ...syn, expect: { nat: ['dnat', 'masquerade'] } }] };
    const result = spawnSync(process.execPath, [join(ROOT, 'bin/nftsim.js'), 'run', '-', join(EXAMPLE, 'node.nft'), join(EXAMPLE, 'node.ipt')], { input: JSON.stringify(healthy), encoding: 'utf8' });
    if (result.status === 2 && /Cannot find module|ERR_MODULE_NOT_FOUND/.test(result.stderr)) throw new Error('dist/ is not built: run npm run build');
    expect(result.status).toBe(1);
    expect(result.stdout).toContain('FAIL SYN (broken, no masquerade)');
    expect(result.stdout).toContain('outcome 1: nat: expected [dnat, masquerade], got [dnat]');
  });
});
