import { createScanner, parseTree, printParseErrorCode, SyntaxKind, type Node, type ParseError } from 'jsonc-parser';
import type {
  BaseChainSpec,
  Chain,
  ChainType,
  Family,
  Flowtable,
  Hook,
  KeyType,
  NamedSet,
  Priority,
  Rule,
  Span,
  StatefulObject,
  Stmt,
  Table,
} from '../../model/ast.js';
import type { Diagnostic } from '../../model/diagnostic.js';
import { datatypeNamed, datatypeOf, formatDuration, typeSetElement } from '../../model/datatypes.js';
import { priorityText } from '../../model/priorities.js';
import type { ParseOptions, ParseResult } from '../parse-result.js';
import {
  JsonSource,
  UnsupportedJson,
  asArray,
  asNumber,
  asString,
  boolProp,
  numberProp,
  objectEntries,
  property,
  singleEntry,
  stringListProp,
  stringProp,
} from './json-source.js';
import { req } from './read-json-expr.js';
import { StmtReader, readLimit, readSynproxyFields } from './read-json-stmt.js';

// Reads `nft -j list ruleset` (JSON schema version 1: nftables doc/libnftables-json.adoc, written
// by src/json.c, read back by src/parser_json.c) into the model. The listing is a flat array of
// tables, chains, sets, objects and rules that name their table (and chain); this regroups them.

/** The keys of each listing object (json.c `table_print_json`, `chain_print_json`,
 * `rule_print_json`, `set_print_json`, `flowtable_print_json`, `obj_print_json`). */
const OBJECT_BASE_KEYS = ['family', 'name', 'table', 'handle', 'comment'];
const SET_KEYS = [...OBJECT_BASE_KEYS, 'type', 'map', 'policy', 'size', 'flags', 'timeout', 'gc-interval', 'auto-merge', 'elem', 'stmt'];
const OBJECT_KEYS: Readonly<Record<string, readonly string[]>> = {
  metainfo: ['version', 'release_name', 'json_schema_version'],
  table: ['family', 'name', 'handle', 'flags', 'comment'],
  chain: [...OBJECT_BASE_KEYS, 'type', 'hook', 'prio', 'policy', 'dev'],
  rule: ['family', 'table', 'chain', 'handle', 'comment', 'expr', 'index'],
  set: SET_KEYS,
  map: SET_KEYS,
  flowtable: [...OBJECT_BASE_KEYS, 'hook', 'prio', 'dev', 'flags', 'counter'],
  counter: [...OBJECT_BASE_KEYS, 'packets', 'bytes'],
  quota: [...OBJECT_BASE_KEYS, 'bytes', 'used', 'inv'],
  limit: [...OBJECT_BASE_KEYS, 'rate', 'rate_unit', 'burst', 'burst_unit', 'per', 'inv'],
  'ct helper': [...OBJECT_BASE_KEYS, 'type', 'protocol', 'l3proto'],
  'ct timeout': [...OBJECT_BASE_KEYS, 'protocol', 'l3proto', 'policy'],
  'ct expectation': [...OBJECT_BASE_KEYS, 'protocol', 'dport', 'timeout', 'size', 'l3proto'],
  secmark: [...OBJECT_BASE_KEYS, 'context'],
  synproxy: [...OBJECT_BASE_KEYS, 'mss', 'wscale', 'flags'],
  tunnel: [...OBJECT_BASE_KEYS, 'id', 'src-ipv4', 'src-ipv6', 'dst-ipv4', 'dst-ipv6', 'sport', 'dport', 'tos', 'ttl', 'type', 'tunnel'],
};

const FAMILIES: ReadonlySet<string> = new Set(['ip', 'ip6', 'inet', 'arp', 'bridge', 'netdev']);
const HOOKS: ReadonlySet<string> = new Set(['prerouting', 'input', 'forward', 'output', 'postrouting', 'ingress', 'egress']);
const CHAIN_TYPES: ReadonlySet<string> = new Set(['filter', 'nat', 'route']);

/** Parses the JSON listing. Never throws: malformed JSON and unknown objects come back as
 * diagnostics with the span of the offending JSON. */
export function parseNftJson(text: string, options: ParseOptions = {}): ParseResult {
  const src = new JsonSource(options.file ?? '<input>', text);
  const builder = new RulesetBuilder(src);
  const items = listingItems(text);
  if (items) {
    // One small tree per listing object keeps memory proportional to the largest object rather
    // than to the whole listing (a kube-proxy node lists tens of MB).
    for (const [start, end] of items) {
      src.base = start;
      const item = parseJson(src, text.slice(start, end));
      if (item) builder.add(item);
    }
    src.base = 0;
  } else {
    const root = parseJson(src, text);
    const list = root && root.type === 'object' ? property(root, 'nftables') : undefined;
    if (root && (!list || list.type !== 'array')) {
      src.report('error', 'syntax', 'expected {"nftables": [...]} (the output of `nft -j list ruleset`)', root);
    } else if (list) {
      for (const item of asArray(list)) builder.add(item);
    }
  }
  return { ruleset: { kind: 'ruleset', tables: builder.build() }, diagnostics: src.diagnostics };
}

/** The offsets of the objects in `{"nftables": [ {…}, {…} ]}`, found with jsonc-parser's token
 * scanner, or undefined when the text is not exactly that shape (then the whole text is parsed
 * as one tree, which reports the problem with its position). */
function listingItems(text: string): [number, number][] | undefined {
  const scanner = createScanner(text, true);
  const expect = (kind: SyntaxKind, value?: string): boolean =>
    scanner.scan() === kind && (value === undefined || scanner.getTokenValue() === value);
  if (!expect(SyntaxKind.OpenBraceToken) || !expect(SyntaxKind.StringLiteral, 'nftables')) return undefined;
  if (!expect(SyntaxKind.ColonToken) || !expect(SyntaxKind.OpenBracketToken)) return undefined;
  const items: [number, number][] = [];
  for (;;) {
    const token = scanner.scan();
    if (token === SyntaxKind.CloseBracketToken && items.length === 0) break;
    if (token !== SyntaxKind.OpenBraceToken) return undefined;
    const start = scanner.getTokenOffset();
    let depth = 1;
    while (depth > 0) {
      const inner = scanner.scan();
      if (inner === SyntaxKind.EOF || scanner.getTokenError() !== 0) return undefined;
      if (inner === SyntaxKind.OpenBraceToken || inner === SyntaxKind.OpenBracketToken) depth++;
      else if (inner === SyntaxKind.CloseBraceToken || inner === SyntaxKind.CloseBracketToken) depth--;
    }
    items.push([start, scanner.getTokenOffset() + 1]);
    const next = scanner.scan();
    if (next === SyntaxKind.CloseBracketToken) break;
    if (next !== SyntaxKind.CommaToken) return undefined;
  }
  if (!expect(SyntaxKind.CloseBraceToken) || scanner.scan() !== SyntaxKind.EOF) return undefined;
  return items;
}

/** What `parseNftJsonStmts` returns. */
export interface JsonStmtsResult {
  readonly stmts: readonly Stmt[];
  readonly diagnostics: readonly Diagnostic[];
}

/** Parses one rule's `expr` array (`[{"match": …}, {"accept": null}]`), as in the nftables
 * tests/py `*.t.json` files. */
export function parseNftJsonStmts(text: string, options: ParseOptions = {}): JsonStmtsResult {
  const src = new JsonSource(options.file ?? '<input>', text);
  const root = parseJson(src, text);
  if (!root) return { stmts: [], diagnostics: src.diagnostics };
  if (root.type !== 'array') {
    src.report('error', 'syntax', 'expected an array of statements', root);
    return { stmts: [], diagnostics: src.diagnostics };
  }
  return { stmts: new StmtReader(src).readList(root), diagnostics: src.diagnostics };
}

/** Parses `json` (the whole input, or one object of it starting at `src.base`). */
function parseJson(src: JsonSource, json: string): Node | undefined {
  const errors: ParseError[] = [];
  const root = parseTree(json, errors, { disallowComments: true, allowTrailingComma: false });
  for (const e of errors) {
    src.diagnostics.push({
      severity: 'error',
      code: 'syntax',
      message: `invalid JSON: ${describeParseError(printParseErrorCode(e.error))}`,
      span: src.spanAt(src.base + e.offset, src.base + e.offset + e.length),
    });
  }
  if (!root && errors.length === 0) src.report('error', 'syntax', 'empty input: expected JSON');
  return errors.length > 0 ? undefined : root;
}

/** `CommaExpected` → `comma expected`. */
function describeParseError(code: string): string {
  return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

interface TableBuilder {
  readonly span: Span;
  readonly family: Family;
  readonly name: string;
  handle?: number;
  flags: string[];
  comment?: string;
  readonly objects: StatefulObject[];
  readonly sets: NamedSet[];
  readonly flowtables: Flowtable[];
  readonly chains: Map<string, { chain: Omit<Chain, 'rules'>; rules: Rule[] }>;
}

class RulesetBuilder {
  private readonly tables = new Map<string, TableBuilder>();
  private readonly stmts: StmtReader;

  constructor(private readonly src: JsonSource) {
    this.stmts = new StmtReader(src);
  }

  build(): Table[] {
    return [...this.tables.values()].map((t) => ({
      kind: 'table',
      span: t.span,
      family: t.family,
      name: t.name,
      ...(t.handle !== undefined && { handle: t.handle }),
      flags: t.flags,
      ...(t.comment !== undefined && { comment: t.comment }),
      objects: t.objects,
      sets: t.sets,
      flowtables: t.flowtables,
      chains: [...t.chains.values()].map(({ chain, rules }) => ({ ...chain, rules })),
    }));
  }

  add(item: Node): void {
    try {
      const [key, v] = singleEntry(item);
      this.addObject(key, v, this.src.span(item));
    } catch (e) {
      if (!(e instanceof UnsupportedJson)) throw e;
      this.src.report('warning', 'unsupported', `unsupported listing object: ${e.message}`, e.node);
    }
  }

  private addObject(key: string, v: Node, span: Span): void {
    const keys = OBJECT_KEYS[key];
    if (keys) this.src.checkKeys(v, key, keys);
    switch (key) {
      case 'metainfo':
        return;
      case 'table': {
        const table = this.table(v, 'name', span);
        table.handle = readHandle(v);
        table.flags = stringListProp(v, 'flags');
        table.comment = stringProp(v, 'comment');
        return;
      }
      case 'chain':
        this.addChain(v, span);
        return;
      case 'rule':
        this.addRule(v, span);
        return;
      case 'set':
      case 'map':
        this.table(v, 'table', span).sets.push(this.readSet(key === 'map', v, span));
        return;
      case 'flowtable':
        this.table(v, 'table', span).flowtables.push(this.readFlowtable(v, span));
        return;
      default: {
        const object = this.readObject(key, v, span);
        if (!object) throw new UnsupportedJson(`unknown object "${key}"`, v);
        this.table(v, 'table', span).objects.push(object);
      }
    }
  }

  /** The table an object belongs to; nft lists tables first, but a table named only by its
   * contents is created rather than dropping them. */
  private table(v: Node, nameKey: 'name' | 'table', span: Span): TableBuilder {
    const familyNode = req(v, 'family');
    const family = asString(familyNode);
    if (!FAMILIES.has(family)) throw new UnsupportedJson(`unknown family "${family}"`, familyNode);
    const name = asString(req(v, nameKey));
    const id = `${family} ${name}`;
    let table = this.tables.get(id);
    if (!table) {
      table = { span, family: family as Family, name, flags: [], objects: [], sets: [], flowtables: [], chains: new Map() };
      this.tables.set(id, table);
    }
    return table;
  }

  private addChain(v: Node, span: Span): void {
    const table = this.table(v, 'table', span);
    const name = asString(req(v, 'name'));
    const handle = readHandle(v);
    const comment = stringProp(v, 'comment');
    const base = property(v, 'hook') ? this.readBaseChain(table.family, v) : undefined;
    const chain = {
      kind: 'chain' as const,
      span,
      name,
      ...(handle !== undefined && { handle }),
      ...(comment !== undefined && { comment }),
      ...(base && { base }),
    };
    const existing = table.chains.get(name);
    table.chains.set(name, { chain, rules: existing?.rules ?? [] });
  }

  private readBaseChain(family: Family, v: Node): BaseChainSpec {
    const type = asString(req(v, 'type'));
    if (!CHAIN_TYPES.has(type)) throw new UnsupportedJson(`unknown chain type "${type}"`, v);
    const hook = readHook(v);
    const policy = stringProp(v, 'policy');
    if (policy !== undefined && policy !== 'accept' && policy !== 'drop') {
      throw new UnsupportedJson(`unknown chain policy "${policy}"`, v);
    }
    const dev = property(v, 'dev');
    return {
      type: type as ChainType,
      hook,
      priority: this.readPriority(family, hook, req(v, 'prio')),
      ...(policy !== undefined && { policy }),
      devices: stringListProp(v, 'dev'),
      ...(dev?.type === 'array' && { deviceList: true }),
    };
  }

  /** JSON priorities are numbers; the listing prints them as a standard name ± offset where one
   * is near (src/rule.c `prio2str`), and the model keeps that form. */
  private readPriority(family: Family, hook: Hook, node: Node): Priority {
    const value = asNumber(node);
    const m = /^([a-z]+)(?: ([+-]) (\d+))?$/.exec(priorityText(family, hook, value));
    const span = this.src.span(node);
    if (!m) return { span, offset: value, value };
    const offset = m[3] === undefined ? 0 : (m[2] === '-' ? -1 : 1) * Number(m[3]);
    return { span, name: m[1]!, offset, value };
  }

  private addRule(v: Node, span: Span): void {
    const table = this.table(v, 'table', span);
    const chainName = asString(req(v, 'chain'));
    let entry = table.chains.get(chainName);
    if (!entry) {
      // A rule whose chain was not listed (a partial listing): keep it in a chain of that name.
      entry = { chain: { kind: 'chain', span, name: chainName }, rules: [] };
      table.chains.set(chainName, entry);
    }
    const handle = readHandle(v);
    const comment = stringProp(v, 'comment');
    const exprNode = property(v, 'expr');
    entry.rules.push({
      kind: 'rule',
      span,
      ...(handle !== undefined && { handle }),
      ...(comment !== undefined && { comment }),
      stmts: exprNode ? this.stmts.readList(exprNode) : [],
    });
  }

  private readSet(isMap: boolean, v: Node, span: Span): NamedSet {
    const x = this.stmts.exprs;
    const key = this.readKeyType(req(v, 'type'));
    const dataNode = isMap ? req(v, 'map') : undefined;
    const data = dataNode ? this.readKeyType(dataNode) : undefined;
    const policy = stringProp(v, 'policy');
    if (policy !== undefined && policy !== 'performance' && policy !== 'memory') {
      throw new UnsupportedJson(`unknown set policy "${policy}"`, v);
    }
    const handle = readHandle(v);
    const size = numberProp(v, 'size');
    const timeout = numberProp(v, 'timeout');
    const gcInterval = numberProp(v, 'gc-interval');
    const comment = stringProp(v, 'comment');
    const stmtNode = property(v, 'stmt');
    const elemNode = property(v, 'elem');
    const keyDtype = key.kind === 'type' ? datatypeNamed(key.names) : datatypeOf(key.expr);
    const dataDtype = data === undefined ? undefined : data.kind === 'type' ? datatypeNamed(data.names) : datatypeOf(data.expr);
    return {
      kind: 'set',
      span,
      isMap,
      name: asString(req(v, 'name')),
      ...(handle !== undefined && { handle }),
      key,
      ...(data && { data }),
      flags: stringListProp(v, 'flags'),
      ...(policy !== undefined && { policy }),
      ...(size !== undefined && { size }),
      // Set timeouts are seconds in JSON (json.c divides the kernel's milliseconds by 1000).
      ...(timeout !== undefined && { timeout: formatDuration(timeout * 1000) }),
      ...(gcInterval !== undefined && { gcInterval: formatDuration(gcInterval * 1000) }),
      ...(boolProp(v, 'auto-merge') && { autoMerge: true }),
      ...(comment !== undefined && { comment }),
      stmts: stmtNode ? this.stmts.readList(stmtNode) : [],
      ...(elemNode && {
        elements: asArray(elemNode).map((e) => typeSetElement(x.readElement(e), keyDtype, dataDtype)),
      }),
    };
  }

  /** `"ipv4_addr"`, `["ipv4_addr", "inet_service"]` (a concatenation) or `{"typeof": expr}`. */
  private readKeyType(node: Node): KeyType {
    if (node.type === 'object') return { kind: 'typeof', expr: this.stmts.exprs.read(req(node, 'typeof')) };
    return { kind: 'type', names: node.type === 'array' ? asArray(node).map(asString) : [asString(node)] };
  }

  private readFlowtable(v: Node, span: Span): Flowtable {
    const handle = readHandle(v);
    const hook = readHook(v);
    // Flowtables hook at netdev ingress, where only `filter` names a priority.
    return {
      kind: 'flowtable',
      span,
      name: asString(req(v, 'name')),
      ...(handle !== undefined && { handle }),
      hook,
      priority: this.readPriority('netdev', hook, req(v, 'prio')),
      devices: stringListProp(v, 'dev'),
      flags: stringListProp(v, 'flags'),
      ...(boolProp(v, 'counter') && { counter: true }),
    };
  }

  /** Stateful objects (json.c `obj_print_json`), or undefined for an unknown type. */
  private readObject(type: string, v: Node, span: Span): StatefulObject | undefined {
    if (!(type in OBJECT_KEYS)) return undefined;
    const handle = readHandle(v);
    const comment = stringProp(v, 'comment');
    const base = {
      span,
      name: asString(req(v, 'name')),
      ...(handle !== undefined && { handle }),
      ...(comment !== undefined && { comment }),
    };
    const l3proto = stringProp(v, 'l3proto');
    switch (type) {
      case 'counter':
        return { kind: 'counter-object', ...base, packets: numberProp(v, 'packets') ?? 0, bytes: numberProp(v, 'bytes') ?? 0 };
      case 'quota': {
        const used = numberProp(v, 'used');
        return { kind: 'quota-object', ...base, over: boolProp(v, 'inv'), bytes: asNumber(req(v, 'bytes')), ...(used !== undefined && { used }) };
      }
      case 'limit':
        return { kind: 'limit-object', ...base, limit: readLimit(v, span) };
      case 'ct helper':
        return {
          kind: 'ct-helper-object',
          ...base,
          helper: asString(req(v, 'type')),
          protocol: protocolName(req(v, 'protocol')),
          ...(l3proto !== undefined && { l3proto }),
        };
      case 'ct timeout': {
        const policy = property(v, 'policy');
        return {
          kind: 'ct-timeout-object',
          ...base,
          protocol: protocolName(req(v, 'protocol')),
          ...(l3proto !== undefined && { l3proto }),
          policy:
            policy && policy.type === 'object'
              ? objectEntries(policy).map(([state, t]) => ({ state, timeout: String(asNumber(t)) }))
              : [],
        };
      }
      case 'ct expectation':
        return {
          kind: 'ct-expectation-object',
          ...base,
          protocol: protocolName(req(v, 'protocol')),
          dport: asNumber(req(v, 'dport')),
          // Milliseconds here (json.c prints the kernel value as is).
          timeout: formatDuration(asNumber(req(v, 'timeout'))),
          size: asNumber(req(v, 'size')),
          ...(l3proto !== undefined && { l3proto }),
        };
      case 'secmark':
        return { kind: 'secmark-object', ...base, context: asString(req(v, 'context')) };
      case 'synproxy':
        return { kind: 'synproxy-object', ...base, ...readSynproxyFields(v) };
      case 'tunnel':
        // Kept, not modelled (1.1.x): its fields one per line as the JSON gives them.
        return {
          kind: 'opaque-object',
          ...base,
          type,
          body: objectEntries(v)
            .filter(([k]) => !['family', 'name', 'table', 'handle', 'comment'].includes(k))
            .map(([k, value]) => `${k} ${this.src.slice(value)}`),
        };
      default:
        return undefined;
    }
  }
}

/** Upstream normalises handles to 0 in its test dumps; 0 is never a real handle. */
function readHandle(v: Node): number | undefined {
  return numberProp(v, 'handle') || undefined;
}

function readHook(v: Node): Hook {
  const hook = asString(req(v, 'hook'));
  if (!HOOKS.has(hook)) throw new UnsupportedJson(`unknown hook "${hook}"`, v);
  return hook as Hook;
}

/** json.c writes a protocol by name when /etc/protocols knows it, else its number. */
function protocolName(node: Node): string {
  return node.type === 'number' ? String(node.value) : asString(node);
}
