// Data files a user writes beside the rulesets (packets, scenarios, hosts, `ip -j` output), in
// JSON or YAML: read with a way back from a field path to file:line:column, so every problem with
// a field is reported where it was written, whichever syntax the user chose.

import { readFileSync } from 'node:fs';
import { findNodeAtLocation, getNodeValue, parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';
import { isMap, isScalar, isSeq, parseDocument } from 'yaml';
import type { Span } from '../model/ast.js';
import type { Diagnostic } from '../model/diagnostic.js';
import { LineIndex } from '../model/line-index.js';
import type { FieldPath, InputError } from '../sim/read-fields.js';

/** An input file (JSON or YAML): its value, and a way to turn a field path into a span of its
 * text, so that every problem names file:line:column whichever syntax the user wrote. */
export interface InputFile {
  readonly file: string;
  readonly value: unknown;
  readonly spanOf: (path: FieldPath) => Span | undefined;
}

/** Where a field path lands in a parsed file: the deepest node the path reaches (an unknown
 * field's key and value, a missing field's object), as an offset and length. */
type Locate = (path: FieldPath) => { readonly offset: number; readonly length: number } | undefined;

/** YAML when the name says so (.yaml, .yml), JSON when it says .json; otherwise YAML unless the
 * text starts as a JSON object or array does. */
function isYaml(file: string, text: string): boolean {
  if (/\.ya?ml$/i.test(file)) return true;
  if (/\.json$/i.test(file)) return false;
  return !/^\s*[{[]/.test(text);
}

/** Reads a JSON or YAML data file; problems go to `diagnostics` with their span. */
export function readInputFile(file: string, sources: Map<string, string>, diagnostics: Diagnostic[]): InputFile | undefined {
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch {
    diagnostics.push({ severity: 'error', code: 'read-error', message: `cannot read '${file}'` });
    return undefined;
  }
  sources.set(file, text);
  const lines = new LineIndex(text);
  const spanAt = (offset: number, length: number): Span => {
    const line = lines.lineOf(offset);
    return { file, start: offset, end: offset + length, line: line + 1, column: offset - lines.startOf(line) + 1 };
  };
  const fail = (code: string, message: string, at?: { offset: number; length: number }): undefined => {
    diagnostics.push({ severity: 'error', code, message, ...(at && { span: spanAt(at.offset, at.length) }) });
    return undefined;
  };
  const parsed = isYaml(file, text) ? parseYaml(text, file, fail) : parseJson(text, file, fail);
  if (!parsed) return undefined;
  const spanOf = (path: FieldPath): Span | undefined => {
    const at = parsed.locate(path);
    return at && spanAt(at.offset, at.length);
  };
  return { file, value: parsed.value, spanOf };
}

type Fail = (code: string, message: string, at?: { offset: number; length: number }) => undefined;

function parseJson(text: string, file: string, fail: Fail): { value: unknown; locate: Locate } | undefined {
  const errors: ParseError[] = [];
  const tree = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0 || !tree) {
    for (const e of errors) fail('json', `JSON: ${printParseErrorCode(e.error)}`, e);
    return tree ? undefined : fail('json', `${file} is empty`);
  }
  const locate: Locate = (path) => {
    for (let n = path.length; n >= 0; n--) {
      const node: Node | undefined = findNodeAtLocation(tree, [...path.slice(0, n)]);
      if (!node) continue;
      const target = n === path.length && node.parent?.type === 'property' ? node.parent : node;
      return target;
    }
    return undefined;
  };
  return { value: getNodeValue(tree), locate };
}

function parseYaml(text: string, file: string, fail: Fail): { value: unknown; locate: Locate } | undefined {
  const doc = parseDocument(text, { prettyErrors: false });
  if (doc.errors.length > 0) {
    for (const e of doc.errors) fail('yaml', `YAML: ${e.message}`, { offset: e.pos[0], length: Math.max(0, e.pos[1] - e.pos[0]) });
    return undefined;
  }
  if (doc.contents === null) return fail('yaml', `${file} is empty`);
  const locate: Locate = (path) => {
    let node: unknown = doc.contents;
    let range = doc.contents!.range;
    for (const [i, segment] of path.entries()) {
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
        if (!pair || !isScalar(pair.key) || !pair.key.range) break;
        const value = pair.value as { range?: [number, number, number] } | null;
        // The whole `key: value` for the last field, as the JSON path shows the property.
        range = i === path.length - 1 ? [pair.key.range[0], (value?.range ?? pair.key.range)[1], 0] : (value?.range ?? pair.key.range);
        node = pair.value;
      } else if (isSeq(node) && typeof segment === 'number' && node.items[segment]) {
        node = node.items[segment];
        range = (node as { range?: [number, number, number] }).range ?? range;
      } else break;
    }
    return range ? { offset: range[0], length: range[1] - range[0] } : undefined;
  };
  return { value: doc.toJS({ maxAliasCount: 100 }), locate };
}

/** The field errors of a read value as diagnostics at their place in the file. */
export function inputDiagnostics(errors: readonly InputError[], input: InputFile): Diagnostic[] {
  return errors.map((e) => {
    const span = input.spanOf(e.path);
    return { severity: 'error', code: 'input', message: e.message, ...(span && { span }) };
  });
}
