// iptables' `-m u32 --u32 TESTS` (xt_u32.c u32_mt): tests of 32-bit big-endian words of the
// packet, counted from its network header, all of which must hold (`!` inverts the whole).
//
//   tests    := location "=" value ("&&" location "=" value)*
//   value    := range ("," range)*            a range is "n" or "n:m"
//   location := number (op number)*          op: "&", "<<", ">>", "@"
//
// A location starts as the word at byte `number`; `&`, `<<` and `>>` compute on it; `@` moves
// the base by the value so far and reads the word at the next number from there. Numbers are C
// numbers (strtoul base 0: 0x… hex, 0… octal), as libxt_u32.c reads them.

import type { XtExtensionStmt } from '../model/ast.js';
import { readNetworkWord } from './packet-bytes.js';
import { NotModelled, type SimContext } from './sim-context.js';

type Op = '&' | '<<' | '>>' | '@';

interface U32Test {
  /** The first word's byte, then each operator with its number. */
  readonly start: number;
  readonly steps: readonly { readonly op: Op; readonly n: number }[];
  readonly ranges: readonly (readonly [number, number])[];
}

/** XT_U32_MAXSIZE: at most 11 tests, each of at most 11 location numbers and 11 ranges
 * (libxt_u32.c refuses more). */
const MAX_PARTS = 11;

const NUMBER = /^\s*(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)/;
const OPERATOR = /^\s*(&&|&|<<|>>|@|=|,|:)/;

/** The tests of a `--u32` argument; undefined when libxt_u32.c or the kernel refuses it. */
export function parseU32(text: string): U32Test[] | undefined {
  let rest = text;
  const take = (pattern: RegExp): string | undefined => {
    const m = pattern.exec(rest);
    if (!m) return undefined;
    rest = rest.slice(m[0].length);
    return m[1];
  };
  const number = (): number | undefined => {
    const digits = take(NUMBER);
    if (digits === undefined) return undefined;
    const n = /^0[xX]/.test(digits) ? parseInt(digits.slice(2), 16) : digits.length > 1 && digits.startsWith('0') ? parseInt(digits, 8) : Number(digits);
    return n <= 0xffffffff ? n : undefined;
  };
  const tests: U32Test[] = [];
  for (;;) {
    const start = number();
    if (start === undefined) return undefined;
    const steps: { op: Op; n: number }[] = [];
    let op = take(OPERATOR);
    while (op === '&' || op === '<<' || op === '>>' || op === '@') {
      const n = number();
      if (n === undefined || steps.length + 1 >= MAX_PARTS) return undefined;
      // The kernel refuses a shift by more than 31 (u32_mt_checkentry: EINVAL, checked with
      // iptables-nft-restore on Linux 6.18), which C would leave undefined.
      if ((op === '<<' || op === '>>') && n > 31) return undefined;
      steps.push({ op, n });
      op = take(OPERATOR);
    }
    if (op !== '=') return undefined;
    const ranges: [number, number][] = [];
    for (;;) {
      const low = number();
      if (low === undefined || ranges.length >= MAX_PARTS) return undefined;
      let high = low;
      op = take(OPERATOR);
      if (op === ':') {
        const n = number();
        if (n === undefined) return undefined;
        high = n;
        op = take(OPERATOR);
      }
      ranges.push([low, high]);
      if (op !== ',') break;
    }
    tests.push({ start, steps, ranges });
    if (tests.length > MAX_PARTS) return undefined;
    if (op === undefined && rest.trim() === '') return tests;
    if (op !== '&&') return undefined;
  }
}

/** u32_match_it: every test's value in one of its ranges; a word past the packet's end fails
 * the test (and the whole match, before `!`). */
export function matchU32(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  const option = stmt.options.find((o) => o.name === 'u32');
  const tests = option?.value.type === 'string' ? parseU32(option.value.s) : undefined;
  if (!option || !tests) throw new NotModelled('iptables match u32 whose tests iptables or the kernel refuses');
  return tests.every((test) => holds(test, ctx)) !== option.negated;
}

function holds(test: U32Test, ctx: SimContext): boolean {
  let value = word(ctx, 0, test.start);
  let at = 0;
  for (const { op, n } of test.steps) {
    if (value === undefined) return false;
    switch (op) {
      case '&':
        value = (value & n) >>> 0;
        break;
      case '<<':
        value = (value << n) >>> 0;
        break;
      case '>>':
        value = value >>> n;
        break;
      case '@':
        at += value;
        if (at > 0xffffffff) return false;
        value = word(ctx, at, n);
        break;
    }
  }
  return value !== undefined && test.ranges.some(([low, high]) => low <= value! && value! <= high);
}

/** The word at byte `at + pos`, undefined past the packet's end (the kernel's bounds checks). */
function word(ctx: SimContext, at: number, pos: number): number | undefined {
  return readNetworkWord(ctx, at + pos, 'iptables match u32');
}
