// The listing of kube-proxy's nftables mode (bench/gen/kube-proxy-nft.mjs): verdict maps of one
// element a line, concatenated keys, `goto` verdicts into chains named with `/`. Parse time is
// measured in bench/ (tests do not time); what keeps it linear is checked here by its cause: no
// chunk grows with an element list (split-nft-chunks.ts says why that matters).
import { describe, expect, it } from 'vitest';
import { generateKubeProxyNft } from '../../../bench/gen/kube-proxy-nft.mjs';
import type { Ruleset } from '../../../src/model/ast.js';
import { isError } from '../../../src/model/diagnostic.js';
import { formatRuleset } from '../../../src/model/format-ruleset.js';
import { parseNft } from '../../../src/parser/nft/parse-nft.js';
import { splitNftChunks } from '../../../src/parser/nft/split-nft-chunks.js';

const CHUNK_LINES = 100;
const text = generateKubeProxyNft({ services: 300, endpointsPerService: 3, seed: 1 });
const parsed = parseNft(text, { file: 'kube-proxy.nft' });

/** The model without positions, which differ between two texts of the same ruleset. */
function withoutSpans(ruleset: Ruleset): string {
  return JSON.stringify(ruleset, (key, value: unknown) => (key === 'span' ? undefined : value));
}

function elementsOf(ruleset: Ruleset, name: string) {
  const set = ruleset.tables.flatMap((t) => t.sets).find((s) => s.name === name);
  if (!set) throw new Error(`no set ${name}`);
  return set.elements ?? [];
}

describe('kube-proxy nftables-mode listing (300 services)', () => {
  it('parses with no error', () => {
    expect(parsed.diagnostics.filter(isError)).toEqual([]);
    expect(parsed.ruleset.tables.map((t) => `${t.family} ${t.name}`)).toEqual(['ip kube-proxy']);
  });

  it('keeps every element of a map that spans several chunks', () => {
    // service-ips is the only map keyed by address . protocol . port that jumps to these chains
    const listed = text.split('\n').filter((line) => /\d \. \w+ \. \d+ : goto (service|external)-/.test(line)).length;
    expect(listed).toBeGreaterThan(2 * CHUNK_LINES);
    expect(elementsOf(parsed.ruleset, 'service-ips')).toHaveLength(listed);
  });

  it('reads element lists cut across chunks as the same model as one-line lists', () => {
    const oneLine = text.replace(/,\n\t+ *(?=\S)/g, (sep, at: number) => (text.lastIndexOf('elements = {', at) > text.lastIndexOf('}', at) ? ', ' : sep));
    expect(oneLine).not.toBe(text);
    const reference = parseNft(oneLine, { file: 'one-line.nft' });
    expect(withoutSpans(parsed.ruleset)).toBe(withoutSpans(reference.ruleset));
  });

  it('points every element at its own line and column', () => {
    for (const el of elementsOf(parsed.ruleset, 'service-ips')) {
      const before = text.slice(0, el.span.start);
      expect([before.split('\n').length, el.span.start - before.lastIndexOf('\n')]).toEqual([el.span.line, el.span.column]);
      expect(text.slice(el.span.start)).toMatch(/^(172\.30|198\.18)\.\d+\.\d+ \. (tcp|udp|sctp) \. \d+ : goto /);
    }
  });

  it('prints back to a listing that parses to the same model', () => {
    const printed = formatRuleset(parsed.ruleset);
    const reparsed = parseNft(printed, { file: 'printed.nft' });
    expect(reparsed.diagnostics.filter(isError)).toEqual([]);
    expect(withoutSpans(reparsed.ruleset)).toBe(withoutSpans(parsed.ruleset));
  });

  it('is cut into chunks no longer than the chunk size, element lists included', () => {
    const lines = splitNftChunks(text, CHUNK_LINES).map((c) => text.slice(c.start, c.end).split('\n').length - 1);
    expect(Math.max(...lines)).toBeLessThanOrEqual(CHUNK_LINES);
  });
});
