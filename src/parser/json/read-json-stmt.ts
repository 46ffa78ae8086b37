import type { JsonNode as Node } from './parse-json-tree.js';
import type {
  ElementExpr,
  Expr,
  Family,
  LimitStmt,
  NatStmt,
  ObjRefStmt,
  QuotaStmt,
  RejectStmt,
  Relational,
  Span,
  Stmt,
  VerdictName,
} from '../../model/ast.js';
import { datatypeOf, isBitmaskType, typeAgainst, typeInner } from '../../model/datatypes.js';
import { isError } from '../../model/diagnostic.js';
import { parseNftRuleBody } from '../nft/parse-nft.js';
import { ExprReader, VERDICT_NAMES, req } from './read-json-expr.js';
import {
  JsonSource,
  UnsupportedJson,
  asArray,
  asNumber,
  asString,
  boolProp,
  numberProp,
  keyCount,
  property,
  singleEntry,
  stringListProp,
  stringProp,
} from './json-source.js';

// Statements of nft's JSON schema (doc/libnftables-json.adoc "STATEMENTS"; written by src/json.c
// `*_stmt_json`, read by src/parser_json.c `json_parse_stmt`).

/** Statement keys that name a stateful object when their value is a name or a map rather than
 * the anonymous object's own fields (json.c `objref_stmt_json` uses `objref_type_name`). */
const OBJREF_TYPES: Readonly<Record<string, ObjRefStmt['type']>> = {
  counter: 'counter',
  quota: 'quota',
  limit: 'limit',
  'ct helper': 'ct helper',
  'ct timeout': 'ct timeout',
  'ct expectation': 'ct expectation',
  synproxy: 'synproxy',
  secmark: 'secmark',
  tunnel: 'tunnel',
};

/** The keys each statement may carry (json.c `*_stmt_json`, parser_json.c `json_parse_*_stmt`). */
const STMT_KEYS: Readonly<Record<string, readonly string[]>> = {
  match: ['op', 'left', 'right'],
  counter: ['packets', 'bytes'],
  mangle: ['key', 'value'],
  vmap: ['key', 'data'],
  quota: ['val', 'val_unit', 'inv', 'used', 'used_unit'],
  limit: ['rate', 'rate_unit', 'burst', 'burst_unit', 'per', 'inv'],
  last: ['used'],
  log: ['prefix', 'group', 'snaplen', 'queue-threshold', 'level', 'flags'],
  snat: ['family', 'addr', 'port', 'flags', 'type_flags'],
  dnat: ['family', 'addr', 'port', 'flags', 'type_flags'],
  masquerade: ['port', 'flags'],
  redirect: ['port', 'flags'],
  reject: ['type', 'expr'],
  set: ['op', 'elem', 'set', 'stmt'],
  map: ['op', 'elem', 'data', 'map', 'stmt'],
  flow: ['op', 'flowtable'],
  dup: ['addr', 'dev'],
  fwd: ['dev', 'family', 'addr'],
  tproxy: ['family', 'addr', 'port'],
  queue: ['num', 'flags'],
  synproxy: ['mss', 'wscale', 'flags'],
  xt: ['type', 'name'],
  'ct count': ['val', 'inv'],
  jump: ['target'],
  goto: ['target'],
};

/** nft's packet burst when none is given (src/parser_bison.y `limit_burst_pkts`). */
const DEFAULT_PACKET_BURST = 5;

const REJECT_TYPES: ReadonlySet<string> = new Set(['icmp', 'icmpv6', 'icmpx', 'tcp reset']);
const LIMIT_PERIODS: ReadonlySet<string> = new Set(['second', 'minute', 'hour', 'day', 'week']);

export class StmtReader {
  readonly exprs: ExprReader;

  constructor(private readonly src: JsonSource) {
    this.exprs = new ExprReader(src, (_src, key, value) => this.readKnown(key, value, src.span(value)));
  }

  /** The family of the table whose rule is being read (readMatch: typeAgainst). */
  private tableFamily: Family | undefined;

  /** A rule's `expr` array: one statement per item, unknown ones kept as `unsupported`; `family`
   * is the rule's table's. */
  readList(node: Node, family?: Family): Stmt[] {
    this.tableFamily = family;
    return asArray(node).map((item) => this.read(item));
  }

  read(node: Node): Stmt {
    const span = this.src.span(node);
    if (node.type === 'string') return this.readText(node, span);
    try {
      const [key, value] = singleEntry(node);
      const stmt = this.readKnown(key, value, span);
      if (stmt) return stmt;
      throw new UnsupportedJson(`unknown statement "${key}"`, node);
    } catch (e) {
      if (!(e instanceof UnsupportedJson)) throw e;
      this.src.report('warning', 'unsupported', `unsupported statement: ${e.message}`, e.node);
      return { kind: 'unsupported', span, text: this.src.slice(node) };
    }
  }

  /** nft writes its text form for statements that have no JSON printer (json.c
   * `stmt_print_json`, e.g. 1.0.6's `update @m { ip saddr : 0x1 }`, which kube-proxy's session
   * affinity uses, and anonymous chains `jump { … }`). A one-line statement written without JSON
   * escapes is read with the nft text parser, its spans moved into the JSON string; anything
   * else is kept verbatim. */
  private readText(node: Node, span: Span): Stmt {
    const text = node.value as string;
    const start = span.start + 1;
    if (this.src.raw(node).length === text.length + 2) {
      const { rule, diagnostics } = parseNftRuleBody(text, { file: span.file });
      const stmt = rule?.stmts.length === 1 && !diagnostics.some(isError) ? rule.stmts[0] : undefined;
      if (stmt) {
        // Warnings (an `[invalid type]` value) stand, where they are in the JSON.
        this.src.diagnostics.push(...this.relocate(diagnostics, start));
        return this.relocate(stmt, start);
      }
    }
    this.src.report('warning', 'unsupported', `statement without a JSON form: ${text}`, node);
    return { kind: 'unsupported', span, text };
  }

  /** `node` with every span moved by `offset` characters into the JSON text. */
  private relocate<T>(node: T, offset: number): T {
    if (Array.isArray(node)) return node.map((item: unknown) => this.relocate(item, offset)) as T;
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      out[key] = key === 'span' ? this.src.spanAt(offset + (value as Span).start, offset + (value as Span).end) : this.relocate(value, offset);
    }
    return out as T;
  }

  /** The statement `{key: value}`, or undefined when `key` is no statement. */
  private readKnown(key: string, v: Node, span: Span): Stmt | undefined {
    const x = this.exprs;
    const keys = STMT_KEYS[key];
    if (keys && !(key in OBJREF_TYPES && isObjectReference(v))) this.src.checkKeys(v, key, keys);
    if (VERDICT_NAMES.has(key) && !(key === 'queue' && v.type === 'object')) {
      if (key === 'queue') return { kind: 'queue', span, flags: [] };
      const target = v.type === 'object' ? stringProp(v, 'target') : undefined;
      return { kind: 'verdict', span, verdict: key as VerdictName, ...(target !== undefined && { target }) };
    }
    if (key in OBJREF_TYPES && isObjectReference(v)) {
      return { kind: 'objref', span, type: OBJREF_TYPES[key]!, name: typeInner(this.readObjName(v)) };
    }
    switch (key) {
      case 'match':
        return { kind: 'match', span, expr: this.readMatch(v, span) };
      case 'counter': {
        const packets = v.type === 'object' ? numberProp(v, 'packets') : undefined;
        const bytes = v.type === 'object' ? numberProp(v, 'bytes') : undefined;
        return { kind: 'counter', span, ...(packets !== undefined && { packets }), ...(bytes !== undefined && { bytes }) };
      }
      case 'mangle':
        return this.readMangle(v, span);
      case 'vmap': {
        // Typed as the map lookup it is, so the keys of `{ 22 : accept }` read as ports.
        const data = req(v, 'data');
        const key = x.read(req(v, 'key'));
        const lookup = typeInner({ kind: 'map', span, key, map: x.readSetOrRef(data, this.src.span(data)), vmap: true });
        if (lookup.kind !== 'map') throw new Error('internal: typeInner changed the kind of a map');
        return { kind: 'vmap', span, key: lookup.key, map: lookup.map };
      }
      case 'quota':
        return readQuota(v, span);
      case 'limit':
        return readLimit(v, span);
      case 'last': {
        const used = v.type === 'object' ? numberProp(v, 'used') : undefined;
        return { kind: 'last', span, ...(used !== undefined && { used: String(used) }) };
      }
      case 'log':
        return this.readLog(v, span);
      case 'snat':
      case 'dnat':
      case 'masquerade':
      case 'redirect':
        return this.readNat(key, v, span);
      case 'reject':
        return readReject(v, span);
      case 'set':
      case 'map': {
        const op = asString(req(v, 'op'));
        if (op !== 'add' && op !== 'update' && op !== 'delete') throw new UnsupportedJson(`unknown set operation "${op}"`, v);
        const set = asString(req(v, key));
        const element = this.readSetOpElement(v, key === 'map' ? req(v, 'data') : undefined);
        return { kind: 'set-op', span, op, set: set.replace(/^@/, ''), element };
      }
      case 'flow':
        return { kind: 'flow-offload', span, flowtable: asString(req(v, 'flowtable')).replace(/^@/, '') };
      case 'notrack':
        return { kind: 'notrack', span };
      case 'dup': {
        if (v.type === 'null') return { kind: 'dup', span };
        const addr = property(v, 'addr');
        const dev = property(v, 'dev');
        return { kind: 'dup', span, ...(addr && { addr: x.read(addr) }), ...(dev && { device: x.read(dev) }) };
      }
      case 'fwd': {
        const addr = property(v, 'addr');
        const family = readIpFamily(v);
        return {
          kind: 'fwd',
          span,
          device: x.read(req(v, 'dev')),
          ...(family && { family }),
          ...(addr && { addr: x.read(addr) }),
        };
      }
      case 'tproxy': {
        const addr = property(v, 'addr');
        const port = property(v, 'port');
        const family = readIpFamily(v);
        return {
          kind: 'tproxy',
          span,
          ...(family && { family }),
          ...(addr && { addr: x.read(addr) }),
          ...(port && { port: x.read(port) }),
        };
      }
      case 'queue': {
        const num = property(v, 'num');
        return { kind: 'queue', span, flags: stringListProp(v, 'flags'), ...(num && { num: x.read(num) }) };
      }
      case 'synproxy':
        return { kind: 'synproxy', span, ...readSynproxyFields(v) };
      case 'reset': {
        const target = x.read(v);
        if (target.kind !== 'tcp-option') throw new UnsupportedJson('reset needs a tcp option', v);
        return { kind: 'option-reset', span, target };
      }
      case 'xt': {
        const type = asString(req(v, 'type'));
        if (type !== 'match' && type !== 'target' && type !== 'watcher') {
          throw new UnsupportedJson(`unknown xt type "${type}"`, v);
        }
        const name = stringProp(v, 'name');
        return { kind: 'xt', span, type, ...(name !== undefined && { name }) };
      }
      case 'ct count':
        return { kind: 'ct-count', span, count: asNumber(req(v, 'val')), over: boolProp(v, 'inv') === true };
      case 'meter': {
        // `{"meter": {"key": …, "stmt": …, "size": N, "name": "m"}}`: the key an element as in a
        // set statement's `elem`, `stmt` one statement (nft 1.0.6 json.c meter_stmt_json).
        const base = this.exprs.readElement(req(v, 'key'));
        const stmtNode = property(v, 'stmt');
        const own = stmtNode === undefined ? [] : stmtNode.type === 'array' ? this.readList(stmtNode) : [this.read(stmtNode)];
        const stmts = [...(base.stmts ?? []), ...own];
        const size = property(v, 'size');
        const element = stmts.length > 0 ? { ...base, stmts } : base;
        return { kind: 'set-op', span, op: 'update', set: asString(req(v, 'name')), element, meter: size ? { size: asNumber(size) } : {} };
      }
      default:
        return undefined;
    }
  }

  /** Relational operators. JSON writes `in` for nft's implicit operator and `==` for explicit
   * equality, which the listing prints only where it means something else than the implicit one
   * (isExplicitEq); the model says what the listing says. `!` is the input form "none of these
   * flags" (parser_json.c: OP_NEG), the kernel's `(x & flags) == 0`. */
  private readMatch(v: Node, span: Span): Relational {
    const op = asString(req(v, 'op'));
    const left = typeInner(this.exprs.read(req(v, 'left')));
    const right = typeAgainst(this.exprs.read(req(v, 'right')), left, this.tableFamily);
    switch (op) {
      case 'in':
        return { kind: 'relational', span, op: 'implicit', left, right };
      case '==':
        return { kind: 'relational', span, op: isExplicitEq(left, right) ? '==' : 'implicit', left, right };
      case '!=':
      case '<':
      case '>':
      case '<=':
      case '>=':
        return { kind: 'relational', span, op, left, right };
      case '!': {
        const masked = typeInner({ kind: 'binop', span, op: '&', left, right });
        return { kind: 'relational', span, op: '==', left: masked, right: typeAgainst({ kind: 'literal', span, text: '0' }, masked) };
      }
      default:
        throw new UnsupportedJson(`unknown match operator "${op}"`, v);
    }
  }

  /** `mangle` sets a meta key, a ct key or a header field (json.c writes all three this way). */
  private readMangle(v: Node, span: Span): Stmt {
    const keyNode = req(v, 'key');
    const target = this.exprs.read(keyNode);
    const value = typeAgainst(this.exprs.read(req(v, 'value')), target);
    switch (target.kind) {
      case 'meta':
        return { kind: 'meta-set', span, key: target.key, qualified: target.qualified, value };
      case 'ct':
        return { kind: 'ct-set', span, key: target.key, ...(target.dir && { dir: target.dir }), value };
      case 'payload':
      case 'raw-payload':
      case 'exthdr':
      case 'tcp-option':
        return { kind: 'payload-set', span, target, value };
      default:
        throw new UnsupportedJson(`cannot set ${target.kind}`, keyNode);
    }
  }

  private readLog(v: Node, span: Span): Stmt {
    if (v.type === 'null') return { kind: 'log', span, flags: [] };
    const prefix = stringProp(v, 'prefix');
    const group = numberProp(v, 'group');
    const snaplen = numberProp(v, 'snaplen');
    const queueThreshold = numberProp(v, 'queue-threshold');
    const level = stringProp(v, 'level');
    return {
      kind: 'log',
      span,
      flags: logFlagsAsListed(stringListProp(v, 'flags')),
      ...(prefix !== undefined && { prefix }),
      ...(group !== undefined && { group }),
      ...(snaplen !== undefined && { snaplen }),
      ...(queueThreshold !== undefined && { queueThreshold }),
      ...(level !== undefined && { level }),
    };
  }

  private readNat(type: NatStmt['type'], v: Node, span: Span): NatStmt {
    if (v.type === 'null') return { kind: 'nat', span, type, flags: [] };
    const family = readIpFamily(v);
    const addr = property(v, 'addr');
    const port = property(v, 'port');
    const typeFlags = stringListProp(v, 'type_flags');
    return {
      kind: 'nat',
      span,
      type,
      flags: stringListProp(v, 'flags'),
      ...(family && { family }),
      ...(typeFlags.includes('prefix') && { form: 'prefix' as const }),
      // Typed as the lookups they may be, so the keys of `dnat to iifname map { "eth0" : … }`
      // read as interface names.
      ...(addr && { addr: typeInner(this.exprs.read(addr)) }),
      ...(port && { port: typeInner(this.exprs.read(port)) }),
    };
  }

  /** `"elem"` of a set/map statement, plus the statements of `"stmt"` (`add @s { ip saddr limit
   * rate 10/second }`). */
  private readSetOpElement(v: Node, data: Node | undefined): ElementExpr {
    const elemNode = req(v, 'elem');
    const base = this.exprs.readElement(elemNode);
    const stmtNode = property(v, 'stmt');
    const stmts = [...(base.stmts ?? []), ...(stmtNode ? this.readList(stmtNode) : [])];
    return {
      ...base,
      ...(data && { data: this.exprs.read(data) }),
      ...(stmts.length > 0 && { stmts }),
    };
  }

  private readObjName(v: Node): Expr {
    const name = this.exprs.read(v);
    // An object name is a quoted string in the listing (`counter name "c"`).
    return name.kind === 'literal' && v.type === 'string' ? { ...name, quoted: true } : name;
  }
}

/** True when `{"counter": …}` & co. refer to a named object (a name or a map lookup) rather than
 * carry an anonymous object's fields. */
/** Where nft 1.0.6's listing keeps an explicit `==` (src/expression.c `must_print_eq_op`):
 * after a bitwise left side, and on a bitmask type against a value, where `tcp flags == syn`
 * (all bits exactly) differs from the implicit `tcp flags syn` (JSON "in": any of them). Against
 * a set the listing drops it, as membership means the same either way. */
function isExplicitEq(left: Expr, right: Expr): boolean {
  if (left.kind === 'binop') return true;
  if (right.kind === 'set' || right.kind === 'set-ref') return false;
  const type = datatypeOf(left);
  return type !== undefined && isBitmaskType(type.name);
}

function isObjectReference(v: Node): boolean {
  if (v.type === 'string') return true;
  return keyCount(v) === 1 && v.keys![0] === 'map';
}

function readQuota(v: Node, span: Span): QuotaStmt {
  // json.c writes `used` always; the listing, and so the model, leaves out `used 0`.
  const used = numberProp(v, 'used') || undefined;
  const usedUnit = stringProp(v, 'used_unit');
  return {
    kind: 'quota',
    span,
    over: boolProp(v, 'inv'),
    amount: asNumber(req(v, 'val')),
    unit: stringProp(v, 'val_unit') ?? 'bytes',
    ...(used !== undefined && { used }),
    ...(usedUnit !== undefined && { usedUnit }),
  };
}

export function readLimit(v: Node, span: Span): LimitStmt {
  const per = stringProp(v, 'per') ?? 'second';
  if (!LIMIT_PERIODS.has(per)) throw new UnsupportedJson(`unknown limit period "${per}"`, v);
  // json.c writes `burst` always; 0 means none was given, and for a packet rate 5 is nft's
  // default, which the listing leaves out (src/statement.c `limit_stmt_print`).
  const unit = stringProp(v, 'rate_unit') ?? 'packets';
  const written = numberProp(v, 'burst') || undefined;
  const burst = unit === 'packets' && written === DEFAULT_PACKET_BURST ? undefined : written;
  const burstUnit = stringProp(v, 'burst_unit');
  return {
    kind: 'limit',
    span,
    over: boolProp(v, 'inv'),
    rate: asNumber(req(v, 'rate')),
    unit,
    per: per as LimitStmt['per'],
    ...(burst !== undefined && { burst }),
    ...(burst !== undefined && burstUnit !== undefined && { burstUnit }),
  };
}

function readReject(v: Node, span: Span): RejectStmt {
  if (v.type === 'null') return { kind: 'reject', span };
  const type = stringProp(v, 'type');
  if (type !== undefined && !REJECT_TYPES.has(type)) throw new UnsupportedJson(`unknown reject type "${type}"`, v);
  const expr = property(v, 'expr');
  const code = expr === undefined ? undefined : expr.type === 'number' ? String(expr.value) : asString(expr);
  return {
    kind: 'reject',
    span,
    ...(type !== undefined && { with: type as NonNullable<RejectStmt['with']> }),
    ...(code !== undefined && { code }),
  };
}

export function readSynproxyFields(v: Node): { mss?: number; wscale?: number; flags: string[] } {
  if (v.type === 'null') return { flags: [] };
  const mss = numberProp(v, 'mss');
  const wscale = numberProp(v, 'wscale');
  return { flags: stringListProp(v, 'flags'), ...(mss !== undefined && { mss }), ...(wscale !== undefined && { wscale }) };
}

export function readIpFamily(v: Node): 'ip' | 'ip6' | undefined {
  const family = stringProp(v, 'family');
  if (family === undefined) return undefined;
  if (family !== 'ip' && family !== 'ip6') throw new UnsupportedJson(`unknown family "${family}"`, v);
  return family;
}

/** The listing's log flag words (src/statement.c `log_stmt_print`): `tcp sequence` and `tcp
 * options` together print as `tcp sequence,options`. */
function logFlagsAsListed(flags: readonly string[]): string[] {
  const out = flags.filter((f) => f !== 'tcp sequence' && f !== 'tcp options');
  const seq = flags.includes('tcp sequence');
  const opt = flags.includes('tcp options');
  const tcp = seq && opt ? 'tcp sequence,options' : seq ? 'tcp sequence' : opt ? 'tcp options' : undefined;
  return tcp ? [tcp, ...out] : out;
}

