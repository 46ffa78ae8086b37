import type { CstNode, IToken } from 'chevrotain';
import type {
  BaseChainSpec, Chain, ChainType, ElementExpr, Expr, Family, Flowtable, Hook, KeyType, NamedSet,
  Priority, Rule, Ruleset, Span, StatefulObject, Stmt, Table, Value,
} from '../../model/ast.js';
import type { Diagnostic } from '../../model/diagnostic.js';
import type { ChainId, EarlierChainLookup } from '../../model/compose-rulesets.js';
import { LineIndex } from '../../model/line-index.js';
import { keyTypeDatatype, typeSetElement } from '../../model/datatypes.js';
import { resolvePriorityName } from '../../model/priorities.js';
import {
  buildExpr, buildSetLiteral, endLineOf, firstChild, kids, lineIndexOf, nameText, node, nodes, numberOf, spanAt, spanOfNode, spanOfToken, spanTo, tok,
  unquote, type ChunkPos, type ExprEnv,
} from './build-nft-expr.js';
import { buildLimit, buildQuota, buildStmt, commentOf } from './build-nft-stmt.js';
import { unlistedRule } from '../unlisted-rule.js';

// CST items → model. The grammar is flat (see nft-grammar.ts); this builder keeps the block stack
// (table → chain/set/flowtable/object), checks where each item may appear, merges repeated
// declarations the way `nft -f` does, and applies commands (`add rule`, `insert rule`,
// `delete rule … handle N`, `flush chain` …) in order.

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

interface ChainB {
  name: string;
  span: Span;
  handle?: number;
  comment?: string;
  flags?: string[];
  type?: string;
  hook?: string;
  priority?: { span: Span; name?: string; offset: number; number?: number };
  policy?: string;
  devices: string[];
  deviceList?: boolean;
  rules: Rule[];
  /** The hook of a chain continued from an earlier input (EarlierChainLookup), until this input
   * declares one. */
  earlierBase?: BaseChainSpec;
}

interface SetB {
  set: Mutable<NamedSet>;
  elements: ElementExpr[];
  hasElements: boolean;
}

interface ObjectB {
  kind: string;
  span: Span;
  name: string;
  handle?: number;
  comment?: string;
  props: Map<string, string>;
  flags: string[];
  policy: { state: string; timeout: string }[];
  limit?: Stmt;
  body: string[];
}

interface FlowtableB {
  span: Span;
  name: string;
  handle?: number;
  hook?: string;
  priority?: ChainB['priority'];
  devices: string[];
  flags: string[];
  counter?: boolean;
}

interface TableB {
  span: Span;
  family: Family;
  name: string;
  handle?: number;
  flags: string[];
  comment?: string;
  objects: ObjectB[];
  sets: Map<string, SetB>;
  flowtables: FlowtableB[];
  chains: Map<string, ChainB>;
}

type Block =
  | { kind: 'table'; table: TableB }
  | { kind: 'chain'; table: TableB; chain: ChainB }
  | { kind: 'set'; table: TableB; set: SetB }
  | { kind: 'flowtable'; table: TableB; flowtable: FlowtableB }
  | { kind: 'object'; table: TableB; object: ObjectB };

const FAMILIES = new Set<Family>(['ip', 'ip6', 'inet', 'arp', 'bridge', 'netdev']);
const HOOKS = new Set<Hook>(['prerouting', 'input', 'forward', 'output', 'postrouting', 'ingress', 'egress']);
const CHAIN_TYPES = new Set<ChainType>(['filter', 'nat', 'route']);
const OBJECT_KINDS = new Set(['counter', 'quota', 'limit', 'secmark', 'synproxy', 'tunnel', 'ct helper', 'ct timeout', 'ct expectation']);

export class NftAstBuilder implements ExprEnv {
  readonly diagnostics: Diagnostic[];
  pos: ChunkPos = { file: '<input>', text: '', base: 0, baseLine: 1, lines: new LineIndex(''), ownStart: 0, ownEnd: 0 };
  /** Handles by chunk-local line (`# handle N` comments). */
  handles = new Map<number, number>();
  /** Chunk-local lines holding a `# handle N` and nothing else, in order: a rule nft could not
   * list (placeUnlistedRules). */
  unlisted: number[] = [];
  private readonly tables = new Map<string, TableB>();
  private readonly stack: Block[] = [];
  private readonly defines = new Map<string, Expr>();
  /** Parses an included file into this builder (set by parse-nft.ts). */
  includeFile: (path: string, span: Span) => void = () => undefined;
  /** Chains continued from earlier inputs, in the order first touched. */
  readonly continued: ChainId[] = [];
  /** The family of the table whose rule is being built (buildRule). */
  tableFamily: Family | undefined;
  otherFamilyHeader = false;

  constructor(
    diagnostics: Diagnostic[],
    private readonly earlier?: EarlierChainLookup,
  ) {
    this.diagnostics = diagnostics;
  }

  lookupDefine(name: string): Expr | undefined {
    return this.defines.get(name);
  }

  buildOptionStmt(n: CstNode): Stmt | undefined {
    return buildStmt(this, n);
  }

  // Names, keywords and literal spellings repeat across a listing; each token's text is a fresh
  // string (or a slice pinning its whole chunk), so the model keeps one copy of each.
  private readonly strings = new Map<string, string>();

  intern(s: string): string {
    const known = this.strings.get(s);
    if (known !== undefined) return known;
    this.strings.set(s, s);
    return s;
  }

  private readonly values = new Map<Value['type'], Map<unknown, Value>>();

  shareValue(v: Value): Value {
    let byKey = this.values.get(v.type);
    if (!byKey) {
      byKey = new Map();
      this.values.set(v.type, byKey);
    }
    const key = valueKey(v);
    const known = byKey.get(key);
    if (known) return known;
    byKey.set(key, v);
    return v;
  }

  private error(code: string, message: string, span: Span): void {
    this.diagnostics.push({ severity: 'error', code, message, span });
  }

  private handleAt(line: number): number | undefined {
    return this.handles.get(line);
  }

  /** The chain a `jump {` in the item being built opened; pushed once the item is done. */
  private boundChain: Block | undefined;
  private boundChains = 0;

  bindChain(span: Span): string {
    const top = this.top();
    const table = top ? top.table : this.ensureTable('ip', '<orphan>', span);
    const name = `__chain${this.boundChains++}`;
    const chain = this.ensureChain(table, name, span);
    chain.flags = ['binding'];
    this.boundChain = { kind: 'chain', table, chain };
    return name;
  }

  /** Builds one `item` CST node. */
  item(item: CstNode): void {
    if (this.unlisted.length > 0) this.placeUnlistedRules(item.location!.startOffset);
    this.buildItem(item);
    if (this.boundChain) {
      this.stack.push(this.boundChain);
      this.boundChain = undefined;
    }
  }

  /** The rules nft printed only the handle of (unlistedRule) on lines before the item at
   * `offset`, into the chain they are in. */
  private placeUnlistedRules(offset: number): void {
    const line = lineIndexOf(this.pos, offset) + 1;
    while (this.unlisted.length > 0 && this.unlisted[0]! < line) {
      const at = this.unlisted.shift()!;
      const block = this.top();
      if (block?.kind !== 'chain') continue;
      const hash = this.pos.text.indexOf('#', this.pos.lines.startOf(at - 1));
      const { rule, diagnostic } = unlistedRule(spanAt(this.pos, hash, this.pos.text.indexOf('\n', hash) - 1), this.handleAt(at));
      this.diagnostics.push(diagnostic);
      block.chain.rules.push(rule);
    }
  }

  private buildItem(item: CstNode): void {
    const c = kids(item);
    if (c.sep) return;
    if (c.close) return this.close(c.close[0] as IToken);
    const n = firstChild(item) as CstNode;
    switch (n.name) {
      case 'blockHeader':
        return this.blockHeader(n);
      case 'command':
        return this.command(n);
      case 'property':
        return this.property(n);
      case 'define':
        return this.define(n);
      case 'include':
        return this.includeFile(unquote(tok(n, 'path')!.image), spanOfNode(this.pos, n));
      case 'rule':
        return this.ruleItem(n);
      default:
        throw new Error(`nft builder: unexpected item ${n.name}`);
    }
  }

  private close(t: IToken): void {
    const block = this.stack.pop();
    if (!block) this.error('syntax', "unexpected '}', no block is open", spanOfToken(this.pos, t));
  }

  /** Call at the end of input: reports blocks left open. */
  checkClosed(span: Span): void {
    if (this.stack.length > 0) {
      this.error('syntax', `unexpected end of input, expected '}' (${this.stack.length} block(s) open)`, span);
      this.stack.length = 0;
    }
  }

  private top(): Block | undefined {
    return this.stack[this.stack.length - 1];
  }

  private ensureTable(familyText: string | undefined, name: string, span: Span): TableB {
    const family = (familyText ?? 'ip') as Family;
    if (!FAMILIES.has(family)) this.error('syntax', `unknown family '${familyText}'`, span);
    const key = `${family} ${name}`;
    let table = this.tables.get(key);
    if (!table) {
      table = { span, family, name, flags: [], objects: [], sets: new Map(), flowtables: [], chains: new Map() };
      this.tables.set(key, table);
    }
    return table;
  }

  private findTable(familyText: string | undefined, name: string, span: Span): TableB | undefined {
    const table = this.tables.get(`${familyText ?? 'ip'} ${name}`);
    if (!table) this.error('no-such-object', `no such table: ${familyText ?? 'ip'} ${name}`, span);
    return table;
  }

  /** The chain a rule command (or `flush chain`) names: this input's, else the one the inputs
   * before it left, continued here with its rules (they keep their own spans). */
  private commandChain(table: TableB, name: string): ChainB | undefined {
    const own = table.chains.get(name);
    if (own) return own;
    const id: ChainId = { family: table.family, table: table.name, chain: name };
    const earlier = this.earlier?.(id);
    if (!earlier) return undefined;
    const chain: ChainB = {
      name,
      span: earlier.span,
      ...(earlier.handle !== undefined ? { handle: earlier.handle } : {}),
      ...(earlier.comment !== undefined ? { comment: earlier.comment } : {}),
      ...(earlier.flags ? { flags: [...earlier.flags] } : {}),
      devices: [],
      rules: [...earlier.rules],
      ...(earlier.base ? { earlierBase: earlier.base } : {}),
    };
    table.chains.set(name, chain);
    this.continued.push(id);
    return chain;
  }

  /** The table of a command that must find it: this input's, else (for commands on a chain an
   * earlier input declared) an empty one of this input the chain is continued into. */
  private commandTable(familyText: string | undefined, name: string, chainName: string | undefined, span: Span): TableB | undefined {
    const family = (familyText ?? 'ip') as Family;
    if (!this.tables.has(`${family} ${name}`) && chainName !== undefined && this.earlier?.({ family, table: name, chain: chainName })) {
      return this.ensureTable(familyText, name, span);
    }
    return this.findTable(familyText, name, span);
  }

  private ensureChain(table: TableB, name: string, span: Span): ChainB {
    let chain = table.chains.get(name);
    if (!chain) {
      chain = { name, span, devices: [], rules: [] };
      table.chains.set(name, chain);
    }
    return chain;
  }

  private ensureSet(table: TableB, name: string, isMap: boolean, span: Span): SetB {
    let set = table.sets.get(name);
    if (!set) {
      set = { set: { kind: 'set', span, isMap, name, key: { kind: 'type', names: [] }, flags: [], stmts: [] }, elements: [], hasElements: false };
      table.sets.set(name, set);
    }
    return set;
  }

  private openObject(table: TableB, kind: string, name: string, span: Span, handle: number | undefined): Block {
    switch (kind) {
      case 'chain': {
        const chain = this.ensureChain(table, name, span);
        if (handle !== undefined) chain.handle = handle;
        return { kind: 'chain', table, chain };
      }
      case 'set':
      case 'map': {
        const set = this.ensureSet(table, name, kind === 'map', span);
        if (handle !== undefined) set.set.handle = handle;
        return { kind: 'set', table, set };
      }
      case 'flowtable': {
        const flowtable: FlowtableB = { span, name, devices: [], flags: [], ...(handle !== undefined ? { handle } : {}) };
        table.flowtables.push(flowtable);
        return { kind: 'flowtable', table, flowtable };
      }
      default: {
        const object: ObjectB = { kind, span, name, props: new Map(), flags: [], policy: [], body: [], ...(handle !== undefined ? { handle } : {}) };
        table.objects.push(object);
        return { kind: 'object', table, object };
      }
    }
  }

  private blockHeader(n: CstNode): void {
    const span = spanOfNode(this.pos, n);
    const handle = this.handleAt(endLineOf(this.pos, n));
    const kindTok = tok(n, 'kind')!;
    const name = nameText(this, node(n, 'name'));
    const kind = kindTok.image === 'ct' ? `ct ${tok(n, 'ctKind')!.image}` : kindTok.image;
    if (kind === 'table') {
      if (this.stack.length > 0) this.error('syntax', "unexpected 'table' inside a block", span);
      const table = this.ensureTable(tok(n, 'family')?.image, name, span);
      if (handle !== undefined) table.handle = handle;
      this.stack.push({ kind: 'table', table });
      return;
    }
    const top = this.top();
    if (top?.kind !== 'table') {
      this.error('syntax', `unexpected '${kind}' block outside a table`, span);
      // Still track the block so its closing brace balances.
      const orphan = this.ensureTable('ip', '<orphan>', span);
      this.stack.push(this.openObject(orphan, kind, name, span, handle));
      return;
    }
    if (!OBJECT_KINDS.has(kind) && !['chain', 'set', 'map', 'flowtable'].includes(kind)) {
      this.error('syntax', `unexpected '${kind}', expected chain, set, map, flowtable or an object`, span);
    }
    this.stack.push(this.openObject(top.table, kind, name, span, handle));
  }

  private define(n: CstNode): void {
    const verb = tok(n, 'verb')!.image;
    const name = tok(n, 'name')!.image;
    if (verb === 'undefine') {
      this.defines.delete(name);
      return;
    }
    const exprNode = node(n, 'expr');
    if (exprNode) this.defines.set(name, buildExpr(this, exprNode));
  }

  // ------------------------------------------------------------------------------------------
  // Properties

  private property(n: CstNode): void {
    const block = this.top();
    for (const clause of nodes(n, 'clause')) {
      const span = spanOfNode(this.pos, clause);
      if (!block) {
        this.error('syntax', 'unexpected property outside a block', span);
        return;
      }
      switch (block.kind) {
        case 'table':
          this.tableClause(block.table, clause, span);
          break;
        case 'chain':
          this.chainClause(block.table, block.chain, clause, span);
          break;
        case 'set':
          this.setClause(block.set, clause, span);
          break;
        case 'flowtable':
          this.flowtableClause(block.flowtable, clause, span);
          break;
        case 'object':
          this.objectClause(block.object, clause, span);
          break;
        default: {
          const exhaustive: never = block;
          return exhaustive;
        }
      }
    }
  }

  private clauseKey(clause: CstNode): string {
    const key = tok(clause, 'key');
    if (key) return key.image;
    if (node(clause, 'limitRate')) return 'rate';
    if (node(clause, 'quotaAmount')) return 'quota';
    return 'context';
  }

  private clauseText(clause: CstNode): string {
    const value = node(clause, 'value');
    if (value) {
      const e = buildExpr(this, value);
      return e.kind === 'literal' ? e.text : this.sourceOf(value);
    }
    const word = node(clause, 'word');
    if (word) return nameText(this, word);
    const context = tok(clause, 'context');
    return context ? unquote(context.image) : '';
  }

  private sourceOf(n: CstNode): string {
    const loc = n.location!;
    return this.pos.text.slice(loc.startOffset, (loc.endOffset ?? loc.startOffset) + 1);
  }

  private flagWords(clause: CstNode): string[] {
    const words = nodes(clause, 'words').map((w) => nameText(this, w));
    // `ct helper` (an object map's data type) is one type name of two words.
    const ct = words.indexOf('ct');
    if (ct >= 0 && ct + 1 < words.length) words.splice(ct, 2, `ct ${words[ct + 1]}`);
    return words;
  }

  private badClause(where: string, clause: CstNode, span: Span): void {
    this.error('syntax', `unexpected '${this.clauseKey(clause)}' in a ${where}`, span);
  }

  private tableClause(table: TableB, clause: CstNode, span: Span): void {
    const key = this.clauseKey(clause);
    if (key === 'flags') table.flags.push(...this.flagWords(clause));
    else if (key === 'comment') table.comment = this.clauseText(clause);
    else this.badClause('table', clause, span);
  }

  private priorityOf(clause: CstNode): ChainB['priority'] {
    const p = node(clause, 'prioSpec')!;
    const span = spanOfNode(this.pos, p);
    const number = tok(p, 'number');
    if (number) return { span, offset: 0, number: (tok(p, 'negative') ? -1 : 1) * Number(number.image) };
    const nameTok = tok(p, 'name')!;
    let name = nameTok.image;
    if (name.startsWith('$')) {
      const value = this.lookupDefine(name.slice(1));
      if (!value) this.error('undefined-variable', `undefined variable '${name}'`, spanOfToken(this.pos, nameTok));
      name = value?.kind === 'literal' ? value.text : name;
      if (/^-?\d+$/.test(name)) return { span, offset: 0, number: Number(name) };
    }
    const sign = tok(p, 'sign')?.image === '-' ? -1 : 1;
    const offset = numberOf(tok(p, 'offset')) ?? 0;
    return { span, name, offset: sign * offset };
  }

  private devicesOf(clause: CstNode): string[] {
    const value = buildExpr(this, node(clause, 'value')!);
    const items = value.kind === 'set' ? value.elements.map((e) => e.key) : [value];
    return items.map((e) => (e.kind === 'literal' ? e.text : ''));
  }

  private chainClause(table: TableB, chain: ChainB, clause: CstNode, span: Span): void {
    const key = this.clauseKey(clause);
    switch (key) {
      case 'type':
        chain.type = this.flagWords(node(clause, 'keyType')!).join(' . ');
        break;
      case 'hook':
        chain.hook = this.clauseText(clause);
        break;
      case 'priority':
        chain.priority = this.priorityOf(clause);
        break;
      case 'policy':
        chain.policy = this.clauseText(clause);
        break;
      case 'device':
        chain.devices = [this.clauseText(clause)];
        break;
      case 'devices':
        chain.devices = this.devicesOf(clause);
        chain.deviceList = true;
        break;
      case 'comment':
        chain.comment = this.clauseText(clause);
        break;
      case 'flags':
        chain.flags = this.flagWords(clause);
        break;
      default:
        this.badClause(`chain of table ${table.family} ${table.name}`, clause, span);
    }
  }

  private setClause(b: SetB, clause: CstNode, span: Span): void {
    const set = b.set;
    const key = this.clauseKey(clause);
    switch (key) {
      case 'type': {
        set.key = { kind: 'type', names: this.flagWords(node(clause, 'keyType')!) };
        const data = node(clause, 'dataType');
        if (data) set.data = this.dataType(this.flagWords(data));
        if (tok(clause, 'interval')) set.dataInterval = true;
        break;
      }
      case 'typeof': {
        set.key = { kind: 'typeof', expr: buildExpr(this, node(clause, 'keyExpr')!) };
        const data = node(clause, 'dataExpr');
        if (data) {
          const expr = buildExpr(this, data);
          set.data = expr.kind === 'literal' ? this.dataType([expr.text]) : { kind: 'typeof', expr };
        }
        if (tok(clause, 'interval')) set.dataInterval = true;
        break;
      }
      case 'flags':
        set.flags = [...set.flags, ...this.flagWords(clause)];
        break;
      case 'size':
        set.size = Number(this.clauseText(clause));
        break;
      case 'timeout':
        set.timeout = this.clauseText(clause);
        break;
      case 'gc-interval':
        set.gcInterval = this.clauseText(clause);
        break;
      case 'auto-merge':
        set.autoMerge = true;
        break;
      case 'comment':
        set.comment = this.clauseText(clause);
        break;
      case 'policy': {
        const p = this.clauseText(clause);
        if (p === 'performance' || p === 'memory') set.policy = p;
        else this.error('syntax', `unexpected set policy '${p}', expected performance or memory`, span);
        break;
      }
      case 'elements': {
        const value = buildExpr(this, node(clause, 'value')!);
        b.hasElements = true;
        if (value.kind === 'set') appendAll(b.elements, value.elements);
        else b.elements.push({ kind: 'element', span: value.span, key: value });
        break;
      }
      default:
        this.badClause(set.isMap ? 'map' : 'set', clause, span);
    }
  }

  /** `: verdict`, `: counter`, `: ct helper`, `: ipv4_addr . inet_service`. */
  private dataType(names: string[]): KeyType {
    return { kind: 'type', names };
  }

  private flowtableClause(ft: FlowtableB, clause: CstNode, span: Span): void {
    const key = this.clauseKey(clause);
    if (key === 'hook') ft.hook = this.clauseText(clause);
    else if (key === 'priority') ft.priority = this.priorityOf(clause);
    else if (key === 'devices') ft.devices = this.devicesOf(clause);
    else if (key === 'device') ft.devices = [this.clauseText(clause)];
    else if (key === 'flags') ft.flags.push(...this.flagWords(clause));
    else this.badClause('flowtable', clause, span);
  }

  private objectClause(obj: ObjectB, clause: CstNode, span: Span): void {
    if (obj.kind === 'tunnel') {
      obj.body.push(this.sourceOf(clause));
      return;
    }
    const key = this.clauseKey(clause);
    switch (key) {
      case 'comment':
        obj.comment = this.clauseText(clause);
        return;
      case 'rate':
        obj.limit = buildLimit(this, node(clause, 'limitRate')!);
        return;
      case 'quota': {
        const q = buildQuota(this, node(clause, 'quotaAmount')!);
        obj.props.set('over', q.over ? '1' : '');
        obj.props.set('bytes', String(q.amount * unitBytes(q.unit)));
        if (q.used !== undefined) obj.props.set('used', String(q.used * unitBytes(q.usedUnit ?? 'bytes')));
        return;
      }
      case 'policy': {
        const map = node(clause, 'policyMap');
        if (!map) break;
        for (const el of buildSetLiteral(this, map).elements) {
          const state = el.key.kind === 'literal' ? el.key.text : '';
          const timeout = el.data?.kind === 'literal' ? el.data.text : '';
          obj.policy.push({ state, timeout });
        }
        return;
      }
      case 'timestamp':
      case 'sack-perm':
        obj.flags.push(key);
        return;
      case 'type':
        obj.props.set('type', this.flagWords(node(clause, 'keyType')!).join(' '));
        return;
      default:
        obj.props.set(key, this.clauseText(clause));
        return;
    }
    this.badClause(obj.kind, clause, span);
  }

  // ------------------------------------------------------------------------------------------
  // Rules

  private buildRule(statements: CstNode[], span: Span, handle: number | undefined, lineStart: number, family?: Family): Rule {
    this.tableFamily = family;
    const stmts: Stmt[] = [];
    let comment: string | undefined;
    let prevEnd = lineStart;
    for (const s of statements) {
      const loc = s.location!;
      const blanks = blankMatchesBefore(this.pos.text, prevEnd, loc.startOffset, prevEnd === lineStart);
      for (let i = 0; i < blanks; i++) {
        stmts.push({ kind: 'xt', span: spanOfNode(this.pos, s), type: 'match', blank: true });
      }
      prevEnd = (loc.endOffset ?? loc.startOffset) + 1;
      const text = commentOf(s);
      if (text !== undefined) {
        comment = text;
        continue;
      }
      this.otherFamilyHeader = false;
      const stmt = buildStmt(this, s);
      if (stmt) stmts.push(this.otherFamilyHeader ? this.otherFamilyStmt(s, family!, stmt) : stmt);
    }
    // A copy has no spare capacity: a grown array keeps room for 16 statements, and a large
    // listing holds one per rule.
    const exact = stmts.slice();
    if (handle === undefined) return comment === undefined ? { kind: 'rule', span, stmts: exact } : { kind: 'rule', span, comment, stmts: exact };
    return comment === undefined ? { kind: 'rule', span, handle, stmts: exact } : { kind: 'rule', span, handle, comment, stmts: exact };
  }

  /** A statement on a header of the other IP family than its ip or ip6 table: nft refuses it
   * (conflicting protocols), but lists iptables extensions kept as xt so (nft 1.0.6 with
   * iptables-nft 1.8.9: libxt_TOS's translation writes `ip6 dscp set 0x04` in an ip table for
   * `--set-tos 0x10/0x3f`, its mask dropped; libxt_ecn's `ip ecn` in an ip6 table). Kept
   * unsupported, not run as a test that never holds. */
  private otherFamilyStmt(n: CstNode, family: Family, stmt: Stmt): Stmt {
    const span = spanOfNode(this.pos, n);
    const text = this.sourceOf(n);
    const other = family === 'ip' ? 'ip6' : 'ip';
    this.diagnostics.push({
      severity: 'warning',
      code: 'unsupported',
      message: `an ${other} header in an ${family} table is not modelled: nft refuses it, and lists iptables extensions so (the TOS target, the ecn match): '${text}'`,
      span,
    });
    return stmt.kind === 'match' || stmt.kind === 'vmap' ? { kind: 'unsupported', span, text, test: true } : { kind: 'unsupported', span, text };
  }

  /** A rule body parsed on its own (`parseNftRuleBody`). */
  ruleBody(n: CstNode): Rule {
    return this.buildRule(nodes(n, 'statement'), spanOfNode(this.pos, n), undefined, this.lineStartOf(n.location!.startOffset));
  }

  private lineStartOf(offset: number): number {
    return this.pos.text.lastIndexOf('\n', offset - 1) + 1;
  }

  private ruleItem(n: CstNode): void {
    const span = spanOfNode(this.pos, n);
    const block = this.top();
    const statements = nodes(n, 'statement');
    if (block?.kind === 'object' && block.object.kind === 'tunnel') {
      block.object.body.push(this.sourceOf(n));
      return;
    }
    const rule = this.buildRule(statements, span, this.handleAt(endLineOf(this.pos, n)), this.lineStartOf(n.location!.startOffset), block?.table.family);
    switch (block?.kind) {
      case 'chain':
        block.chain.rules.push(rule);
        return;
      case 'set':
        // Set-level statements: `counter`, `limit rate …`, `quota …`, `last`.
        block.set.set.stmts = [...block.set.set.stmts, ...rule.stmts];
        return;
      case 'flowtable':
        if (rule.stmts.length === 1 && rule.stmts[0]!.kind === 'counter') {
          block.flowtable.counter = true;
          return;
        }
        break;
      default:
        break;
    }
    this.error('syntax', block ? `unexpected rule in a ${block.kind} block` : 'unexpected rule outside a chain', span);
  }

  // ------------------------------------------------------------------------------------------
  // Commands

  private command(n: CstNode): void {
    const span = spanOfNode(this.pos, n);
    const verb = tok(n, 'verb')!.image;
    const objectTok = tok(n, 'object')!;
    const object = objectTok.image === 'ct' ? `ct ${tok(n, 'ctKind')!.image}` : objectTok.image;
    const path = node(n, 'objectPath');
    const family = path ? tok(path, 'family')?.image : tok(n, 'family')?.image;
    const names = path ? nodes(path, 'names').map((x) => nameText(this, x)) : [];
    const whereNum = numberOf(tok(n, 'whereNum'));
    const open = tok(n, 'open') !== undefined;
    if (object === 'ruleset') {
      if (verb !== 'flush') return this.error('syntax', `unexpected '${verb} ruleset'`, span);
      for (const [key, table] of this.tables) if (!family || table.family === family) this.tables.delete(key);
      return;
    }
    if (object === 'table') {
      const name = names[0] ?? '';
      if (verb === 'add' || verb === 'create') {
        const table = this.ensureTable(family, name, span);
        if (open) this.stack.push({ kind: 'table', table });
      } else if (verb === 'delete' || verb === 'destroy') {
        if (this.tables.has(`${family ?? 'ip'} ${name}`)) this.tables.delete(`${family ?? 'ip'} ${name}`);
        else if (verb === 'delete') this.findTable(family, name, span);
      } else if (verb === 'flush') {
        const table = this.findTable(family, name, span);
        if (table) for (const chain of table.chains.values()) chain.rules = [];
      } else {
        this.error('syntax', `unexpected '${verb} table'`, span);
      }
      return;
    }
    const onChain = object === 'rule' || (object === 'chain' && verb === 'flush') ? names[1] : undefined;
    const table = verb === 'add' || verb === 'create' ? this.ensureTable(family, names[0] ?? '', span) : this.commandTable(family, names[0] ?? '', onChain, span);
    if (!table) {
      if (open) this.stack.push({ kind: 'table', table: this.ensureTable('ip', '<missing>', span) });
      return;
    }
    const name = names[1] ?? '';
    switch (object) {
      case 'rule':
        return this.ruleCommand(verb, table, name, n, span, tok(n, 'where')?.image, whereNum);
      case 'element':
        return this.elementCommand(verb, table, name, node(n, 'setLiteral')!, span);
      default:
        break;
    }
    if (verb === 'add' || verb === 'create') {
      const block = this.openObject(table, object, name, span, undefined);
      if (open) this.stack.push(block);
      return;
    }
    if (verb === 'flush') {
      if (object === 'chain') {
        const chain = this.commandChain(table, name);
        if (chain) chain.rules = [];
        else this.error('no-such-object', `no such chain: ${name}`, span);
      } else if (object === 'set' || object === 'map') {
        const set = table.sets.get(name);
        if (set) set.elements = [];
        else this.error('no-such-object', `no such ${object}: ${name}`, span);
      } else {
        this.error('syntax', `unexpected 'flush ${object}'`, span);
      }
      return;
    }
    if (verb === 'delete' || verb === 'destroy') {
      let found: boolean;
      if (object === 'chain') found = table.chains.delete(name);
      else if (object === 'set' || object === 'map') found = table.sets.delete(name);
      else if (object === 'flowtable') {
        const before = table.flowtables.length;
        table.flowtables = table.flowtables.filter((f) => f.name !== name);
        found = table.flowtables.length < before;
      } else {
        const before = table.objects.length;
        table.objects = table.objects.filter((o) => !(o.kind === object && o.name === name));
        found = table.objects.length < before;
      }
      if (!found && verb === 'delete') this.error('no-such-object', `no such ${object}: ${name}`, span);
      return;
    }
    this.error('syntax', `unexpected '${verb} ${object}'`, span);
  }

  private ruleCommand(verb: string, table: TableB, chainName: string, n: CstNode, span: Span, where: string | undefined, whereNum: number | undefined): void {
    const chain = this.commandChain(table, chainName);
    if (!chain) return this.error('no-such-object', `no such chain: ${table.family} ${table.name} ${chainName}`, span);
    const statements = nodes(n, 'statement');
    const at = where && whereNum !== undefined ? chain.rules.findIndex((r) => r.handle === whereNum) : -1;
    if (where && where !== 'index' && at < 0 && verb !== 'add' && verb !== 'insert') {
      return this.error('no-such-object', `no rule with handle ${whereNum} in chain ${chainName}`, span);
    }
    if (verb === 'delete' || verb === 'destroy') {
      if (at >= 0) chain.rules.splice(at, 1);
      else if (verb === 'delete') this.error('no-such-object', `no rule with handle ${whereNum} in chain ${chainName}`, span);
      return;
    }
    const first = statements[0];
    const ruleSpan = first ? spanTo(spanOfNode(this.pos, first), span.end) : span;
    const rule = this.buildRule(statements, ruleSpan, undefined, first ? first.location!.startOffset : 0, table.family);
    if (verb === 'replace') {
      if (at >= 0) chain.rules[at] = { ...rule, ...(whereNum !== undefined ? { handle: whereNum } : {}) };
      return;
    }
    if (where === 'index' && whereNum !== undefined) {
      chain.rules.splice(verb === 'insert' ? whereNum : whereNum + 1, 0, rule);
    } else if (verb === 'insert') {
      chain.rules.splice(at >= 0 ? at : 0, 0, rule);
    } else {
      chain.rules.splice(at >= 0 ? at + 1 : chain.rules.length, 0, rule);
    }
  }

  private elementCommand(verb: string, table: TableB, setName: string, lit: CstNode, span: Span): void {
    const set = table.sets.get(setName);
    if (!set) return this.error('no-such-object', `no such set: ${table.family} ${table.name} ${setName}`, span);
    const elements = buildSetLiteral(this, lit).elements;
    if (verb === 'add' || verb === 'create') {
      set.hasElements = true;
      appendAll(set.elements, elements);
    } else if (verb === 'delete' || verb === 'destroy') {
      const keys = new Set(elements.map((e) => elementKeyText(e)));
      set.elements = set.elements.filter((e) => !keys.has(elementKeyText(e)));
    } else {
      this.error('syntax', `unexpected '${verb} element'`, span);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Result

  finish(): Ruleset {
    const tables: Table[] = [];
    for (const t of this.tables.values()) {
      if (t.name === '<orphan>' || t.name === '<missing>') continue;
      tables.push(this.finishTable(t));
    }
    return { kind: 'ruleset', tables };
  }

  private finishTable(t: TableB): Table {
    const chains: Chain[] = [];
    for (const c of t.chains.values()) chains.push(this.finishChain(t, c));
    return {
      kind: 'table',
      span: t.span,
      family: t.family,
      name: t.name,
      ...(t.handle !== undefined ? { handle: t.handle } : {}),
      flags: t.flags,
      ...(t.comment !== undefined ? { comment: t.comment } : {}),
      objects: t.objects.map((o) => this.finishObject(o)),
      sets: [...t.sets.values()].map((s) => this.finishSet(s)),
      flowtables: t.flowtables.map((f) => this.finishFlowtable(t, f)),
      chains,
    };
  }

  /** A set with its elements typed. One without a key (or a map without data) nft refuses with
   * these words; nftsim could not type its elements. */
  private finishSet(b: SetB): NamedSet {
    const { key, data, isMap, span } = b.set;
    if (key.kind === 'type' && key.names.length === 0) this.error('syntax', `${isMap ? 'map' : 'set'} definition does not specify key`, span);
    else if (isMap && data === undefined) this.error('syntax', 'map definition does not specify mapping data type', span);
    return typedElements(b);
  }

  private finishPriority(family: Family, hook: Hook, p: NonNullable<ChainB['priority']>): Priority {
    if (p.number !== undefined) return { span: p.span, offset: 0, value: p.number };
    const base = resolvePriorityName(family, hook, p.name!);
    if (base === undefined) {
      this.diagnostics.push({
        severity: 'warning',
        code: 'unknown-priority',
        message: `priority name '${p.name}' is not defined for family ${family} hook ${hook}`,
        span: p.span,
      });
    }
    return { span: p.span, name: p.name!, offset: p.offset, ...(base !== undefined ? { value: base + p.offset } : {}) };
  }

  private finishChain(t: TableB, c: ChainB): Chain {
    let base: BaseChainSpec | undefined = c.earlierBase;
    if (c.type !== undefined || c.hook !== undefined) {
      const hook = c.hook as Hook;
      if (!HOOKS.has(hook)) this.error('syntax', `unknown hook '${c.hook ?? ''}' in chain ${c.name}`, c.span);
      if (!CHAIN_TYPES.has(c.type as ChainType)) this.error('syntax', `unknown chain type '${c.type ?? ''}' in chain ${c.name}`, c.span);
      const priority = c.priority ? this.finishPriority(t.family, hook, c.priority) : { span: c.span, offset: 0, value: 0 };
      base = {
        type: c.type as ChainType,
        hook,
        priority,
        ...(c.policy === 'accept' || c.policy === 'drop' ? { policy: c.policy } : {}),
        devices: c.devices,
        ...(c.deviceList ? { deviceList: true } : {}),
      };
    }
    return {
      kind: 'chain',
      span: c.span,
      name: c.name,
      ...(c.handle !== undefined ? { handle: c.handle } : {}),
      ...(c.comment !== undefined ? { comment: c.comment } : {}),
      ...(c.flags ? { flags: c.flags } : {}),
      ...(base ? { base } : {}),
      rules: c.rules,
    };
  }

  private finishFlowtable(t: TableB, f: FlowtableB): Flowtable {
    const hook = (f.hook ?? 'ingress') as Hook;
    return {
      kind: 'flowtable',
      span: f.span,
      name: f.name,
      ...(f.handle !== undefined ? { handle: f.handle } : {}),
      hook,
      priority: f.priority ? this.finishPriority(t.family, hook, f.priority) : { span: f.span, offset: 0, value: 0 },
      devices: f.devices,
      flags: f.flags,
      ...(f.counter ? { counter: true } : {}),
    };
  }

  private finishObject(o: ObjectB): StatefulObject {
    const base = { span: o.span, name: o.name, ...(o.handle !== undefined ? { handle: o.handle } : {}), ...(o.comment !== undefined ? { comment: o.comment } : {}) };
    const num = (k: string): number => Number(o.props.get(k) ?? 0);
    const l3proto = o.props.get('l3proto');
    const l3 = l3proto !== undefined ? { l3proto } : {};
    switch (o.kind) {
      case 'counter':
        return { kind: 'counter-object', ...base, packets: num('packets'), bytes: num('bytes') };
      case 'quota':
        return { kind: 'quota-object', ...base, over: o.props.get('over') === '1', bytes: num('bytes'), ...(o.props.has('used') ? { used: num('used') } : {}) };
      case 'limit':
        if (o.limit?.kind === 'limit') return { kind: 'limit-object', ...base, limit: o.limit };
        break;
      case 'ct helper':
        return { kind: 'ct-helper-object', ...base, helper: o.props.get('type') ?? '', protocol: o.props.get('protocol') ?? '', ...l3 };
      case 'ct timeout':
        return { kind: 'ct-timeout-object', ...base, protocol: o.props.get('protocol') ?? '', ...l3, policy: o.policy };
      case 'ct expectation':
        return {
          kind: 'ct-expectation-object', ...base, protocol: o.props.get('protocol') ?? '', dport: num('dport'),
          timeout: o.props.get('timeout') ?? '', size: num('size'), ...l3,
        };
      case 'secmark':
        return { kind: 'secmark-object', ...base, context: o.props.get('context') ?? '' };
      case 'synproxy': {
        const mss = o.props.has('mss') ? num('mss') : undefined;
        const wscale = o.props.has('wscale') ? num('wscale') : undefined;
        return { kind: 'synproxy-object', ...base, ...(mss !== undefined ? { mss } : {}), ...(wscale !== undefined ? { wscale } : {}), flags: o.flags };
      }
      default:
        break;
    }
    return { kind: 'opaque-object', ...base, type: o.kind, body: o.body };
  }
}

// Byte units of quotas and limits (nft src/datatype.c `data_unit_parse`).
const UNIT_BYTES: Readonly<Record<string, number>> = { bytes: 1, kbytes: 1024, mbytes: 1024 * 1024, gbytes: 1024 * 1024 * 1024 };

/** `target.push(...items)` for lists of any length: spreading passes every element as an
 * argument, which overflows the stack past ~100,000 (one big element list). */
function appendAll<T>(target: T[], items: readonly T[]): void {
  for (const item of items) target.push(item);
}

function unitBytes(unit: string): number {
  return UNIT_BYTES[unit] ?? 1;
}

function typedElements(b: SetB): NamedSet {
  const set = b.set;
  if (!b.hasElements) return set;
  const keyType = keyTypeDatatype(set.key);
  const dataType = keyTypeDatatype(set.data);
  return { ...set, elements: b.elements.map((e) => typeSetElement(e, keyType, dataType)) };
}

function valueKey(v: Value): unknown {
  switch (v.type) {
    case 'integer':
      return v.n;
    case 'bigint':
      return v.hex;
    case 'ipv4':
    case 'ipv6':
    case 'ether':
      return v.addr;
    case 'string':
      return v.s;
    case 'boolean':
      return v.b;
    default: {
      const exhaustive: never = v;
      return exhaustive;
    }
  }
}

/** How many blank xt matches the whitespace `text[from, to)` before a statement stands for.
 * iptables-nft prints an xt match it cannot translate as nothing, so the rule shows a blank where
 * the match was: a space after the tab indent (`atLineStart`), or two spaces between statements. */
function blankMatchesBefore(text: string, from: number, to: number, atLineStart: boolean): number {
  let i = from;
  if (atLineStart) {
    while (i < to && text.charCodeAt(i) === 9 /* \t */) i++;
    if (i === from) return 0;
  }
  const spaces = i;
  while (i < to && text.charCodeAt(i) === 32) i++;
  if (i < to) return 0;
  const n = to - spaces;
  return atLineStart ? n : n > 1 ? n - 1 : 0;
}

/** A span-free text of an element key, to match `delete element` against existing elements. */
function elementKeyText(e: ElementExpr): string {
  return JSON.stringify(e.key, (k, v: unknown) => (k === 'span' || k === 'dtype' || k === 'value' ? undefined : v));
}
