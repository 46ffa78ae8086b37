// nftsim diff leaves out the probes that cannot meet a change (reach-changes.ts) and those whose
// BEFORE run met nothing that changed: it must report exactly the changed flows that simulating
// every probe on both sides reports. Checked on the kernel-differential generator's rulesets
// (nft tables and iptables dumps, every modelled feature), each against itself with one rule taken
// out or one base chain's policy turned over.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffSnapshots, type DiffResult } from '../../src/diff/diff-snapshots.js';
import type { Snapshot } from '../../src/snapshot/snapshot.js';
import type { HostInput } from '../../src/sim/host.js';
import { arbitraryCase, renderCase } from '../kernel/differential-arbitraries.js';
import { GENERATED_HOST } from '../kernel/generated-host.js';

type Source = Snapshot['sources'][number];

/** The rule lines of a rendered source: those of nft chain bodies, or an iptables dump's `-A`. */
function ruleLines(source: Source): number[] {
  const lines = source.text.split('\n');
  const out: number[] = [];
  let inChain = false;
  lines.forEach((line, i) => {
    if (source.format === 'iptables') {
      if (line.startsWith('-A ')) out.push(i);
      return;
    }
    if (/^ {2}chain /.test(line)) inChain = true;
    else if (/^ {2}\}/.test(line)) inChain = false;
    else if (inChain && line.startsWith('    ') && !line.trimStart().startsWith('type ')) out.push(i);
  });
  return out;
}

/** The base chains' policy lines: nft's `policy accept;` and iptables' `:CHAIN ACCEPT`. */
function policyLines(source: Source): number[] {
  return source.text.split('\n').flatMap((line, i) => (/policy (accept|drop);|^:[A-Z]+ (ACCEPT|DROP) /.test(line) ? [i] : []));
}

/** An edit of one line: its new text, or undefined to take it out. */
const EDITS: Readonly<Record<'remove' | 'flip', (line: string) => string | undefined>> = {
  remove: () => undefined,
  flip: (line) => line.replace(/policy accept;|policy drop;| ACCEPT | DROP /, (p) => ({ 'policy accept;': 'policy drop;', 'policy drop;': 'policy accept;', ' ACCEPT ': ' DROP ', ' DROP ': ' ACCEPT ' })[p]!),
};

function edited(source: Source, line: number, edit: 'remove' | 'flip'): Source {
  const lines = source.text.split('\n');
  const replacement = EDITS[edit](lines[line]!);
  if (replacement === undefined) lines.splice(line, 1);
  else lines[line] = replacement;
  return { ...source, text: lines.join('\n') };
}

const flows = (d: DiffResult): string[] => d.changedFlows.map((f) => `${JSON.stringify(f.probe)} ${f.level} ${f.class}`).sort();

describe('nftsim diff pruning', () => {
  // Found by the property below: the only conntrack user of the node, in a chain nothing jumps
  // to, still switches conntrack on, and with it the nat chains of every packet.
  it('sees a change of what switches conntrack on, even in a chain no packet reaches', () => {
    const dump = (withUser: boolean): Source => ({
      file: 'ipt.save',
      format: 'iptables',
      text: `*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:X - [0:0]\n${withUser ? '-A X -j CONNMARK --restore-mark\n' : ''}COMMIT\n`,
    });
    const host = GENERATED_HOST as HostInput;
    const before: Snapshot = { label: 'before', sources: [dump(true)], host };
    const after: Snapshot = { label: 'after', sources: [dump(false)], host };
    const pruned = diffSnapshots(before, after).diff!;
    expect(pruned.changedFlows.length).toBeGreaterThan(0);
    expect(flows(pruned)).toEqual(flows(diffSnapshots(before, after, { exhaustive: true }).diff!));
  });

  it('reports the changed flows that simulating every probe on both sides reports', () => {
    let compared = 0;
    let changed = 0;
    fc.assert(
      fc.property(arbitraryCase, fc.nat(), (testCase, pick) => {
        const sources: Source[] = renderCase(testCase).rulesets.map((r) => ({ text: r.text, file: r.file, format: r.kind === 'nft' ? 'nft' : 'iptables' }));
        const candidates = sources.flatMap((s, i) => [...ruleLines(s).map((line) => [i, line, 'remove'] as const), ...policyLines(s).map((line) => [i, line, 'flip'] as const)]);
        if (candidates.length === 0) return;
        const [which, line, edit] = candidates[pick % candidates.length]!;
        const host = GENERATED_HOST as HostInput;
        const before: Snapshot = { label: 'before', sources, host };
        const after: Snapshot = { label: 'after', sources: sources.map((s, i) => (i === which ? edited(s, line, edit) : s)), host };
        const pruned = diffSnapshots(before, after);
        const exhaustive = diffSnapshots(before, after, { exhaustive: true });
        expect(pruned.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
        const all = flows(exhaustive.diff!);
        expect(flows(pruned.diff!)).toEqual(all);
        compared++;
        if (all.length > 0) changed++;
      }),
      { numRuns: 150 },
    );
    // The property says something only where taking a rule out changed flows.
    expect(changed, `${changed} of ${compared} cases changed flows`).toBeGreaterThan(compared / 10);
  });
});
