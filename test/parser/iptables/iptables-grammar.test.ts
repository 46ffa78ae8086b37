import { describe, expect, it } from 'vitest';
import { iptablesLexer } from '../../../src/parser/iptables/iptables-grammar.js';

describe('iptables line lexer', () => {
  // The lexer's first-character table (Word's start_chars_hint) lists one code unit per block
  // of Chevrotain's table above 255: a word starting with any non-blank must still lex.
  it('lexes a word starting with any non-blank UTF-16 code unit as one argument', () => {
    const failed: string[] = [];
    for (let code = 0; code <= 0xffff; code++) {
      const ch = String.fromCharCode(code);
      if (/\s/.test(ch) || ch === '"' || ch === "'") continue;
      const { tokens, errors } = iptablesLexer.tokenize(`-A X --comment ${ch}x`);
      if (errors.length > 0 || tokens.length !== 4 || tokens[3]!.image !== `${ch}x`) failed.push(code.toString(16));
    }
    expect(failed).toEqual([]);
  });
});
