import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatRuleset } from '../../../src/model/format-ruleset.js';
import type { Diagnostic } from '../../../src/model/diagnostic.js';
import { parseNft } from '../../../src/parser/nft/parse-nft.js';
import { rulesetArb } from './nft-arbitraries.js';

/** The model without what a round trip cannot keep: positions and the typing the parser adds. */
function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (key === 'span' || key === 'dtype' || key === 'value' || v === undefined) continue;
    out[key] = strip(v);
  }
  return out;
}

/** A diagnostic's position must point into the text it was reported on. */
function expectValidPosition(text: string, diagnostic: Diagnostic): void {
  const { span } = diagnostic;
  if (!span) return;
  expect(span.start).toBeGreaterThanOrEqual(0);
  expect(span.end).toBeGreaterThanOrEqual(span.start);
  expect(span.end).toBeLessThanOrEqual(text.length);
  const before = text.slice(0, span.start);
  expect(span.line).toBe(before.split('\n').length);
  expect(span.column).toBe(span.start - (before.lastIndexOf('\n') + 1) + 1);
}

describe('nft text round trip (fast-check)', () => {
  it('a generated model prints, and parses back to itself', () => {
    fc.assert(
      fc.property(rulesetArb, (model) => {
        const text = formatRuleset(model);
        const parsed = parseNft(text, { file: 'generated.nft' });
        expect(parsed.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
        expect(strip(parsed.ruleset)).toEqual(strip(model));
        expect(formatRuleset(parsed.ruleset)).toBe(text);
      }),
      { numRuns: 300 },
    );
  });
});

const SHARED = resolve(import.meta.dirname, '../../../../shared/corpus/nft-testsuite/canonical');
const haveShared = existsSync(SHARED);
if (!haveShared) console.warn(`${SHARED} not present: mutation tests use the bundled example only`);

function listings(): string[] {
  const own = [readFileSync(resolve(import.meta.dirname, '../../../corpus/examples/nodeport-masquerade/node-handles.nft'), 'utf8')];
  if (!haveShared) return own;
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.name.endsWith('.nft')) files.push(join(dir, entry.name));
    }
  };
  walk(SHARED);
  return [...own, ...files.sort().slice(0, 120).map((f) => readFileSync(f, 'utf8'))];
}

const mutation = (text: string) =>
  fc.array(
    fc.record({
      at: fc.nat(Math.max(0, text.length)),
      remove: fc.nat(8),
      insert: fc.oneof(
        fc.string({ maxLength: 6 }),
        fc.constantFrom('{', '}', '"', ';', '\n', ' . ', ' : ', '$x', '@', '-', '/', '!=', 'table', 'chain', '#'),
      ),
    }),
    { minLength: 1, maxLength: 4 },
  );

describe('the nft parser on bad input (fast-check)', () => {
  it('never throws on random text, and every diagnostic points into the text', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'table chain ip{};"\n\t#@$:.-/0123456789abcxyz=!*'.split(' ').join('').split('')), maxLength: 200 }), (text) => {
        const result = parseNft(text, { file: 'garbage.nft' });
        for (const d of result.diagnostics) expectValidPosition(text, d);
      }),
      { numRuns: 500 },
    );
  });

  // A map whose element list spans several parse chunks, its table line broken (CI seed
  // -1984864023 of the test below): the chunks cut inside the list are wrapped in text of the
  // parser's own, which the diagnostics pointed into, with lines and columns of other places.
  it('points no diagnostic into the text a chunk cut inside an element list is wrapped in', () => {
    const elements = Array.from({ length: 600 }, (_, i) => `10.0.${i >> 5}.${i & 31} : 10.0.${i >> 5}.${i & 31}`);
    const lines = [];
    for (let i = 0; i < elements.length; i += 2) lines.push(`${elements[i]}, ${elements[i + 1]}`);
    const text = `table ip x {\n\tmap y {\n\t\ttype ipv4_addr : ipv4_addr\n\t\telements = { ${lines.join(',\n\t\t\t     ')} }\n\t}\n}\n`;
    const broken = text.slice(0, 18) + text.slice(21);
    const { diagnostics } = parseNft(broken, { file: 'broken.nft' });
    expect(diagnostics.length).toBeGreaterThan(2);
    for (const d of diagnostics) expectValidPosition(broken, d);
  });

  const corpus = listings();
  it('never throws or hangs on mutations of real listings', () => {
    fc.assert(
      fc.property(fc.constantFrom(...corpus).chain((text) => fc.tuple(fc.constant(text), mutation(text))), ([text, edits]) => {
        let mutated = text;
        for (const { at, remove, insert } of edits) {
          const i = Math.min(at, mutated.length);
          mutated = mutated.slice(0, i) + insert + mutated.slice(i + remove);
        }
        const started = performance.now();
        const result = parseNft(mutated, { file: 'mutated.nft' });
        expect(performance.now() - started).toBeLessThan(2000);
        for (const d of result.diagnostics) expectValidPosition(mutated, d);
      }),
      { numRuns: 300 },
    );
  });
});

describe('nft parsing time', () => {
  /** A kube-proxy-like nat table with `rules` rules. */
  function listing(rules: number): string {
    const lines = ['table ip nat {', '\tchain KUBE-SERVICES {'];
    for (let i = 0; i < rules; i++) {
      lines.push(
        `\t\tmeta l4proto tcp ip daddr 10.96.${(i >> 8) & 255}.${i & 255}  tcp dport ${80 + (i % 100)} counter packets 0 bytes 0 jump KUBE-SVC-${i.toString(36).padStart(16, 'X')}`,
      );
    }
    lines.push('\t}', '}', '');
    return lines.join('\n');
  }

  function bestTime(text: string): number {
    let best = Infinity;
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      parseNft(text, { file: 'timed.nft' });
      best = Math.min(best, performance.now() - started);
    }
    return best;
  }

  it('grows linearly with the input (8× the rules costs well under 8 × 3 the time)', () => {
    // Large enough to span many parser chunks (100 lines each), small enough to run in well under
    // a second on an idle machine.
    const small = listing(500);
    const large = listing(4_000);
    bestTime(small); // warm up the JIT
    const ratio = bestTime(large) / bestTime(small);
    expect(ratio).toBeLessThan(8 * 3);
  });
});
