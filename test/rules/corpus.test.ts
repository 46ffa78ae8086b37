// The rules on captured real rulesets: the incidents of DESIGN.md must fire, with their findings
// checked in beside each case as `nftsim lint --format json` output (expected-lint.json); clean
// single-component nodes (kube-proxy alone, Docker alone, Calico alone) must not.
//
// After a deliberate change to a rule's findings, regenerate the expected files and review the
// diff before committing it:
//
//     NFTSIM_UPDATE_EXPECTED=1 npx vitest run test/rules/corpus.test.ts && git diff corpus/

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseNode } from '../../src/parser/parse-ruleset.js';
import { formatFindingsJson } from '../../src/report/format-findings-json.js';
import { lintRuleset } from '../../src/rules/framework/lint-ruleset.js';

const CORPUS = join(resolve(import.meta.dirname, '../..'), 'corpus');
const UPDATE = process.env.NFTSIM_UPDATE_EXPECTED === '1';
const lintCase = (dir: string, files: readonly string[]) =>
  lintRuleset(parseNode(files.map((f) => ({ file: f, text: readFileSync(join(CORPUS, dir, f), 'utf8') }))).ruleset).findings;
const lint = (dir: string, files: string[]) => lintCase(dir, files).map((f) => `${f.location.file}:${f.location.line} ${f.rule}`);

describe('lint on the corpus', () => {
  it.each([
    ['kube-proxy alone', 'real/kube-proxy-5svc', ['ruleset.nft', 'iptables.save']],
    ['kube-proxy alone, nft -j', 'real/kube-proxy-5svc', ['ruleset.json']],
    ['Docker alone', 'real/docker-bridge', ['ruleset.nft', 'iptables.save']],
    ['Docker alone, nft -j', 'real/docker-bridge', ['ruleset.json']],
    ['Calico alone', 'real/calico-ipip', ['ruleset.nft', 'iptables.save']],
    ['Calico alone, nft -j', 'real/calico-ipip', ['ruleset.json']],
  ])('finds nothing on %s', (_, dir, files) => {
    expect(lint(dir, files)).toEqual([]);
  });

  // The incidents, each with the input files its expected-lint.json was made from.
  const INCIDENTS: readonly { name: string; dir: string; files: readonly string[]; mustFire: readonly string[] }[] = [
    {
      name: 'NodePort masquerade: a platform rule clears 0x4000, Netbird\'s exact marks meet kube-proxy\'s OR',
      dir: 'examples/nodeport-masquerade',
      files: ['node.nft', 'node.ipt'],
      mustFire: [
        // the platform rule clears kube-proxy's bit between set and test
        'node.ipt:8 mark-bit-collision clears',
        // so KUBE-POSTROUTING's masquerade does not happen
        'node.ipt:46 masquerade-contract cleared',
        // kube-proxy's OR of 0x4000 breaks Netbird's exact compares (netbird#6022)
        'node.ipt:42 mark-bit-collision exactCompare',
        'node.nft:119 masquerade-contract changed',
        'node.nft:120 masquerade-contract changed',
        // Netbird's 0x1bd20 holds the 0x20 the platform rule tests (netbird PR #6289)
        'node.nft:109 mark-bit-collision containsTestedBit',
      ],
    },
    {
      name: 'native wt0 rules in ip and ip6 filter FORWARD',
      dir: 'real/kube-proxy-wt0-native-rules',
      files: ['ruleset-handles.nft', 'iptables.save', 'ip6tables.save'],
      mustFire: ['ruleset-handles.nft:47 iptables-nft-incompatible table-unreadable', 'ruleset-handles.nft:255 iptables-nft-incompatible table-unreadable'],
    },
  ];

  describe.each(INCIDENTS)('$name ($dir)', ({ dir, files, mustFire }) => {
    const findings = lintCase(dir, files);
    const expectedFile = join(CORPUS, dir, 'expected-lint.json');

    it('reports the incident', () => {
      const reported = findings.map((f) => `${f.location.file}:${f.location.line} ${f.rule} ${f.messageId}`);
      expect(reported).toEqual(expect.arrayContaining([...mustFire]));
    });

    it('reports exactly the checked-in expected-lint.json', () => {
      const actual = formatFindingsJson(findings);
      if (UPDATE) writeFileSync(expectedFile, actual);
      expect(existsSync(expectedFile), `${expectedFile} is missing: run NFTSIM_UPDATE_EXPECTED=1 npx vitest run test/rules/corpus.test.ts and review it`).toBe(true);
      expect(JSON.parse(actual)).toEqual(JSON.parse(readFileSync(expectedFile, 'utf8')));
    });
  });
});
