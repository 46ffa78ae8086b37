import type { JsonNode as Node } from './parse-json-tree.js';
import type { Span } from '../../model/ast.js';
import type { Diagnostic } from '../../model/diagnostic.js';
import { LineIndex } from '../../model/line-index.js';

/** Thrown by the readers when a JSON value has a shape nft never writes there; caught at the
 * nearest statement or top-level object, which then becomes an `unsupported` node with a
 * diagnostic. An exception rather than `undefined` returns because an unknown key can sit at any
 * depth of an expression and the whole statement is what gets kept verbatim. */
export class UnsupportedJson extends Error {
  constructor(
    message: string,
    readonly node: Node,
  ) {
    super(message);
  }
}

/** One JSON input: its text (for spans and verbatim slices), line starts and the diagnostics found
 * so far. */
export class JsonSource {
  readonly diagnostics: Diagnostic[] = [];
  private readonly lines: LineIndex;
  /** The line of the last span: spans are asked for mostly in text order, so the next one is
   * usually on that line or a few after it. */

  constructor(
    readonly file: string,
    readonly text: string,
  ) {
    this.lines = new LineIndex(text);
  }

  spanAt(start: number, end: number): Span {
    const line = this.lines.lineOf(start);
    return { file: this.file, start, end, line: line + 1, column: start - this.lines.startOf(line) + 1 };
  }

  span(node: Node): Span {
    return this.spanAt(node.offset, node.offset + node.length);
  }

  /** The node's JSON text as written, whitespace collapsed so a multi-line object stays one line. */
  slice(node: Node): string {
    return this.raw(node).replace(/\s+/g, ' ');
  }

  /** The node's JSON text exactly as written. */
  raw(node: Node): string {
    return this.text.slice(node.offset, node.offset + node.length);
  }

  /** Reports the keys of object `node` that nft's schema does not have for `what`: kept out of
   * the model, so never silently. */
  checkKeys(node: Node, what: string, allowed: readonly string[]): void {
    const keys = node.keys;
    if (!keys) return;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (allowed.includes(key)) continue;
      // The span of the property: from its key to the end of its value.
      const value = node.children![i]!;
      const start = node.keyOffsets![i]!;
      this.diagnostics.push({
        severity: 'warning',
        code: 'unsupported',
        message: `unknown key "${key}" in "${what}" ignored`,
        span: this.spanAt(start, value.offset + value.length),
      });
    }
  }

  report(severity: Diagnostic['severity'], code: string, message: string, node?: Node): void {
    this.diagnostics.push(node ? { severity, code, message, span: this.span(node) } : { severity, code, message });
  }
}

// ---------------------------------------------------------------------------------------------
// Typed access to JSON nodes. Every accessor throws UnsupportedJson on a wrong shape.

/** The value nodes of an object's properties, by key, in source order. */
export function objectEntries(node: Node): [string, Node][] {
  const keys = node.keys;
  if (!keys) throw new UnsupportedJson(`expected an object, found ${node.type}`, node);
  return keys.map((key, i) => [key, node.children![i]!]);
}

/** The number of keys of an object; 0 for any other value. */
export function keyCount(node: Node): number {
  return node.keys ? node.keys.length : 0;
}

export function property(node: Node, key: string): Node | undefined {
  const keys = node.keys;
  if (!keys) return undefined;
  // A scan: nft's objects have a handful of keys.
  for (let i = 0; i < keys.length; i++) if (keys[i] === key) return node.children![i];
  return undefined;
}

/** `{"key": value}`: nft's tagged-union shape for statements and expressions. */
export function singleEntry(node: Node): [string, Node] {
  const keys = node.keys;
  if (!keys) throw new UnsupportedJson(`expected an object, found ${node.type}`, node);
  if (keys.length !== 1) throw new UnsupportedJson(`expected an object with one key, found ${keys.length}`, node);
  return [keys[0]!, node.children![0]!];
}

export function asString(node: Node): string {
  if (node.type !== 'string') throw new UnsupportedJson(`expected a string, found ${node.type}`, node);
  return node.value as string;
}

export function asNumber(node: Node): number {
  if (node.type !== 'number') throw new UnsupportedJson(`expected a number, found ${node.type}`, node);
  return node.value as number;
}

export function asArray(node: Node): Node[] {
  if (node.type !== 'array') throw new UnsupportedJson(`expected an array, found ${node.type}`, node);
  return node.children as Node[];
}

export function stringProp(node: Node, key: string): string | undefined {
  const v = property(node, key);
  return v === undefined ? undefined : asString(v);
}

export function numberProp(node: Node, key: string): number | undefined {
  const v = property(node, key);
  return v === undefined ? undefined : asNumber(v);
}

export function boolProp(node: Node, key: string): boolean {
  const v = property(node, key);
  return v !== undefined && v.value === true;
}

/** nft writes a one-item list as the bare item (`"flags": "interval"` vs `["interval", …]`,
 * json.c `json_add_array_new` and the device lists). */
export function stringListProp(node: Node, key: string): string[] {
  const v = property(node, key);
  if (v === undefined) return [];
  return v.type === 'array' ? asArray(v).map(asString) : [asString(v)];
}
