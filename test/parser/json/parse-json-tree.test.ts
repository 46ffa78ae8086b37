import { describe, expect, it } from 'vitest';
import { JsonNode, JsonTreeParser } from '../../../src/parser/json/parse-json-tree.js';

/** A node as plain data: type, where it is in the text, its value, keys and children. */
function plain(node: JsonNode): unknown {
  return {
    type: node.type,
    at: [node.offset, node.length],
    ...(node.children ? { children: node.children.map(plain) } : { value: node.value }),
    ...(node.keys && { keys: node.keys, keyOffsets: node.keyOffsets }),
  };
}

describe('JsonTreeParser', () => {
  it.each<[string, string, unknown]>([
    ['a number keeps its offset', ' 42', { type: 'number', at: [1, 2], value: 42 }],
    ['a negative exponent number', '-1.5e3', { type: 'number', at: [0, 6], value: -1500 }],
    ['a string without escapes', '"eth0"', { type: 'string', at: [0, 6], value: 'eth0' }],
    ['a string with escapes', '"a\\"b\\n"', { type: 'string', at: [0, 8], value: 'a"b\n' }],
    ['literals', '[true, false, null]', { type: 'array', at: [0, 19], children: [{ type: 'boolean', at: [1, 4], value: true }, { type: 'boolean', at: [7, 5], value: false }, { type: 'null', at: [14, 4], value: null }] }],
    [
      'an object keeps its keys, where they start, and its values in order',
      '{"a": 1, "b": [2]}',
      { type: 'object', at: [0, 18], keys: ['a', 'b'], keyOffsets: [1, 9], children: [{ type: 'number', at: [6, 1], value: 1 }, { type: 'array', at: [14, 3], children: [{ type: 'number', at: [15, 1], value: 2 }] }] },
    ],
  ])('%s', (_name, text, expected) => {
    const node = new JsonTreeParser(text).parseDocument();
    expect(node).toBeInstanceOf(JsonNode);
    expect(plain(node as JsonNode)).toEqual(expected);
  });

  it.each<[string, string, string, number]>([
    ['a missing comma', '[1 2]', 'comma expected', 3],
    ['a trailing comma in an object', '{"a": 1,}', 'property name expected', 8],
    ['a trailing comma in an array', '[1,]', 'value expected', 3],
    ['a missing colon', '{"a" 1}', 'colon expected', 5],
    ['an unterminated string', '"abc', 'unexpected end of string', 0],
    ['a number with a leading zero', '01', 'end of file expected', 1],
    ['a number without digits after the point', '1.', 'unexpected end of number', 0],
    ['an unknown word', '[nul]', 'invalid symbol', 1],
    ['text after the value', '1 2', 'end of file expected', 2],
    ['an unclosed array', '[1', 'close bracket expected', 2],
  ])('%s is a syntax error at its offset', (_name, text, message, offset) => {
    expect(new JsonTreeParser(text).parseDocument()).toMatchObject({ message, offset });
  });

  it('streams the items of an nft listing one at a time', () => {
    const items: unknown[] = [];
    const result = new JsonTreeParser('{"nftables": [{"a": 1}, {"b": 2}]}').streamListing((item) => items.push(item.keys));
    expect(result).toBe(true);
    expect(items).toEqual([['a'], ['b']]);
  });

  it('streams nothing from a text that is not an nft listing', () => {
    const items: unknown[] = [];
    expect(new JsonTreeParser('{"tables": []}').streamListing((item) => items.push(item))).toBe(false);
    expect(items).toEqual([]);
  });

  it('stops a listing at its first syntax error, after the items before it', () => {
    const items: unknown[] = [];
    const result = new JsonTreeParser('{"nftables": [{"a": 1}, {"b" 2}]}').streamListing((item) => items.push(item.keys));
    expect(items).toEqual([['a']]);
    expect(result).toMatchObject({ message: 'colon expected', offset: 29 });
  });
});
