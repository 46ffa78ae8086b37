import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseRuleset, type Ruleset } from '../../src/index.js';

// corpus/real holds rulesets loaded into a real kernel and listed by the real tools
// (corpus/real/make.sh). Every nft listing and JSON listing there must parse without an error,
// and the text and JSON listings of one kernel state must give the same model outline.

const REAL = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../corpus/real');

const folders = readdirSync(REAL)
  .filter((name) => statSync(path.join(REAL, name)).isDirectory())
  .sort();

const filesEndingWith = (...suffixes: string[]) =>
  folders.flatMap((folder) =>
    readdirSync(path.join(REAL, folder))
      .filter((file) => suffixes.some((suffix) => file.endsWith(suffix)))
      .sort()
      .map((file) => `${folder}/${file}`),
  );
// expected-lint.json is the linter's checked-in answer for the folder (test/rules/corpus.test.ts), not a capture.
const listings = filesEndingWith('.nft', '.json').filter((file) => !file.endsWith('/expected-lint.json'));
// The iptables-save dumps: what was loaded (input*.save) and what iptables-nft-save printed.
const dumps = filesEndingWith('.save').filter((file) => !file.endsWith('/ipset.save'));

const FORMATS = { '.nft': 'nft', '.json': 'json', '.save': 'iptables' } as const;

function parseListing(relative: string) {
  const file = path.join(REAL, relative);
  return parseRuleset(readFileSync(file, 'utf8'), {
    file: relative,
    format: FORMATS[path.extname(relative) as keyof typeof FORMATS],
  });
}

function errorsOf(relative: string) {
  return parseListing(relative)
    .diagnostics.filter((d) => d.severity === 'error')
    .map((d) => `${d.span?.line}:${d.span?.column} ${d.message}`);
}

/** Tables, their sets and chains, and the number of rules of each chain. */
function outline(ruleset: Ruleset) {
  return ruleset.tables.map((table) => ({
    table: `${table.family} ${table.name}`,
    sets: table.sets.map((set) => set.name),
    chains: table.chains.map((chain) => `${chain.name}: ${chain.rules.length} rules`),
  }));
}

/** Every rule's handle, chain by chain. */
function handles(ruleset: Ruleset) {
  return ruleset.tables.flatMap((table) =>
    table.chains.map((chain) => `${table.family} ${table.name} ${chain.name}: ${chain.rules.map((rule) => rule.handle).join(' ')}`),
  );
}

describe('corpus/real', () => {
  it('has the folders make.sh writes, each with its NOTES.md and three listings', () => {
    expect(folders).toEqual(['calico-ipip', 'docker-bridge', 'kube-proxy-5svc', 'kube-proxy-wt0-native-rules']);
    for (const folder of folders) {
      for (const file of ['NOTES.md', 'ruleset.nft', 'ruleset-handles.nft', 'ruleset.json']) {
        expect(existsSync(path.join(REAL, folder, file)), `${folder}/${file}`).toBe(true);
      }
    }
  });

  it.each(listings)('%s parses without an error', (relative) => {
    expect(errorsOf(relative)).toEqual([]);
    expect(parseListing(relative).ruleset.tables.length).toBeGreaterThan(0);
  });

  // A table iptables-nft cannot read is only a `# Table … is incompatible` comment in the dump,
  // so a dump may hold no table at all (the ip6 one of the wt0 incident).
  it.each(dumps)('%s parses without an error', (relative) => {
    expect(errorsOf(relative)).toEqual([]);
  });

  it.each(folders)('%s: the nft listings and the JSON listing have the same outline', (folder) => {
    const json = outline(parseListing(`${folder}/ruleset.json`).ruleset);
    expect(outline(parseListing(`${folder}/ruleset.nft`).ruleset)).toEqual(json);
    expect(outline(parseListing(`${folder}/ruleset-handles.nft`).ruleset)).toEqual(json);
  });

  it.each(folders)('%s: nft -a and the JSON listing give every rule the same handle', (folder) => {
    const json = handles(parseListing(`${folder}/ruleset.json`).ruleset);
    expect(json.join('\n')).not.toMatch(/undefined/);
    expect(handles(parseListing(`${folder}/ruleset-handles.nft`).ruleset)).toEqual(json);
  });
});

// iptables-nft-save's dump lowers to what iptables-nft created in the kernel: the same chains
// with the same number of rules as the JSON listing shows, for every table the dump holds.
describe.each(folders)('corpus/real/%s/iptables.save', (folder) => {
  const chainsOf = (ruleset: Ruleset, tables: ReadonlySet<string>) =>
    ruleset.tables
      .filter((table) => tables.has(`${table.family} ${table.name}`))
      .flatMap((table) => table.chains.map((chain) => `${table.family} ${table.name} ${chain.name}: ${chain.rules.length} rules`))
      .sort();

  it('has the chains and rule counts of the kernel listing', () => {
    const dump = parseListing(`${folder}/iptables.save`).ruleset;
    const tables = new Set(dump.tables.map((table) => `${table.family} ${table.name}`));
    expect(tables.size).toBeGreaterThan(0);
    expect(chainsOf(dump, tables)).toEqual(chainsOf(parseListing(`${folder}/ruleset.json`).ruleset, tables));
  });
});
