import { describe, expect, it } from 'vitest';
import { NftParser } from '../../../src/parser/nft/nft-grammar.js';
import { nftLexer, retypeKeywords } from '../../../src/parser/nft/nft-tokens.js';

// The shared parser instance skips Chevrotain's grammar validation to start faster; this builds
// one with validation, so a grammar mistake (a reused CONSUME/SUBRULE index, left recursion, an
// alternative that can never be taken) still fails the build.
describe('the nft grammar', () => {
  // Chevrotain throws "Parser Definition Errors detected" from the constructor.
  let validated: NftParser | undefined;

  it('passes Chevrotain validation', () => {
    expect(() => {
      validated = new NftParser({ validate: true });
    }).not.toThrow();
  });

  it.each([
    'table ip nat {\n',
    '\tmeta l4proto tcp ip daddr 10.96.0.1 tcp dport 80 counter packets 0 bytes 0 jump KUBE-SVC-X\n',
    '\tip saddr . tcp dport { 10.0.0.0/8 . 1-1023, 192.168.0.1 . 22 } meta mark set mark or 0x4000 accept\n',
    '\tct state established,related accept\n',
    '}\n',
  ])('the validated grammar parses %j', (text) => {
    validated ??= new NftParser({ validate: true });
    const lexed = nftLexer.tokenize(text);
    retypeKeywords(lexed.tokens);
    validated.input = lexed.tokens;
    validated.items();
    expect(validated.errors).toEqual([]);
  });
});
