// Data files a user writes beside the rulesets (packets, scenarios, hosts, `ip -j` output), in
// JSON or YAML: read with a way back from a field path to file:line:column, so every problem with
// a field is reported where it was written, whichever syntax the user chose.

import { findNodeAtLocation, getNodeValue, parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';
import { isMap, isScalar, isSeq, parseDocument, visit } from 'yaml';
import type { Span } from '../model/ast.js';
import type { Diagnostic } from '../model/diagnostic.js';
import { LineIndex } from '../model/line-index.js';
import type { FieldPath, InputError } from '../sim/read-fields.js';
import { readTextFile } from './read-text-file.js';

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
    text = readTextFile(file);
  } catch {
    diagnostics.push({ severity: 'error', code: 'read-error', message: `cannot read '${file}'` });
    return undefined;
  }
  sources.set(file, text);
  return parseInputText(file, text, diagnostics);
}

/** readInputFile for a text already in memory (the library API takes texts, not paths). */
export function parseInputText(file: string, text: string, diagnostics: Diagnostic[]): InputFile | undefined {
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
  // Strict JSON (what kubectl, nft -j and ip -j write) goes through JSON.parse, with spans found
  // only for the paths asked for: on a 62 MB `kubectl get -o json` listing, jsonc-parser's tree
  // took 16 s and 0.9 GB, JSON.parse 1.3 s. jsonc-parser reads what JSON.parse refuses: comments,
  // trailing commas, and syntax errors, which it places.
  try {
    return { value: JSON.parse(text), locate: locateInJson(text) };
  } catch {
    // not strict JSON: read it again below
  }
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

/** A value of a JSON text: where it starts and ends, and for a member of an object where its key
 * starts (a located field is shown as `"key": value`, as jsonc-parser's property node is). */
interface JsonValueSpan {
  readonly key: string | number;
  readonly keyStart: number;
  readonly start: number;
  readonly end: number;
}

/** The members of a container and where it ends. */
interface JsonContainer {
  readonly members: readonly JsonValueSpan[];
  readonly end: number;
}

/** Locates field paths in a text JSON.parse accepted. A container's members are scanned the first
 * time a path goes through it and kept, and so are those of the containers in it: locating every
 * item of a 20,000-item list (`items` in the root object) costs one pass over the text. What no
 * path reaches is never scanned. */
function locateInJson(text: string): Locate {
  const containers = new Map<number, JsonContainer>();
  const membersOf = (start: number): readonly JsonValueSpan[] => {
    let found = containers.get(start);
    if (!found) containers.set(start, (found = scanMembers(text, start, containers)));
    return found.members;
  };
  // JSON.parse accepted the text: its value is all of it but the spaces around.
  const root = { start: skipJsonSpace(text, 0), end: text.trimEnd().length };
  return (path) => {
    let at: { readonly start: number; readonly end: number; readonly keyStart?: number } = root;
    for (const segment of path) {
      const member = memberAt(text, at.start, segment, membersOf);
      // As far as the path goes: the value reached (an unknown field's object).
      if (!member) return { offset: at.start, length: at.end - at.start };
      at = member;
    }
    const start = at.keyStart ?? at.start;
    return { offset: start, length: at.end - start };
  };
}

/** The member `segment` of the container starting at `start`; keyStart only for an object's. */
function memberAt(
  text: string,
  start: number,
  segment: string | number,
  membersOf: (start: number) => readonly JsonValueSpan[],
): { start: number; end: number; keyStart?: number } | undefined {
  const open = text.charCodeAt(start);
  if (open === OPEN_BRACKET) {
    const member = typeof segment === 'number' ? membersOf(start)[segment] : undefined;
    return member && { start: member.start, end: member.end };
  }
  if (open !== OPEN_BRACE) return undefined;
  const list = membersOf(start);
  // The last of equal keys, as JSON.parse keeps the last.
  for (let i = list.length - 1; i >= 0; i--) if (list[i]!.key === String(segment)) return list[i];
  return undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

function skipJsonSpace(text: string, i: number): number {
  while (i < text.length && text.charCodeAt(i) <= 0x20) i++;
  return i;
}

/** The end of the string starting at `i` (its opening quote). */
function skipJsonString(text: string, i: number): number {
  for (let j = text.indexOf('"', i + 1); j >= 0; j = text.indexOf('"', j + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(j - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return j + 1;
  }
  return text.length;
}

/** The end of the value starting at `i`. */
function skipJsonValue(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return skipJsonString(text, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    for (; i < text.length; i++) {
      const d = text.charCodeAt(i);
      // `[` and `]` differ from `{` and `}` only in bit 0x20: one test for each pair, as this
      // loop runs over every character of a skipped container.
      const bracket = d | 0x20;
      if (d === QUOTE) i = skipJsonString(text, i) - 1;
      else if (bracket === OPEN_BRACE) depth++;
      else if (bracket === CLOSE_BRACE && --depth === 0) return i + 1;
    }
    return text.length;
  }
  while (i < text.length) {
    const d = text.charCodeAt(i);
    if (d <= 0x20 || d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET) break;
    i++;
  }
  return i;
}

/** The members of the object or array starting at `start`. With `nested`, the members of the
 * containers among them are scanned (not skipped) and put there: a path that goes into one
 * finds them without a second pass. */
function scanMembers(text: string, start: number, nested?: Map<number, JsonContainer>): JsonContainer {
  const isObject = text.charCodeAt(start) === OPEN_BRACE;
  const members: JsonValueSpan[] = [];
  let i = skipJsonSpace(text, start + 1);
  for (let index = 0; text.charCodeAt(i) !== CLOSE_BRACE && text.charCodeAt(i) !== CLOSE_BRACKET && i < text.length; index++) {
    const keyStart = i;
    let key: string | number = index;
    if (isObject) {
      const keyEnd = skipJsonString(text, i);
      key = JSON.parse(text.slice(i, keyEnd)) as string;
      i = skipJsonSpace(text, keyEnd);
      if (text.charCodeAt(i) === COLON) i = skipJsonSpace(text, i + 1);
    }
    let end: number;
    const open = text.charCodeAt(i);
    if (nested && (open === OPEN_BRACE || open === OPEN_BRACKET)) {
      const container = scanMembers(text, i);
      nested.set(i, container);
      end = container.end;
    } else end = skipJsonValue(text, i);
    members.push({ key, keyStart, start: i, end });
    i = skipJsonSpace(text, end);
    if (text.charCodeAt(i) === COMMA) i = skipJsonSpace(text, i + 1);
  }
  return { members, end: i + 1 };
}

function parseYaml(text: string, file: string, fail: Fail): { value: unknown; locate: Locate } | undefined {
  const doc = parseDocument(text, { prettyErrors: false });
  if (doc.errors.length > 0) {
    // The yaml library reports a document nested past the stack with the engine's message.
    for (const e of doc.errors) fail('yaml', `YAML: ${/call stack/i.test(e.message) ? 'nesting too deep' : e.message}`, { offset: e.pos[0], length: Math.max(0, e.pos[1] - e.pos[0]) });
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
  try {
    return { value: doc.toJS({ maxAliasCount: MAX_YAML_ALIASES }), locate };
  } catch (e) {
    if (!(e instanceof ReferenceError)) throw e;
    let alias: [number, number, number] | undefined;
    visit(doc, { Alias: (_, node) => ((alias = node.range ?? undefined), visit.BREAK) });
    return fail('yaml', `YAML: ${e.message}`, alias && { offset: alias[0], length: alias[1] - alias[0] });
  }
}

/** The yaml library's guard against files whose aliases expand exponentially ("billion
 * laughs"): it counts the nodes the aliases stand for. A scenario reusing one packet or host a
 * few hundred times stays far below it. */
const MAX_YAML_ALIASES = 10_000;

/** The field errors of a read value as diagnostics at their place in the file. */
export function inputDiagnostics(errors: readonly InputError[], input: InputFile): Diagnostic[] {
  return errors.map((e) => {
    const span = input.spanOf(e.path);
    return { severity: 'error', code: 'input', message: e.message, ...(span && { span }) };
  });
}
