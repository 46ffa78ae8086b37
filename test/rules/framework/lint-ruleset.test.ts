import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../../src/parser/parse-ruleset.js';
import { lintRuleset } from '../../../src/rules/framework/lint-ruleset.js';

const LOOP = 'table ip t {\n\tchain a {\n\t\tjump a COMMENT\n\t}\n}\n';
const lint = (code: string, options = {}, format: 'nft' | 'iptables' = 'nft') =>
  lintRuleset(parseRuleset(code, { file: 'x', format }).ruleset, options).findings.map((f) => `${f.rule} ${f.severity}`);

describe('lintRuleset', () => {
  it('reports with the rule\'s default severity', () => {
    expect(lint(LOOP.replace(' COMMENT', ''))).toEqual(['jump-loop error']);
  });

  it.each([
    ['turns a rule off', { rules: { 'jump-loop': 'off' } }, []],
    ['changes a rule\'s severity', { rules: { 'jump-loop': 'info' } }, ['jump-loop info']],
  ])('%s from the configuration', (_, options, expected) => {
    expect(lint(LOOP.replace(' COMMENT', ''), options)).toEqual(expected);
  });

  it.each([
    ['the rule id', 'comment "nftsim-disable jump-loop"', []],
    ['a list of ids after other text', 'comment "kube: x; nftsim-disable priority-tie, jump-loop"', []],
    ['no id (every rule)', 'comment "nftsim-disable"', []],
    ['another rule id', 'comment "nftsim-disable priority-tie"', ['jump-loop error']],
    ['a longer word', 'comment "nftsim-disabled jump-loop"', ['jump-loop error']],
  ])('honours an inline suppression naming %s', (_, comment, expected) => {
    expect(lint(LOOP.replace('COMMENT', comment))).toEqual(expected);
  });

  it.each([
    ['suppresses', '-m comment --comment "nftsim-disable jump-loop" ', []],
    ['keeps', '', ['jump-loop error']],
  ])('%s by -m comment --comment in an iptables dump', (_, comment, expected) => {
    const dump = `*filter\n:A - [0:0]\n:B - [0:0]\n-A A -j B\n-A B ${comment}-j A\nCOMMIT\n`;
    expect(lint(dump, {}, 'iptables')).toEqual(expected);
  });
});
