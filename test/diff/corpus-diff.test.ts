// Every case under corpus/diff: `nftsim diff` of its BEFORE and AFTER sides (AFTER is BEFORE plus
// the agent profile when case.json has `apply`, exactly as `nftsim diff --before … --apply …`
// builds it), compared exactly with the case's expected-diff.json, and the claims in
// case.json's `expect` checked on it. File names are relative to the case directory, so the
// expected files do not depend on where the checkout is.
//
// expected-diff.json is `nftsim diff --format json` with every outcome's `trace` left out (the
// traces are the simulator's; "re-checks every changed flow" below compares the full outcomes,
// traces included, with a fresh simulation). After a deliberate change to what the diff reports,
// regenerate them and review the diff before committing:
//
//     NFTSIM_UPDATE_EXPECTED=1 npx vitest run test/diff/corpus-diff.test.ts && git diff corpus/diff

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffSnapshots } from '../../src/diff/diff-snapshots.js';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import { DIFF_CASES, DIFF_CORPUS, expectedDiffText, loadDiffCase } from './corpus-cases.js';

const UPDATE = process.env.NFTSIM_UPDATE_EXPECTED === '1';

const matches = (probe: object, wanted: Readonly<Record<string, unknown>>): boolean =>
  Object.entries(wanted).every(([k, v]) => (probe as Record<string, unknown>)[k] === v);

describe.each(DIFF_CASES)('corpus/diff/%s', (name) => {
  const { spec, before, after, diagnostics } = loadDiffCase(name);
  const result = diffSnapshots(before, after);
  const diff = result.diff!;
  const expectedFile = join(DIFF_CORPUS, name, 'expected-diff.json');

  it('reads, applies and diffs without errors', () => {
    expect([...diagnostics, ...result.diagnostics].filter((d) => d.severity === 'error')).toEqual([]);
    expect(diff).toBeDefined();
  });

  it('reports exactly expected-diff.json', () => {
    const text = expectedDiffText(diff);
    if (UPDATE) writeFileSync(expectedFile, text);
    expect(existsSync(expectedFile), `${expectedFile} is missing: run NFTSIM_UPDATE_EXPECTED=1 npx vitest run test/diff/corpus-diff.test.ts and review it`).toBe(true);
    expect(text).toBe(readFileSync(expectedFile, 'utf8'));
  });

  it.runIf(spec.expect.changedFlows !== undefined)('reports $expect.changedFlows changed flows', () => {
    expect(diff.changedFlows.map((f) => f.class)).toHaveLength(spec.expect.changedFlows!);
  });

  it.each(spec.expect.classes ?? [])('reports "$contains" for its probe, with both deciding rules', (wanted) => {
    const flows = diff.changedFlows.filter((f) => f.class.includes(wanted.contains));
    const flow = flows.find((f) => matches(f.probe, wanted.probe));
    expect(flow, `no flow of class "${wanted.contains}" for ${JSON.stringify(wanted.probe)} among ${JSON.stringify(flows.map((f) => f.probe))}`).toBeDefined();
    if (!wanted.decidedBy) return;
    expect(flow!.decidedBy.before).toMatchObject(wanted.decidedBy.before);
    expect(flow!.decidedBy.after).toMatchObject(wanted.decidedBy.after);
  });

  it.each(spec.expect.findingsNew ?? [])('reports a new $rule finding', (wanted) => {
    const found = diff.findings.new.filter((f) => f.rule === wanted.rule && (wanted.file === undefined || f.location.file === wanted.file) && (wanted.line === undefined || f.location.line === wanted.line));
    expect(found.length, JSON.stringify(diff.findings.new.map((f) => `${f.location.file}:${f.location.line} ${f.rule}`))).toBeGreaterThan(0);
    for (const words of wanted.messageContains ?? []) expect(found.some((f) => f.message.includes(words)), `no message names ${words}`).toBe(true);
    // New, so not on the BEFORE side: the same rule diffed the other way round resolves it.
    expect(diffSnapshots(after, before).diff!.findings.resolved.map((f) => f.rule)).toContain(wanted.rule);
  });

  it.each(spec.expect.structural ?? [])('reports a structural change naming $contains', (wanted) => {
    expect(diff.structural.map((s) => s.message)).toContainEqual(expect.stringContaining(wanted.contains));
  });

  it('re-checks every changed flow by simulating it on both sides', () => {
    const [b, a] = [before, after].map((s) => parseRuleset(s.sources).ruleset);
    for (const flow of diff.changedFlows) {
      const on = (ruleset: typeof b) => simulatePacket(ruleset!, { host: before.host, packet: flow.probe }).outcomes;
      expect(on(b), JSON.stringify(flow.probe)).toEqual(flow.before.outcomes);
      expect(on(a), JSON.stringify(flow.probe)).toEqual(flow.after.outcomes);
    }
  });
});
