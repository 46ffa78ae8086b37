import { posix } from 'node:path';
import { createTokenInstance, EOF, tokenMatcher, type CstNode, type IRecognitionException, type IToken } from 'chevrotain';
import type { Rule, Span } from '../../model/ast.js';
import type { Diagnostic } from '../../model/diagnostic.js';
import type { ParseOptions, ParseResult } from '../parse-result.js';
import { NftAstBuilder } from './build-nft-ast.js';
import { LineIndex } from '../../model/line-index.js';
import { lineIndexOf, spanAt, spanOfToken } from './build-nft-expr.js';
import { blockBraceAt, nftParser } from './nft-grammar.js';
import { LBrace, LBracket, LParen, Newline, nftLexer, RBrace, RBracket, retypeKeywords, RParen, Semicolon } from './nft-tokens.js';
import { splitNftChunks } from './split-nft-chunks.js';

// nft text → model. The text is cut into chunks of whole lines (split-nft-chunks.ts); each chunk
// is lexed, parsed into a flat CST of items and built, and its tokens and CST are dropped before
// the next one, so memory stays proportional to the model, not to the token stream.

/** Lines per chunk. Small, so a chunk's tokens and CST die in V8's young generation instead of
 * being promoted and marked: on a 1,000-service kube-proxy listing 100 lines took half the CPU
 * time and peak memory of 2,000 (parser entry per chunk is cheap). */
const CHUNK_LINES = 100;
const MAX_INCLUDE_DEPTH = 16;
const REOPEN_ELEMENTS = 'elements = {\n';
const CLOSE_ELEMENTS = '}\n';
const HANDLE_COMMENT = /^#\s*handle\s+(\d+)/;

export function parseNft(text: string, options: ParseOptions = {}): ParseResult {
  const diagnostics: Diagnostic[] = [];
  const builder = new NftAstBuilder(diagnostics, options.earlier);
  const file = options.file ?? '<input>';
  const including: string[] = [];

  const parseText = (source: string, name: string): void => {
    including.push(name);
    for (const chunk of splitNftChunks(source, CHUNK_LINES)) {
      // A chunk cut inside an element list reads as whole `elements = { … }` clauses: the
      // reopening text is a line of its own just before the chunk, so real text keeps its offsets,
      // lines and columns.
      const reopen = chunk.reopensElements ? REOPEN_ELEMENTS : '';
      const chunkText = reopen + source.slice(chunk.start, chunk.end) + (chunk.closesElements ? CLOSE_ELEMENTS : '');
      parseChunk(builder, diagnostics, {
        file: name,
        text: chunkText,
        base: chunk.start - reopen.length,
        baseLine: chunk.line - (chunk.reopensElements ? 1 : 0),
        lines: new LineIndex(chunkText),
        ownStart: reopen.length,
        ownEnd: reopen.length + chunk.end - chunk.start,
      });
    }
    including.pop();
  };

  builder.includeFile = (path: string, span: Span): void => {
    if (!options.readFile) {
      diagnostics.push({ severity: 'error', code: 'include', message: `include "${path}" not followed: no file access was given`, span });
      return;
    }
    const current = including[including.length - 1] ?? file;
    const resolved = path.startsWith('/') ? path : posix.join(posix.dirname(current), path);
    if (including.includes(resolved) || including.length >= MAX_INCLUDE_DEPTH) {
      diagnostics.push({ severity: 'error', code: 'include', message: `include "${path}" is recursive`, span });
      return;
    }
    const content = options.readFile(resolved);
    if (content === undefined) {
      diagnostics.push({ severity: 'error', code: 'include', message: `include "${path}": cannot read ${resolved}`, span });
      return;
    }
    const { pos, handles } = builder;
    parseText(content, resolved);
    builder.pos = pos;
    builder.handles = handles;
  };

  parseText(text, file);
  builder.checkClosed(endSpan(file, text, 0, 1));
  const ruleset = builder.finish();
  return builder.continued.length > 0 ? { ruleset, diagnostics, continued: builder.continued } : { ruleset, diagnostics };
}

/** Parses one rule body (`tcp dport 22 accept`), as written in nft's tests/py `.t` files or after
 * `add rule FAMILY TABLE CHAIN`. */
export function parseNftRuleBody(text: string, options: ParseOptions = {}): { rule?: Rule; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const builder = new NftAstBuilder(diagnostics);
  builder.pos = { file: options.file ?? '<input>', text, base: 0, baseLine: 1, lines: new LineIndex(text), ownStart: 0, ownEnd: text.length };
  const tokens = lexChunk(builder, diagnostics);
  nftParser.input = tokens;
  const cst = nftParser.rule();
  if (nftParser.errors.length > 0) {
    diagnostics.push(syntaxError(builder, nftParser.errors[0]!));
    return { diagnostics };
  }
  return { rule: builder.ruleBody(cst), diagnostics };
}

function lexChunk(builder: NftAstBuilder, diagnostics: Diagnostic[]): IToken[] {
  const pos = builder.pos;
  const lexed = nftLexer.tokenize(pos.text);
  for (const e of lexed.errors) {
    diagnostics.push({
      severity: 'error',
      code: 'syntax',
      message: `unexpected '${pos.text.slice(e.offset, e.offset + Math.max(1, e.length))}'`,
      span: spanAt(pos, e.offset, e.offset + e.length - 1),
    });
  }
  retypeKeywords(lexed.tokens);
  const tooDeep = firstTooDeep(lexed.tokens);
  if (tooDeep) {
    diagnostics.push({ severity: 'error', code: 'syntax', message: `nesting deeper than ${MAX_NFT_DEPTH} levels`, span: spanOfToken(pos, tooDeep) });
    return [];
  }
  const handles = new Map<number, number>();
  const unlisted: number[] = [];
  for (const c of lexed.groups.comments ?? []) {
    const m = HANDLE_COMMENT.exec(c.image);
    if (!m) continue;
    const line = lineIndexOf(pos, c.startOffset) + 1;
    handles.set(line, Number(m[1]));
    if (pos.text.slice(pos.lines.startOf(line - 1), c.startOffset).trim() === '') unlisted.push(line);
  }
  builder.handles = handles;
  builder.unlisted = unlisted;
  return lexed.tokens;
}

/** How deep braces, parentheses and brackets may nest: a listing nests a few levels (table,
 * chain, a set in a rule, a concatenation in it); the parser and the builder recurse, and input
 * nested hundreds deep would overflow the stack instead of getting an error. */
const MAX_NFT_DEPTH = 64;

/** The first opening token nested deeper than MAX_NFT_DEPTH, if any. */
function firstTooDeep(tokens: readonly IToken[]): IToken | undefined {
  let depth = 0;
  for (const t of tokens) {
    if (tokenMatcher(t, LBrace) || tokenMatcher(t, LParen) || tokenMatcher(t, LBracket)) {
      if (++depth > MAX_NFT_DEPTH) return t;
    } else if (tokenMatcher(t, RBrace) || tokenMatcher(t, RParen) || tokenMatcher(t, RBracket)) depth--;
  }
  return undefined;
}

function parseChunk(builder: NftAstBuilder, diagnostics: Diagnostic[], pos: NftAstBuilder['pos']): void {
  builder.pos = pos;
  const tokens = lexChunk(builder, diagnostics);
  nftParser.input = tokens;
  const cst = nftParser.items();
  if (nftParser.errors.length === 0) {
    for (const item of (cst.children.item ?? []) as CstNode[]) builder.item(item);
    return;
  }
  // Error recovery: parse item by item so every bad statement is reported and the good ones
  // are kept. An item ends at a separator outside literal braces, or at a block's `{`/`}`.
  for (const slice of splitItems(tokens)) {
    nftParser.input = slice;
    const item = nftParser.item();
    if (nftParser.errors.length > 0) diagnostics.push(syntaxError(builder, nftParser.errors[0]!));
    else builder.item(item);
  }
}

const END = createTokenInstance(EOF, '', NaN, NaN, NaN, NaN, NaN, NaN);

function splitItems(tokens: IToken[]): IToken[][] {
  const items: IToken[][] = [];
  let i = 0;
  while (i < tokens.length) {
    const t = tokens[i]!;
    if (tokenMatcher(t, Newline) || tokenMatcher(t, Semicolon) || tokenMatcher(t, RBrace)) {
      items.push([t]);
      i++;
      continue;
    }
    const from = i;
    const brace = blockBraceAt((k) => tokens[from + k - 1] ?? END);
    if (brace > 0) {
      items.push(tokens.slice(i, i + brace));
      i += brace;
      continue;
    }
    let depth = 0;
    let j = i;
    for (; j < tokens.length; j++) {
      const u = tokens[j]!;
      if (tokenMatcher(u, LBrace) && depth === 0 && (tokens[j - 1]?.image === 'jump' || tokens[j - 1]?.image === 'goto')) {
        j++;
        break;
      }
      if (tokenMatcher(u, LBrace)) depth++;
      else if (tokenMatcher(u, RBrace)) {
        if (depth === 0) break;
        depth--;
      } else if (depth === 0 && (tokenMatcher(u, Newline) || tokenMatcher(u, Semicolon))) break;
    }
    items.push(tokens.slice(i, j));
    i = j;
  }
  return items;
}

// What the parser was reading when it failed, for "expected …" (innermost rule first).
const RULE_EXPECTS: Readonly<Record<string, string>> = {
  atom: 'a value', expr: 'an expression',
  selector: 'an expression', payloadSel: 'a header field', ctSel: 'a ct key',
  exprStmt: 'an operator or a value', statement: 'a statement', rule: 'a statement',
  clause: 'a property', property: 'a property', blockHeader: 'a block header', command: 'a command',
  item: 'a statement', items: 'a statement', setLiteral: "an element or '}'", element: 'an element',
  elementOption: 'an element option', limitRate: 'a rate', quotaAmount: 'a quota', prioSpec: 'a priority',
  logStmt: 'a log option', natStmt: "'to' or a NAT flag", natTarget: 'an address or port',
};

const TOKEN_TEXT: Readonly<Record<string, string>> = {
  LBrace: "'{'", RBrace: "'}'", LParen: "'('", RParen: "')'", LBracket: "'['", RBracket: "']'",
  Semicolon: "';'", Comma: "','", Colon: "':'", Dot: "'.'", At: "'@'", Slash: "'/'", Assign: "'='",
  Newline: 'newline', NumberLit: 'a number', StringLit: 'a string', Name: 'a name', FamilyKw: 'a family',
};

/** The empty span at the end of `text`, which starts at file offset `base` on line `baseLine`. */
function endSpan(file: string, text: string, base: number, baseLine: number): Span {
  let line = baseLine;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) line++;
  const end = base + text.length;
  return { file, start: end, end, line, column: text.length - (text.lastIndexOf('\n') + 1) + 1 };
}

function describeToken(t: IToken): string {
  if (t.tokenType === EOF) return 'end of input';
  if (tokenMatcher(t, Newline)) return 'newline';
  return `'${t.image}'`;
}

function syntaxError(builder: NftAstBuilder, e: IRecognitionException): Diagnostic {
  const pos = builder.pos;
  const t = e.token;
  let expected: string | undefined;
  const mismatch = /Expecting token of type --> (\w+) <--/.exec(e.message);
  if (mismatch) {
    const name = mismatch[1]!;
    expected = TOKEN_TEXT[name] ?? (name.startsWith('Kw_') ? `'${name.slice(3)}'` : name);
  } else {
    const stack = e.context.ruleStack;
    for (let i = stack.length - 1; i >= 0 && !expected; i--) expected = RULE_EXPECTS[stack[i]!];
  }
  const atEnd = t.tokenType === EOF || Number.isNaN(t.startOffset);
  const span: Span = atEnd ? spanAt(pos, pos.ownEnd, pos.ownEnd - 1) : spanOfToken(pos, t);
  return {
    severity: 'error',
    code: 'syntax',
    message: `unexpected ${describeToken(t)}${expected ? `, expected ${expected}` : ''}`,
    span,
  };
}
