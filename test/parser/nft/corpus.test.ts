import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseNft, parseNftRuleBody } from '../../../src/parser/nft/parse-nft.js';
import type { Diagnostic } from '../../../src/model/diagnostic.js';

// Conformance: the upstream nftables test-suite corpus in ../shared (see its SOURCES.md).
const SHARED = path.resolve(import.meta.dirname, '../../../../shared/corpus/nft-testsuite');
const have = existsSync(SHARED);
if (!have) console.warn(`${SHARED} not present: nft corpus conformance not run`);

function listFiles(dir: string, suffix: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...listFiles(full, suffix));
    else if (name.endsWith(suffix)) out.push(full);
  }
  return out.sort();
}

function errorsOf(diagnostics: readonly Diagnostic[]): string[] {
  return diagnostics
    .filter((d) => d.severity === 'error')
    .map((d) => `${d.span?.line}:${d.span?.column} ${d.code} ${d.message}`);
}

function readIncluded(p: string): string | undefined {
  return existsSync(p) ? readFileSync(p, 'utf8') : undefined;
}

interface PyRule {
  readonly where: string;
  readonly text: string;
}

/** The `ok` rules of a tests/py `.t` file and their expected listings (upstream tests/py/README:
 * `rule;ok[;listing]`, `rule;fail`; `:chain;…` and `*family;table;chain` lines set context). */
function pyRules(file: string): PyRule[] {
  const rules: PyRule[] = [];
  readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
    if (line === '' || line.startsWith('#') || line.startsWith(':') || line.startsWith('*') || line.startsWith('-') || line.startsWith('!') || line.startsWith('?') || line.startsWith('%')) return;
    const parts = line.split(';');
    if (parts[1] !== 'ok') return;
    rules.push({ where: `${path.basename(file)}:${i + 1}`, text: parts[0]! });
    if (parts[2]) rules.push({ where: `${path.basename(file)}:${i + 1} listing`, text: parts.slice(2).join(';') });
  });
  return rules;
}

describe.runIf(have)('nft corpus', () => {
  const dumps = listFiles(path.join(SHARED, 'dumps'), '.nft').map((f) => path.relative(SHARED, f));
  const canonical = listFiles(path.join(SHARED, 'canonical'), '.nft').map((f) => path.relative(SHARED, f));

  it('finds the corpus', () => {
    expect(dumps.length).toBe(432);
    expect(canonical.length).toBe(377);
  });

  it.each([...dumps, ...canonical])('%s parses without errors', (rel) => {
    const file = path.join(SHARED, rel);
    const result = parseNft(readFileSync(file, 'utf8'), { file, readFile: readIncluded });
    expect(errorsOf(result.diagnostics)).toEqual([]);
  });

  const tFiles = listFiles(path.join(SHARED, 'py'), '.t');
  it.each(tFiles.map((f) => path.relative(SHARED, f)))('%s: ok rules and listings parse as rule bodies', (rel) => {
    const failures: string[] = [];
    for (const rule of pyRules(path.join(SHARED, rel))) {
      const result = parseNftRuleBody(rule.text);
      const errors = errorsOf(result.diagnostics);
      if (errors.length > 0 || !result.rule) failures.push(`${rule.where}: ${rule.text}\n    ${errors.join('\n    ')}`);
    }
    expect(failures).toEqual([]);
  });

  const jsonl = listFiles(path.join(SHARED, 'canonical-py'), '.jsonl');
  it.each(jsonl.map((f) => path.relative(SHARED, f)))('%s: nft 1.0.6 listings parse as rule bodies', (rel) => {
    const failures: string[] = [];
    for (const line of readFileSync(path.join(SHARED, rel), 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      const record = JSON.parse(line) as { line: number; status: string; listing: string | null };
      if (record.status !== 'ok' || !record.listing) continue;
      const result = parseNftRuleBody(record.listing);
      const errors = errorsOf(result.diagnostics);
      if (errors.length > 0) failures.push(`line ${record.line}: ${record.listing}\n    ${errors.join('\n    ')}`);
    }
    expect(failures).toEqual([]);
  });
});
