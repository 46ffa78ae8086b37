import fc from 'fast-check';
import { findNodeAtLocation, parseTree, type Node } from 'jsonc-parser';
import { describe, expect, it } from 'vitest';
import type { Diagnostic } from '../../src/model/diagnostic.js';
import { parseInputText } from '../../src/parser/read-input-file.js';

/** Where jsonc-parser's tree places a path (what read-input-file did for all JSON before strict
 * JSON got its own, faster locator): the property for a found object member, else the deepest
 * node the path reaches. */
function jsoncPlace(text: string, path: readonly (string | number)[]): [number, number] | undefined {
  const tree = parseTree(text)!;
  for (let n = path.length; n >= 0; n--) {
    const node: Node | undefined = findNodeAtLocation(tree, [...path.slice(0, n)]);
    if (!node) continue;
    const target = n === path.length && node.parent?.type === 'property' ? node.parent : node;
    return [target.offset, target.offset + target.length];
  }
  return undefined;
}

/** A path into `value` chosen by `picks`, sometimes going one step past what exists. */
function pathInto(value: unknown, picks: readonly number[], overshoot: boolean): (string | number)[] {
  const path: (string | number)[] = [];
  let at = value;
  for (const pick of picks) {
    if (Array.isArray(at) && at.length > 0) {
      path.push(pick % at.length);
      at = at[pick % at.length];
    } else if (typeof at === 'object' && at !== null && Object.keys(at).length > 0) {
      const key = Object.keys(at)[pick % Object.keys(at).length]!;
      path.push(key);
      at = (at as Record<string, unknown>)[key];
    } else break;
  }
  if (overshoot) path.push(picks.length % 2 === 0 ? 'missing' : 99);
  return path;
}

describe('parseInputText on strict JSON', () => {
  it('places every path where jsonc-parser placed it, whatever the indentation', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 4 }),
        fc.constantFrom(0, 2, 4, '\t'),
        fc.array(fc.nat(), { maxLength: 5 }),
        fc.boolean(),
        (value, indent, picks, overshoot) => {
          const text = JSON.stringify(value, null, indent);
          const diagnostics: Diagnostic[] = [];
          const input = parseInputText('v.json', text, diagnostics)!;
          expect(diagnostics).toEqual([]);
          const path = pathInto(value, picks, overshoot);
          const span = input.spanOf(path);
          expect(span && [span.start, span.end]).toEqual(jsoncPlace(text, path));
        },
      ),
      { numRuns: 500 },
    );
  });

  it.each([
    ['strings with escaped quotes and brackets', '{"a": "x\\"]}{[", "b": [1, {"c": "\\\\"}]}', ['b', 1, 'c'], '"c": "\\\\"'],
    ['the last of repeated keys, the one JSON.parse keeps', '{"a": 1, "a": 2}', ['a'], '"a": 2'],
    ['an unknown field at its object', '{"a": {"b": 1}}', ['a', 'x'], '{"b": 1}'],
  ])('finds %s', (_name, text, path, found) => {
    const span = parseInputText('v.json', text, [])!.spanOf(path)!;
    expect(text.slice(span.start, span.end)).toBe(found);
  });

  it('still reads JSON with comments and trailing commas, and places syntax errors', () => {
    expect(parseInputText('v.json', '{\n  // note\n  "a": [1, 2,],\n}\n', [])!.value).toEqual({ a: [1, 2] });
    const diagnostics: Diagnostic[] = [];
    expect(parseInputText('v.json', '{\n  "a": {,\n}\n', diagnostics)).toBeUndefined();
    expect(diagnostics[0]).toMatchObject({ severity: 'error', code: 'json', span: { line: 2, column: 9 } });
  });
});

describe('parseInputText on YAML aliases', () => {
  it('reads a packet reused by an alias a few hundred times', () => {
    const text = `packets:\n  - &p {dst: 192.0.2.10}\n${'  - *p\n'.repeat(300)}`;
    const value = parseInputText('s.yaml', text, [])!.value as { packets: unknown[] };
    expect(value.packets).toHaveLength(301);
  });

  it('refuses aliases that expand exponentially, at the first alias', () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (const [i, name] of ['b', 'c', 'd', 'e', 'f'].entries()) levels.push(`${name}: &${name} [${Array(9).fill(`*${'abcde'[i]}`).join(', ')}]`);
    const diagnostics: Diagnostic[] = [];
    expect(parseInputText('s.yaml', levels.join('\n'), diagnostics)).toBeUndefined();
    expect(diagnostics).toMatchObject([{ severity: 'error', code: 'yaml', span: { line: 2, column: 8 } }]);
    expect(diagnostics[0]!.message).toContain('alias');
  });
});
