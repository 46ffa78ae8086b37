import type { CstNode, IToken } from 'chevrotain';
import type {
  Expr, LimitStmt, MapLookup, QuotaStmt, RejectStmt, Relational, Stmt, VerdictName,
} from '../../model/ast.js';
import { typeAgainst, typeInner } from '../../model/datatypes.js';
import {
  buildExpr, buildMapTarget, buildPayload, firstChild, shareValues, nameText, node, nodes, numberOf, spanOfNode,
  spanOfToken, spanTo, tok, toks, unquote, type ExprEnv,
} from './build-nft-expr.js';

// CST → AST for rule statements. A rule's comment statement is returned separately.

const REL_OPS: Readonly<Record<string, Relational['op']>> = {
  '==': '==', eq: '==', '!=': '!=', ne: '!=', '<': '<', lt: '<', '>': '>', gt: '>',
  '<=': '<=', le: '<=', '>=': '>=', ge: '>=',
};

const LIMIT_PERIODS = new Set(['second', 'minute', 'hour', 'day', 'week']);

/** Object references set through `ct KEY set "name"` (nft src/parser_bison.y `ct_obj_type`). */
const CT_OBJECT_KEYS: Readonly<Record<string, 'ct helper' | 'ct timeout' | 'ct expectation'>> = {
  helper: 'ct helper', timeout: 'ct timeout', expectation: 'ct expectation',
};

function unsupported(env: ExprEnv, n: CstNode, what: string): Stmt {
  const span = spanOfNode(env.pos, n);
  const loc = n.location!;
  const text = env.pos.text.slice(loc.startOffset, (loc.endOffset ?? loc.startOffset) + 1);
  env.diagnostics.push({ severity: 'warning', code: 'unsupported', message: `${what} is not modelled: '${text}'`, span });
  return { kind: 'unsupported', span, text };
}

export function buildLimit(env: ExprEnv, n: CstNode): LimitStmt {
  const per = tok(n, 'per')!.image;
  if (!LIMIT_PERIODS.has(per)) {
    env.diagnostics.push({ severity: 'error', code: 'syntax', message: `unexpected '${per}', expected second, minute, hour, day or week`, span: spanOfToken(env.pos, tok(n, 'per')!) });
  }
  const burst = numberOf(tok(n, 'burst'));
  const burstUnit = tok(n, 'burstUnit')?.image;
  return {
    kind: 'limit',
    span: spanOfNode(env.pos, n),
    over: tok(n, 'over') !== undefined,
    rate: numberOf(tok(n, 'rate')) ?? 0,
    unit: tok(n, 'unit')?.image ?? 'packets',
    per: per as LimitStmt['per'],
    ...(burst !== undefined ? { burst } : {}),
    ...(burstUnit ? { burstUnit } : {}),
  };
}

export function buildQuota(env: ExprEnv, n: CstNode): QuotaStmt {
  const used = numberOf(tok(n, 'used'));
  const usedUnit = tok(n, 'usedUnit')?.image;
  return {
    kind: 'quota',
    span: spanOfNode(env.pos, n),
    over: tok(n, 'over') !== undefined,
    amount: numberOf(tok(n, 'amount')) ?? 0,
    unit: tok(n, 'unit')!.image,
    ...(used !== undefined ? { used } : {}),
    ...(usedUnit ? { usedUnit } : {}),
  };
}

function objRef(env: ExprEnv, n: CstNode, type: Extract<Stmt, { kind: 'objref' }>['type']): Stmt {
  return { kind: 'objref', span: spanOfNode(env.pos, n), type, name: buildExpr(env, node(n, 'ref')!) };
}

function family(t: IToken | undefined): { family?: 'ip' | 'ip6' } {
  return t && (t.image === 'ip' || t.image === 'ip6') ? { family: t.image } : {};
}

/** Builds one statement node (the child of a `statement` CST node, or an element option). */
export function buildStmt(env: ExprEnv, n: CstNode): Stmt | undefined {
  if (n.name === 'statement') {
    const child = firstChild(n);
    return 'tokenType' in child ? { kind: 'notrack', span: spanOfNode(env.pos, n) } : buildStmt(env, child);
  }
  const span = spanOfNode(env.pos, n);
  switch (n.name) {
    case 'verdictStmt': {
      const verdict = tok(n, 'verdict')!.image as VerdictName;
      if (tok(n, 'anon')) return { kind: 'verdict', span, verdict, target: env.bindChain(span) };
      const target = node(n, 'target');
      return target ? { kind: 'verdict', span, verdict, target: nameText(env, target) } : { kind: 'verdict', span, verdict };
    }
    case 'counterStmt': {
      if (node(n, 'ref')) return objRef(env, n, 'counter');
      const packets = numberOf(tok(n, 'packets'));
      const bytes = numberOf(tok(n, 'bytes'));
      if (packets !== undefined && bytes !== undefined) return { kind: 'counter', span, packets, bytes };
      return { kind: 'counter', span, ...(packets !== undefined ? { packets } : {}), ...(bytes !== undefined ? { bytes } : {}) };
    }
    case 'logStmt':
      return buildLog(env, n);
    case 'limitStmt':
      return node(n, 'ref') ? objRef(env, n, 'limit') : buildLimit(env, node(n, 'limitRate')!);
    case 'quotaStmt':
      return node(n, 'ref') ? objRef(env, n, 'quota') : { ...buildQuota(env, node(n, 'quotaAmount')!), span };
    case 'lastStmt': {
      const used = node(n, 'used');
      const value = used ? buildExpr(env, used) : undefined;
      return value?.kind === 'literal' ? { kind: 'last', span, used: value.text } : { kind: 'last', span };
    }
    case 'rejectStmt':
      return buildReject(env, n);
    case 'dupStmt': {
      const addr = buildExpr(env, node(n, 'addr')!);
      const deviceNode = node(n, 'device');
      const device = deviceNode ? buildExpr(env, deviceNode) : undefined;
      const fam = family(tok(n, 'family'));
      if (tok(n, 'kind')!.image === 'dup') {
        return { kind: 'dup', span, ...fam, addr, ...(device ? { device } : {}) };
      }
      return device ? { kind: 'fwd', span, ...fam, addr, device } : { kind: 'fwd', span, ...fam, device: addr };
    }
    case 'natStmt': {
      const target = node(n, 'natTarget');
      const addrNode = target && node(target, 'addr');
      const portNode = target && node(target, 'port');
      const form = tok(n, 'prefix') ? 'prefix' : tok(n, 'addrPort') ? 'addr . port' : undefined;
      return {
        kind: 'nat',
        span,
        type: tok(n, 'kind')!.image as 'snat' | 'dnat' | 'masquerade' | 'redirect',
        ...family(tok(n, 'family')),
        ...(form ? { form } : {}),
        ...(addrNode ? { addr: typeInner(buildExpr(env, addrNode)) } : {}),
        ...(portNode ? { port: typeInner(buildExpr(env, portNode)) } : {}),
        flags: toks(n, 'flags').map((t) => t.image),
      };
    }
    case 'tproxyStmt': {
      const target = node(n, 'natTarget')!;
      const addrNode = node(target, 'addr');
      const portNode = node(target, 'port');
      return {
        kind: 'tproxy',
        span,
        ...family(tok(n, 'family')),
        ...(addrNode ? { addr: buildExpr(env, addrNode) } : {}),
        ...(portNode ? { port: buildExpr(env, portNode) } : {}),
      };
    }
    case 'queueStmt': {
      const num = node(n, 'num');
      return { kind: 'queue', span, ...(num ? { num: buildExpr(env, num) } : {}), flags: toks(n, 'flags').map((t) => t.image) };
    }
    case 'synproxyStmt': {
      if (node(n, 'ref')) return objRef(env, n, 'synproxy');
      const mss = numberOf(tok(n, 'mss'));
      const wscale = numberOf(tok(n, 'wscale'));
      return {
        kind: 'synproxy',
        span,
        ...(mss !== undefined ? { mss } : {}),
        ...(wscale !== undefined ? { wscale } : {}),
        flags: toks(n, 'flags').map((t) => t.image),
      };
    }
    case 'flowStmt':
      return { kind: 'flow-offload', span, flowtable: nameText(env, node(n, 'name')) };
    case 'xtStmt': {
      const type = tok(n, 'type')!.image;
      if (type !== 'match' && type !== 'target' && type !== 'watcher') return unsupported(env, n, `xt ${type}`);
      return { kind: 'xt', span, type, name: nameText(env, node(n, 'name')) };
    }
    case 'meterStmt': {
      const size = numberOf(tok(n, 'size'));
      const element = buildExprElement(env, node(n, 'element')!);
      return { kind: 'set-op', span, op: 'update', set: nameText(env, node(n, 'name')), element, meter: size === undefined ? {} : { size } };
    }
    case 'ctCountStmt':
      return { kind: 'ct-count', span, count: numberOf(tok(n, 'count'))!, over: tok(n, 'over') !== undefined };
    case 'setOpStmt': {
      const op = tok(n, 'op')!.image;
      const element = buildExprElement(env, node(n, 'element')!);
      if (op !== 'add' && op !== 'update' && op !== 'delete') return unsupported(env, n, `set operation '${op}'`);
      return { kind: 'set-op', span, op, set: nameText(env, node(n, 'name')), element };
    }
    case 'resetStmt': {
      const target = buildPayload(env, node(n, 'payloadSel')!);
      if (target.kind !== 'tcp-option') return unsupported(env, n, 'reset of anything but a tcp option');
      return { kind: 'option-reset', span, target };
    }
    case 'tunnelStmt':
      return node(n, 'ref') ? objRef(env, n, 'tunnel') : unsupported(env, n, 'tunnel metadata');
    case 'exprStmt':
      return buildExprStmt(env, n);
    case 'commentStmt':
      return undefined;
    default:
      throw new Error(`nft builder: unexpected statement node ${n.name}`);
  }
}

function buildExprElement(env: ExprEnv, n: CstNode): Extract<Expr, { kind: 'element' }> {
  const lit = { name: 'setLiteral', children: { element: [n] }, location: n.location } as unknown as CstNode;
  const set = buildExpr(env, lit);
  return (set as Extract<Expr, { kind: 'set' }>).elements[0]!;
}

function buildLog(env: ExprEnv, n: CstNode): Stmt {
  const options = toks(n, 'option');
  const values = nodes(n, 'values');
  const flagWords = toks(n, 'flagWords');
  const log: { -readonly [K in keyof Extract<Stmt, { kind: 'log' }>]: Extract<Stmt, { kind: 'log' }>[K] } = {
    kind: 'log',
    span: spanOfNode(env.pos, n),
    flags: [],
  };
  const flags: string[] = [];
  let valueIndex = 0;
  options.forEach((opt, i) => {
    if (opt.image === 'flags') {
      const next = options[i + 1]?.startOffset ?? Infinity;
      const words = flagWords.filter((w) => w.startOffset > opt.startOffset && w.startOffset < next);
      flags.push(words.map((w) => w.image).join(' ').replace(/ , /g, ','));
      return;
    }
    const valueNode = values[valueIndex++];
    const value = valueNode ? buildExpr(env, valueNode) : undefined;
    const text = value?.kind === 'literal' ? value.text : '';
    switch (opt.image) {
      case 'prefix':
        log.prefix = text;
        break;
      case 'level':
        log.level = text;
        break;
      case 'group':
        log.group = Number(text);
        break;
      case 'snaplen':
        log.snaplen = Number(text);
        break;
      default:
        log.queueThreshold = Number(text);
    }
  });
  log.flags = flags;
  return log;
}

function buildReject(env: ExprEnv, n: CstNode): RejectStmt {
  const span = spanOfNode(env.pos, n);
  const withTok = tok(n, 'with');
  if (!withTok) return { kind: 'reject', span };
  const codeNode = node(n, 'code');
  const code = codeNode ? buildExpr(env, codeNode) : undefined;
  const codeText = code?.kind === 'literal' ? code.text : undefined;
  if (withTok.image === 'tcp') return { kind: 'reject', span, with: 'tcp reset' };
  const kind = withTok.image;
  if (kind !== 'icmp' && kind !== 'icmpv6' && kind !== 'icmpx') {
    env.diagnostics.push({ severity: 'error', code: 'syntax', message: `unexpected '${kind}', expected icmp, icmpv6, icmpx or tcp`, span: spanOfToken(env.pos, withTok) });
    return { kind: 'reject', span };
  }
  return {
    kind: 'reject',
    span,
    with: kind,
    ...(codeText !== undefined ? { code: codeText } : {}),
    ...(tok(n, 'typeKw') ? { typeKeyword: true } : {}),
  };
}

function buildExprStmt(env: ExprEnv, n: CstNode): Stmt {
  const span = spanOfNode(env.pos, n);
  const lhs = buildExpr(env, node(n, 'lhs')!);
  if (lhs.kind === 'ct' && lhs.key === 'count' && !lhs.dir) {
    // `ct count over N`, or `ct count N` read as a relational (at most N).
    const overCount = numberOf(tok(n, 'count'));
    if (overCount !== undefined) return { kind: 'ct-count', span, count: overCount, over: true };
    const valueNode = node(n, 'value');
    const value = valueNode && !tok(n, 'op') ? buildExpr(env, valueNode) : undefined;
    const count = value?.kind === 'literal' && /^\d+$/.test(value.text) ? Number(value.text) : undefined;
    return count === undefined ? unsupported(env, n, 'ct count (connlimit) with an operator') : { kind: 'ct-count', span, count, over: false };
  }
  if (lhs.kind === 'payload' && lhs.protocol === 'tunnel') return unsupported(env, n, 'tunnel metadata');
  if (tok(n, 'set')) {
    const value = typeAgainst(buildExpr(env, node(n, 'value')!), lhs);
    switch (lhs.kind) {
      case 'meta':
        if (lhs.key === 'secmark' && value.kind === 'literal' && value.quoted) {
          return { kind: 'objref', span, type: 'secmark', name: value };
        }
        return { kind: 'meta-set', span, key: lhs.key, qualified: lhs.qualified, value };
      case 'ct': {
        const objType = CT_OBJECT_KEYS[lhs.key];
        if (objType && !lhs.dir) return { kind: 'objref', span, type: objType, name: value };
        return { kind: 'ct-set', span, key: lhs.key, ...(lhs.dir ? { dir: lhs.dir } : {}), value };
      }
      case 'payload':
      case 'raw-payload':
      case 'exthdr':
      case 'tcp-option':
        return { kind: 'payload-set', span, target: lhs, value };
      default:
        return unsupported(env, n, `setting ${lhs.kind}`);
    }
  }
  if (tok(n, 'vmap')) {
    const lookup: MapLookup = { kind: 'map', span, key: lhs, map: buildMapTarget(env, node(n, 'mapTarget')!), vmap: true };
    const typed = typeInner(lookup) as MapLookup;
    return { kind: 'vmap', span, key: typed.key, map: typed.map };
  }
  if (lhs.kind === 'literal' || lhs.kind === 'set' || lhs.kind === 'flag-list') {
    // The grammar reads any word as an operand; a match needs something to read from the packet.
    const text = lhs.kind === 'literal' ? lhs.text : env.pos.text.slice(n.location!.startOffset, (n.location!.endOffset ?? 0) + 1);
    env.diagnostics.push({ severity: 'error', code: 'syntax', message: `unexpected '${text}', expected a statement`, span: lhs.span });
    return { kind: 'unsupported', span, text };
  }
  const relOp = tok(n, 'op');
  const op = relOp ? REL_OPS[relOp.image] ?? '==' : 'implicit';
  const value = buildExpr(env, node(n, 'value')!);
  if (relOp?.image === '!') {
    // `tcp flags ! syn,ack`, `ct status ! dnat`: none of the bits is set, (x & v) == 0 (nft
    // src/evaluate.c turns OP_NEG on a bitmask into exactly this).
    const left: Expr = { kind: 'binop', span: spanTo(lhs.span, value.span.end), op: '&', left: lhs, right: value };
    const zero: Expr = { kind: 'literal', span: value.span, text: '0' };
    const relational: Relational = { kind: 'relational', span, op: '==', left: typeInner(left), right: typeAgainst(zero, left) };
    shareValues(env, relational.left);
    shareValues(env, relational.right);
    return { kind: 'match', span, expr: relational };
  }
  const maskNode = node(n, 'mask');
  // Typed as typeInner would type the relational, without building it twice.
  if (maskNode) {
    // nft 1.0.x `tcp flags syn / syn,ack`: (tcp flags & syn,ack) == syn.
    const mask = buildExpr(env, maskNode);
    const left: Expr = { kind: 'binop', span: spanTo(lhs.span, mask.span.end), op: '&', left: lhs, right: mask };
    const relational: Relational = { kind: 'relational', span, op: op === 'implicit' ? '==' : op, left: typeInner(left), right: typeAgainst(value, left), slash: true };
    shareValues(env, relational.left);
    shareValues(env, relational.right);
    return { kind: 'match', span, expr: relational };
  }
  const right = typeAgainst(value, lhs, env.tableFamily);
  shareValues(env, right);
  return { kind: 'match', span, expr: { kind: 'relational', span, op, left: typeInner(lhs), right } };
}

/** A `comment "…"` statement's text, if `n` is one. */
export function commentOf(n: CstNode): string | undefined {
  const c = node(n, 'commentStmt');
  const t = c && tok(c, 'text');
  return t ? unquote(t.image) : undefined;
}
