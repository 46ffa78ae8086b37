import type {
  BaseChainSpec,
  Chain,
  ElementExpr,
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
import { formatDuration, keyTypeDatatype, typeSetElement } from '../../model/datatypes.js';
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
import { JsonNode, JsonTreeParser, type JsonNode as Node, type JsonSyntaxError } from './parse-json-tree.js';
import { req } from './read-json-expr.js';
import { StmtReader, readLimit, readSynproxyFields } from './read-json-stmt.js';
import { unlistedRule } from '../unlisted-rule.js';

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

/** Table flag names (src/rule.c `table_flags_name`: 1.0.6 has dormant and owner, 1.1 adds
 * persist). */
const TABLE_FLAGS: ReadonlySet<string> = new Set(['dormant', 'owner', 'persist']);

/** The order nft lists set flags in (src/rule.c `set_print_declaration`). */
const SET_FLAG_ORDER = ['constant', 'dynamic', 'interval', 'timeout'];

const FAMILIES: ReadonlySet<string> = new Set(['ip', 'ip6', 'inet', 'arp', 'bridge', 'netdev']);
const HOOKS: ReadonlySet<string> = new Set(['prerouting', 'input', 'forward', 'output', 'postrouting', 'ingress', 'egress']);
const CHAIN_TYPES: ReadonlySet<string> = new Set(['filter', 'nat', 'route']);

/** Parses the JSON listing. Never throws: malformed JSON and unknown objects come back as
 * diagnostics with the span of the offending JSON. */
export function parseNftJson(text: string, options: ParseOptions = {}): ParseResult {
  const src = new JsonSource(options.file ?? '<input>', text);
  const builder = new RulesetBuilder(src);
  const parser = new JsonTreeParser(text);
  // One tree per listing object keeps memory proportional to the largest object rather than to
  // the whole listing (a kube-proxy node lists tens of MB).
  const streamed = parser.streamListing((item) => builder.add(item));
  if (streamed === false) {
    const root = readDocument(src, parser);
    const list = root && root.type === 'object' ? property(root, 'nftables') : undefined;
    if (root && (!list || list.type !== 'array')) {
      src.report('error', 'syntax', 'expected {"nftables": [...]} (the output of `nft -j list ruleset`)', root);
    } else if (list) {
      for (const item of asArray(list)) builder.add(item);
    }
  } else if (streamed !== true) {
    reportSyntaxError(src, streamed);
  }
  return { ruleset: { kind: 'ruleset', tables: builder.build() }, diagnostics: src.diagnostics };
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
  const root = readDocument(src, new JsonTreeParser(text));
  if (!root) return { stmts: [], diagnostics: src.diagnostics };
  if (root.type !== 'array') {
    src.report('error', 'syntax', 'expected an array of statements', root);
    return { stmts: [], diagnostics: src.diagnostics };
  }
  return { stmts: new StmtReader(src).readList(root), diagnostics: src.diagnostics };
}

/** The whole input as one tree, or undefined after reporting why it is not JSON. */
function readDocument(src: JsonSource, parser: JsonTreeParser): Node | undefined {
  const root = parser.parseDocument();
  if (root instanceof JsonNode) return root;
  reportSyntaxError(src, root);
  return undefined;
}

function reportSyntaxError(src: JsonSource, error: JsonSyntaxError): void {
  const message = error.message.startsWith('empty input') ? error.message : `invalid JSON: ${error.message}`;
  src.diagnostics.push({ severity: 'error', code: 'syntax', message, span: src.spanAt(error.offset, error.offset + error.length) });
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
  /** Sets a rule adds to, updates or deletes from (see `withListedFlags`). */
  readonly dynamicSets: Set<string>;
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
      sets: t.sets.map((set) => withListedFlags(set, t.dynamicSets.has(set.name))),
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
        table.flags = this.readTableFlags(v);
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

  /** nft 1.0.x writes a single table flag from a string it has already freed (json.c
   * `table_flags_json` unpacks the one-item array without a reference, then drops the array), so
   * what comes out is whatever reused that memory, often the table's name. Such a flag cannot be
   * read; `dormant` is the flag a table listed with exactly one flag almost always has (`owner`
   * tables vanish with the process that owns them), and the guess is reported. */
  private readTableFlags(v: Node): string[] {
    const flags = stringListProp(v, 'flags');
    const node = property(v, 'flags');
    if (node?.type === 'string' && !TABLE_FLAGS.has(flags[0]!)) {
      this.src.report('warning', 'unreadable', `table flag "${flags[0]!}" is not a flag (nft 1.0.x JSON bug); read as "dormant"`, node);
      return ['dormant'];
    }
    return flags;
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
      table = { span, family: family as Family, name, flags: [], objects: [], sets: [], flowtables: [], chains: new Map(), dynamicSets: new Set() };
      this.tables.set(id, table);
    }
    return table;
  }

  private addChain(v: Node, span: Span): void {
    const table = this.table(v, 'table', span);
    const name = asString(req(v, 'name'));
    const handle = readHandle(v);
    const comment = stringProp(v, 'comment');
    const base = property(v, 'hook') ? this.readBaseChain(table, name, v) : undefined;
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

  private readBaseChain(table: TableBuilder, name: string, v: Node): BaseChainSpec {
    const family = table.family;
    const type = asString(req(v, 'type'));
    if (!CHAIN_TYPES.has(type)) throw new UnsupportedJson(`unknown chain type "${type}"`, v);
    const hook = readHook(v);
    const policy = stringProp(v, 'policy');
    if (policy !== undefined && policy !== 'accept' && policy !== 'drop') {
      throw new UnsupportedJson(`unknown chain policy "${policy}"`, v);
    }
    const dev = property(v, 'dev');
    const devicesUnknown = dev === undefined && (hook === 'ingress' || hook === 'egress');
    if (devicesUnknown) {
      this.src.report('warning', 'devices-unknown', `${hook} chain ${family} ${table.name} ${name} has no "dev": nft 1.0.6's JSON leaves devices out, so nftsim cannot tell whose packets it sees (the text listing, \`nft list ruleset\`, has them)`, v);
    }
    return {
      type: type as ChainType,
      hook,
      priority: this.readPriority(family, hook, req(v, 'prio')),
      ...(policy !== undefined && { policy }),
      devices: stringListProp(v, 'dev'),
      ...(dev?.type === 'array' && { deviceList: true }),
      ...(devicesUnknown && { devicesUnknown }),
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
    if (!exprNode) {
      const { rule, diagnostic } = unlistedRule(span, handle);
      this.src.diagnostics.push(diagnostic);
      entry.rules.push(rule);
      return;
    }
    const stmts = this.stmts.readList(exprNode, table.family);
    for (const stmt of stmts) {
      // Set statements only: a map update (`update @m { k : v }`) does not make the map dynamic
      // (src/evaluate.c `stmt_evaluate_map` leaves the flags alone).
      if (stmt.kind === 'set-op' && stmt.element.data === undefined) table.dynamicSets.add(stmt.set);
    }
    entry.rules.push({
      kind: 'rule',
      span,
      ...(handle !== undefined && { handle }),
      ...(comment !== undefined && { comment }),
      stmts,
    });
  }

  private readSet(isMap: boolean, v: Node, span: Span): NamedSet {
    const x = this.stmts.exprs;
    // Without a key (a map: without data) nft refuses the set, with these words; it is kept,
    // as the text parser keeps it, with an empty key.
    const typeNode = property(v, 'type');
    const dataNode = isMap ? property(v, 'map') : undefined;
    if (!typeNode) this.src.report('error', 'syntax', `${isMap ? 'map' : 'set'} definition does not specify key`, v);
    else if (isMap && !dataNode) this.src.report('error', 'syntax', 'map definition does not specify mapping data type', v);
    const key: KeyType = typeNode ? this.readKeyType(typeNode) : { kind: 'type', names: [] };
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
    const stmts = stmtNode ? this.stmts.readList(stmtNode) : [];
    const elemNode = property(v, 'elem');
    const keyDtype = keyTypeDatatype(key);
    const dataDtype = keyTypeDatatype(data);
    const elements = elemNode
      ? asArray(elemNode).map((e) => withSetStmts(typeSetElement(x.readElement(e), keyDtype, dataDtype), stmts))
      : undefined;
    return {
      kind: 'set',
      span,
      isMap,
      name: asString(req(v, 'name')),
      ...(handle !== undefined && { handle }),
      key,
      ...(data && { data }),
      ...(elements?.some(hasIntervalData) && { dataInterval: true }),
      flags: stringListProp(v, 'flags'),
      ...(policy !== undefined && { policy }),
      ...(size !== undefined && { size }),
      // Set timeouts are seconds in JSON (json.c divides the kernel's milliseconds by 1000).
      ...(timeout !== undefined && { timeout: formatDuration(timeout * 1000) }),
      ...(gcInterval !== undefined && { gcInterval: formatDuration(gcInterval * 1000) }),
      ...(boolProp(v, 'auto-merge') && { autoMerge: true }),
      ...(comment !== undefined && { comment }),
      stmts,
      ...(elements && { elements }),
    };
  }

  /** `"ipv4_addr"`, `["ipv4_addr", "inet_service"]` (a concatenation) or `{"typeof": expr}`.
   * json.c splits a concatenated key type into an array (`set_dtype_json`) but writes a map's
   * data type as the datatype's one name, `"ipv4_addr . inet_service"`. nft 1.0.6 writes no
   * `typeof` at all: a set declared with `typeof ip saddr` reads as `type ipv4_addr`. */
  private readKeyType(node: Node): KeyType {
    if (node.type === 'object') return { kind: 'typeof', expr: this.stmts.exprs.read(req(node, 'typeof')) };
    return { kind: 'type', names: node.type === 'array' ? asArray(node).map(asString) : asString(node).split(' . ') };
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
        const used = numberProp(v, 'used') || undefined;
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

/** The set's flags as the listing has them.
 *
 * nft 1.0.6's JSON never says `dynamic` (json.c `set_print_json` writes constant, interval and
 * timeout only). Two things prove it: a rule adds to, updates or deletes from the set, not a map (nft then
 * sets the flag itself, src/evaluate.c `stmt_evaluate_set`: "Make sure EVAL flag is set on set
 * definition"), or its elements carry statements the set does not declare (src/evaluate.c
 * refuses that unless the set is dynamic: "missing statement in set declaration"). Any other
 * dynamic set reads as not dynamic.
 *
 * The listing leaves out `flags timeout` when it is the only flag and the set has a default
 * timeout (src/rule.c `set_print_declaration`: "redundant"); the model of that listing does too. */
function withListedFlags(set: NamedSet, updatedByRules: boolean): NamedSet {
  const dynamic =
    updatedByRules || (set.stmts.length === 0 && set.elements?.some((e) => e.stmts !== undefined && e.stmts.length > 0) === true);
  let flags = set.flags;
  if (dynamic && !flags.includes('dynamic')) {
    flags = [...SET_FLAG_ORDER.filter((f) => f === 'dynamic' || flags.includes(f)), ...flags.filter((f) => !SET_FLAG_ORDER.includes(f))];
  }
  if (set.timeout !== undefined && flags.length === 1 && flags[0] === 'timeout') flags = [];
  return flags === set.flags ? set : { ...set, flags };
}

/** json.c writes only the first statement of an element (`set_elem_expr_json`: "TODO: only one
 * statement per element"), but the kernel gives every element the set's statements
 * (src/evaluate.c requires an element's statements to match the set's). The rest are taken from
 * the declaration, without their state, which the JSON does not carry. */
function withSetStmts(element: ElementExpr, setStmts: readonly Stmt[]): ElementExpr {
  const own = element.stmts;
  if (!own || own.length === 0 || own.length >= setStmts.length) return element;
  return { ...element, stmts: [...own, ...setStmts.slice(own.length)] };
}

/** A map whose data are ranges or prefixes was declared `: interval …`: nft accepts interval data
 * only there (src/evaluate.c), and 1.0.6's JSON writes the data type without the flag. */
function hasIntervalData(element: ElementExpr): boolean {
  const data = element.data;
  if (!data) return false;
  const parts = data.kind === 'concat' ? data.parts : [data];
  return parts.some((p) => p.kind === 'range' || p.kind === 'prefix');
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
