import type { Node } from 'jsonc-parser';
import type { Span } from '../../model/ast.js';
import type { Diagnostic } from '../../model/diagnostic.js';

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
  private readonly lineStarts: number[] = [0];
  /** Where the JSON fragment whose nodes are being read starts in `text`: a big listing is parsed
   * one top-level object at a time (see parse-nft-json.ts), so node offsets are relative to it. */
  base = 0;

  constructor(
    readonly file: string,
    readonly text: string,
  ) {
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) this.lineStarts.push(i + 1);
  }

  spanAt(start: number, end: number): Span {
    // Binary search for the last line start at or before `start`.
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid]! <= start) lo = mid;
      else hi = mid - 1;
    }
    return { file: this.file, start, end, line: lo + 1, column: start - this.lineStarts[lo]! + 1 };
  }

  span(node: Node): Span {
    return this.spanAt(this.base + node.offset, this.base + node.offset + node.length);
  }

  /** The node's JSON text as written, whitespace collapsed so a multi-line object stays one line. */
  slice(node: Node): string {
    return this.raw(node).replace(/\s+/g, ' ');
  }

  /** The node's JSON text exactly as written. */
  raw(node: Node): string {
    return this.text.slice(this.base + node.offset, this.base + node.offset + node.length);
  }

  /** Reports the keys of object `node` that nft's schema does not have for `what`: kept out of
   * the model, so never silently. */
  checkKeys(node: Node, what: string, allowed: readonly string[]): void {
    if (node.type !== 'object') return;
    for (const p of node.children ?? []) {
      const key = p.children?.[0]?.value as string | undefined;
      if (key !== undefined && !allowed.includes(key)) {
        this.report('warning', 'unsupported', `unknown key "${key}" in "${what}" ignored`, p);
      }
    }
  }

  report(severity: Diagnostic['severity'], code: string, message: string, node?: Node): void {
    this.diagnostics.push(node ? { severity, code, message, span: this.span(node) } : { severity, code, message });
  }
}

// ---------------------------------------------------------------------------------------------
// Typed access to jsonc-parser nodes. Every accessor throws UnsupportedJson on a wrong shape.

/** The value nodes of an object's properties, by key, in source order. */
export function objectEntries(node: Node): [string, Node][] {
  if (node.type !== 'object') throw new UnsupportedJson(`expected an object, found ${node.type}`, node);
  const out: [string, Node][] = [];
  for (const property of node.children ?? []) {
    const [key, value] = property.children ?? [];
    if (key && value) out.push([String(key.value), value]);
  }
  return out;
}

export function property(node: Node, key: string): Node | undefined {
  if (node.type !== 'object') return undefined;
  for (const p of node.children ?? []) {
    const k = p.children?.[0];
    if (k && k.value === key) return p.children?.[1];
  }
  return undefined;
}

/** `{"key": value}`: nft's tagged-union shape for statements and expressions. */
export function singleEntry(node: Node): [string, Node] {
  const entries = objectEntries(node);
  if (entries.length !== 1) throw new UnsupportedJson(`expected an object with one key, found ${entries.length}`, node);
  return entries[0]!;
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
  return node.children ?? [];
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
