import { describe, expect, it } from 'vitest';
import { LineIndex } from '../../src/model/line-index.js';

describe('LineIndex', () => {
  const text = 'table ip t {\n\tchain c {\n\n\t}\n}';
  const lines = new LineIndex(text);

  it.each([
    [0, 0],
    [12, 0], // the newline belongs to its line
    [13, 1],
    [24, 2], // an empty line
    [25, 3],
    [text.length, 4],
  ])('offset %d is on line %d', (offset, line) => {
    expect(lines.lineOf(offset)).toBe(line);
  });

  it('answers in any order, not only forward', () => {
    expect([30, 0, 14, 26, 13].map((o) => lines.lineOf(o))).toEqual([4, 0, 1, 3, 1]);
  });

  it('gives where each line starts', () => {
    expect([0, 1, 2, 3, 4].map((l) => lines.startOf(l))).toEqual([0, 13, 24, 25, 28]);
  });
});
