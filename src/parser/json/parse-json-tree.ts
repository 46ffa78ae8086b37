import { printParseErrorCode, visit, type JSONVisitor } from 'jsonc-parser';

// A JSON tree that keeps where each value is, so every model node read from it can point back at
// its JSON. jsonc-parser's scanner does the reading (`visit`); this file only builds the nodes.
// jsonc-parser's own `parseTree` builds property nodes with parent links for the whole document,
// which costs twice the time on `nft -j` listings of tens of MB; here an object's keys sit in an
// array beside its values (nft's objects have a handful of keys, so scanning that array beats a
// Map) and a listing's items are handed out one at a time, so only one item's tree is alive at once.

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

interface Frame {
  readonly type: 'object' | 'array';
  readonly offset: number;
  readonly children: JsonNode[];
  readonly keys: string[] | undefined;
  readonly keyOffsets: number[] | undefined;
}

const PARSE_OPTIONS = { disallowComments: true, allowTrailingComma: false } as const;

/** How deep arrays and objects may nest: nft's listings nest a few levels (a concatenation in a
 * set element in a map, about a dozen at most); the readers of the tree recurse, and a document
 * nested thousands deep would overflow the stack instead of getting an error. */
export const MAX_JSON_DEPTH = 100;

export class JsonTreeParser {
  constructor(private readonly text: string) {}

  /** The whole text as one value, or the first syntax error. */
  parseDocument(): JsonNode | JsonSyntaxError {
    let root: JsonNode | undefined;
    const error = this.build((node, stack) => {
      if (stack.length === 0) root = node;
      else return false;
      return true;
    });
    if (error) return error;
    return root ?? { message: 'empty input: expected JSON', offset: 0, length: 0 };
  }

  /** Streams the items of `{"nftables": [ … ]}` to `onItem`. Returns false without calling it
   * when the text is not that shape (then parse it with `parseDocument`), else the first syntax
   * error, if any, after the items before it. */
  streamListing(onItem: (item: JsonNode) => void): boolean | JsonSyntaxError {
    if (!/^\s*\{\s*"nftables"\s*:\s*\[/.test(this.text.slice(0, 64))) return false;
    const error = this.build((node, stack) => {
      // Depth 2 is an item of the listing array: hand it out instead of keeping it.
      if (stack.length !== 2) return false;
      onItem(node);
      return true;
    });
    return error ?? true;
  }

  /** Visits the text, building nodes. `take(node, stack)` may claim a finished node (return
   * true) so it is not added to its parent. Returns the first syntax error; nothing is built
   * after it. */
  private build(take: (node: JsonNode, stack: readonly Frame[]) => boolean): JsonSyntaxError | undefined {
    const stack: Frame[] = [];
    let error: JsonSyntaxError | undefined;
    const finish = (node: JsonNode): void => {
      if (take(node, stack)) return;
      stack[stack.length - 1]?.children.push(node);
    };
    const open = (type: Frame['type'], offset: number): void => {
      if (error) return;
      if (stack.length >= MAX_JSON_DEPTH) {
        error = { message: `nesting deeper than ${MAX_JSON_DEPTH} levels`, offset, length: 1 };
        return;
      }
      const isObject = type === 'object';
      stack.push({ type, offset, children: [], keys: isObject ? [] : undefined, keyOffsets: isObject ? [] : undefined });
    };
    const close = (offset: number, length: number): void => {
      if (error) return;
      const frame = stack.pop()!;
      const end = offset + length;
      finish(new JsonNode(frame.type, frame.offset, end - frame.offset, null, frame.children, frame.keys, frame.keyOffsets));
    };
    const visitor: JSONVisitor = {
      onObjectBegin: (offset) => open('object', offset),
      onArrayBegin: (offset) => open('array', offset),
      onObjectEnd: close,
      onArrayEnd: close,
      onObjectProperty: (property, offset) => {
        if (error) return;
        const frame = stack[stack.length - 1]!;
        frame.keys!.push(property);
        frame.keyOffsets!.push(offset);
      },
      onLiteralValue: (value: unknown, offset, length) => {
        if (error) return;
        finish(new JsonNode(literalType(value), offset, length, value as JsonNode['value'], undefined, undefined, undefined));
      },
      onError: (code, offset, length) => {
        error ??= { message: describeParseError(printParseErrorCode(code)), offset, length };
      },
    };
    try {
      visit(this.text, visitor, PARSE_OPTIONS);
    } catch (e) {
      // jsonc-parser's scanner recurses too: on a document nested thousands deep it overflows the
      // stack after the error above was set, which is the one to report.
      if (!(e instanceof RangeError) || !error) throw e;
    }
    return error;
  }
}

function literalType(value: unknown): JsonNode['type'] {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return 'string';
    case 'number':
      return 'number';
    default:
      return 'boolean';
  }
}

/** `CommaExpected` → `comma expected`. */
function describeParseError(code: string): string {
  return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}
