// Tokens and grammar of one iptables-restore line. A dump is read line by line, as
// iptables-restore does (iptables/iptables-restore.c reads a line, then splits it into argv with
// add_param_to_argv in xshared.c): every line is independent, so one lexer and one parser
// instance are reused and a 240,000-line dump never becomes one token array.
//
// The grammar knows the shape of a line (`*table`, `:CHAIN POLICY [p:b]`, `COMMIT`, or a command
// line of arguments) but not the arity of options: that depends on the extensions loaded by
// `-m`/`-j` earlier on the same line (getopt with options merged per extension), so the CST→AST
// step in parse-iptables-save.ts reads the argument list with the extension tables.

import { CstParser, Lexer, createToken, type IToken, type TokenType } from 'chevrotain';

/** Every token that can be an argument of a command line, whatever it looks like. */
export const Arg = createToken({ name: 'Arg', pattern: Lexer.NA });
/** Tokens that can open a command line: an option, `!`, or `[p:b]` counters. */
export const CommandStart = createToken({ name: 'CommandStart', pattern: Lexer.NA });
export const OptionToken = createToken({ name: 'OptionToken', pattern: Lexer.NA });

/** The first characters a Word may have, as Chevrotain wants them: every non-blank code unit
 * below 256, and one non-blank code unit per block of 255 above (Chevrotain looks those up by
 * block, chevrotain/src/scan/lexer.ts charCodeToOptimizedIndex, so one stands for its block;
 * listing all 65,000 makes building the lexer take a second). */
function nonBlankCharCodes(): number[] {
  const blank = /\s/;
  const codes: number[] = [];
  for (let code = 0; code < 256; code++) {
    if (!blank.test(String.fromCharCode(code))) codes.push(code);
  }
  // Blocks are [k·255, (k+1)·255); the first starts at 256.
  for (let start = 255; start <= 0xffff; start += 255) {
    const end = Math.min(start + 255, 0x10000);
    let code = Math.max(start, 256);
    while (code < end && blank.test(String.fromCharCode(code))) code++;
    if (code < end) codes.push(code);
  }
  return codes;
}

// One argument, as add_param_to_argv splits it: characters up to a blank, where a double-quoted
// part may hold blanks and `\"`/`\\` escapes. Single-quoted parts (accepted by newer
// iptables-restore, not 1.8.9) hold anything but `'`. Outside quotes a backslash is literal.
export const Word = createToken({
  name: 'Word',
  pattern: /(?:[^\s"']+|"(?:[^"\\]|\\.)*"|'[^']*')+/,
  // Chevrotain cannot list the first characters of a complement set, and without them it tries
  // every token on every character (its "first char" optimization is off for the whole lexer),
  // which is most of the cost of lexing a large dump. A word starts with any non-blank.
  start_chars_hint: nonBlankCharCodes(),
  categories: [Arg],
});

export const WhiteSpace = createToken({ name: 'WhiteSpace', pattern: /[ \t\r\f\v]+/, group: Lexer.SKIPPED });
export const Counters = createToken({ name: 'Counters', pattern: /\[\d+:\d+\]/, categories: [Arg, CommandStart] });
export const Bang = createToken({ name: 'Bang', pattern: /!/, longer_alt: Word, categories: [Arg, CommandStart] });
export const LongOption = createToken({
  name: 'LongOption',
  pattern: /--[A-Za-z0-9][\w-]*/,
  longer_alt: Word,
  categories: [Arg, CommandStart, OptionToken],
});
export const ShortOption = createToken({
  name: 'ShortOption',
  pattern: /-[A-Za-z0-9]/,
  longer_alt: Word,
  categories: [Arg, CommandStart, OptionToken],
});
// `*filter`, `:INPUT` and `COMMIT` open their own kinds of line; elsewhere they are plain
// arguments (`--dport :1024` is a port range), hence the Arg category.
export const TableHeader = createToken({ name: 'TableHeader', pattern: /\*[^\s"']*/, longer_alt: Word, categories: [Arg] });
export const ChainHeader = createToken({ name: 'ChainHeader', pattern: /:[^\s"']*/, longer_alt: Word, categories: [Arg] });
export const Commit = createToken({ name: 'Commit', pattern: /COMMIT/, longer_alt: Word, categories: [Arg] });

const allTokens: TokenType[] = [
  WhiteSpace,
  Arg,
  CommandStart,
  OptionToken,
  Counters,
  Bang,
  LongOption,
  ShortOption,
  TableHeader,
  ChainHeader,
  Commit,
  Word,
];

export const iptablesLexer = new Lexer(allTokens, {
  // Lines are lexed one at a time: offsets suffice, line and column come from the line index.
  positionTracking: 'onlyOffset',
  // Fail at load, not silently at run time, if a token stops the first-char optimization.
  ensureOptimizations: true,
});

/**
 * The tokens iptablesLexer makes of `line`, made without it for the lines nearly every dump is
 * made of (printable ASCII, quotes closed): Chevrotain tries each token's regex at each word,
 * which is most of the cost of reading a 240,000-line dump. Undefined for any other line, and
 * for the rare word iptablesLexer would split in two (`[1:2]x`): iptablesLexer reads those and
 * reports their errors. The tokens are the ones it would make, field for field.
 */
export function lexPlainLine(line: string): IToken[] | undefined {
  const tokens: IToken[] = [];
  const length = line.length;
  let i = 0;
  for (;;) {
    let c = 0;
    // WhiteSpace: space, \t, \v, \f, \r (a line holds no \n).
    while (i < length && ((c = line.charCodeAt(i)) === 0x20 || (c >= 0x09 && c <= 0x0d))) i++;
    if (i === length) return tokens;
    const start = i;
    let quoted = false;
    // Word: up to a blank, quoted parts whole (a double-quoted part with \x escapes).
    while (i < length) {
      c = line.charCodeAt(i);
      if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) break;
      if (c < 0x20 || c >= 0x7f) return undefined;
      if (c === 0x22 || c === 0x27) {
        quoted = true;
        const close = c;
        for (i++; i < length && (c = line.charCodeAt(i)) !== close; i++) {
          if (c < 0x20 || c >= 0x7f) return undefined;
          if (c === 0x5c && close === 0x22) {
            const escaped = line.charCodeAt(++i);
            if (!(escaped >= 0x20 && escaped < 0x7f)) return undefined;
          }
        }
        if (i >= length) return undefined;
      }
      i++;
    }
    const image = line.slice(start, i);
    const type = plainTokenType(image, quoted);
    if (type === undefined) return undefined;
    tokens.push({ image, startOffset: start, tokenTypeIdx: type.tokenTypeIdx!, tokenType: type });
  }
}

/** The type iptablesLexer gives a whole word: the first token whose pattern matches at its
 * start, unless its longer_alt Word matches more (undefined when neither covers the word). */
function plainTokenType(image: string, quoted: boolean): TokenType | undefined {
  const first = image.charCodeAt(0);
  const n = image.length;
  switch (first) {
    case 0x5b /* [ */: {
      const m = COUNTERS_PREFIX.exec(image);
      return m === null ? Word : m[0].length === n ? Counters : undefined;
    }
    case 0x21 /* ! */:
      return n === 1 ? Bang : Word;
    case 0x2a /* * */:
      return quoted ? Word : TableHeader;
    case 0x3a /* : */:
      return quoted ? Word : ChainHeader;
    case 0x2d /* - */: {
      if (n < 2 || !isAlnum(image.charCodeAt(n === 2 ? 1 : 2))) return Word;
      if (n === 2) return ShortOption;
      if (image.charCodeAt(1) !== 0x2d) return Word;
      for (let k = 3; k < n; k++) {
        const c = image.charCodeAt(k);
        if (!isAlnum(c) && c !== 0x5f /* _ */ && c !== 0x2d) return Word;
      }
      return LongOption;
    }
    default:
      return image === 'COMMIT' ? Commit : Word;
  }
}

const COUNTERS_PREFIX = /^\[\d+:\d+\]/;

function isAlnum(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

class IptablesLineParser extends CstParser {
  constructor() {
    super(allTokens, { maxLookahead: 1, skipValidations: true });
    this.performSelfAnalysis();
  }

  line = this.RULE('line', () => {
    this.OR([
      { ALT: () => this.SUBRULE(this.tableLine) },
      { ALT: () => this.SUBRULE(this.chainLine) },
      { ALT: () => this.SUBRULE(this.commitLine) },
      { ALT: () => this.SUBRULE(this.commandLine) },
    ]);
  });

  tableLine = this.RULE('tableLine', () => {
    this.CONSUME(TableHeader);
  });

  chainLine = this.RULE('chainLine', () => {
    this.CONSUME(ChainHeader);
    this.CONSUME(Arg, { LABEL: 'policy' });
    this.OPTION(() => this.CONSUME(Counters));
  });

  commitLine = this.RULE('commitLine', () => {
    this.CONSUME(Commit);
  });

  // Both labels collect into `args`, in input order.
  commandLine = this.RULE('commandLine', () => {
    this.CONSUME(CommandStart, { LABEL: 'args' });
    this.MANY(() => this.CONSUME(Arg, { LABEL: 'args' }));
  });
}

/** The one parser instance; feed it a line's tokens through `input`. */
export const iptablesLineParser = new IptablesLineParser();

export interface LineCst {
  readonly children: {
    readonly tableLine?: readonly TableLineCst[];
    readonly chainLine?: readonly ChainLineCst[];
    readonly commitLine?: readonly unknown[];
    readonly commandLine?: readonly CommandLineCst[];
  };
}
export interface TableLineCst {
  readonly children: { readonly TableHeader: readonly IToken[] };
}
export interface ChainLineCst {
  readonly children: {
    readonly ChainHeader: readonly IToken[];
    readonly policy: readonly IToken[];
    readonly Counters?: readonly IToken[];
  };
}
export interface CommandLineCst {
  readonly children: { readonly args: readonly IToken[] };
}
