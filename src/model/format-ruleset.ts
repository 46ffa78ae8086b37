import type {
  Binop,
  Chain,
  ElementExpr,
  Expr,
  Family,
  Flowtable,
  KeyType,
  Literal,
  NamedSet,
  ObjRefStmt,
  Priority,
  Hook,
  Relational,
  Rule,
  Ruleset,
  StatefulObject,
  Stmt,
  Table,
  LimitStmt,
} from './ast.js';
import { datatypeOf, formatValue, isBitmaskType } from './datatypes.js';
import { priorityText } from './priorities.js';

// The canonical listing, in nft 1.0.6's layout (src/rule.c table_print, chain_print,
// set_print, obj_print, flowtable_print; src/statement.c and src/expression.c print functions).
// A model read from any input prints the way `nft list ruleset` would print what the kernel
// holds; printing is idempotent through parsing.

export interface FormatOptions {
  /** Print ` # handle N` after tables, chains, sets, objects and rules (`nft -a`). */
  readonly handles?: boolean;
}

/** The canonical nft 1.0.6 listing of `ruleset`. */
export function formatRuleset(ruleset: Ruleset, options: FormatOptions = {}): string {
  return ruleset.tables.map((t) => formatTable(t, options)).join('');
}

function handleSuffix(handle: number | undefined, options: FormatOptions): string {
  return options.handles && handle !== undefined ? ` # handle ${handle}` : '';
}

function quote(s: string): string {
  return `"${s}"`;
}

/** What printing a rule needs from around it. */
interface Context {
  readonly options: FormatOptions;
  readonly family?: Family;
  /** The table's chain bindings by name, printed inline at the verdict that targets them. */
  readonly bindings: ReadonlyMap<string, Chain>;
  /** The indentation of the rule being printed. */
  readonly indent: string;
}

function isBinding(chain: Chain): boolean {
  return chain.flags?.includes('binding') === true;
}

function formatTable(table: Table, options: FormatOptions): string {
  const context: Context = {
    options,
    family: table.family,
    bindings: new Map(table.chains.filter(isBinding).map((c) => [c.name, c])),
    indent: '\t\t',
  };
  let out = `table ${table.family} ${table.name} {${handleSuffix(table.handle, options)}\n`;
  const declaration: string[] = [];
  if (table.flags.length > 0) declaration.push(`\tflags ${table.flags.join(',')}\n`);
  if (table.comment !== undefined) declaration.push(`\tcomment ${quote(table.comment)}\n`);
  out += declaration.join('');
  const blocks = [
    ...table.objects.map((o) => formatObject(o, options)),
    ...table.sets.map((s) => formatSet(s, options)),
    ...table.flowtables.map((f) => formatFlowtable(f, table.family, options)),
    ...table.chains.filter((c) => !isBinding(c)).map((c) => formatChain(c, context)),
  ];
  // table_print starts its block delimiter at "\n" once the declaration printed anything.
  if (declaration.length > 0 && blocks.length > 0) out += '\n';
  out += blocks.join('\n');
  return `${out}}\n`;
}

// --- stateful objects -----------------------------------------------------------------------

function objectKeyword(obj: StatefulObject): string {
  switch (obj.kind) {
    case 'counter-object':
      return 'counter';
    case 'quota-object':
      return 'quota';
    case 'limit-object':
      return 'limit';
    case 'ct-helper-object':
      return 'ct helper';
    case 'ct-timeout-object':
      return 'ct timeout';
    case 'ct-expectation-object':
      return 'ct expectation';
    case 'secmark-object':
      return 'secmark';
    case 'synproxy-object':
      return 'synproxy';
    case 'opaque-object':
      return obj.type;
    default: {
      const exhaustive: never = obj;
      return exhaustive;
    }
  }
}

function objectBody(obj: StatefulObject): string[] {
  switch (obj.kind) {
    case 'counter-object':
      return [`packets ${obj.packets} bytes ${obj.bytes}`];
    case 'quota-object':
      return [formatQuotaBody(obj.over, obj.bytes, 'bytes', obj.used, 'bytes')];
    case 'limit-object':
      return [formatLimitBody(obj.limit)];
    case 'ct-helper-object':
      return [
        `type ${quote(obj.helper)} protocol ${obj.protocol}`,
        ...(obj.l3proto ? [`l3proto ${obj.l3proto}`] : []),
      ];
    case 'ct-timeout-object':
      return [
        `protocol ${obj.protocol}`,
        ...(obj.l3proto ? [`l3proto ${obj.l3proto}`] : []),
        `policy = { ${obj.policy.map((p) => `${p.state} : ${p.timeout}`).join(', ')} }`,
      ];
    case 'ct-expectation-object':
      return [
        `protocol ${obj.protocol}`,
        `dport ${obj.dport}`,
        `timeout ${obj.timeout}`,
        `size ${obj.size}`,
        ...(obj.l3proto ? [`l3proto ${obj.l3proto}`] : []),
      ];
    case 'secmark-object':
      return [quote(obj.context)];
    case 'synproxy-object':
      return [
        ...(obj.mss !== undefined ? [`mss ${obj.mss}`] : []),
        ...(obj.wscale !== undefined ? [`wscale ${obj.wscale}`] : []),
        ...(obj.flags.length > 0 ? [obj.flags.join(' ')] : []),
      ];
    case 'opaque-object':
      return [...obj.body];
    default: {
      const exhaustive: never = obj;
      return exhaustive;
    }
  }
}

function formatObject(obj: StatefulObject, options: FormatOptions): string {
  const lines = [
    ...(obj.comment !== undefined ? [`comment ${quote(obj.comment)}`] : []),
    ...objectBody(obj),
  ];
  const head = `\t${objectKeyword(obj)} ${obj.name} {${handleSuffix(obj.handle, options)}\n`;
  return `${head}${lines.map((l) => `\t\t${l}\n`).join('')}\t}\n`;
}

// --- sets and maps --------------------------------------------------------------------------

function formatKeyType(key: KeyType): string {
  return key.kind === 'type' ? `type ${key.names.join(' . ')}` : `typeof ${formatExpr(key.expr)}`;
}

function formatDataType(data: KeyType, interval: boolean | undefined): string {
  const text = data.kind === 'type' ? data.names.join(' . ') : formatExpr(data.expr);
  return interval ? `interval ${text}` : text;
}

/** How many elements of a named set nft 1.0.6 prints per line, by key datatype
 * (src/expression.c calculate_delim): integer-like types 5, IPv4 and a few flag types 2, every
 * other type (IPv6, MACs, strings, concatenations) 1. */
function elementsPerLine(dtype: string | undefined): number {
  switch (dtype) {
    case 'nf_proto':
    case 'integer':
    case 'xinteger':
    case 'arp_op':
    case 'inet_proto':
    case 'inet_service':
    case 'tcp_flag':
    case 'dccp_pkttype':
    case 'mark':
    case 'iface_index':
    case 'classid':
    case 'uid':
    case 'gid':
    case 'ct_dir':
      return 5;
    case 'ipv4_addr':
    case 'ct_state':
    case 'ct_status':
    case 'pkt_type':
      return 2;
    default:
      return 1;
  }
}

function setKeyDatatype(set: NamedSet): string | undefined {
  if (set.key.kind === 'type') return set.key.names.length === 1 ? set.key.names[0] : undefined;
  const t = datatypeOf(set.key.expr);
  return t && !t.parts ? t.name : undefined;
}

function formatSet(set: NamedSet, options: FormatOptions): string {
  const lines: string[] = [];
  let type = formatKeyType(set.key);
  if (set.data) type += ` : ${formatDataType(set.data, set.dataInterval)}`;
  lines.push(type);
  if (set.policy === 'memory') lines.push('policy memory');
  if (set.size !== undefined) lines.push(`size ${set.size}`);
  if (set.flags.length > 0) lines.push(`flags ${set.flags.join(',')}`);
  if (set.stmts.length > 0) lines.push(set.stmts.map((s) => formatStmt(s)).join(' '));
  if (set.autoMerge) lines.push('auto-merge');
  if (set.timeout !== undefined) lines.push(`timeout ${set.timeout}`);
  if (set.gcInterval !== undefined) lines.push(`gc-interval ${set.gcInterval}`);
  if (set.comment !== undefined) lines.push(`comment ${quote(set.comment)}`);
  if (set.elements && set.elements.length > 0) {
    const perLine = elementsPerLine(setKeyDatatype(set));
    let text = '';
    set.elements.forEach((el, i) => {
      if (i > 0) text += i % perLine === 0 ? ',\n\t\t\t     ' : ', ';
      text += formatElement(el, 'named');
    });
    lines.push(`elements = { ${text} }`);
  }
  const head = `\t${set.isMap ? 'map' : 'set'} ${set.name} {${handleSuffix(set.handle, options)}\n`;
  return `${head}${lines.map((l) => `\t\t${l}\n`).join('')}\t}\n`;
}

// --- flowtables and chains ------------------------------------------------------------------

function formatPriority(priority: Priority, family: Family, hook: Hook): string {
  if (priority.value !== undefined) return priorityText(family, hook, priority.value);
  if (priority.name === undefined) return String(priority.offset);
  if (priority.offset === 0) return priority.name;
  return `${priority.name} ${priority.offset > 0 ? '+' : '-'} ${Math.abs(priority.offset)}`;
}

function formatFlowtable(ft: Flowtable, family: Family, options: FormatOptions): string {
  const lines = [`hook ${ft.hook} priority ${formatPriority(ft.priority, family, ft.hook)}`];
  if (ft.devices.length > 0) lines.push(`devices = { ${ft.devices.join(', ')} }`);
  if (ft.counter) lines.push('counter');
  if (ft.flags.length > 0) lines.push(`flags ${ft.flags.join(',')}`);
  const head = `\tflowtable ${ft.name} {${handleSuffix(ft.handle, options)}\n`;
  return `${head}${lines.map((l) => `\t\t${l}\n`).join('')}\t}\n`;
}

function formatChain(chain: Chain, context: Context): string {
  const { family, options } = context;
  let out = `\tchain ${chain.name} {${handleSuffix(chain.handle, options)}\n`;
  if (chain.comment !== undefined) out += `\t\tcomment ${quote(chain.comment)}\n`;
  const base = chain.base;
  if (base) {
    let header = `type ${base.type} hook ${base.hook}`;
    // One device prints quoted, a list prints bare (nft 1.0.6 src/rule.c chain_print_declaration).
    if (base.devices.length === 1) header += ` device ${quote(base.devices[0] ?? '')}`;
    else if (base.devices.length > 1) header += ` devices = { ${base.devices.join(', ')} }`;
    header += ` priority ${family ? formatPriority(base.priority, family, base.hook) : base.priority.offset};`;
    header += ` policy ${base.policy ?? 'accept'};`;
    out += `\t\t${header}\n`;
  }
  for (const rule of chain.rules) out += `\t\t${formatRuleIn(rule, context)}\n`;
  return `${out}\t}\n`;
}

function formatRuleIn(rule: Rule, context: Context): string {
  let text = rule.stmts.map((s) => formatStmtIn(s, context)).join(' ');
  if (rule.comment !== undefined) text += ` comment ${quote(rule.comment)}`;
  return text + handleSuffix(rule.handle, context.options);
}

/** One rule as nft lists it: its statements, its comment, its handle. */
export function formatRule(rule: Rule, options: FormatOptions = {}, family?: Family): string {
  return formatRuleIn(rule, { options, ...(family ? { family } : {}), bindings: new Map(), indent: '\t\t' });
}

/** `jump {` with the bound chain's rules one level deeper, closed at the rule's indentation. */
function formatBinding(verdict: string, chain: Chain, context: Context): string {
  const inner: Context = { ...context, indent: `${context.indent}\t` };
  const rules = chain.rules.map((r) => `${inner.indent}${formatRuleIn(r, inner)}\n`).join('');
  return `${verdict} {\n${rules}${context.indent}}`;
}

// --- statements -----------------------------------------------------------------------------

// Keys nft prints without `meta` (src/meta.c meta_key_is_unqualified).
const UNQUALIFIED_META = new Set(['iif', 'oif', 'iifname', 'oifname', 'iifgroup', 'oifgroup']);

function metaKeyText(key: string): string {
  return UNQUALIFIED_META.has(key) ? key : `meta ${key}`;
}

// Byte units (src/statement.c get_unit / print_rate): nft prints the largest unit that
// divides the amount.
const BYTE_UNITS: readonly (readonly [string, number])[] = [
  ['bytes', 1],
  ['kbytes', 1024],
  ['mbytes', 1024 * 1024],
];

function byteUnitFactor(unit: string): number {
  return BYTE_UNITS.find(([u]) => u === unit)?.[1] ?? 1;
}

function formatBytes(amount: number, unit: string): string {
  let n = amount * byteUnitFactor(unit);
  let i = 0;
  while (i < BYTE_UNITS.length - 1 && n >= 1024 && n % 1024 === 0) {
    n /= 1024;
    i++;
  }
  return `${n} ${BYTE_UNITS[i]?.[0] ?? 'bytes'}`;
}

function formatQuotaBody(
  over: boolean,
  amount: number,
  unit: string,
  used: number | undefined,
  usedUnit: string | undefined,
): string {
  let text = `${over ? 'over ' : ''}${formatBytes(amount, unit)}`;
  if (used) text += ` used ${formatBytes(used, usedUnit ?? 'bytes')}`;
  return text;
}

// nft 1.0.6 leaves out a packet burst of 5, the kernel's default (src/statement.c
// limit_stmt_print).
const DEFAULT_PACKET_BURST = 5;

function formatLimitBody(limit: LimitStmt): string {
  const over = limit.over ? 'over ' : '';
  if (limit.unit === 'packets') {
    let text = `rate ${over}${limit.rate}/${limit.per}`;
    if (limit.burst !== undefined && limit.burst !== 0 && limit.burst !== DEFAULT_PACKET_BURST) {
      text += ` burst ${limit.burst} packets`;
    }
    return text;
  }
  let text = `rate ${over}${formatBytes(limit.rate, limit.unit)}/${limit.per}`;
  if (limit.burst) text += ` burst ${formatBytes(limit.burst, limit.burstUnit ?? 'bytes')}`;
  return text;
}

/** A literal or expression naming a stateful object: names print quoted. */
function formatObjectName(expr: Expr): string {
  if (expr.kind === 'literal') return quote(expr.text);
  if (expr.kind === 'map' && expr.map.kind === 'set') {
    const elements = expr.map.elements.map((el) =>
      el.data ? `${formatElement(el, 'anonymous', false)} : ${formatObjectName(el.data)}` : formatExpr(el),
    );
    return `${formatExpr(expr.key)} map { ${elements.join(', ')} }`;
  }
  return formatExpr(expr);
}

const IPV6_LITERAL = /:/;

/** A NAT or tproxy address: IPv6 literals go in brackets when a port follows (or always, for
 * tproxy), ranges of them bracket each end. */
function formatNatAddr(addr: Expr, bracket: boolean): string {
  if (!bracket) return formatExpr(addr);
  const isV6 = (e: Expr): boolean =>
    e.kind === 'literal' && (e.value ? e.value.type === 'ipv6' : IPV6_LITERAL.test(e.text));
  if (isV6(addr)) return `[${formatExpr(addr)}]`;
  if (addr.kind === 'range' && isV6(addr.low)) return `[${formatExpr(addr.low)}]-[${formatExpr(addr.high)}]`;
  return formatExpr(addr);
}

// The reject a family defaults to, which nft leaves out of the listing (src/statement.c
// reject_stmt_print: port-unreachable of the family's own ICMP flavour).
const DEFAULT_REJECT: Readonly<Record<Family, string>> = {
  ip: 'icmp',
  ip6: 'icmpv6',
  inet: 'icmpx',
  bridge: 'icmpx',
  netdev: 'icmpx',
  arp: 'icmpx',
};

/** One statement as nft 1.0.6 prints it; `family` is the table's (for defaults nft omits). */
export function formatStmt(stmt: Stmt, family?: Family): string {
  return formatStmtIn(stmt, { options: {}, ...(family ? { family } : {}), bindings: new Map(), indent: '\t\t' });
}

function formatStmtIn(stmt: Stmt, context: Context): string {
  const family = context.family;
  switch (stmt.kind) {
    case 'match':
      return formatRelational(stmt.expr);
    case 'verdict': {
      if (stmt.target === undefined) return stmt.verdict;
      const bound = context.bindings.get(stmt.target);
      return bound ? formatBinding(stmt.verdict, bound, context) : `${stmt.verdict} ${stmt.target}`;
    }
    case 'vmap':
      return `${formatExpr(stmt.key)} vmap ${formatExpr(stmt.map)}`;
    case 'counter':
      return stmt.packets !== undefined || stmt.bytes !== undefined
        ? `counter packets ${stmt.packets ?? 0} bytes ${stmt.bytes ?? 0}`
        : 'counter';
    case 'log': {
      let text = 'log';
      if (stmt.prefix !== undefined) text += ` prefix ${quote(stmt.prefix)}`;
      if (stmt.group !== undefined) text += ` group ${stmt.group}`;
      if (stmt.snaplen !== undefined) text += ` snaplen ${stmt.snaplen}`;
      if (stmt.queueThreshold !== undefined) text += ` queue-threshold ${stmt.queueThreshold}`;
      // `warn` is the default level and is not printed.
      if (stmt.level !== undefined && stmt.level !== 'warn') text += ` level ${stmt.level}`;
      for (const flag of stmt.flags) text += ` flags ${flag}`;
      return text;
    }
    case 'limit':
      return `limit ${formatLimitBody(stmt)}`;
    case 'quota':
      return `quota ${formatQuotaBody(stmt.over, stmt.amount, stmt.unit, stmt.used, stmt.usedUnit)}`;
    case 'last':
      return stmt.used !== undefined ? `last used ${stmt.used}` : 'last';
    case 'ct-count':
      return `ct count ${stmt.over ? 'over ' : ''}${stmt.count}`;
    case 'meta-set':
      return `${metaKeyText(stmt.key)} set ${formatExpr(stmt.value, 'list')}`;
    case 'ct-set':
      return `ct ${stmt.dir ? `${stmt.dir} ` : ''}${stmt.key} set ${formatExpr(stmt.value, 'list')}`;
    case 'payload-set':
      return `${formatExpr(stmt.target)} set ${formatExpr(stmt.value, 'list')}`;
    case 'option-reset':
      return `reset ${formatExpr(stmt.target)}`;
    case 'nat': {
      let text: string = stmt.type;
      if (stmt.addr || stmt.port) {
        if (stmt.family) text += ` ${stmt.family}`;
        if (stmt.form) text += ` ${stmt.form}`;
        text += ' to';
      }
      if (stmt.addr) text += ` ${formatNatAddr(stmt.addr, stmt.port !== undefined)}`;
      if (stmt.port) text += `${stmt.addr ? '' : ' '}:${formatExpr(stmt.port)}`;
      // `prefix` is how the netmap flag prints.
      const flags = stmt.form === 'prefix' ? stmt.flags.filter((f) => f !== 'netmap') : stmt.flags;
      if (flags.length > 0) text += ` ${flags.join(',')}`;
      return text;
    }
    case 'tproxy': {
      let text = 'tproxy';
      if (stmt.family) text += ` ${stmt.family}`;
      text += ' to';
      if (stmt.addr) text += ` ${formatNatAddr(stmt.addr, true)}`;
      if (stmt.port) text += `${stmt.addr ? '' : ' '}:${formatExpr(stmt.port)}`;
      return text;
    }
    case 'reject': {
      if (!stmt.with) return 'reject';
      if (stmt.with === 'tcp reset') return 'reject with tcp reset';
      if (family && stmt.code === 'port-unreachable' && DEFAULT_REJECT[family] === stmt.with) return 'reject';
      const code = stmt.code !== undefined ? ` ${stmt.typeKeyword ? 'type ' : ''}${stmt.code}` : '';
      return `reject with ${stmt.with}${code}`;
    }
    case 'notrack':
      return 'notrack';
    case 'dup': {
      let text = 'dup';
      if (stmt.family) text += ` ${stmt.family}`;
      if (stmt.addr) text += ` to ${formatExpr(stmt.addr)}`;
      if (stmt.device) text += ` device ${formatDevice(stmt.device)}`;
      return text;
    }
    case 'fwd': {
      let text = 'fwd';
      if (stmt.family) text += ` ${stmt.family}`;
      if (stmt.addr) return `${text} to ${formatExpr(stmt.addr)} device ${formatDevice(stmt.device)}`;
      return `${text} to ${formatDevice(stmt.device)}`;
    }
    case 'queue': {
      let text = 'queue';
      if (stmt.flags.length > 0) text += ` flags ${stmt.flags.join(',')}`;
      if (stmt.num) text += ` to ${formatExpr(stmt.num)}`;
      return text;
    }
    case 'set-op':
      if (stmt.meter) return `meter ${stmt.set}${stmt.meter.size !== undefined ? ` size ${stmt.meter.size}` : ''} { ${formatElement(stmt.element, 'dynset')} }`;
      return `${stmt.op} @${stmt.set} { ${formatElement(stmt.element, 'dynset')} }`;
    case 'synproxy': {
      let text = 'synproxy';
      if (stmt.mss !== undefined) text += ` mss ${stmt.mss}`;
      if (stmt.wscale !== undefined) text += ` wscale ${stmt.wscale}`;
      for (const flag of stmt.flags) text += ` ${flag}`;
      return text;
    }
    case 'flow-offload':
      return `flow add @${stmt.flowtable}`;
    case 'objref':
      return formatObjRef(stmt);
    case 'xt':
      // iptables-nft's comment match translates to nothing, so nft prints it as an empty
      // statement (the rule then shows a double space); JSON still names it.
      if (stmt.blank || stmt.name === undefined || (stmt.type === 'match' && stmt.name === 'comment')) return '';
      return `xt ${stmt.type} ${stmt.name}`;
    case 'xt-extension':
      // What nft 1.0.6 lists for an iptables-nft extension it has no translation for.
      return `xt ${stmt.type} ${stmt.name}`;
    case 'unsupported':
      return stmt.text;
    default: {
      const exhaustive: never = stmt;
      return exhaustive;
    }
  }
}

function formatObjRef(stmt: ObjRefStmt): string {
  const type = stmt.type;
  switch (type) {
    case 'ct helper':
    case 'ct timeout':
    case 'ct expectation':
      return `${type} set ${formatObjectName(stmt.name)}`;
    case 'secmark':
      return `meta secmark set ${formatObjectName(stmt.name)}`;
    case 'counter':
    case 'quota':
    case 'limit':
    case 'synproxy':
    case 'tunnel':
      return `${type} name ${formatObjectName(stmt.name)}`;
    default: {
      const exhaustive: never = type;
      return exhaustive;
    }
  }
}

/** Interface names in `dup`/`fwd` print quoted. */
function formatDevice(device: Expr): string {
  if (device.kind === 'literal' && !device.value) return quote(device.text);
  return formatExpr(device);
}

// --- expressions ----------------------------------------------------------------------------

/** `value`: a bitmask value prints as `a | b`; `list`: as `a,b` (flag-list contexts: implicit
 * matches, the `value / mask` form, statement arguments). */
type FlagStyle = 'value' | 'list';

// Binary operator precedence, tightest first (src/parser_bison.y shift_expr > and_expr >
// exclusive_or_expr > inclusive_or_expr).
const PRECEDENCE: Readonly<Record<Binop['op'], number>> = {
  '<<': 4,
  '>>': 4,
  '&': 3,
  '^': 2,
  '|': 1,
};

// iptables-nft's xlate spelling of the operators (iptables extensions/libxt_MARK.c etc.).
const BINOP_WORDS: Readonly<Record<Binop['op'], string>> = {
  '&': 'and',
  '|': 'or',
  '^': 'xor',
  '<<': 'lshift',
  '>>': 'rshift',
};

/** An operand of xlate text, as it was written: `mark` unqualified, `0x4000` unpadded. */
function formatXlateOperand(expr: Expr): string {
  if (expr.kind === 'meta') return expr.qualified ? `meta ${expr.key}` : expr.key;
  if (expr.kind === 'literal') return expr.quoted ? quote(expr.text) : expr.text;
  return formatExpr(expr);
}

function formatBinopArg(arg: Expr, parent: Binop, right: boolean): string {
  if (arg.kind === 'binop') {
    const inner = PRECEDENCE[arg.op];
    const outer = PRECEDENCE[parent.op];
    const parens = inner < outer || (right && inner === outer);
    const text = formatExpr(arg);
    return parens ? `(${text})` : text;
  }
  const text = formatExpr(arg, 'value');
  // A multi-bit flag value as an operand is an OR of flags and needs parentheses.
  return (arg.kind === 'literal' || arg.kind === 'flag-list') && text.includes(' | ') ? `(${text})` : text;
}

function formatBits(expr: Expr, style: FlagStyle): string {
  const sep = style === 'list' ? ',' : ' | ';
  if (expr.kind === 'flag-list') return expr.items.map((i) => formatBits(i, style)).join(sep);
  if (expr.kind === 'binop' && expr.op === '|') {
    return `${formatBits(expr.left, style)}${sep}${formatBits(expr.right, style)}`;
  }
  if (expr.kind === 'literal') return formatLiteral(expr, style);
  return formatExpr(expr, style);
}

function formatLiteral(lit: Literal, style: FlagStyle): string {
  const text = formatValue(lit);
  return style === 'value' && lit.dtype !== undefined && isBitmaskType(lit.dtype) ? text.replaceAll(',', ' | ') : text;
}

/** True when a match is nft 1.0.6's `value / mask` form: `(flags & mask) == value` on a
 * bitmask type with constant operands (src/expression.c relational_expr_print), except a
 * one-flag mask tested for that flag, which nft 1.0.6 lists as `tcp flags & syn == syn`
 * (checked with nft 1.0.6: `tcp flags syn / syn` lists so, `tcp flags syn / ack` does not). */
function isSlashForm(rel: Relational): rel is Relational & { left: Binop } {
  if (rel.left.kind === 'binop' && isOneFlagTestedForItself(rel.left.right, rel.right)) return false;
  if (isNoneSet(rel)) return false;
  if (rel.slash) return rel.left.kind === 'binop';
  if (rel.op !== 'implicit' && rel.op !== '==' && rel.op !== '!=') return false;
  const left = rel.left;
  if (left.kind !== 'binop' || left.op !== '&') return false;
  const type = datatypeOf(left.left);
  if (!type || !isBitmaskType(type.name)) return false;
  return isConstantBits(left.right) && isConstantBits(rel.right);
}

/** A constant set of bits: a value, a flag list or `a | b`. */
function isConstantBits(e: Expr): boolean {
  return e.kind === 'literal' || e.kind === 'flag-list' || (e.kind === 'binop' && e.op === '|' && isConstantBits(e.left) && isConstantBits(e.right));
}

function isOneFlagTestedForItself(mask: Expr, value: Expr): boolean {
  const text = formatBits(mask, 'list');
  return !text.includes(',') && text === formatBits(value, 'list');
}

/** True when a match tests that none of some bits is set, `(flags & mask) == 0` on a bitmask
 * type with a constant mask, which nft 1.0.6 lists as `tcp flags ! syn,ack` (checked with nft
 * 1.0.6; JSON op "!"). */
function isNoneSet(rel: Relational): rel is Relational & { left: Binop } {
  if (rel.op !== '==' && rel.op !== 'implicit') return false;
  if (rel.right.kind !== 'literal' || !/^(0x)?0+$/.test(rel.right.text)) return false;
  const left = rel.left;
  if (left.kind !== 'binop' || left.op !== '&') return false;
  const type = datatypeOf(left.left);
  return type !== undefined && isBitmaskType(type.name) && isConstantBits(left.right);
}

/** A relational expression (a match) as nft 1.0.6 prints it. */
export function formatRelational(rel: Relational): string {
  if (isNoneSet(rel)) return `${formatExpr(rel.left.left)} ! ${formatBits(rel.left.right, 'list')}`;
  if (isSlashForm(rel)) {
    const op = rel.op === '!=' ? '!= ' : '';
    return `${formatExpr(rel.left.left)} ${op}${formatBits(rel.right, 'list')} / ${formatBits(rel.left.right, 'list')}`;
  }
  const left = formatExpr(rel.left);
  const right = formatExpr(rel.right, rel.op === 'implicit' ? 'list' : 'value');
  switch (rel.op) {
    case 'implicit':
    case '==':
      // nft prints `==` only after a binary operation, where it would otherwise be ambiguous.
      return rel.left.kind === 'binop' ? `${left} == ${right}` : `${left} ${right}`;
    case '!=':
    case '<':
    case '>':
    case '<=':
    case '>=':
      return `${left} ${rel.op} ${right}`;
    default: {
      const exhaustive: never = rel.op;
      return exhaustive;
    }
  }
}

/** Where an element is printed: named sets print element statements before the timeout,
 * dynamic-set statements after it (src/expression.c set_elem_expr_print, src/statement.c
 * dynset_stmt_print). */
type ElementPlace = 'named' | 'anonymous' | 'dynset';

function formatElement(el: ElementExpr, place: ElementPlace, withData = true): string {
  let text = formatExpr(el.key, 'value');
  const stmts = (el.stmts ?? []).map((s) => ` ${formatStmt(s)}`).join('');
  if (place !== 'dynset') text += stmts;
  if (el.timeout !== undefined) text += ` timeout ${el.timeout}`;
  if (el.expires !== undefined) text += ` expires ${el.expires}`;
  if (el.comment !== undefined) text += ` comment ${quote(el.comment)}`;
  if (place === 'dynset') text += stmts;
  if (withData && el.data) text += ` : ${formatExpr(el.data, 'value')}`;
  return text;
}

/** The ends of a range print numerically (src/expression.c range_expr_print). */
function formatRangeEnd(expr: Expr): string {
  return expr.kind === 'literal' ? formatValue(expr, { numeric: true }) : formatExpr(expr);
}

/** One expression as nft 1.0.6 prints it. */
export function formatExpr(expr: Expr, style: FlagStyle = 'value'): string {
  switch (expr.kind) {
    case 'literal':
      return formatLiteral(expr, style);
    case 'payload':
      return `${expr.inner ? `${expr.inner} ` : ''}${expr.protocol} ${expr.field}`;
    case 'raw-payload':
      return `@${expr.base},${expr.offset},${expr.length}`;
    case 'exthdr': {
      if (expr.field === undefined || expr.prefixed) {
        return `exthdr ${expr.header}${expr.field !== undefined ? ` ${expr.field}` : ''}`;
      }
      const index = expr.index !== undefined ? `[${expr.index}]` : '';
      return `${expr.header} ${expr.field}${index}`;
    }
    case 'tcp-option': {
      const index = expr.index !== undefined ? String(expr.index) : '';
      return `tcp option ${expr.option}${index}${expr.field !== undefined ? ` ${expr.field}` : ''}`;
    }
    case 'ip-option':
      return `ip option ${expr.option}${expr.field !== undefined ? ` ${expr.field}` : ''}`;
    case 'sctp-chunk':
      return `sctp chunk ${expr.chunk}${expr.field !== undefined ? ` ${expr.field}` : ''}`;
    case 'meta':
      return metaKeyText(expr.key);
    case 'ct':
      return `ct ${expr.dir ? `${expr.dir} ` : ''}${expr.family ? `${expr.family} ` : ''}${expr.key}`;
    case 'fib':
      return `fib ${expr.flags.join(' . ')} ${expr.result}`;
    case 'rt':
      return `rt ${expr.family ? `${expr.family} ` : ''}${expr.key}`;
    case 'socket':
      return `socket ${expr.key}${expr.level !== undefined ? ` level ${expr.level}` : ''}`;
    case 'osf':
      return `osf ${expr.ttl !== undefined ? `ttl ${expr.ttl} ` : ''}${expr.key}`;
    case 'ipsec': {
      const spnum = expr.spnum !== undefined ? ` spnum ${expr.spnum}` : '';
      return `ipsec ${expr.dir}${spnum} ${expr.family ? `${expr.family} ` : ''}${expr.key}`;
    }
    case 'numgen':
      return `numgen ${expr.mode} mod ${expr.mod}${expr.offset ? ` offset ${expr.offset}` : ''}`;
    case 'hash': {
      let text = expr.type;
      if (expr.expr) text += ` ${formatExpr(expr.expr)}`;
      text += ` mod ${expr.mod}`;
      if (expr.seed !== undefined) text += ` seed 0x${expr.seed.toString(16)}`;
      if (expr.offset) text += ` offset ${expr.offset}`;
      return text;
    }
    case 'binop':
      if (expr.word) return `${formatXlateOperand(expr.left)} ${BINOP_WORDS[expr.op]} ${formatXlateOperand(expr.right)}`;
      return `${formatBinopArg(expr.left, expr, false)} ${expr.op} ${formatBinopArg(expr.right, expr, true)}`;
    case 'relational':
      return formatRelational(expr);
    case 'prefix':
      return `${formatExpr(expr.expr, style)}/${expr.length}`;
    case 'range':
      return `${formatRangeEnd(expr.low)}-${formatRangeEnd(expr.high)}`;
    case 'concat':
      return expr.parts.map((p) => formatExpr(p, style)).join(' . ');
    case 'flag-list':
      return formatBits(expr, style);
    case 'set':
      return `{ ${expr.elements.map((e) => formatElement(e, 'anonymous')).join(', ')} }`;
    case 'element':
      return formatElement(expr, 'anonymous');
    case 'set-ref':
      return `@${expr.name}`;
    case 'map':
      return `${formatExpr(expr.key)} ${expr.vmap ? 'vmap' : 'map'} ${formatExpr(expr.map)}`;
    case 'wildcard':
      return '*';
    case 'verdict':
      return expr.target !== undefined ? `${expr.verdict} ${expr.target}` : expr.verdict;
    default: {
      const exhaustive: never = expr;
      return exhaustive;
    }
  }
}
