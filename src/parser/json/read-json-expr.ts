import type { JsonNode as Node } from './parse-json-tree.js';
import type {
  Binop,
  ElementExpr,
  Expr,
  SetLiteral,
  SetRef,
  Span,
  Stmt,
  VerdictName,
} from '../../model/ast.js';
import {
  JsonSource,
  UnsupportedJson,
  asArray,
  asNumber,
  asString,
  numberProp,
  keyCount,
  objectEntries,
  property,
  singleEntry,
  stringListProp,
  stringProp,
} from './json-source.js';
import { formatDuration, tcpOptionName } from '../../model/datatypes.js';
import { invalidTypeWarning } from '../invalid-type-warning.js';

// Expressions of nft's JSON schema (nftables doc/libnftables-json.adoc "EXPRESSIONS", written by
// src/json.c `*_expr_json`, read by src/parser_json.c `json_parse_expr`).

/** Meta keys nft prints without the `meta` prefix (src/meta.c `meta_key_is_unqualified`). */
const UNQUALIFIED_META_KEYS: ReadonlySet<string> = new Set(['iif', 'oif', 'iifname', 'oifname', 'iifgroup', 'oifgroup']);

/** A value json.c wrote as nft's text of it, `0x1f90 [invalid type]` (Literal.invalidType). */
const INVALID_TYPE = /^(0x[0-9a-f]+|[0-9]+) \[invalid type\]$/;

const BINOPS: ReadonlySet<string> = new Set(['&', '|', '^', '<<', '>>']);

export const VERDICT_NAMES: ReadonlySet<string> = new Set(['accept', 'drop', 'continue', 'return', 'jump', 'goto', 'queue']);

/** The keys each tagged expression may carry (json.c `*_expr_json` writes them; parser_json.c
 * reads them). */
const EXPR_KEYS: Readonly<Record<string, readonly string[]>> = {
  payload: ['protocol', 'field', 'tunnel', 'base', 'offset', 'len'],
  exthdr: ['name', 'field', 'offset'],
  'tcp option': ['name', 'field', 'base', 'offset', 'len'],
  'ip option': ['name', 'field'],
  'sctp chunk': ['name', 'field'],
  meta: ['key'],
  ct: ['key', 'dir', 'family'],
  fib: ['result', 'flags'],
  rt: ['key', 'family'],
  socket: ['key', 'level'],
  osf: ['key', 'ttl'],
  ipsec: ['key', 'family', 'dir', 'spnum'],
  numgen: ['mode', 'mod', 'offset'],
  jhash: ['mod', 'seed', 'offset', 'expr'],
  symhash: ['mod', 'seed', 'offset'],
  prefix: ['addr', 'len'],
  map: ['key', 'data'],
  vmap: ['key', 'data'],
  jump: ['target'],
  goto: ['target'],
};

export function isQualifiedMetaKey(key: string): boolean {
  return !UNQUALIFIED_META_KEYS.has(key);
}

/** Reads the statements an element carries; injected by the statement reader (elements and
 * statements refer to each other). */
export type ElementStmtReader = (src: JsonSource, key: string, value: Node) => Stmt | undefined;

export class ExprReader {
  constructor(
    private readonly src: JsonSource,
    private readonly readElementStmt: ElementStmtReader,
  ) {}

  read(node: Node): Expr {
    const span = this.src.span(node);
    switch (node.type) {
      case 'string':
        return this.readString(node.value as string, span);
      case 'number':
        // The JSON spelling keeps integers beyond 2^53 exact.
        return { kind: 'literal', span, text: this.src.raw(node) };
      case 'boolean':
        // Booleans are the `exists`/`missing` of extension headers, options and fib.
        return { kind: 'literal', span, text: node.value ? 'exists' : 'missing', value: { type: 'boolean', b: node.value as boolean } };
      case 'array':
        // A bare array is a list of bitmask values (`ct state established,related`).
        return { kind: 'flag-list', span, items: asArray(node).map((item) => this.read(item)) };
      case 'object':
        return this.readTagged(node, span);
      case 'null':
        throw new UnsupportedJson(`unexpected ${node.type} as an expression`, node);
      default: {
        const exhaustive: never = node.type;
        return exhaustive;
      }
    }
  }

  private readString(s: string, span: Span): Expr {
    if (s.startsWith('@')) return { kind: 'set-ref', span, name: s.slice(1) };
    if (s === '*') return { kind: 'wildcard', span };
    const bits = INVALID_TYPE.exec(s)?.[1];
    if (bits !== undefined) {
      this.src.diagnostics.push(invalidTypeWarning(bits, span));
      return { kind: 'literal', span, text: bits, invalidType: true };
    }
    return { kind: 'literal', span, text: s };
  }

  private readTagged(node: Node, span: Span): Expr {
    const [key, v] = singleEntry(node);
    const keys = EXPR_KEYS[key];
    if (keys) this.src.checkKeys(v, key, keys);
    if (BINOPS.has(key)) return this.readBinop(key as Binop['op'], v, span);
    if (VERDICT_NAMES.has(key)) {
      const target = v.type === 'object' ? stringProp(v, 'target') : undefined;
      return { kind: 'verdict', span, verdict: key as VerdictName, ...(target !== undefined && { target }) };
    }
    switch (key) {
      case 'payload':
        return this.readPayload(v, span);
      case 'exthdr': {
        const field = stringProp(v, 'field');
        const index = numberProp(v, 'offset');
        return {
          kind: 'exthdr',
          span,
          header: asString(req(v, 'name')),
          ...(field !== undefined ? { field } : { prefixed: true }),
          ...(index !== undefined && { index }),
        };
      }
      case 'tcp option': {
        const name = stringProp(v, 'name');
        const field = stringProp(v, 'field');
        const option =
          name ?? `@${asNumber(req(v, 'base'))},${asNumber(req(v, 'offset'))},${asNumber(req(v, 'len'))}`;
        return { kind: 'tcp-option', span, option: tcpOptionName(option), ...(field !== undefined && { field }) };
      }
      case 'ip option':
      case 'sctp chunk': {
        const name = asString(req(v, 'name'));
        const field = stringProp(v, 'field');
        return key === 'ip option'
          ? { kind: 'ip-option', span, option: name, ...(field !== undefined && { field }) }
          : { kind: 'sctp-chunk', span, chunk: name, ...(field !== undefined && { field }) };
      }
      case 'meta': {
        const k = asString(req(v, 'key'));
        return { kind: 'meta', span, key: k, qualified: isQualifiedMetaKey(k) };
      }
      case 'ct':
        return { kind: 'ct', span, ...readCtKey(v) };
      case 'fib':
        return { kind: 'fib', span, flags: stringListProp(v, 'flags'), result: asString(req(v, 'result')) };
      case 'rt': {
        const family = ipFamily(v);
        return { kind: 'rt', span, key: asString(req(v, 'key')), ...(family && { family }) };
      }
      case 'socket': {
        const level = numberProp(v, 'level');
        return { kind: 'socket', span, key: asString(req(v, 'key')), ...(level !== undefined && { level }) };
      }
      case 'osf': {
        const k = asString(req(v, 'key'));
        if (k !== 'name' && k !== 'version') throw new UnsupportedJson(`unknown osf key "${k}"`, v);
        const ttl = stringProp(v, 'ttl');
        return { kind: 'osf', span, key: k, ...(ttl !== undefined && { ttl }) };
      }
      case 'ipsec': {
        const dir = asString(req(v, 'dir'));
        if (dir !== 'in' && dir !== 'out') throw new UnsupportedJson(`unknown ipsec direction "${dir}"`, v);
        // nft prints no `spnum 0` (src/xfrm.c `xfrm_expr_print`).
        const spnum = numberProp(v, 'spnum') || undefined;
        const family = ipFamily(v);
        return {
          kind: 'ipsec',
          span,
          dir,
          key: asString(req(v, 'key')),
          ...(spnum !== undefined && { spnum }),
          ...(family && { family }),
        };
      }
      case 'numgen': {
        const mode = asString(req(v, 'mode'));
        if (mode !== 'inc' && mode !== 'random') throw new UnsupportedJson(`unknown numgen mode "${mode}"`, v);
        // json.c always writes `offset`; the listing omits `offset 0`.
        const offset = numberProp(v, 'offset') || undefined;
        return { kind: 'numgen', span, mode, mod: asNumber(req(v, 'mod')), ...(offset !== undefined && { offset }) };
      }
      case 'jhash':
      case 'symhash': {
        const e = property(v, 'expr');
        const seed = numberProp(v, 'seed');
        const offset = numberProp(v, 'offset') || undefined;
        return {
          kind: 'hash',
          span,
          type: key,
          mod: asNumber(req(v, 'mod')),
          ...(e && { expr: this.read(e) }),
          ...(seed !== undefined && { seed }),
          ...(offset !== undefined && { offset }),
        };
      }
      case 'prefix':
        return { kind: 'prefix', span, expr: this.read(req(v, 'addr')), length: asNumber(req(v, 'len')) };
      case 'range': {
        const [low, high, ...rest] = asArray(v);
        if (!low || !high || rest.length) throw new UnsupportedJson('a range needs exactly two values', v);
        return { kind: 'range', span, low: this.read(low), high: this.read(high) };
      }
      case 'concat':
        return { kind: 'concat', span, parts: asArray(v).map((p) => this.read(p)) };
      case 'set':
        return this.readSetOrRef(v, span);
      case 'map':
      case 'vmap':
        return {
          kind: 'map',
          span,
          key: this.read(req(v, 'key')),
          map: this.readSetOrRef(req(v, 'data'), this.src.span(req(v, 'data'))),
          vmap: key === 'vmap',
        };
      case 'elem':
        return this.readElementBody(v, span);
      default:
        throw new UnsupportedJson(`unknown expression "${key}"`, node);
    }
  }

  /** `{"|": [a, b, c]}`: json.c flattens a chain of the same operator; it associates left. */
  private readBinop(op: Binop['op'], v: Node, span: Span): Binop {
    const [first, ...rest] = asArray(v);
    if (!first || rest.length === 0) throw new UnsupportedJson(`"${op}" needs at least two operands`, v);
    let left = this.read(first);
    let result: Binop | undefined;
    for (const operand of rest) {
      result = { kind: 'binop', span, op, left, right: this.read(operand) };
      left = result;
    }
    return result!;
  }

  private readPayload(v: Node, span: Span): Expr {
    const protocol = stringProp(v, 'protocol');
    if (protocol !== undefined) {
      const inner = stringProp(v, 'tunnel');
      return { kind: 'payload', span, protocol, field: asString(req(v, 'field')), ...(inner !== undefined && { inner }) };
    }
    const base = asString(req(v, 'base'));
    if (base !== 'll' && base !== 'nh' && base !== 'th' && base !== 'ih') {
      throw new UnsupportedJson(`unknown payload base "${base}"`, v);
    }
    return { kind: 'raw-payload', span, base, offset: asNumber(req(v, 'offset')), length: asNumber(req(v, 'len')) };
  }

  /** The data of a map lookup: `{"set": [...]}` or `"@name"`; also the inside of `{"set": …}`,
   * where a non-array is a one-element set (parser_json.c `json_parse_set_expr`). */
  readSetOrRef(v: Node, span: Span): SetLiteral | SetRef {
    if (v.type === 'string' && (v.value as string).startsWith('@')) {
      return { kind: 'set-ref', span, name: (v.value as string).slice(1) };
    }
    const tagged = keyCount(v) === 1 ? property(v, 'set') : undefined;
    if (tagged) return this.readSetOrRef(tagged, span);
    const items = v.type === 'array' ? asArray(v) : [v];
    return { kind: 'set', span, elements: items.map((item) => this.readElement(item)) };
  }

  /** One set element: a value, `{"elem": {...}}` with attributes, or `[key, data]` for maps. */
  readElement(item: Node): ElementExpr {
    const span = this.src.span(item);
    if (item.type === 'array') {
      const [k, d, ...rest] = asArray(item);
      if (!k || !d || rest.length) throw new UnsupportedJson('a map element needs a key and a value', item);
      return { ...this.readElementKey(k), span, data: this.read(d) };
    }
    return this.readElementKey(item);
  }

  private readElementKey(node: Node): ElementExpr {
    const elem = node.type === 'object' ? property(node, 'elem') : undefined;
    if (elem && keyCount(node) === 1) return this.readElementBody(elem, this.src.span(node));
    return { kind: 'element', span: this.src.span(node), key: this.read(node) };
  }

  /** The inside of `{"elem": {"val": …, "timeout": s, "expires": s, "comment": …, "counter": …}}`;
   * statements are merged into the object as keys (json.c `__set_elem_expr_json`). */
  private readElementBody(v: Node, span: Span): ElementExpr {
    let key: Expr | undefined;
    let timeout: string | undefined;
    let expires: string | undefined;
    let comment: string | undefined;
    const stmts: Stmt[] = [];
    for (const [k, value] of objectEntries(v)) {
      switch (k) {
        case 'val':
          key = this.read(value);
          break;
        case 'timeout':
          timeout = formatDuration(asNumber(value) * 1000);
          break;
        case 'expires':
          expires = formatDuration(asNumber(value) * 1000);
          break;
        case 'comment':
          comment = asString(value);
          break;
        default: {
          const stmt = this.readElementStmt(this.src, k, value);
          if (!stmt) throw new UnsupportedJson(`unknown element attribute "${k}"`, value);
          stmts.push(stmt);
        }
      }
    }
    if (!key) throw new UnsupportedJson('an element needs "val"', v);
    return {
      kind: 'element',
      span,
      key,
      ...(timeout !== undefined && { timeout }),
      ...(expires !== undefined && { expires }),
      ...(comment !== undefined && { comment }),
      ...(stmts.length > 0 && { stmts }),
    };
  }
}

/** `{"key": "saddr", "dir": "original"}`; 1.1.x and the py tests also write `"key": "ip saddr"`
 * for the family-qualified address keys. */
export function readCtKey(v: Node): { key: string; dir?: 'original' | 'reply'; family?: 'ip' | 'ip6' } {
  const raw = asString(req(v, 'key'));
  const written = stringProp(v, 'dir');
  if (written !== undefined && written !== 'original' && written !== 'reply') {
    throw new UnsupportedJson(`unknown ct direction "${written}"`, v);
  }
  const dir: 'original' | 'reply' | undefined = written;
  const m = /^(ip6?) (.+)$/.exec(raw);
  const family = (m?.[1] as 'ip' | 'ip6' | undefined) ?? ipFamily(v);
  return { key: m ? m[2]! : raw, ...(dir !== undefined && { dir }), ...(family && { family }) };
}

function ipFamily(v: Node): 'ip' | 'ip6' | undefined {
  const family = stringProp(v, 'family');
  if (family === undefined) return undefined;
  if (family !== 'ip' && family !== 'ip6') throw new UnsupportedJson(`unknown family "${family}"`, v);
  return family;
}

/** A required property. */
export function req(node: Node, key: string): Node {
  const v = property(node, key);
  if (v === undefined) throw new UnsupportedJson(`missing "${key}"`, node);
  return v;
}
