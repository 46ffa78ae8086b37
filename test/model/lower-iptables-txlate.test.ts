// Lowering against iptables-translate: for every iptables/ip6tables pair of the upstream
// `.txlate` files (../shared/corpus/iptables-tests/extensions), the lowered rule prints as the
// nft text iptables-translate 1.8.9 gives, both sides canonicalised through the nft parser and
// printer (so `mark and 0xa` and `meta mark & 0x0000000a` compare equal, and counter values are
// ignored). The pairs where the lowering differs on purpose, because iptables-translate is
// wrong, are named below with the reason; the pairs nftsim does not lower yet are counted.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Rule } from '../../src/model/ast.js';
import { formatRule } from '../../src/model/format-ruleset.js';
import { lowerRule } from '../../src/model/lower-iptables.js';
import { parseIptablesSave } from '../../src/parser/iptables/parse-iptables-save.js';
import { parseNftRuleBody } from '../../src/parser/nft/parse-nft.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXTENSIONS = path.resolve(projectRoot, '../shared/corpus/iptables-tests/extensions');
const have = existsSync(EXTENSIONS);
if (!have) console.warn(`${EXTENSIONS} not present: iptables-translate conformance not run`);

interface Pair {
  readonly where: string;
  readonly family: 'ip' | 'ip6';
  readonly command: string;
  readonly expected: string;
}

const COMMAND = /^(ip6?tables)(?:-translate)? (.*)$/;
const NFT = /^nft '(?:add|insert) rule (ip6?) \S+ \S+ ?(.*)'$/;

function readPairs(): Pair[] {
  const pairs: Pair[] = [];
  for (const file of readdirSync(EXTENSIONS).filter((f) => f.endsWith('.txlate')).sort()) {
    const lines = readFileSync(path.join(EXTENSIONS, file), 'utf8').split('\n');
    lines.forEach((line, i) => {
      const command = COMMAND.exec(line);
      const nft = NFT.exec(lines[i + 1] ?? '');
      if (!command || !nft) return;
      pairs.push({ where: `${file}:${i + 1}`, family: command[1] === 'ip6tables' ? 'ip6' : 'ip', command: command[2]!, expected: nft[2]! });
    });
  }
  return pairs;
}

/** The rule of an iptables command line, as a one-rule restore file reads it. */
function lowerCommand(pair: Pair): Rule | undefined {
  const args = pair.command.replace(/(^| )-t \S+/, '').replace(/(^| )-I (\S+)( \d+)?/, '$1-A $2').trim();
  const { dump } = parseIptablesSave(`*filter\n${args}\nCOMMIT\n`, { family: pair.family === 'ip6' ? 'ipv6' : 'ipv4' });
  const rule = dump.tables[0]?.commands[0]?.rule;
  if (!rule) return undefined;
  const command = dump.tables[0]!.commands[0]!;
  return lowerRule(rule, pair.family, command.span, [])[0];
}

/** A rule with the spelling-only details erased: xlate words, counter values. */
function canonical(rule: Rule, family: 'ip' | 'ip6'): string {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (value === null || typeof value !== 'object') return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (k === 'word' || k === 'packets' || k === 'bytes' || k === 'origin') continue;
      out[k] = strip(v);
    }
    return out;
  };
  return spellAsIptablesNft(formatRule(strip(rule) as Rule, {}, family).replace(/\s+/g, ' ').trim());
}

/** Where iptables-translate and what iptables-nft adds (which the lowering follows) differ in
 * spelling only: translate writes `-p` as `ip protocol`, iptables-nft as `meta l4proto`; both
 * leave the protocol implied before a match of its header (translate always, nft's listing
 * before a native tcp/udp match); a native port range from 0 is `<= N`, translated `0-N`. */
function spellAsIptablesNft(text: string): string {
  return text
    .replace(/\bip protocol /g, 'meta l4proto ')
    .replace(/meta l4proto (\S+) (?=(?:.* )?\1 )/, '')
    .replace(/\b(sport|dport) <= (\d+)/g, '$1 0-$2');
}

function expectedRule(pair: Pair): Rule | undefined {
  return parseNftRuleBody(pair.expected).rule;
}

// Pairs where iptables-translate 1.8.9 prints something that does not mean what the kernel does
// for the iptables rule; the lowering keeps the kernel's meaning. Key: the iptables command.
const TRANSLATE_IS_WRONG: Readonly<Record<string, string>> = {
  '-t mangle -A PREROUTING -j CONNMARK --set-xmark 0x16/0x12':
    'CONNMARK sets ctmark = (ctmark & ~mask) ^ value (xt_connmark.c); the translation xors first, then masks, which clears the value bits under the mask',
};

// Pairs nftsim does not lower to the translated form (kept as typed xt extensions or lowered
// differently); counted, and listed by the report test. The count may only go down.
const MAX_NOT_LOWERED = 130;

describe.runIf(have)('lowering matches iptables-translate', () => {
  const pairs = have ? readPairs() : [];

  it('reads the iptables and ip6tables pairs of the corpus', () => {
    expect(pairs.length).toBeGreaterThan(300);
  });

  it.each(Object.entries(TRANSLATE_IS_WRONG))('differs on purpose: %s (%s)', (command) => {
    const pair = pairs.find((p) => p.command === command);
    expect(pair, `pair ${command} not in the corpus`).toBeDefined();
    const lowered = lowerCommand(pair!);
    const expected = expectedRule(pair!);
    expect(lowered && expected && canonical(lowered, pair!.family)).not.toBe(expected && canonical(expected, pair!.family));
  });

  it('prints the translated nft text for the translatable pairs', () => {
    let matched = 0;
    const failures: string[] = [];
    for (const pair of pairs) {
      if (TRANSLATE_IS_WRONG[pair.command] !== undefined) continue;
      const lowered = lowerCommand(pair);
      const expected = expectedRule(pair);
      const got = lowered ? canonical(lowered, pair.family) : '<no rule>';
      const want = expected ? canonical(expected, pair.family) : '<unparsable>';
      if (got === want) matched++;
      else failures.push(`${pair.where}: ${pair.command}\n    want ${want}\n    got  ${got}`);
    }
    console.log(`iptables-translate pairs: ${matched}/${pairs.length} lowered to the translated text, ${Object.keys(TRANSLATE_IS_WRONG).length} differ on purpose, ${failures.length} not lowered yet`);
    if (process.env.TXLATE_VERBOSE) console.log(failures.join('\n'));
    expect(failures.length).toBeLessThanOrEqual(MAX_NOT_LOWERED);
  });
});
