// @ts-check
// Builds real iptables-nft dumps from the upstream extension test lines
// (../shared/corpus/iptables-tests/extensions/lib{xt,ipt,ip6t}_*.t, format in its SOURCES.md):
// every rule line whose result with the nf_tables backend is OK is appended, as upstream
// iptables-test.py does, to each chain its `:CHAIN,…` line names, with iptables-nft (libipt_,
// libxt_) and ip6tables-nft (libip6t_, libxt_) in a network namespace; then the namespace is
// listed with iptables-nft-save, ip6tables-nft-save and `nft list ruleset`.
//
// This script is the generator of those dumps: nothing it produces is committed. The kernel test
// (iptables-real-tool.test.ts) calls it; to look at the dumps, run as root
//   node test/kernel/build-iptables-real-dumps.mjs OUT_DIR
// which writes iptables.save, ip6tables.save, ruleset.nft and refused.tsv into OUT_DIR.

import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createNamespace, deleteNamespace, runInNamespace, runInNamespaceOrThrow } from './helpers/network-namespace.mjs';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const EXTENSIONS_DIR = path.resolve(PROJECT_ROOT, '../shared/corpus/iptables-tests/extensions');

/** @typedef {'ipv4' | 'ipv6'} IpFamily */

/**
 * One rule of a `.t` file in one chain for one family.
 * @typedef {object} TestRule
 * @property {string} file     the `.t` file name, e.g. libxt_mark.t
 * @property {number} line     1-based line in that file
 * @property {IpFamily} family
 * @property {string} table
 * @property {string} chain
 * @property {string} rule     the iptables arguments after `-A CHAIN`
 * @property {string} expected how the .t file says iptables-save prints it (`=` resolved)
 */

/**
 * A rule the installed iptables refused (a newer corpus line may need a newer iptables).
 * @typedef {object} RefusedRule
 * @property {TestRule} rule
 * @property {string} message  iptables-nft's error message
 */

/**
 * @typedef {object} RealDumps
 * @property {readonly TestRule[]} applied  in the order they are in each chain of the kernel
 * @property {ReadonlySet<TestRule>} unlisted  applied and in the saves, but deleted before
 *   `nft list ruleset` (see NFT_LIST_CRASHES)
 * @property {readonly RefusedRule[]} refused
 * @property {string} ipv4Save  iptables-nft-save of the namespace
 * @property {string} ipv6Save  ip6tables-nft-save of the namespace
 * @property {string} nftList   `nft list ruleset` of the namespace
 */

/** The tool of each family (the `-nft` variants: the nf_tables backend is what we model). */
export const TOOLS = /** @type {const} */ ({
  ipv4: { iptables: 'iptables-nft', restore: 'iptables-nft-restore', save: 'iptables-nft-save' },
  ipv6: { iptables: 'ip6tables-nft', restore: 'ip6tables-nft-restore', save: 'ip6tables-nft-save' },
});

/**
 * Rules `nft list ruleset` (nft 1.0.6) cannot list: it dies of SIGSEGV printing the xt match of
 * these ip6tables rules (hashlimit revision 3 with --hashlimit-rate-match, found by listing each
 * corpus rule alone). They are listed by ip6tables-nft-save, then deleted before nft lists.
 * @type {readonly { family: IpFamily, pattern: RegExp }[]}
 */
const NFT_LIST_CRASHES = [{ family: 'ipv6', pattern: /-m hashlimit .*--hashlimit-rate-match/ }];

/** @param {TestRule} rule */
function isUnlistableByNft(rule) {
  return NFT_LIST_CRASHES.some(({ family, pattern }) => rule.family === family && pattern.test(rule.rule));
}

/**
 * The families a `.t` file is for, by its name prefix (upstream iptables-test.py).
 * @param {string} file
 * @returns {IpFamily[]}
 */
function familiesOf(file) {
  if (file.startsWith('libxt_')) return ['ipv4', 'ipv6'];
  if (file.startsWith('libipt_')) return ['ipv4'];
  if (file.startsWith('libip6t_')) return ['ipv6'];
  return [];
}

/**
 * The result a `.t` line has with the nf_tables backend: `RULE;EXPECTED;RESULT;VARIANT;ALT`
 * restricts RESULT to the VARIANT backend, ALT being the other backend's (`=` the same).
 * @param {string} result
 * @param {string | undefined} variant
 * @param {string | undefined} alt
 */
function nftResultOf(result, variant, alt) {
  if (variant !== 'LEGACY') return result;
  return alt === undefined || alt === '=' ? result : alt;
}

/**
 * Every rule of the extension `.t` files with result OK on nf_tables, once per chain and family.
 * @param {string} [dir]
 * @returns {TestRule[]}
 */
export function readOkTestRules(dir = EXTENSIONS_DIR) {
  /** @type {TestRule[]} */
  const rules = [];
  const files = readdirSync(dir)
    .filter((file) => /^lib(xt|ipt|ip6t)_.*\.t$/.test(file))
    .sort();
  for (const file of files) {
    let table = 'filter';
    let chains = ['INPUT'];
    readFileSync(path.join(dir, file), 'utf8')
      .split('\n')
      .forEach((text, index) => {
        if (text.startsWith('#') || text.trim() === '') return;
        if (text.startsWith('*')) table = text.slice(1).trim();
        else if (text.startsWith(':')) chains = text.slice(1).split(',').map((chain) => chain.trim());
        else {
          const [rule = '', expected = '', result = '', variant, alt] = text.split(';').map((field) => field.trim());
          if (nftResultOf(result, variant, alt) !== 'OK') return;
          for (const family of familiesOf(file)) {
            for (const chain of chains) {
              rules.push({ file, line: index + 1, family, table, chain, rule, expected: expected === '=' ? rule : expected });
            }
          }
        }
      });
  }
  return rules;
}

/**
 * Appends `rules` (all of one family and table) in one iptables-nft-restore --noflush run. A
 * line the batch rejects is tried alone with iptables-nft, for its error message, and left out;
 * the batch is retried without it. A line iptables-nft accepts alone but the batch rejects is a
 * bug of this script, not of the corpus, and throws.
 * @param {string} ns
 * @param {readonly TestRule[]} rules
 * @returns {{ applied: TestRule[], refused: RefusedRule[] }}
 */
function appendTableBatch(ns, rules) {
  const { family, table } = rules[0];
  const tools = TOOLS[family];
  let pending = [...rules];
  /** @type {RefusedRule[]} */
  const refused = [];
  for (;;) {
    if (pending.length === 0) return { applied: pending, refused };
    const text = [`*${table}`, ...pending.map((r) => `-A ${r.chain} ${r.rule}`), 'COMMIT', ''].join('\n');
    const result = runInNamespace(ns, [tools.restore, '--noflush'], text);
    if (result.status === 0) return { applied: pending, refused };
    // The kernel refusing rules at COMMIT names each, with the reason (`line N: RULE_APPEND
    // failed (…)`); a parse error stops the batch at one line (`Error occurred at line: N`), which
    // is then tried alone with iptables-nft for its message and to be sure the batch is not the
    // reason. Line 1 is `*table`, line n + 1 the n-th rule.
    /** @type {Map<TestRule | undefined, string | undefined>} */
    const bad = new Map();
    for (const match of result.stderr.matchAll(/^line (\d+): (.*)$/gm)) bad.set(pending[Number(match[1]) - 2], match[2]);
    const parseError = /Error occurred at line: (\d+)/.exec(result.stderr);
    if (parseError) bad.set(pending[Number(parseError[1]) - 2], undefined);
    if (bad.size === 0 || bad.has(undefined)) {
      throw new Error(`${tools.restore} failed on ${family} ${table} without naming rule lines: ${result.stderr}`);
    }
    for (const [rule, commitMessage] of /** @type {Map<TestRule, string | undefined>} */ (bad)) {
      refused.push({ rule, message: commitMessage ?? appendAlone(ns, rule) });
    }
    pending = pending.filter((rule) => !bad.has(rule));
  }
}

/**
 * Appends one rule with iptables-nft, the way upstream iptables-test.py does (through a shell,
 * which splits the words and removes the quotes), and returns why it was refused.
 * @param {string} ns
 * @param {TestRule} rule
 */
function appendAlone(ns, rule) {
  const tools = TOOLS[rule.family];
  const alone = runInNamespace(ns, ['sh', '-c', `${tools.iptables} -t ${rule.table} -A ${rule.chain} ${rule.rule}`]);
  if (alone.status === 0) throw new Error(`${tools.restore} refused ${rule.file}:${rule.line} which ${tools.iptables} accepts`);
  return lastErrorLine(alone.stderr);
}

/** The line of iptables' stderr that says why, without its warnings and its usage hint.
 * @param {string} text */
function lastErrorLine(text) {
  const lines = text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('Warning:') && !line.startsWith('Try `'));
  return lines.at(-1) ?? text.trim();
}

/**
 * Appends `rules` in the namespace, table by table and family by family.
 * @param {string} ns
 * @param {readonly TestRule[]} rules
 * @returns {{ applied: TestRule[], refused: RefusedRule[] }}
 */
export function appendTestRules(ns, rules) {
  /** @type {Map<string, TestRule[]>} */
  const batches = new Map();
  for (const rule of rules) {
    const key = `${rule.family} ${rule.table}`;
    const batch = batches.get(key);
    if (batch) batch.push(rule);
    else batches.set(key, [rule]);
  }
  /** @type {TestRule[]} */
  const applied = [];
  /** @type {RefusedRule[]} */
  const refused = [];
  for (const batch of batches.values()) {
    const result = appendTableBatch(ns, batch);
    applied.push(...result.applied);
    refused.push(...result.refused);
  }
  return { applied, refused };
}

/**
 * The namespace's rulesets as the real tools list them (stdout only: they warn on stderr).
 * @param {string} ns
 */
export function listNamespace(ns) {
  return {
    ipv4Save: runInNamespaceOrThrow(ns, [TOOLS.ipv4.save]),
    ipv6Save: runInNamespaceOrThrow(ns, [TOOLS.ipv6.save]),
    nftList: runInNamespaceOrThrow(ns, ['nft', 'list', 'ruleset']),
  };
}

/**
 * Appends every OK rule of the corpus in the (empty) namespace `ns` and lists the result.
 * @param {string} ns
 * @param {readonly TestRule[]} [rules]
 * @returns {RealDumps}
 */
export function buildRealDumps(ns, rules = readOkTestRules()) {
  const { applied, refused } = appendTestRules(ns, rules);
  const ipv4Save = runInNamespaceOrThrow(ns, [TOOLS.ipv4.save]);
  const ipv6Save = runInNamespaceOrThrow(ns, [TOOLS.ipv6.save]);
  const unlisted = new Set(applied.filter(isUnlistableByNft));
  for (const rule of unlisted) {
    runInNamespaceOrThrow(ns, ['sh', '-c', `${TOOLS[rule.family].iptables} -t ${rule.table} -D ${rule.chain} ${rule.rule}`]);
  }
  return { applied, refused, unlisted, ipv4Save, ipv6Save, nftList: runInNamespaceOrThrow(ns, ['nft', 'list', 'ruleset']) };
}

/**
 * Replaces the whole ruleset of `ns` by an iptables-restore file and lists the result.
 * @param {string} ns
 * @param {IpFamily} family
 * @param {string} dump
 */
export function replaceRuleset(ns, family, dump) {
  runInNamespaceOrThrow(ns, ['nft', 'flush', 'ruleset']);
  runInNamespaceOrThrow(ns, [TOOLS[family].restore], dump);
  return listNamespace(ns);
}

/** @param {string} outDir */
function main(outDir) {
  const ns = createNamespace('nftsim-dumps');
  try {
    const dumps = buildRealDumps(ns);
    mkdirSync(outDir, { recursive: true });
    writeFileSync(path.join(outDir, 'iptables.save'), dumps.ipv4Save);
    writeFileSync(path.join(outDir, 'ip6tables.save'), dumps.ipv6Save);
    writeFileSync(path.join(outDir, 'ruleset.nft'), dumps.nftList);
    writeFileSync(
      path.join(outDir, 'refused.tsv'),
      dumps.refused.map(({ rule, message }) => `${rule.file}:${rule.line}\t${rule.family}\t${rule.table}\t${rule.chain}\t${rule.rule}\t${message}\n`).join(''),
    );
    console.log(`${dumps.applied.length} rules applied, ${dumps.refused.length} refused; written to ${outDir}`);
  } finally {
    deleteNamespace(ns);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const outDir = process.argv[2];
  if (!outDir) {
    console.error('usage: node test/kernel/build-iptables-real-dumps.mjs OUT_DIR');
    process.exitCode = 2;
  } else main(outDir);
}
