// Cuts nft text into chunks of whole lines that can be parsed one after another. A cut is only
// made at a newline outside every *literal* brace (a multi-line `vmap {` or `define X = {`), with
// one exception: a set's `elements = { … }` list may be cut after a line that ends with a comma,
// and the chunks on either side then read as two `elements = { … }` clauses, whose elements the
// AST builder appends to the one set. Braces that open blocks (`table ip t {`, `chain c {`) may
// stay open across a cut because the AST builder tracks blocks itself. When a line's braces
// cannot be told apart cheaply, they count as literal: a bigger chunk, never a wrong cut.
//
// Why element lists are cut: kube-proxy's nftables mode lists maps of tens of thousands of
// elements, one a line. As one chunk, their hundreds of thousands of tokens and CST nodes outlive
// many young-generation collections, and V8 then pretenures those allocation sites: every later
// chunk's tokens and CST are allocated in the old generation, which doubled the parse time and
// peak memory of a 10,000-service listing (allocation-site pretenuring; `node
// --no-allocation-site-pretenuring` made the difference vanish).

export interface NftChunk {
  /** Offset of the chunk's first character in the text. */
  readonly start: number;
  /** Offset just past the chunk. */
  readonly end: number;
  /** 1-based line number of the chunk's first line. */
  readonly line: number;
  /** The chunk starts inside an `elements = {` list cut by the previous chunk. */
  readonly reopensElements: boolean;
  /** The chunk ends inside an `elements = {` list that the next chunk continues. */
  readonly closesElements: boolean;
}

// A line that opens a block: `table [family] name {`, `chain name {`, `ct helper name {`…
const BLOCK_HEADER = /[ \t]*(?:table[ \t]+\S+(?:[ \t]+\S+)?|(?:chain|set|map|flowtable|counter|quota|limit|secmark|synproxy|tunnel)[ \t]+\S+|ct[ \t]+(?:helper|timeout|expectation)[ \t]+\S+)[ \t]*\{/y;

const ELEMENTS = 'elements';
/** What an open brace is. */
const BLOCK = 0;
const LITERAL = 1;
const ELEMENT_LIST = 2;

export function splitNftChunks(text: string, maxLines: number): NftChunk[] {
  const chunks: NftChunk[] = [];
  // Open braces, innermost last.
  const braces: number[] = [];
  let literalDepth = 0;
  let chunkStart = 0;
  let chunkLine = 1;
  let reopens = false;
  let line = 1;
  let linesInChunk = 0;
  let lineStart = 0;
  // Next brace positions, cached: searching from every line would be quadratic.
  let nextOpen = -1;
  let nextClose = -1;
  while (lineStart < text.length) {
    let lineEnd = text.indexOf('\n', lineStart);
    if (lineEnd < 0) lineEnd = text.length;
    if (nextOpen !== Infinity && nextOpen < lineStart) nextOpen = indexOrInfinity(text, '{', lineStart);
    if (nextClose !== Infinity && nextClose < lineStart) nextClose = indexOrInfinity(text, '}', lineStart);
    if (nextOpen < lineEnd || nextClose < lineEnd) {
      BLOCK_HEADER.lastIndex = lineStart;
      let headerBrace = BLOCK_HEADER.test(text) ? BLOCK_HEADER.lastIndex - 1 : -1;
      let inString = false;
      for (let i = lineStart; i < lineEnd; i++) {
        const c = text.charCodeAt(i);
        if (c === 34 /* " */) inString = !inString;
        else if (inString) continue;
        else if (c === 35 /* # */) break;
        else if (c === 123 /* { */) {
          const kind = i === headerBrace ? BLOCK : isElementsBrace(text, lineStart, i) ? ELEMENT_LIST : LITERAL;
          headerBrace = -1;
          braces.push(kind);
          if (kind !== BLOCK) literalDepth++;
        } else if (c === 125 /* } */) {
          const kind = braces.pop();
          if (kind !== undefined && kind !== BLOCK) literalDepth--;
        }
      }
    }
    line++;
    linesInChunk++;
    const next = lineEnd + 1;
    if (linesInChunk >= maxLines && next < text.length) {
      const inElements = literalDepth === 1 && braces[braces.length - 1] === ELEMENT_LIST;
      if (literalDepth === 0 || (inElements && endsWithComma(text, lineStart, lineEnd))) {
        chunks.push({ start: chunkStart, end: next, line: chunkLine, reopensElements: reopens, closesElements: inElements });
        chunkStart = next;
        chunkLine = line;
        reopens = inElements;
        linesInChunk = 0;
      }
    }
    lineStart = next;
  }
  if (chunkStart < text.length || chunks.length === 0) {
    chunks.push({ start: chunkStart, end: text.length, line: chunkLine, reopensElements: reopens, closesElements: false });
  }
  return chunks;
}

/** Whether the `{` at `brace` opens a set's element list: `elements = {` (nft's
 * `ELEMENTS '=' set_block_expr`), preceded by a blank, `;` or the line start. */
function isElementsBrace(text: string, lineStart: number, brace: number): boolean {
  let i = skipBlanksBack(text, lineStart, brace - 1);
  if (i < lineStart || text.charCodeAt(i) !== 61 /* = */) return false;
  i = skipBlanksBack(text, lineStart, i - 1);
  const word = i - ELEMENTS.length + 1;
  if (word < lineStart || !text.startsWith(ELEMENTS, word)) return false;
  const before = word === lineStart ? 32 : text.charCodeAt(word - 1);
  return before === 32 || before === 9 || before === 59 /* ; */;
}

/** Whether the line's last non-blank character is a comma, so that a cut after it falls between
 * two elements. */
function endsWithComma(text: string, lineStart: number, lineEnd: number): boolean {
  const i = skipBlanksBack(text, lineStart, lineEnd - 1);
  return i >= lineStart && text.charCodeAt(i) === 44 /* , */;
}

/** The last offset at or before `from` (and not before `min`) that is not a blank; `min - 1` if none. */
function skipBlanksBack(text: string, min: number, from: number): number {
  let i = from;
  for (; i >= min; i--) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== 13) break;
  }
  return i;
}

function indexOrInfinity(text: string, c: string, from: number): number {
  const i = text.indexOf(c, from);
  return i < 0 ? Infinity : i;
}
