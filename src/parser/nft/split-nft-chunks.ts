// Cuts nft text into chunks of whole lines that can be parsed one after another. A cut is only
// made at a newline outside every *literal* brace (`elements = {` continuation lines, a
// multi-line `vmap {` or `define X = {`); braces that open blocks (`table ip t {`, `chain c {`)
// may stay open across a cut because the AST builder tracks blocks itself. When a line's braces
// cannot be told apart cheaply, they count as literal: a bigger chunk, never a wrong cut.

export interface NftChunk {
  /** Offset of the chunk's first character in the text. */
  readonly start: number;
  /** Offset just past the chunk. */
  readonly end: number;
  /** 1-based line number of the chunk's first line. */
  readonly line: number;
}

// A line that opens a block: `table [family] name {`, `chain name {`, `ct helper name {`…
const BLOCK_HEADER = /[ \t]*(?:table[ \t]+\S+(?:[ \t]+\S+)?|(?:chain|set|map|flowtable|counter|quota|limit|secmark|synproxy|tunnel)[ \t]+\S+|ct[ \t]+(?:helper|timeout|expectation)[ \t]+\S+)[ \t]*\{/y;

export function splitNftChunks(text: string, maxLines: number): NftChunk[] {
  const chunks: NftChunk[] = [];
  // Open braces, innermost last: true for a literal brace.
  const braces: boolean[] = [];
  let literalDepth = 0;
  let chunkStart = 0;
  let chunkLine = 1;
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
          const literal = i !== headerBrace;
          headerBrace = -1;
          braces.push(literal);
          if (literal) literalDepth++;
        } else if (c === 125 /* } */) {
          if (braces.pop()) literalDepth--;
        }
      }
    }
    line++;
    linesInChunk++;
    lineStart = lineEnd + 1;
    if (linesInChunk >= maxLines && literalDepth === 0 && lineStart < text.length) {
      chunks.push({ start: chunkStart, end: lineStart, line: chunkLine });
      chunkStart = lineStart;
      chunkLine = line;
      linesInChunk = 0;
    }
  }
  if (chunkStart < text.length || chunks.length === 0) chunks.push({ start: chunkStart, end: text.length, line: chunkLine });
  return chunks;
}

function indexOrInfinity(text: string, c: string, from: number): number {
  const i = text.indexOf(c, from);
  return i < 0 ? Infinity : i;
}
