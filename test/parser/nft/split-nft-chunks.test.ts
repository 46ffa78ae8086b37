import { describe, expect, it } from 'vitest';
import { splitNftChunks, type NftChunk } from '../../../src/parser/nft/split-nft-chunks.js';

/** Each chunk as its text, marked `[` when it reopens an element list and `]` when it closes one. */
function show(text: string, chunks: readonly NftChunk[]): string[] {
  return chunks.map((c) => `${c.reopensElements ? '[' : ''}${text.slice(c.start, c.end)}${c.closesElements ? ']' : ''}`);
}

describe('splitNftChunks', () => {
  it.each([
    ['between rules of a chain', 'chain c {\nr1\nr2\n}\n', ['chain c {\n', 'r1\n', 'r2\n', '}\n']],
    ['inside an element list, after a comma', 'set s {\nelements = { a,\nb,\nc }\n}\n', ['set s {\n', 'elements = { a,\n]', '[b,\n]', '[c }\n', '}\n']],
    ['inside an element list written without blanks', 'set s {\nelements={ a,\nb }\n}\n', ['set s {\n', 'elements={ a,\n]', '[b }\n', '}\n']],
    ['inside an element list after `;`', 'set s { type ipv4_addr;elements = { a,\nb }\n}\n', ['set s { type ipv4_addr;elements = { a,\n]', '[b }\n', '}\n']],
  ])('cuts %s', (_, text, expected) => {
    expect(show(text, splitNftChunks(text, 1))).toEqual(expected);
  });

  it.each([
    ['inside a multi-line vmap', 'chain c {\nvmap { 1 : accept,\n2 : drop }\n}\n', ['chain c {\n', 'vmap { 1 : accept,\n2 : drop }\n', '}\n']],
    ['inside a define', 'define X = { a,\nb }\n', ['define X = { a,\nb }\n']],
    ['inside an element list after a line without a comma', 'set s {\nelements = { a\n, b }\n}\n', ['set s {\n', 'elements = { a\n, b }\n', '}\n']],
    ['inside an element list nested in a literal', 'add set t s { elements = { a,\nb } }\n', ['add set t s { elements = { a,\nb } }\n']],
    ['inside a set literal of an element', 'set s {\nelements = { a : { x,\ny } }\n}\n', ['set s {\n', 'elements = { a : { x,\ny } }\n', '}\n']],
    ['at a word that merely ends in `elements`', 'chain c {\nxelements = { a,\nb }\n}\n', ['chain c {\n', 'xelements = { a,\nb }\n', '}\n']],
  ])('does not cut %s', (_, text, expected) => {
    expect(show(text, splitNftChunks(text, 1))).toEqual(expected);
  });
});
