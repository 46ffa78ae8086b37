import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// The CLI as a user meets it: the built bin/nftsim.js (npm test builds dist/ first).
const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin/nftsim.js');
const EXAMPLE = join(ROOT, 'corpus/examples/nodeport-masquerade');

function run(args: string[], input?: string) {
  const result = spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, input, encoding: 'utf8' });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

function tempFile(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'nftsim-cli-')), name);
  writeFileSync(path, text);
  return path;
}

describe('nftsim', () => {
  it('prints its version with --version', () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(run(['--version'])).toEqual({ code: 0, out: `${version}\n`, err: '' });
  });

  // PowerShell 5's `Out-File -Encoding utf8` starts a file with a byte order mark.
  it.each([
    ['an nft listing', 'node.nft', (file: string) => ['fmt', file]],
    ['a packet file', 'packet.json', (file: string) => ['run', file, join(EXAMPLE, 'node.nft')]],
  ])('reads %s that starts with a byte order mark', (_, name, args) => {
    const bom = tempFile(name, `\ufeff${readFileSync(join(EXAMPLE, name), 'utf8')}`);
    expect(run(args(bom))).toEqual(run(args(join(EXAMPLE, name))));
  });
});

describe('nftsim fmt', () => {
  it('prints a canonical listing back unchanged (the README example)', () => {
    const listing = readFileSync(join(EXAMPLE, 'node.nft'), 'utf8');
    expect(run(['fmt', join(EXAMPLE, 'node.nft')])).toEqual({ code: 0, out: listing, err: '' });
  });

  it('keeps handles with -a', () => {
    const listing = readFileSync(join(EXAMPLE, 'node-handles.nft'), 'utf8');
    expect(run(['fmt', '-a', join(EXAMPLE, 'node-handles.nft')]).out).toBe(listing);
  });

  it('reads stdin for -', () => {
    const result = run(['fmt', '-'], 'table inet t { chain c { type filter hook input priority 0; tcp dport 22 accept; } }\n');
    expect(result.code).toBe(0);
    expect(result.out).toBe(
      'table inet t {\n\tchain c {\n\t\ttype filter hook input priority filter; policy accept;\n\t\ttcp dport 22 accept\n\t}\n}\n',
    );
  });

  it('reads nft -j JSON', () => {
    const result = run(['fmt', join(EXAMPLE, 'node.json')]);
    expect(result.code).toBe(0);
    expect(result.out).toContain('table ip netbird {');
    expect(result.out).toContain('\t\tmeta mark 0x0001bd21 oifname != "lo" counter packets 0 bytes 0 masquerade\n');
  });

  it('prints the model as JSON with --json', () => {
    const result = run(['fmt', '--json', join(EXAMPLE, 'netbird.nft')]);
    expect(result.code).toBe(0);
    const model = JSON.parse(result.out);
    expect(model.kind).toBe('ruleset');
    expect(model.tables[0]).toMatchObject({ kind: 'table', family: 'ip', name: 'netbird' });
    expect(model.tables[0].chains[0].rules[0].span).toMatchObject({ line: 4, column: 3 });
  });

  it('composes several files in order', () => {
    const a = tempFile('a.nft', 'table ip t {\n\tchain c {\n\t\tip saddr 10.0.0.1 drop\n\t}\n}\n');
    const b = tempFile('b.nft', 'table ip t {\n\tchain c {\n\t\tip saddr 10.0.0.2 accept\n\t}\n}\n');
    expect(run(['fmt', a, b]).out).toBe(
      'table ip t {\n\tchain c {\n\t\tip saddr 10.0.0.1 drop\n\t\tip saddr 10.0.0.2 accept\n\t}\n}\n',
    );
  });

  it('reports a syntax error as file:line:col with the line and a caret, and exits 2', () => {
    const file = tempFile('bad.nft', 'table ip t {\n\tchain c {\n\t\ttcp dport 22 accept\n\t\tip saddr == ) drop\n\t}\n}\n');
    const result = run(['fmt', file]);
    expect(result.code).toBe(2);
    expect(result.out).toBe('');
    expect(result.err).toContain(`${file}:4:15: error: unexpected ')'`);
    expect(result.err).toContain('\t\tip saddr == ) drop\n\t\t            ^');
    expect(result.err).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('reports every syntax error in the file, not only the first', () => {
    const file = tempFile('bad.nft', 'table ip t {\n\tchain c {\n\t\tip saddr == ) drop\n\t\ttcp dport 22 accept\n\t\tmeta mark set ) accept\n\t}\n}\n');
    const result = run(['fmt', file]);
    expect(result.code).toBe(2);
    expect(result.err).toContain(`${file}:3:`);
    expect(result.err).toContain(`${file}:5:`);
  });

  it('exits 2 on a file that cannot be read', () => {
    const result = run(['fmt', '/nonexistent/rules.nft']);
    expect(result.code).toBe(2);
    expect(result.err).toContain("cannot read '/nonexistent/rules.nft'");
  });

  it('exits 2 on a usage error', () => {
    const result = run(['fmt']);
    expect(result.code).toBe(2);
    expect(result.err).toContain("missing required argument 'files'");
  });

  it('exits 0 for --help', () => {
    expect(execFileSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' })).toContain('fmt');
  });
});
