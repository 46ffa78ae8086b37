import type { CstNode, IToken } from 'chevrotain';
import type {
  ElementExpr, Expr, Literal, MapLookup, SetLiteral, SetRef, Span, Stmt, VerdictName,
} from '../../model/ast.js';
import type { Diagnostic } from '../../model/diagnostic.js';

// CST → AST for expressions (selectors, values, sets) and the small helpers the statement and
// item builders share. Spans are computed from chunk-local CST locations plus the chunk's base.

/** Where the chunk being built sits in its file. */
export interface ChunkPos {
  readonly file: string;
  readonly text: string;
  readonly base: number;
  readonly baseLine: number;
  /** Chunk-local offsets where its lines start. */
  readonly lineStarts: readonly number[];
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
}

type Children = Record<string, (CstNode | IToken)[] | undefined>;

export function kids(node: CstNode): Children {
  return node.children as Children;
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

export function spanOfNode(pos: ChunkPos, n: CstNode): Span {
  // CST nodes carry offsets only (cheaper to track); line and column come from the chunk's
  // line index.
  const loc = n.location!;
  const line = lineIndexOf(pos, loc.startOffset);
  return {
    file: pos.file,
    start: pos.base + loc.startOffset,
    end: pos.base + (loc.endOffset ?? loc.startOffset) + 1,
    line: pos.baseLine + line,
    column: loc.startOffset - pos.lineStarts[line]! + 1,
  };
}

/** 1-based chunk-local line of the last character of `n` (where its `# handle` comment is). */
export function endLineOf(pos: ChunkPos, n: CstNode): number {
  const loc = n.location!;
  return lineIndexOf(pos, loc.endOffset ?? loc.startOffset) + 1;
}

/** 0-based line of a chunk-local offset. */
function lineIndexOf(pos: ChunkPos, offset: number): number {
  const starts = pos.lineStarts;
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Offsets where the lines of `text` start. */
export function lineStartsOf(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

export function spanOfToken(pos: ChunkPos, t: IToken): Span {
  return {
    file: pos.file,
    start: pos.base + t.startOffset,
    end: pos.base + (t.endOffset ?? t.startOffset) + 1,
    line: pos.baseLine + (t.startLine ?? 1) - 1,
    column: t.startColumn ?? 1,
  };
}

export function spanBetween(pos: ChunkPos, first: IToken, last: IToken): Span {
  return { ...spanOfToken(pos, first), end: pos.base + (last.endOffset ?? last.startOffset) + 1 };
}

export function unquote(image: string): string {
  return image.length >= 2 && image.startsWith('"') && image.endsWith('"') ? image.slice(1, -1) : image;
}

export function literalOf(pos: ChunkPos, t: IToken): Literal {
  const quoted = t.image.startsWith('"');
  const lit: Literal = { kind: 'literal', span: spanOfToken(pos, t), text: quoted ? unquote(t.image) : t.image };
  return quoted ? { ...lit, quoted: true } : lit;
}

/** The text of a `nameTok` node (a name, number-led word, string or `$variable`). */
export function nameText(env: ExprEnv, n: CstNode | undefined): string {
  if (!n) return '';
  const t = Object.values(kids(n))[0]?.[0] as IToken | undefined;
  if (!t) return '';
  if (t.image.startsWith('$')) {
    const value = resolveVariable(env, t);
    return value.kind === 'literal' ? value.text : t.image;
  }
  return unquote(t.image);
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
    case 'expr': {
      const items = nodes(n, 'items').map((i) => buildExpr(env, i));
      if (items.length === 1) return items[0]!;
      return { kind: 'flag-list', span: spanOfNode(env.pos, n), items };
    }
    case 'mapExpr': {
      const key = buildExpr(env, node(n, 'key')!);
      const target = node(n, 'mapTarget');
      if (!target) return key;
      const lookup: MapLookup = { kind: 'map', span: spanOfNode(env.pos, n), key, map: buildMapTarget(env, target), vmap: false };
      return lookup;
    }
    case 'concat': {
      const parts = nodes(n, 'parts').map((p) => buildExpr(env, p));
      if (parts.length === 1) return parts[0]!;
      return { kind: 'concat', span: spanOfNode(env.pos, n), parts };
    }
    case 'binExpr':
      return buildBinExpr(env, n);
    case 'operand': {
      const low = withPrefix(env, buildExpr(env, node(n, 'low')!), tok(n, 'lowLength'));
      const highNode = node(n, 'high');
      if (!highNode) return low;
      const high = withPrefix(env, buildExpr(env, highNode), tok(n, 'highLength'));
      return { kind: 'range', span: spanOfNode(env.pos, n), low, high };
    }
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

function withPrefix(env: ExprEnv, base: Expr, length: IToken | undefined): Expr {
  if (!length) return base;
  const span = { ...base.span, end: env.pos.base + (length.endOffset ?? length.startOffset) + 1 };
  return { kind: 'prefix', span, expr: base, length: Number(length.image) };
}

// nft's operator precedence, tightest first (src/parser_bison.y shift_expr → and_expr →
// exclusive_or_expr → inclusive_or_expr).
const PRECEDENCE: Readonly<Record<string, number>> = { '<<': 4, '>>': 4, '&': 3, '^': 2, '|': 1 };

function buildBinExpr(env: ExprEnv, n: CstNode): Expr {
  const operands = nodes(n, 'operands').map((o) => buildExpr(env, o));
  const opTokens = toks(n, 'ops');
  const ops = opTokens.map((t) => BINOP_WORDS[t.image]!);
  // Precedence climbing over the flat list: ops[k] sits between operands[k] and operands[k + 1].
  let k = 0;
  const climb = (minPrec: number, first: Expr): Expr => {
    let left = first;
    while (k < ops.length && PRECEDENCE[ops[k]!]! >= minPrec) {
      const op = ops[k]!;
      // iptables-nft's xlate text writes `mark or 0x4000`; keep the word so it prints back as written.
      const word = /^[a-z]/.test(opTokens[k]!.image);
      k++;
      let right = operands[k]!;
      while (k < ops.length && PRECEDENCE[ops[k]!]! > PRECEDENCE[op]!) right = climb(PRECEDENCE[op]! + 1, right);
      left = { kind: 'binop', span: { ...left.span, end: right.span.end }, op, left, right, ...(word && { word }) };
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
  return literalOf(env.pos, t);
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
    if (tok(opt, 'invalid')) {
      env.diagnostics.push({
        severity: 'warning',
        code: 'invalid-type',
        message: "skipped '[invalid type]' (nft 1.0.6 prints it for some typeof keys)",
        span: spanOfNode(env.pos, opt),
      });
      continue;
    }
    const stmtNode = Object.values(kids(opt))[0]![0] as CstNode;
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
    if (head === 'tcp' && sub === 'option') return { kind: 'tcp-option', span, option, ...field };
    if (head === 'ip' && sub === 'option') return { kind: 'ip-option', span, option, ...field };
    if (head === 'sctp' && sub === 'chunk') return { kind: 'sctp-chunk', span, chunk: option, ...field };
  }
  if (EXTHDR_HEADS.has(head)) {
    return { kind: 'exthdr', span, header: head, field: key!, ...(index !== undefined ? { index } : {}) };
  }
  const addrType = tok(n, 'addrType')?.image;
  const field = sub ? `${sub} ${nameText(env, node(n, 'option'))}${key ? ` ${key}` : ''}` : addrType ? `${key} ${addrType}` : key!;
  if (inner) return { kind: 'payload', span, protocol: inner, field, inner: head };
  return { kind: 'payload', span, protocol: head, field };
}

function rawText(env: ExprEnv, raw: CstNode): string {
  const loc = raw.location!;
  return env.pos.text.slice(loc.startOffset, (loc.endOffset ?? loc.startOffset) + 1);
}
