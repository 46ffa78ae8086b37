// Conformance on the upstream iptables test data (../shared/corpus/iptables-tests, see its
// SOURCES.md): every rule line iptables accepts with the nf_tables backend parses without an
// error, both as written and as iptables-save prints it back; the shell-test dumps parse.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseIptablesSave } from '../../../src/parser/iptables/parse-iptables-save.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const CORPUS = path.resolve(projectRoot, '../shared/corpus/iptables-tests');
const EXTENSIONS = path.join(CORPUS, 'extensions');
const have = existsSync(EXTENSIONS);
if (!have) console.warn(`${CORPUS} not present: iptables corpus conformance not run`);

interface TestLine {
  readonly file: string;
  readonly line: number;
  readonly table: string;
  readonly chain: string;
  /** The rule as given to iptables, and as iptables-save prints it when different. */
  readonly rule: string;
  readonly saved?: string;
}

/** The `.t` lines iptables-nft accepts: RESULT OK or NOMATCH (added, listed differently), with
 * the NFT/LEGACY variant rules of upstream iptables-test.py (ALT is the other backend's result). */
function readAcceptedLines(file: string): TestLine[] {
  const lines: TestLine[] = [];
  let table = 'filter';
  let chain = 'INPUT';
  readFileSync(path.join(EXTENSIONS, file), 'utf8')
    .split('\n')
    .forEach((text, index) => {
      if (text.startsWith('#') || text.trim() === '') return;
      if (text.startsWith('*')) table = text.slice(1).trim();
      else if (text.startsWith(':')) chain = text.slice(1).split(',')[0]!.trim();
      else {
        const [rule = '', expected = '', result = '', variant, alt] = text.split(';').map((s) => s.trim());
        const nftResult = variant === 'LEGACY' ? (alt === '=' ? result : alt) : result;
        if (nftResult !== 'OK' && nftResult !== 'NOMATCH') return;
        const saved = expected === '=' || expected === '' ? undefined : expected;
        lines.push({ file, line: index + 1, table, chain, rule, saved });
      }
    });
  return lines;
}

function diagnosticsOf(table: string, chain: string, rule: string, family: 'ipv4' | 'ipv6') {
  const text = `*${table}\n:${chain} ACCEPT [0:0]\n-A ${chain} ${rule}\nCOMMIT\n`;
  const { diagnostics } = parseIptablesSave(text, { family });
  return {
    errors: diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.code}: ${d.message}`),
    unsupported: diagnostics.some((d) => d.code === 'unsupported'),
  };
}

describe.runIf(have)('iptables extension test lines (.t)', () => {
  const files = have ? readdirSync(EXTENSIONS).filter((f) => f.endsWith('.t')) : [];
  const supported = files.filter((f) => !f.startsWith('libarpt_') && !f.startsWith('libebt_'));

  it('parses every line iptables-nft accepts, as written and as saved', () => {
    const failures: Record<string, string[]> = {};
    /** Lines kept with raw (untyped) options: extensions nftsim has no table for yet. */
    const untyped: Record<string, number> = {};
    let count = 0;
    for (const file of supported) {
      const family = file.startsWith('libip6t_') ? 'ipv6' : 'ipv4';
      for (const t of readAcceptedLines(file)) {
        for (const rule of t.saved === undefined ? [t.rule] : [t.rule, t.saved]) {
          count++;
          const { errors, unsupported } = diagnosticsOf(t.table, t.chain, rule, family);
          if (errors.length > 0) (failures[file] ??= []).push(`${t.line}: ${rule} → ${errors.join('; ')}`);
          if (unsupported) untyped[file] = (untyped[file] ?? 0) + 1;
        }
      }
    }
    const notSupported = files.length - supported.length;
    console.log(`iptables corpus: ${count} rule texts from ${supported.length} files parsed; ${notSupported} arptables/ebtables files not supported`);
    console.log(`  kept raw with an unsupported warning: ${Object.entries(untyped).map(([f, n]) => `${f} ${n}`).join(', ')}`);
    for (const [file, list] of Object.entries(failures)) console.log(`  ${file}: ${list.length} failures\n    ${list.join('\n    ')}`);
    expect(count).toBeGreaterThan(900);
    expect(failures).toEqual({});
  });
});

describe.runIf(have)('iptables shell-test dumps', () => {
  const dumps = have
    ? readdirSync(path.join(CORPUS, 'iptables/tests/shell/testcases'), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.includes('/dumps/') && !f.endsWith('.xml'))
        .map((f) => path.join(CORPUS, 'iptables/tests/shell/testcases', f))
    : [];

  it.each(dumps)('%s parses without errors', (file) => {
    const text = readFileSync(file, 'utf8');
    const { dump, diagnostics } = parseIptablesSave(text, { file, family: file.includes('ip6') ? 'ipv6' : undefined });
    expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const ruleLines = text.split('\n').filter((l) => /^(\[\d+:\d+\] )?-[AI] /.test(l)).length;
    expect(dump.tables.flatMap((t) => t.commands).filter((c) => c.rule !== undefined)).toHaveLength(ruleLines);
  });
});
