// The cases of corpus/diff, as the corpus test, the CLI test and the kernel re-check read them:
// each side a snapshot whose file names are relative to the case directory, so that what the
// diff reports does not depend on where the checkout is.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { applyProfile } from '../../src/components/apply-profile.js';
import type { Diagnostic } from '../../src/model/diagnostic.js';
import type { DiffResult } from '../../src/diff/diff-snapshots.js';
import { readSnapshot } from '../../src/snapshot/read-snapshot.js';
import type { Snapshot } from '../../src/snapshot/snapshot.js';

export const DIFF_CORPUS = join(resolve(import.meta.dirname, '../..'), 'corpus/diff');

interface Loc {
  readonly file: string;
  readonly line: number;
}

/** corpus/diff/NAME/case.json */
export interface DiffCase {
  readonly description: string;
  /** Files of the BEFORE side, relative to the case directory. */
  readonly before: readonly string[];
  /** Files of the AFTER side; with `apply`, what the profile renders (checked by
   * test/components/diff-cases.test.ts), while the diff applies the profile itself. */
  readonly after?: readonly string[];
  /** AFTER = BEFORE + this profile version (`nftsim diff --before … --apply REF --set …`). */
  readonly apply?: { readonly ref: string; readonly set: Readonly<Record<string, string>> };
  /** The claims about the case. */
  readonly expect: {
    readonly changedFlows?: number;
    readonly classes?: readonly { readonly contains: string; readonly probe: Readonly<Record<string, unknown>>; readonly decidedBy?: { readonly before: Loc; readonly after: Loc } }[];
    readonly findingsNew?: readonly { readonly rule: string; readonly file?: string; readonly line?: number; readonly messageContains?: readonly string[] }[];
    readonly structural?: readonly { readonly contains: string }[];
  };
}

export const DIFF_CASES: readonly string[] = readdirSync(DIFF_CORPUS)
  .filter((name) => existsSync(join(DIFF_CORPUS, name, 'case.json')))
  .sort();

/** The case's two sides; `diagnostics` holds what reading and applying said (errors fail the
 * tests that use them). */
export function loadDiffCase(name: string): { spec: DiffCase; before: Snapshot; after: Snapshot; diagnostics: Diagnostic[] } {
  const dir = join(DIFF_CORPUS, name);
  const spec = JSON.parse(readFileSync(join(dir, 'case.json'), 'utf8')) as DiffCase;
  const diagnostics: Diagnostic[] = [];
  const read = (files: readonly string[]): Snapshot => {
    const result = readSnapshot(files.map((f) => join(dir, f)).join(','));
    diagnostics.push(...result.diagnostics);
    const s = result.snapshot ?? { label: '', sources: [] };
    return { ...s, label: files.join(','), sources: s.sources.map((source) => ({ ...source, file: relative(dir, source.file) })) };
  };
  const before = read(spec.before);
  if (!spec.apply) return { spec, before, after: read(spec.after ?? []), diagnostics };
  const applied = applyProfile(before, spec.apply.ref, spec.apply.set);
  diagnostics.push(...applied.diagnostics);
  return { spec, before, after: applied.snapshot ?? { label: '', sources: [] }, diagnostics };
}

/** What expected-diff.json holds: `nftsim diff --format json` without the outcomes' traces. */
export function expectedDiffText(diff: DiffResult): string {
  return `${JSON.stringify(diff, (key, value: unknown) => (key === 'trace' ? undefined : value), 2)}\n`;
}
