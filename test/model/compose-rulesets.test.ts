import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Ruleset } from '../../src/model/ast.js';
import { formatRule } from '../../src/model/format-ruleset.js';
import { parseNode, type NodeSource } from '../../src/parser/parse-ruleset.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLE = path.join(projectRoot, 'corpus/examples/nodeport-masquerade');

function source(name: string): NodeSource {
  return { file: name, text: readFileSync(path.join(EXAMPLE, name), 'utf8') };
}

/** Each rule of a chain as `file:line text`. */
function rulesOf(ruleset: Ruleset, family: string, table: string, chain: string): string[] {
  const found = ruleset.tables.find((t) => t.family === family && t.name === table)?.chains.find((c) => c.name === chain);
  if (!found) throw new Error(`no chain ${family} ${table} ${chain}`);
  return found.rules.map((r) => `${r.span.file}:${r.span.line} ${formatRule(r)}`);
}

function errorsOf(diagnostics: readonly { severity: string; message: string }[]): string[] {
  return diagnostics.filter((d) => d.severity === 'error').map((d) => d.message);
}

const KUBE_FORWARD_JUMP = 'kube-proxy.ipt:47';

describe('parseNode: rule commands on chains an earlier input declared', () => {
  it.each([
    ['an iptables dump', source('kube-proxy.ipt')],
    ['an nft listing', source('node.nft')],
  ])('insert and add rule continue ip filter FORWARD of %s, each rule keeping its own file', (_what, earlier) => {
    const overlay: NodeSource = {
      file: 'overlay.nft',
      text: [
        'insert rule ip filter FORWARD iifname "wt0" counter accept',
        'insert rule ip filter FORWARD oifname "wt0" ct state established,related counter accept',
        'add rule ip filter FORWARD ip saddr 0.0.0.0/0 accept',
        '',
      ].join('\n'),
    };
    const { ruleset, diagnostics } = parseNode([earlier, overlay]);
    expect(errorsOf(diagnostics)).toEqual([]);
    const rules = rulesOf(ruleset, 'ip', 'filter', 'FORWARD');
    expect(rules).toHaveLength(4);
    expect(rules[0]).toBe('overlay.nft:2 oifname "wt0" ct state established,related counter accept');
    expect(rules[1]).toBe('overlay.nft:1 iifname "wt0" counter accept');
    expect(rules[2]).toMatch(new RegExp(`^${earlier.file}:\\d+ .*jump KUBE-FORWARD\\b`));
    expect(rules[3]).toBe('overlay.nft:3 ip saddr 0.0.0.0/0 accept');
    // The base chain keeps its hook, and the other chains are untouched.
    const forward = ruleset.tables.find((t) => t.name === 'filter')!.chains.find((c) => c.name === 'FORWARD')!;
    expect(forward.base?.hook).toBe('forward');
    expect(rulesOf(ruleset, 'ip', 'filter', 'KUBE-FORWARD')).toHaveLength(3);
  });

  it('an iptables fragment without the chain declaration continues the chain (iptables-restore --noflush)', () => {
    const fragment: NodeSource = { file: 'agent.ipt', text: '*filter\n-I FORWARD 1 -i wt0 -j ACCEPT\n-A KUBE-FORWARD -i wt0 -j DROP\nCOMMIT\n' };
    const { ruleset, diagnostics } = parseNode([source('kube-proxy.ipt'), fragment]);
    expect(errorsOf(diagnostics)).toEqual([]);
    const forward = rulesOf(ruleset, 'ip', 'filter', 'FORWARD');
    expect(forward.map((r) => r.split(' ')[0])).toEqual(['agent.ipt:2', KUBE_FORWARD_JUMP]);
    expect(rulesOf(ruleset, 'ip', 'filter', 'KUBE-FORWARD').at(-1)).toBe('agent.ipt:3 iifname "wt0" counter packets 0 bytes 0 drop');
  });

  it('a full dump declaring the chain still composes after the earlier rules (one capture beside another)', () => {
    const { ruleset } = parseNode([source('kube-proxy.ipt'), { file: 'again.ipt', text: '*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -j DROP\nCOMMIT\n' }]);
    expect(rulesOf(ruleset, 'ip', 'filter', 'FORWARD').map((r) => r.split(' ')[0])).toEqual([KUBE_FORWARD_JUMP, 'again.ipt:3']);
  });

  it('a later input continues what an earlier continuation left', () => {
    const { ruleset, diagnostics } = parseNode([
      source('kube-proxy.ipt'),
      { file: 'a.nft', text: 'insert rule ip filter FORWARD iifname "a" accept\n' },
      { file: 'b.nft', text: 'insert rule ip filter FORWARD iifname "b" accept\nflush chain ip filter KUBE-FORWARD\n' },
    ]);
    expect(errorsOf(diagnostics)).toEqual([]);
    expect(rulesOf(ruleset, 'ip', 'filter', 'FORWARD').map((r) => r.split(' ')[0])).toEqual(['b.nft:1', 'a.nft:1', KUBE_FORWARD_JUMP]);
    expect(rulesOf(ruleset, 'ip', 'filter', 'KUBE-FORWARD')).toEqual([]);
  });

  it.each([
    ['a chain no input declares', 'add rule ip filter NOPE accept\n', 'no such chain: ip filter NOPE'],
    ['a table no input declares', 'insert rule ip nope FORWARD accept\n', 'no such table: ip nope'],
  ])('still reports %s', (_what, text, message) => {
    const { diagnostics } = parseNode([source('kube-proxy.ipt'), { file: 'x.nft', text }]);
    expect(errorsOf(diagnostics)).toEqual([message]);
  });

  it('does not reach back across a single input (parseRuleset of one file is unchanged)', () => {
    const { diagnostics } = parseNode([{ file: 'x.nft', text: 'add rule ip filter FORWARD accept\n' }]);
    expect(errorsOf(diagnostics)).toEqual(['no such chain: ip filter FORWARD']);
  });
});
