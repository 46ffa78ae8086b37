import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Chain, Ruleset, Table } from '../../src/model/ast.js';
import { formatRule, formatRuleset } from '../../src/model/format-ruleset.js';
import { alignKeys } from '../../src/model/merge-node.js';
import { parseNode, parseRuleset, type NodeSource } from '../../src/parser/parse-ruleset.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLE = path.join(projectRoot, 'corpus/examples/nodeport-masquerade');
const REAL = path.join(projectRoot, 'corpus/real');

function source(dir: string, name: string): NodeSource {
  return { file: name, text: readFileSync(path.join(dir, name), 'utf8') };
}

function tableOf(ruleset: Ruleset, family: string, name: string): Table {
  const table = ruleset.tables.find((t) => t.family === family && t.name === name);
  if (!table) throw new Error(`no table ${family} ${name}`);
  return table;
}

function chainOf(ruleset: Ruleset, family: string, table: string, chain: string): Chain {
  const found = tableOf(ruleset, family, table).chains.find((c) => c.name === chain);
  if (!found) throw new Error(`no chain ${family} ${table} ${chain}`);
  return found;
}

const IPTABLES_NFT_TABLES = new Set(['filter', 'nat', 'mangle', 'raw', 'security']);

function mergeMessages(diagnostics: readonly { code: string; message: string }[]): string[] {
  return diagnostics.filter((d) => d.code === 'merge').map((d) => d.message);
}

describe('parseNode: an nft listing and the iptables-save dump of one node', () => {
  const listing = source(EXAMPLE, 'node.nft');
  const dump = source(EXAMPLE, 'node.ipt');
  const fromListing = parseRuleset(listing.text, { file: listing.file }).ruleset;
  const fromDump = parseRuleset(dump.text, { file: dump.file }).ruleset;

  it.each([
    ['listing first', [listing, dump]],
    ['dump first', [dump, listing]],
  ])('gives the tables and chains of the listing with the dump rules (%s)', (_order, inputs) => {
    const { ruleset, diagnostics } = parseNode(inputs);
    expect(diagnostics.filter((d) => d.severity !== 'info')).toEqual([]);
    const ids = (r: Ruleset) => r.tables.map((t) => `${t.family} ${t.name}: ${t.chains.map((c) => c.name).join(' ')}`);
    expect(ids(ruleset).sort()).toEqual(ids(fromListing).sort());
    for (const table of ruleset.tables) {
      for (const chain of table.chains) {
        if (IPTABLES_NFT_TABLES.has(table.name)) {
          // Every rule is the dump's, with its iptables origin: no native rule.
          expect(chain.rules).toEqual(chainOf(fromDump, table.family, table.name, chain.name).rules);
          for (const rule of chain.rules) expect(rule.origin?.format).toBe('iptables');
        } else {
          expect(chain).toEqual(chainOf(fromListing, table.family, table.name, chain.name));
        }
      }
    }
  });

  it('says how each table was assembled', () => {
    expect(mergeMessages(parseNode([listing, dump]).diagnostics)).toEqual([
      'ip mangle: 5 chains and 1 rule from node.ipt, aligned with node.nft; no native rules',
      'ip nat: 12 chains and 19 rules from node.ipt, aligned with node.nft; no native rules',
      'ip filter: 4 chains and 4 rules from node.ipt, aligned with node.nft; no native rules',
      'ip netbird: from node.nft',
    ]);
  });

  it('keeps the listing handles on the dump rules', () => {
    const { ruleset } = parseNode([source(EXAMPLE, 'node-handles.nft'), dump]);
    const rules = chainOf(ruleset, 'ip', 'filter', 'KUBE-FORWARD').rules;
    const listed = chainOf(parseRuleset(source(EXAMPLE, 'node-handles.nft').text).ruleset, 'ip', 'filter', 'KUBE-FORWARD').rules;
    expect(rules.map((r) => r.handle)).toEqual(listed.map((r) => r.handle));
    expect(rules.every((r) => r.handle !== undefined && r.origin?.format === 'iptables')).toBe(true);
  });

  it('emits no merge diagnostic for a single input', () => {
    expect(mergeMessages(parseNode([listing]).diagnostics)).toEqual([]);
  });

  it('is what parseRuleset gives for an array of inputs', () => {
    expect(parseRuleset([listing, dump])).toEqual(parseNode([listing, dump]));
  });
});

describe('parseNode: the wt0 incident (native rules in an iptables-nft table)', () => {
  const dir = path.join(REAL, 'kube-proxy-wt0-native-rules');
  const listing = source(dir, 'ruleset.nft');
  const inputs = [listing, source(dir, 'iptables.save'), source(dir, 'ip6tables.save')];
  const { ruleset, diagnostics } = parseNode(inputs);
  const fromListing = parseRuleset(listing.text, { file: listing.file }).ruleset;

  it.each(['ip', 'ip6'])('takes %s filter from the nft listing, native wt0 rules at their place', (family) => {
    expect(tableOf(ruleset, family, 'filter')).toEqual(tableOf(fromListing, family, 'filter'));
    const forward = chainOf(ruleset, family, 'filter', 'FORWARD').rules.map((r) => formatRule(r));
    expect(forward.slice(-2)).toEqual(['iifname "wt0" accept', 'oifname "wt0" ct state established,related accept']);
  });

  it('takes ip nat from the dump', () => {
    const nat = tableOf(ruleset, 'ip', 'nat');
    expect(nat.chains.flatMap((c) => c.rules).every((r) => r.origin?.format === 'iptables')).toBe(true);
  });

  it('says ip filter comes from the listing alone because iptables-nft-save could not list it', () => {
    expect(mergeMessages(diagnostics)).toContain(
      'ip filter: from ruleset.nft alone: iptables.save says iptables-nft-save could not list this table',
    );
  });
});

describe('parseNode: a native rule inside a kube-proxy chain', () => {
  const dir = path.join(REAL, 'kube-proxy-5svc');
  const dump = source(dir, 'iptables.save');
  const listing = source(dir, 'ruleset-handles.nft');
  // The chain KUBE-SVC-… with the most rules, and a native rule after its first rule.
  const plain = parseRuleset(listing.text, { file: listing.file }).ruleset;
  const target = tableOf(plain, 'ip', 'nat').chains.reduce((a, b) => (b.rules.length > a.rules.length ? b : a));
  const after = target.rules[0]!.span;
  const native = '\t\tiifname "wt0" meta mark set 0x0001bd20 # handle 9999';
  const lines = listing.text.split('\n');
  lines.splice(after.line, 0, native);
  const edited = { file: listing.file, text: lines.join('\n') };

  it('keeps it at its place, the other rules from the dump', () => {
    const { ruleset, diagnostics } = parseNode([edited, dump]);
    const rules = chainOf(ruleset, 'ip', 'nat', target.name).rules;
    expect(rules).toHaveLength(target.rules.length + 1);
    expect(formatRule(rules[1]!)).toBe('iifname "wt0" meta mark set 0x0001bd20');
    expect(rules[1]!.handle).toBe(9999);
    expect(rules.filter((_, i) => i !== 1).every((r) => r.origin?.format === 'iptables')).toBe(true);
    expect(mergeMessages(diagnostics)).toContainEqual(
      expect.stringContaining(`1 native rule kept from ruleset-handles.nft at ${target.name}:2`),
    );
  });
});

describe('parseNode: the corpus captures align without native rules', () => {
  it.each(['kube-proxy-5svc', 'docker-bridge', 'calico-ipip'])('%s', (name) => {
    const dir = path.join(REAL, name);
    const messages = mergeMessages(parseNode([source(dir, 'ruleset.nft'), source(dir, 'iptables.save')]).diagnostics);
    expect(messages.length).toBeGreaterThan(0);
    for (const message of messages) {
      expect(message).toContain('no native rules');
      expect(message).not.toContain('only in');
    }
  });

  it('pairs a rule nft lists approximately (ct status dnat for ! --ctstate …,DNAT) loosely', () => {
    const dir = path.join(REAL, 'kube-proxy-5svc');
    const messages = mergeMessages(parseNode([source(dir, 'ruleset.nft'), source(dir, 'iptables.save')]).diagnostics);
    expect(messages).toContainEqual(expect.stringMatching(/^ip filter: .*; 1 rule matched loosely/));
  });
});

describe('parseNode: files that are not one capture compose in order', () => {
  const a = { file: 'a.nft', text: 'table ip filter {\n\tchain FORWARD {\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tiifname "a" accept\n\t}\n}\n' };
  const b = { file: 'b.nft', text: 'table ip filter {\n\tchain FORWARD {\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tiifname "b" drop\n\t}\n}\n' };
  const dump = { file: 'c.ipt', text: '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A FORWARD -i c -j ACCEPT\nCOMMIT\n' };
  const forward = (inputs: NodeSource[]) => chainOf(parseNode(inputs).ruleset, 'ip', 'filter', 'FORWARD').rules.map((r) => formatRule(r));

  it.each([
    ['two nft files', [a, b], ['iifname "a" accept', 'iifname "b" drop']],
    ['the same two the other way', [b, a], ['iifname "b" drop', 'iifname "a" accept']],
    ['iptables-restore then nft -f', [dump, b], ['iifname "c" counter packets 0 bytes 0 accept', 'iifname "b" drop']],
    ['nft -f then iptables-restore', [b, dump], ['iifname "b" drop', 'iifname "c" counter packets 0 bytes 0 accept']],
  ])('%s', (_name, inputs, expected) => {
    expect(forward(inputs)).toEqual(expected);
  });

  it('says so', () => {
    expect(mergeMessages(parseNode([a, b]).diagnostics)).toEqual(['ip filter: composed in order from a.nft, b.nft']);
    expect(mergeMessages(parseNode([dump, b]).diagnostics)).toEqual([
      'ip filter: composed in order from c.ipt, b.nft (b.nft does not list the rules of c.ipt: not one capture)',
    ]);
  });

  it('prints as loading the files one after the other would', () => {
    expect(formatRuleset(parseNode([a, b]).ruleset)).toBe(
      'table ip filter {\n\tchain FORWARD {\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tiifname "a" accept\n\t\tiifname "b" drop\n\t}\n}\n',
    );
  });
});

describe('alignKeys', () => {
  it.each([
    ['equal', 'abc', 'abc', [0, 1, 2]],
    ['one inserted in a', 'abxc', 'abc', [0, 1, -1, 2]],
    ['one missing from a', 'ac', 'abc', [0, 2]],
    ['nothing in common', 'xy', 'abc', [-1, -1]],
    ['a replaced key', 'axc', 'abc', [0, -1, 2]],
    ['a moved key', 'bca', 'abc', [1, 2, -1]],
    ['empty b', 'ab', '', [-1, -1]],
  ])('%s: %s against %s', (_name, a, b, expected) => {
    expect([...alignKeys([...a], [...b])]).toEqual(expected);
  });

  it('pairs 200,000 equal keys with one inserted in the middle in linear time', () => {
    // The LCS table of the whole would hold 4e10 cells; prefix and suffix leave one key.
    const b = Array.from({ length: 200_000 }, (_, i) => `rule ${i}`);
    const a = [...b.slice(0, 100_000), 'native', ...b.slice(100_000)];
    const pairs = alignKeys(a, b);
    expect(pairs[100_000]).toBe(-1);
    expect(pairs[100_001]).toBe(100_000);
    expect(pairs[200_000]).toBe(199_999);
  });

  it('falls back to an in-order greedy match when the middle is too large for the table', () => {
    const a = Array.from({ length: 3000 }, (_, i) => `k${i % 7}`);
    const b = Array.from({ length: 3000 }, (_, i) => `k${(i + 3) % 7}`);
    const pairs = [...alignKeys(a, b)];
    const matched = pairs.map((j, i) => [i, j] as const).filter(([, j]) => j >= 0);
    for (const [i, j] of matched) expect(a[i]).toBe(b[j]);
    for (let k = 1; k < matched.length; k++) expect(matched[k]![1]).toBeGreaterThan(matched[k - 1]![1]);
    expect(matched.length).toBeGreaterThan(2900);
  });
});
