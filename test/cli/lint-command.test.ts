import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';

function temp(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'nftsim-lint-')), name);
  writeFileSync(path, text);
  return path;
}

async function lint(args: string[]) {
  let out = '';
  let err = '';
  const code = await main(['node', 'nftsim', 'lint', ...args], { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

const CLEAN = temp('clean.nft', 'table inet fw {\n\tchain input {\n\t\ttype filter hook input priority 0; policy drop;\n\t\tct state established,related accept\n\t}\n}\n');
const WARNING = temp('warn.nft', 'table inet fw {\n\tchain input {\n\t\ttype filter hook input priority 0; policy drop;\n\t\ttcp dport 22 accept\n\t}\n}\n');
const ERROR = temp('err.nft', 'table ip t {\n\tchain a {\n\t\tjump a\n\t}\n}\n');

describe('nftsim lint', () => {
  it.each([
    ['nothing to report', [CLEAN], 0],
    ['only a warning, failing on errors', [WARNING], 0],
    ['a warning with --fail-on warning', ['--fail-on', 'warning', WARNING], 1],
    ['an error', [ERROR], 1],
    ['an error turned off in the configuration', ['--config', temp('rc.json', '{ "rules": { "jump-loop": "off" } }'), ERROR], 0],
    ['a file that cannot be read', ['/nonexistent/rules.nft'], 2],
    ['a syntax error', [temp('bad.nft', 'table ip t {\n\tchain a {\n\t\tjump\n\t}\n}\n')], 2],
    ['a bad configuration', ['--config', temp('rc.json', '{ "rules": { "jump-loop": "loud" } }'), ERROR], 2],
    ['a bad --iptables-version', ['--iptables-version', 'new', CLEAN], 2],
    ['an unknown --format', ['--format', 'xml', CLEAN], 2],
  ])('exits as it should for %s', async (_, args, code) => {
    expect((await lint(args)).code).toBe(code);
  });

  it('prints text findings with the source line and a caret, without colour when piped', async () => {
    const { out } = await lint([ERROR]);
    expect(out).toBe(`${ERROR}:3:3 error jump-loop jump to 'a' closes a loop: a → a\n\t\tjump a\n\t\t^~~~~~\n\n1 problem (1 error, 0 warnings, 0 infos)\n`);
  });

  it('prints JSON and SARIF', async () => {
    const json = JSON.parse((await lint(['--format', 'json', ERROR])).out);
    expect(json.findings.map((f: { rule: string }) => f.rule)).toEqual(['jump-loop']);
    const sarif = JSON.parse((await lint(['--format', 'sarif', ERROR])).out);
    expect(sarif.version).toBe('2.1.0');
    expect(sarif.runs[0].results[0].ruleId).toBe('jump-loop');
  });

  it('points a configuration error at its place', async () => {
    const rc = temp('rc.json', '{\n  "rules": { "jump-loop": "loud" }\n}\n');
    expect((await lint(['--config', rc, ERROR])).err).toContain(`${rc}:2:27: error: rules.jump-loop: expected "off", "error", "warning" or "info"`);
  });
});
