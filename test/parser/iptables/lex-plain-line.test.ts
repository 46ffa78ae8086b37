import { describe, expect, it } from 'vitest';
import type { IToken } from 'chevrotain';
import { iptablesLexer, lexPlainLine } from '../../../src/parser/iptables/iptables-grammar.js';

const fields = (tokens: readonly IToken[]) => tokens.map((t) => ({ ...t, tokenType: t.tokenType.name }));

describe('lexPlainLine', () => {
  // Each line's tokens must be iptablesLexer's, field for field: the reader uses either.
  it.each([
    '-A KUBE-SVC-X -m comment --comment "ns/svc:p -> 10.1.2.3:80" -j KUBE-SEP-Y',
    ':KUBE-SEP-Y - [0:0]',
    ':INPUT ACCEPT [12:3456]',
    '*filter',
    '*f"x"',
    ':X"y"',
    'COMMIT',
    'COMMITX',
    '[1:2] -A X -j DROP\r',
    '! -p tcp',
    '!x',
    '-ptcp --dport=80 -Ax --a-b_c --1 -1 -- -',
    '-m comment --comment "a \\" b \\\\" --x \'single quoted\'',
    'a"b c"d\t\v\f e',
    '  -A  X  ',
  ])('makes the tokens iptablesLexer makes of %j', (line) => {
    const expected = iptablesLexer.tokenize(line);
    expect(expected.errors).toEqual([]);
    expect(fields(lexPlainLine(line) ?? [])).toEqual(fields(expected.tokens));
  });

  // Lines it leaves to iptablesLexer: errors to report, non-ASCII, a word split in two.
  it.each(['-A X -m comment --comment "unterminated', "'un", '-A X -i eth\u00e9', '[1:2]x', '-A X "tab\tin quotes"', '"a\\\r"'])(
    'leaves %j to iptablesLexer',
    (line) => {
      expect(lexPlainLine(line)).toBeUndefined();
    },
  );
});
