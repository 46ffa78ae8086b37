import type { CstNode, IToken } from 'chevrotain';
import type {
  ElementExpr, Expr, Family, Literal, SetLiteral, SetRef, Span, Stmt, Value, VerdictName,
} from '../../model/ast.js';
import type { Diagnostic } from '../../model/diagnostic.js';
import type { LineIndex } from '../../model/line-index.js';
import { invalidTypeWarning } from '../invalid-type-warning.js';
import { tcpOptionName } from '../../model/datatypes.js';

// CST → AST for expressions (selectors, values, sets) and the small helpers the statement and
// item builders share. Spans are computed from chunk-local CST locations plus the chunk's base.

/** Where the chunk being built sits in its file. */
export interface ChunkPos {
  readonly file: string;
  readonly text: string;
  readonly base: number;
  readonly baseLine: number;
  /** Chunk-local offsets where its lines start. */
  readonly lines: LineIndex;
  /** The chunk-local offsets where the file's own text starts and ends: a chunk cut inside an
   * element list is wrapped in text of nftsim's (parse-nft.ts), which no span may point into. */
  readonly ownStart: number;
  readonly ownEnd: number;
}

/** What expression building needs from the surrounding builder. */
export interface ExprEnv {
  readonly pos: ChunkPos;
  readonly diagnostics: Diagnostic[];
  lookupDefine(name: string): Expr | undefined;
  /** Creates the anonymous chain of a `jump {` chain binding and returns its name. */
  bindChain(span: Span): string;
  /** Builds an element option statement (counter/limit/quota/last in `{ 1.1.1.1 counter }`). */
  buildOptionStmt(node: CstNode): Stmt | undefined;
  /** The one copy of a string in this parse's model (see NftAstBuilder.intern). */
  intern(s: string): string;
  /** The one copy of a typed value in this parse's model (see NftAstBuilder.shareValue). */
  shareValue(v: Value): Value;
  /** The family of the table whose rule is being built, if any: typeAgainst's. */
  readonly tableFamily: Family | undefined;
  /** Set when a statement of the rule reads or writes a header of the other IP family than its
   * ip or ip6 table (buildPayload); the rule builder reads it after each statement. */
  otherFamilyHeader: boolean;
}

type Children = Record<string, (CstNode | IToken)[] | undefined>;

export function kids(node: CstNode): Children {
  return node.children as Children;
}

/** The first child of a node that has exactly one label (a choice between alternatives). */
export function firstChild(n: CstNode): CstNode | IToken {
  const c = kids(n);
  for (const label in c) return c[label]![0]!;
  throw new Error(`nft builder: empty CST node ${n.name}`);
}

export function nodes(node: CstNode, label: string): CstNode[] {
  return (kids(node)[label] as CstNode[] | undefined) ?? [];
}

export function node(node: CstNode, label: string): CstNode | undefined {
  return (kids(node)[label] as CstNode[] | undefined)?.[0];
}

export function toks(node: CstNode, label: string): IToken[] {
  return (kids(node)[label] as IToken[] | undefined) ?? [];
}

export function tok(node: CstNode, label: string): IToken | undefined {
  return (kids(node)[label] as IToken[] | undefined)?.[0];
}

// Span fields are kept small integers (`| 0`): Chevrotain starts CST locations at NaN, and one
// non-integer stored into a span makes V8 box every span's numbers as heap doubles (4 × 16
// bytes per span on a 150k-rule listing).

/** The span of chunk-local offsets `start` to `last` (inclusive). */
export function spanAt(pos: ChunkPos, from: number, last: number): Span {
  const start = Math.min(Math.max(from, pos.ownStart), pos.ownEnd);
  const end = Math.min(Math.max(last + 1, start), pos.ownEnd);
  const line = lineIndexOf(pos, start);
  return {
    file: pos.file,
    start: (pos.base + start) | 0,
    end: (pos.base + end) | 0,
    line: (pos.baseLine + line) | 0,
    column: (start - pos.lines.startOf(line) + 1) | 0,
  };
}

/** `span` extended (or cut) to end at file offset `end`. */
export function spanTo(span: Span, end: number): Span {
  return { file: span.file, start: span.start, end: end | 0, line: span.line, column: span.column };
}

export function spanOfNode(pos: ChunkPos, n: CstNode): Span {
  // CST nodes carry offsets only (cheaper to track); line and column come from the chunk's
  // line index.
  const loc = n.location!;
  const start = loc.startOffset | 0;
  return spanAt(pos, start, loc.endOffset! >= start ? loc.endOffset! | 0 : start);
}

/** 1-based chunk-local line of the last character of `n` (where its `# handle` comment is). */
export function endLineOf(pos: ChunkPos, n: CstNode): number {
  const loc = n.location!;
  return lineIndexOf(pos, loc.endOffset! >= 0 ? loc.endOffset! | 0 : loc.startOffset | 0) + 1;
}

/** 0-based line of a chunk-local offset. */
export function lineIndexOf(pos: ChunkPos, offset: number): number {
  return pos.lines.lineOf(offset);
}

export function spanOfToken(pos: ChunkPos, t: IToken): Span {
  return spanAt(pos, t.startOffset, t.endOffset ?? t.startOffset);
}

export function unquote(image: string): string {
  return image.length >= 2 && image.startsWith('"') && image.endsWith('"') ? image.slice(1, -1) : image;
}

export function literalOf(env: ExprEnv, t: IToken): Literal {
  const span = spanOfToken(env.pos, t);
  if (t.image.charCodeAt(0) === 34 /* " */) return { kind: 'literal', span, text: env.intern(unquote(t.image)), quoted: true };
  return { kind: 'literal', span, text: env.intern(t.image) };
}

/** Makes the typed literals of `e` share their `value` objects with equal ones built before
 * (a kube-proxy listing repeats `tcp`, `0x4000` and its service addresses thousands of times).
 * The literals are this parse's own fresh objects, so they are updated in place. */
export function shareValues(env: ExprEnv, e: Expr): void {
  if (e.kind === 'literal') {
    if (e.value) (e as { value: Value }).value = env.shareValue(e.value);
  } else if (e.kind === 'prefix') {
    shareValues(env, e.expr);
  } else if (e.kind === 'range') {
    shareValues(env, e.low);
    shareValues(env, e.high);
  } else if (e.kind === 'binop') {
    shareValues(env, e.left);
    shareValues(env, e.right);
  } else if (e.kind === 'concat') {
    for (const p of e.parts) shareValues(env, p);
  } else if (e.kind === 'flag-list') {
    for (const i of e.items) shareValues(env, i);
  } else if (e.kind === 'set') {
    for (const el of e.elements) {
      shareValues(env, el.key);
      if (el.data) shareValues(env, el.data);
    }
  }
}

/** The text of a `nameTok` node (a name, number-led word, string or `$variable`). */
export function nameText(env: ExprEnv, n: CstNode | undefined): string {
  if (!n) return '';
  const t = firstChild(n) as IToken;
  if (t.image.startsWith('$')) {
    const value = resolveVariable(env, t);
    return value.kind === 'literal' ? value.text : t.image;
  }
  return env.intern(unquote(t.image));
}

export function numberOf(t: IToken | undefined): number | undefined {
  if (!t) return undefined;
  const n = Number(t.image);
  return Number.isFinite(n) ? n : undefined;
}

function resolveVariable(env: ExprEnv, t: IToken): Expr {
  const name = t.image.slice(1);
  const value = env.lookupDefine(name);
  if (value) return value;
  const span = spanOfToken(env.pos, t);
  env.diagnostics.push({ severity: 'error', code: 'undefined-variable', message: `undefined variable '$${name}'`, span });
  return { kind: 'literal', span, text: t.image };
}

const BINOP_WORDS: Readonly<Record<string, '&' | '|' | '^' | '<<' | '>>'>> = {
  '&': '&', and: '&', '|': '|', or: '|', '^': '^', xor: '^', '<<': '<<', lshift: '<<', '>>': '>>', rshift: '>>',
};

const VERDICT_WORDS = new Set<VerdictName>(['accept', 'drop', 'continue', 'return', 'queue']);

// Extension headers reached without the `exthdr` prefix (nft src/exthdr.c; `rt` is decided by
// key below because `rt classid`/`rt nexthop`/`rt mtu` are routing expressions).
const EXTHDR_HEADS = new Set(['hbh', 'frag', 'dst', 'mh', 'srh', 'rt0', 'rt2']);
const RT_KEYS = new Set(['classid', 'nexthop', 'mtu', 'ipsec']);

export function buildExpr(env: ExprEnv, n: CstNode): Expr {
  switch (n.name) {
    case 'expr':
      return buildFlatExpr(env, n);
    case 'atom':
      return buildAtom(env, n);
    case 'setLiteral':
      return buildSetLiteral(env, n);
    case 'selector':
      return buildSelector(env, n);
    default:
      throw new Error(`nft builder: unexpected CST node ${n.name}`);
  }
}

// nft's operator precedence, tightest first (src/parser_bison.y shift_expr → and_expr →
// exclusive_or_expr → inclusive_or_expr).
const PRECEDENCE: Readonly<Record<string, number>> = { '<<': 4, '>>': 4, '&': 3, '^': 2, '|': 1 };

/** Builds an `expr` node: operands and operators in source order (nft-grammar.ts), grouped by
 * precedence, tightest first: prefix `/N`, range `-`, the bitwise operators, `.`, `map`, `,`. */
function buildFlatExpr(env: ExprEnv, n: CstNode): Expr {
  const c = kids(n);
  const operands = c.operands as CstNode[];
  const first = buildExpr(env, operands[0]!);
  const ops = c.ops as IToken[] | undefined;
  if (!ops) return first;
  const lengths = (c.lengths ?? []) as IToken[];
  const targets = (c.targets ?? []) as CstNode[];
  let nextOperand = 1;
  let nextLength = 0;
  let nextTarget = 0;
  // The operand being read (`low`, and `high` after a `-`), the bitwise chain, the concat parts
  // and the comma items it will end up in.
  let low = first;
  let high: Expr | undefined;
  let binOperands: Expr[] = [];
  let binOps: IToken[] = [];
  let parts: Expr[] = [];
  const items: Expr[] = [];
  const unit = (): Expr => (high ? { kind: 'range', span: spanTo(low.span, high.span.end), low, high } : low);
  const endBitwise = (): Expr => {
    binOperands.push(unit());
    const e = binOperands.length === 1 ? binOperands[0]! : climbBitwise(binOperands, binOps);
    binOperands = [];
    binOps = [];
    return e;
  };
  const endConcat = (): Expr => {
    parts.push(endBitwise());
    const e = parts.length === 1 ? parts[0]! : ({ kind: 'concat', span: spanTo(parts[0]!.span, parts[parts.length - 1]!.span.end), parts } as const);
    parts = [];
    return e;
  };
  const operand = (): Expr => buildExpr(env, operands[nextOperand++]!);
  for (const op of ops) {
    switch (op.image) {
      case '/': {
        const length = lengths[nextLength++]!;
        const base = high ?? low;
        const prefix: Expr = { kind: 'prefix', span: spanTo(base.span, env.pos.base + length.startOffset + length.image.length), expr: base, length: Number(length.image) };
        if (high) high = prefix;
        else low = prefix;
        break;
      }
      case '-':
        if (high) low = unit();
        high = operand();
        break;
      case '.':
        parts.push(endBitwise());
        low = operand();
        high = undefined;
        break;
      case ',':
        items.push(endConcat());
        low = operand();
        high = undefined;
        break;
      case 'map': {
        const key = endConcat();
        const map = buildMapTarget(env, targets[nextTarget++]!);
        low = { kind: 'map', span: spanTo(key.span, map.span.end), key, map, vmap: false };
        high = undefined;
        break;
      }
      default:
        binOperands.push(unit());
        binOps.push(op);
        low = operand();
        high = undefined;
    }
  }
  items.push(endConcat());
  return items.length === 1 ? items[0]! : { kind: 'flag-list', span: spanOfNode(env.pos, n), items };
}

/** Precedence climbing over a bitwise chain: `ops[k]` sits between `operands[k]` and
 * `operands[k + 1]`. */
function climbBitwise(operands: readonly Expr[], opTokens: readonly IToken[]): Expr {
  const ops = opTokens.map((t) => BINOP_WORDS[t.image]!);
  let k = 0;
  const climb = (minPrec: number, first: Expr): Expr => {
    let left = first;
    while (k < ops.length && PRECEDENCE[ops[k]!]! >= minPrec) {
      const op = ops[k]!;
      // iptables-nft's xlate text writes `mark or 0x4000`; keep the word so it prints back as written.
      const word = opTokens[k]!.image !== op;
      k++;
      let right = operands[k]!;
      while (k < ops.length && PRECEDENCE[ops[k]!]! > PRECEDENCE[op]!) right = climb(PRECEDENCE[op]! + 1, right);
      left = { kind: 'binop', span: spanTo(left.span, right.span.end), op, left, right, ...(word && { word }) };
    }
    return left;
  };
  return climb(0, operands[0]!);
}

function buildAtom(env: ExprEnv, n: CstNode): Expr {
  const span = spanOfNode(env.pos, n);
  const c = kids(n);
  if (c.selector) return buildSelector(env, c.selector[0] as CstNode);
  if (c.rawPayload) return buildRawPayload(env, c.rawPayload[0] as CstNode);
  if (c.setRef) return { kind: 'set-ref', span, name: nameText(env, c.setRef[0] as CstNode) };
  if (c.setLiteral) return buildSetLiteral(env, c.setLiteral[0] as CstNode);
  if (c.paren) {
    const inner = buildExpr(env, c.paren[0] as CstNode);
    return inner.kind === 'binop' ? { ...inner, parens: true } : inner;
  }
  if (c.bracket) return buildExpr(env, c.bracket[0] as CstNode);
  if (c.verdict) {
    const verdict = (c.verdict[0] as IToken).image as VerdictName;
    return { kind: 'verdict', span, verdict, target: nameText(env, c.target![0] as CstNode) };
  }
  if (c.variable) {
    const value = resolveVariable(env, c.variable[0] as IToken);
    return value;
  }
  if (c.wildcard) return { kind: 'wildcard', span };
  const t = c.literal![0] as IToken;
  if (c.negative) return { kind: 'literal', span, text: `-${t.image}` };
  if (c.invalidType) {
    env.diagnostics.push(invalidTypeWarning(t.image, span));
    return { kind: 'literal', span, text: env.intern(t.image), invalidType: true };
  }
  return literalOf(env, t);
}

function buildRawPayload(env: ExprEnv, n: CstNode): Expr {
  const base = tok(n, 'base')!.image;
  const span = spanOfNode(env.pos, n);
  if (base !== 'll' && base !== 'nh' && base !== 'th' && base !== 'ih') {
    env.diagnostics.push({ severity: 'error', code: 'syntax', message: `unknown raw payload base '${base}', expected ll, nh, th or ih`, span });
  }
  return {
    kind: 'raw-payload',
    span,
    base: base as 'll' | 'nh' | 'th' | 'ih',
    offset: numberOf(tok(n, 'offset')) ?? 0,
    length: numberOf(tok(n, 'length')) ?? 0,
  };
}

export function buildMapTarget(env: ExprEnv, n: CstNode): SetLiteral | SetRef {
  const lit = node(n, 'setLiteral');
  if (lit) return buildSetLiteral(env, lit);
  const variable = tok(n, 'variable');
  const span = spanOfNode(env.pos, n);
  if (variable) {
    const value = resolveVariable(env, variable);
    if (value.kind === 'set' || value.kind === 'set-ref') return value;
    return { kind: 'set', span, elements: [{ kind: 'element', span: value.span, key: value }] };
  }
  return { kind: 'set-ref', span, name: nameText(env, node(n, 'ref')) };
}

export function buildSetLiteral(env: ExprEnv, n: CstNode): SetLiteral {
  const elements: ElementExpr[] = [];
  for (const e of nodes(n, 'element')) {
    const el = buildElement(env, e);
    // A `$set` inside braces contributes its elements (`{ $LAN, 10.0.0.1 }`).
    if (el.key.kind === 'set' && !el.data) elements.push(...el.key.elements);
    else elements.push(el);
  }
  return { kind: 'set', span: spanOfNode(env.pos, n), elements };
}

export function buildElement(env: ExprEnv, n: CstNode): ElementExpr {
  const key = buildExpr(env, node(n, 'key')!);
  const dataNode = node(n, 'data');
  let data = dataNode ? buildExpr(env, dataNode) : undefined;
  if (data?.kind === 'literal' && !data.quoted && VERDICT_WORDS.has(data.text as VerdictName)) {
    data = { kind: 'verdict', span: data.span, verdict: data.text as VerdictName };
  }
  let el: { -readonly [K in keyof ElementExpr]: ElementExpr[K] } = { kind: 'element', span: spanOfNode(env.pos, n), key };
  if (data) el.data = data;
  const stmts: Stmt[] = [];
  for (const opt of [...nodes(n, 'keyOptions'), ...nodes(n, 'dataOptions')]) {
    const key = tok(opt, 'key');
    if (key) {
      const valueNode = node(opt, 'value')!;
      const value = buildExpr(env, valueNode);
      const text = value.kind === 'literal' ? value.text : '';
      if (key.image === 'timeout') el.timeout = text;
      else if (key.image === 'expires') el.expires = text;
      else el.comment = text;
      continue;
    }
    const stmtNode = firstChild(opt) as CstNode;
    const stmt = env.buildOptionStmt(stmtNode);
    if (stmt) stmts.push(stmt);
  }
  if (stmts.length > 0) el = { ...el, stmts };
  return el;
}

function buildSelector(env: ExprEnv, n: CstNode): Expr {
  const span = spanOfNode(env.pos, n);
  const c = kids(n);
  if (c.payloadSel) return buildPayload(env, c.payloadSel[0] as CstNode);
  if (c.ctSel) {
    const ct = c.ctSel[0] as CstNode;
    const dir = tok(ct, 'dir')?.image as 'original' | 'reply' | undefined;
    const family = tok(ct, 'family')?.image as 'ip' | 'ip6' | undefined;
    return {
      kind: 'ct',
      span,
      key: tok(ct, 'key')!.image,
      ...(dir ? { dir } : {}),
      ...(family ? { family } : {}),
    };
  }
  if (c.hashSel) return buildHash(env, c.hashSel[0] as CstNode, span);
  if (c.bareMeta) return { kind: 'meta', span, key: (c.bareMeta[0] as IToken).image, qualified: false };
  const head = tok(n, 'head')!.image;
  const key = tok(n, 'key')?.image;
  switch (head) {
    case 'meta':
      return { kind: 'meta', span, key: key!, qualified: true };
    case 'tunnel':
      // Not modelled: the statement holding it becomes `unsupported` (build-nft-stmt.ts).
      return { kind: 'payload', span, protocol: 'tunnel', field: key! };
    case 'fib':
      return { kind: 'fib', span, flags: toks(n, 'flags').map((t) => t.image), result: key! };
    case 'rt': {
      const family = tok(n, 'family')?.image as 'ip' | 'ip6' | undefined;
      const indexNode = node(n, 'index');
      if (!RT_KEYS.has(key!) || indexNode) {
        const index = indexNode ? numberOf(tok(indexNode, 'index')) : undefined;
        return { kind: 'exthdr', span, header: 'rt', field: key!, ...(index !== undefined ? { index } : {}) };
      }
      return { kind: 'rt', span, key: key!, ...(family ? { family } : {}) };
    }
    case 'socket': {
      const level = numberOf(tok(n, 'level'));
      return { kind: 'socket', span, key: key!, ...(level !== undefined ? { level } : {}) };
    }
    case 'osf': {
      const ttl = tok(n, 'ttl')?.image;
      return { kind: 'osf', span, key: key === 'version' ? 'version' : 'name', ...(ttl ? { ttl } : {}) };
    }
    case 'ipsec': {
      const spnum = numberOf(tok(n, 'spnum'));
      const family = tok(n, 'family')?.image as 'ip' | 'ip6' | undefined;
      return {
        kind: 'ipsec',
        span,
        dir: tok(n, 'dir')!.image === 'out' ? 'out' : 'in',
        key: key!,
        ...(spnum !== undefined ? { spnum } : {}),
        ...(family ? { family } : {}),
      };
    }
    default: {
      // exthdr HEADER [FIELD]
      const header = nameText(env, node(n, 'exthdr'));
      const field = node(n, 'key') ? nameText(env, node(n, 'key')) : undefined;
      return { kind: 'exthdr', span, header, prefixed: true, ...(field ? { field } : {}) };
    }
  }
}

function buildHash(env: ExprEnv, n: CstNode, span: Span): Expr {
  const head = tok(n, 'head')!.image;
  const mod = numberOf(tok(n, 'mod')) ?? 0;
  let seed: number | undefined;
  let offset: number | undefined;
  const values = toks(n, 'values');
  toks(n, 'options').forEach((o, i) => {
    if (o.image === 'seed') seed = numberOf(values[i]);
    else offset = numberOf(values[i]);
  });
  const extra = { ...(offset !== undefined ? { offset } : {}) };
  if (head === 'numgen') {
    return { kind: 'numgen', span, mode: tok(n, 'mode')!.image === 'random' ? 'random' : 'inc', mod, ...extra };
  }
  const exprNode = node(n, 'expr');
  return {
    kind: 'hash',
    span,
    type: head === 'jhash' ? 'jhash' : 'symhash',
    ...(exprNode ? { expr: buildExpr(env, exprNode) } : {}),
    mod,
    ...(seed !== undefined ? { seed } : {}),
    ...extra,
  };
}

export function buildPayload(env: ExprEnv, n: CstNode): Expr {
  const span = spanOfNode(env.pos, n);
  const head = tok(n, 'head')!.image;
  const inner = tok(n, 'inner')?.image;
  const sub = tok(n, 'sub')?.image;
  const key = tok(n, 'key')?.image;
  const indexNode = node(n, 'index');
  const index = indexNode ? numberOf(tok(indexNode, 'index')) : undefined;
  if (sub) {
    const raw = node(n, 'rawPayload');
    const option = raw ? rawText(env, raw) : nameText(env, node(n, 'option'));
    const field = key ? { field: key } : {};
    if (head === 'tcp' && sub === 'option') return { kind: 'tcp-option', span, option: tcpOptionName(option), ...field };
    if (head === 'ip' && sub === 'option') return { kind: 'ip-option', span, option, ...field };
    if (head === 'sctp' && sub === 'chunk') return { kind: 'sctp-chunk', span, chunk: option, ...field };
  }
  if (EXTHDR_HEADS.has(head)) {
    return { kind: 'exthdr', span, header: head, field: key!, ...(index !== undefined ? { index } : {}) };
  }
  const addrType = tok(n, 'addrType')?.image;
  const field = sub ? `${sub} ${nameText(env, node(n, 'option'))}${key ? ` ${key}` : ''}` : addrType ? env.intern(`${key} ${addrType}`) : key!;
  if (inner) return { kind: 'payload', span, protocol: inner, field, inner: head };
  if ((head === 'ip' && env.tableFamily === 'ip6') || (head === 'ip6' && env.tableFamily === 'ip')) env.otherFamilyHeader = true;
  return { kind: 'payload', span, protocol: head, field };
}

function rawText(env: ExprEnv, raw: CstNode): string {
  const loc = raw.location!;
  return env.pos.text.slice(loc.startOffset, (loc.endOffset ?? loc.startOffset) + 1);
}
