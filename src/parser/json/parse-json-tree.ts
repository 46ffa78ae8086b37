// A JSON reader that keeps where each value is: nodes carry their offsets into the text, so every
// model node read from them can point back at its JSON. Written for `nft -j` listings of tens of
// MB: one pass over the character codes, one node per value, an object's keys in an array beside
// its values (nft's objects have a handful of keys, so a scan of that array beats a Map), and a
// listing's items handed out one at a time so only one item's tree is alive at once.

/** A JSON value and where it is. `children` holds an array's items or an object's values, in
 * order; `keys` (objects only) the matching keys and `keyOffsets` where each key starts. */
export class JsonNode {
  constructor(
    readonly type: 'object' | 'array' | 'string' | 'number' | 'boolean' | 'null',
    readonly offset: number,
    readonly length: number,
    readonly value: string | number | boolean | null,
    readonly children: readonly JsonNode[] | undefined,
    readonly keys: readonly string[] | undefined,
    readonly keyOffsets: readonly number[] | undefined,
  ) {}
}

/** A syntax error: what was expected and where (offsets into the text). */
export interface JsonSyntaxError {
  readonly message: string;
  readonly offset: number;
  readonly length: number;
}

const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

const NUMBER_SYNTAX = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

function isDigit(c: number): boolean {
  return c >= DIGIT_0 && c <= DIGIT_9;
}

function isWordChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || isDigit(c) || c === 0x5f || c === 0x24;
}

/** Thrown inside the parser only, caught by its entry points. */
class SyntaxStop {
  constructor(readonly error: JsonSyntaxError) {}
}

export class JsonTreeParser {
  private pos = 0;

  constructor(private readonly text: string) {}

  /** The whole text as one value, or the first syntax error. */
  parseDocument(): JsonNode | JsonSyntaxError {
    try {
      this.skipSpace();
      if (this.pos >= this.text.length) return { message: 'empty input: expected JSON', offset: 0, length: 0 };
      const node = this.value();
      this.skipSpace();
      if (this.pos < this.text.length) this.fail('end of file expected', 1);
      return node;
    } catch (e) {
      if (e instanceof SyntaxStop) return e.error;
      throw e;
    }
  }

  /** Streams the items of `{"nftables": [ … ]}` to `onItem`. Returns false without reading
   * anything when the text does not start that way (then parse it with `parseDocument`), else
   * the first syntax error, if any, after the items before it. */
  streamListing(onItem: (item: JsonNode) => void): boolean | JsonSyntaxError {
    try {
      this.skipSpace();
      if (!this.eat(LBRACE)) return false;
      this.skipSpace();
      if (this.code() !== QUOTE || this.string().value !== 'nftables') return this.rewind();
      this.skipSpace();
      if (!this.eat(COLON)) return this.rewind();
      this.skipSpace();
      if (!this.eat(LBRACKET)) return this.rewind();
      this.skipSpace();
      if (!this.eat(RBRACKET)) {
        for (;;) {
          if (this.pos >= this.text.length) this.fail('close bracket expected', 0);
          onItem(this.value());
          this.skipSpace();
          if (this.eat(RBRACKET)) break;
          this.expectSeparator(RBRACKET, 'close bracket expected');
          this.skipSpace();
          if (this.code() === RBRACKET) this.fail('value expected', 1);
        }
      }
      this.skipSpace();
      if (!this.eat(RBRACE)) this.fail('close brace expected', 1);
      this.skipSpace();
      if (this.pos < this.text.length) this.fail('end of file expected', 1);
      return true;
    } catch (e) {
      if (e instanceof SyntaxStop) return e.error;
      throw e;
    }
  }

  private rewind(): false {
    this.pos = 0;
    return false;
  }

  private code(): number {
    return this.text.charCodeAt(this.pos);
  }

  private eat(c: number): boolean {
    if (this.text.charCodeAt(this.pos) !== c) return false;
    this.pos++;
    return true;
  }

  private skipSpace(): void {
    const text = this.text;
    let pos = this.pos;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c !== SPACE && c !== LF && c !== CR && c !== TAB) break;
      pos++;
    }
    this.pos = pos;
  }

  private fail(message: string, length: number): never {
    const at = Math.min(this.pos, this.text.length);
    throw new SyntaxStop({ message, offset: at, length: at < this.text.length ? length : 0 });
  }

  /** After an item: a comma (and not the closing bracket or brace right after it), or an error
   * that says what is missing, in the words jsonc-parser (used here before) had for it. */
  private expectSeparator(close: number, closeMessage: string): void {
    if (this.eat(COMMA)) return;
    const c = this.code();
    if (this.pos >= this.text.length) this.fail(closeMessage, 0);
    if (c === QUOTE || c === LBRACE || c === LBRACKET || c === MINUS || isWordChar(c)) this.fail('comma expected', 1);
    this.fail(close === RBRACKET ? closeMessage : 'close brace expected', 1);
  }

  private value(): JsonNode {
    const c = this.code();
    if (c === LBRACE) return this.object();
    if (c === LBRACKET) return this.array();
    if (c === QUOTE) return this.string();
    if (c === MINUS || isDigit(c)) return this.number();
    if (this.pos >= this.text.length) this.fail('value expected', 0);
    return this.word();
  }

  private object(): JsonNode {
    const start = this.pos++;
    const keys: string[] = [];
    const keyOffsets: number[] = [];
    const values: JsonNode[] = [];
    this.skipSpace();
    if (!this.eat(RBRACE)) {
      for (;;) {
        if (this.code() !== QUOTE) this.fail(this.pos >= this.text.length ? 'close brace expected' : 'property name expected', 1);
        keyOffsets.push(this.pos);
        keys.push(this.string().value as string);
        this.skipSpace();
        if (!this.eat(COLON)) this.fail('colon expected', 1);
        this.skipSpace();
        values.push(this.value());
        this.skipSpace();
        if (this.eat(RBRACE)) break;
        this.expectSeparator(RBRACE, 'close brace expected');
        this.skipSpace();
      }
    }
    return new JsonNode('object', start, this.pos - start, null, values, keys, keyOffsets);
  }

  private array(): JsonNode {
    const start = this.pos++;
    const items: JsonNode[] = [];
    this.skipSpace();
    if (!this.eat(RBRACKET)) {
      for (;;) {
        if (this.pos >= this.text.length) this.fail('close bracket expected', 0);
        items.push(this.value());
        this.skipSpace();
        if (this.eat(RBRACKET)) break;
        this.expectSeparator(RBRACKET, 'close bracket expected');
        this.skipSpace();
        if (this.code() === RBRACKET) this.fail('value expected', 1);
      }
    }
    return new JsonNode('array', start, this.pos - start, null, items, undefined, undefined);
  }

  private string(): JsonNode {
    const text = this.text;
    const start = this.pos;
    let pos = start + 1;
    let escaped = false;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === QUOTE) break;
      if (Number.isNaN(c)) {
        this.pos = pos;
        this.fail('unexpected end of string', 0);
      }
      if (c < SPACE) {
        this.pos = pos;
        this.fail('invalid character', 1);
      }
      if (c === BACKSLASH) {
        escaped = true;
        pos++;
      }
      pos++;
    }
    pos++;
    this.pos = pos;
    let value: string;
    if (!escaped) {
      value = text.slice(start + 1, pos - 1);
    } else {
      try {
        value = JSON.parse(text.slice(start, pos)) as string;
      } catch {
        this.pos = start;
        this.fail('invalid escape character', pos - start);
      }
    }
    return new JsonNode('string', start, pos - start, value, undefined, undefined, undefined);
  }

  private number(): JsonNode {
    const text = this.text;
    const start = this.pos;
    let pos = start;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (!(isDigit(c) || c === MINUS || c === PLUS || c === DOT || c === 0x65 || c === 0x45)) break;
      pos++;
    }
    const raw = text.slice(start, pos);
    if (!NUMBER_SYNTAX.test(raw)) this.fail('invalid number format', pos - start);
    this.pos = pos;
    return new JsonNode('number', start, pos - start, Number(raw), undefined, undefined, undefined);
  }

  private word(): JsonNode {
    const text = this.text;
    const start = this.pos;
    let pos = start;
    while (isWordChar(text.charCodeAt(pos))) pos++;
    const word = text.slice(start, pos);
    const length = Math.max(1, pos - start);
    if (word === 'true' || word === 'false') {
      this.pos = pos;
      return new JsonNode('boolean', start, length, word === 'true', undefined, undefined, undefined);
    }
    if (word === 'null') {
      this.pos = pos;
      return new JsonNode('null', start, length, null, undefined, undefined, undefined);
    }
    this.fail('invalid symbol', length);
  }
}
