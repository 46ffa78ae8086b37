// IptablesDump → Ruleset: the nf_tables tables iptables-nft (1.8.9) builds from a dump, in the
// model every other input lowers into. Commands are applied the way iptables-restore applies
// them (a table block starts from an empty table, -A appends, -I inserts, -D/-R/-F/-X/-N/-P/-E/-Z
// change what is there); each rule gets the `counter` iptables-nft always adds and keeps its
// `-A` line as origin. Matches and targets become the nft statements iptables-translate prints
// for them (iptables extensions/*.c `*_xlate`), where those mean the same thing; extensions
// without an equivalent nft expression stay typed `xt-extension` statements, never dropped.

import type {
  Chain,
  Expr,
  Literal,
  MatchStmt,
  Relational,
  Rule,
  RuleOrigin,
  Ruleset,
  Span,
  Stmt,
  Table,
  XtOption,
} from './ast.js';
import type { Diagnostic } from './diagnostic.js';
import type { ChainId, EarlierChainLookup } from './compose-rulesets.js';
import { datatypeSymbols, readIptablesRejectWith, tcpOptionName, typeAgainst, typeInner, typeLiteral, typeWith } from './datatypes.js';
import { recordChainsByName } from './chains-by-name.js';
import { formatRule } from './format-ruleset.js';
import { iptablesNftChain, isIptablesNftTable } from './iptables-nft-chains.js';
import { connmarkMasks, ctTemplateZone, optionNumber, U64_MAX, type AddressSpec } from './xt-option.js';
import { IPV4_ADDR, IPV6_ADDR, xtNatRange, xtNatStatement } from './xt-nat-statement.js';
import { readHmarkOptions } from './hmark-options.js';
import { readStripList } from './tcpoptstrip-options.js';
import type { IptablesDumpSink } from '../parser/iptables/parse-iptables-save.js';
import { FAMILY_TARGETS, TARGET_TABLES } from '../parser/iptables/iptables-extensions.js';
import type {
  AddressMatch,
  IpFamily,
  IptablesChainDecl,
  IptablesCommand,
  IptablesDump,
  IptablesMatch,
  IptablesOption,
  IptablesRule,
  IptablesTable,
  IptablesTarget,
} from '../parser/iptables/iptables-ast.js';

export interface LowerIptablesOptions {
  /** `ip6` for an ip6tables dump the dump itself does not identify. */
  readonly family?: 'ip' | 'ip6';
  /** The chains the inputs before this dump left (parseNode): a command on a chain the dump does
   * not declare (`-I FORWARD 1 …` without `:FORWARD`) continues it, as
   * `iptables-restore --noflush` would. */
  readonly earlier?: EarlierChainLookup;
}

export interface LowerIptablesResult {
  readonly ruleset: Ruleset;
  readonly diagnostics: readonly Diagnostic[];
  /** Chains continued from earlier inputs (their chain here holds the earlier rules too). */
  readonly continued?: readonly ChainId[];
}

/** The tables iptables-nft would hold after restoring `dump`. Never throws. */
export function lowerIptables(dump: IptablesDump, options: LowerIptablesOptions = {}): LowerIptablesResult {
  const lowering = new IptablesLowering(options);
  lowering.begin(dump.family === 'ipv6' ? 'ipv6' : 'ipv4');
  for (const block of dump.tables) {
    lowering.openTable(block.name);
    for (const decl of block.chains) lowering.chain(decl);
    for (const command of block.commands) lowering.command(command);
    lowering.closeTable(block);
  }
  return lowering.finish();
}

/** lowerIptables one command at a time: the sink readIptablesSave feeds while it reads, so a
 * large dump is lowered without ever being held whole (see IptablesDumpSink). */
export class IptablesLowering implements IptablesDumpSink {
  private family: 'ip' | 'ip6';
  private readonly diagnostics: Diagnostic[] = [];
  private readonly tables = new Map<string, Table>();
  private readonly continued: ChainId[] = [];
  private open: TableState | undefined;

  constructor(private readonly options: LowerIptablesOptions = {}) {
    this.family = options.family ?? 'ip';
  }

  begin(family: IpFamily): void {
    this.family = this.options.family ?? (family === 'ipv6' ? 'ip6' : 'ip');
  }

  openTable(name: string): void {
    // iptables-restore without --noflush empties each table it reads a block for.
    this.open = new TableState(name, this.family, this.diagnostics, this.options.earlier, this.continued);
  }

  chain(decl: IptablesChainDecl): void {
    this.openState().declare(decl);
  }

  command(command: IptablesCommand): void {
    this.openState().command(command);
  }

  closeTable(table: IptablesTable): void {
    // A second block for the same table replaces the first, in the first one's place.
    this.tables.set(table.name, this.openState().toTable(table.span));
    this.open = undefined;
  }

  finish(): LowerIptablesResult {
    const ruleset: Ruleset = { kind: 'ruleset', tables: [...this.tables.values()] };
    return this.continued.length > 0 ? { ruleset, diagnostics: this.diagnostics, continued: this.continued } : { ruleset, diagnostics: this.diagnostics };
  }

  private openState(): TableState {
    if (this.open === undefined) throw new Error('IptablesLowering: a chain or command outside openTable/closeTable');
    return this.open;
  }
}

// ---------------------------------------------------------------------------------------------
// Commands

interface ChainState {
  name: string;
  readonly span: Span;
  readonly builtin: boolean;
  policy: 'accept' | 'drop';
  rules: Rule[];
}

class TableState {
  /** The chains by name, each under its own name. toTable, the state's last call (closeTable then
   * drops it), turns this Map into the table's chains by name (chains-by-name.ts). */
  private readonly chains = new Map<string, ChainState>();
  /** Where this table's diagnostics start: the unknown-table one, which needs the table's span
   * (known at its end), goes first. */
  private readonly firstDiagnostic: number;

  constructor(
    private readonly name: string,
    private readonly family: 'ip' | 'ip6',
    private readonly diagnostics: Diagnostic[],
    private readonly earlier: EarlierChainLookup | undefined,
    private readonly continued: ChainId[],
  ) {
    this.firstDiagnostic = diagnostics.length;
  }

  private report(severity: Diagnostic['severity'], code: string, message: string, span: Span): void {
    this.diagnostics.push({ severity, code, message, span });
  }

  /** A jump target as the chain's own name string when the chain is known: the simulator looks
   * chains up by the names jumps give, and a Map finds the very string it holds by its hash,
   * worked out here once, without comparing characters (in a kube-proxy dump each spelling of a
   * name is a slice of the input, far from the others and cold by the time a packet jumps). */
  private readonly chainName = (name: string): string => this.chains.get(name)?.name ?? name;
  private readonly isUserChain = (name: string): boolean => this.chains.get(name)?.builtin === false;

  /** A target its kernel module allows in another table only (TARGET_TABLES); a chain named
   * like it, or like a target of the other family, is a chain (RuleLowering.lowerTarget). */
  private checkTargetTable(t: IptablesTarget): void {
    const only = FAMILY_TARGETS[t.name];
    const chain = this.isUserChain(t.name) || (only !== undefined && only !== (this.family === 'ip' ? 'ipv4' : 'ipv6'));
    const table = t.type === 'extension' && !chain ? TARGET_TABLES[t.name] : undefined;
    if (table !== undefined && table !== this.name) this.report('error', 'bad-option', `${t.name} is valid only in the ${table} table: iptables-restore fails here (the kernel refuses the rule)`, t.span);
  }

  declare(decl: IptablesChainDecl): void {
    const builtin = iptablesNftChain(this.name, decl.name) !== undefined;
    if (decl.policy !== undefined && !builtin) {
      this.report('error', 'policy-on-user-chain', `chain "${decl.name}" is not a built-in chain of table "${this.name}" and cannot have a policy`, decl.span);
    }
    this.chains.set(decl.name, {
      name: decl.name,
      span: decl.span,
      builtin,
      policy: decl.policy === 'DROP' ? 'drop' : 'accept',
      rules: [],
    });
  }

  /** The chain a command names; built-in chains iptables-nft creates on first use. */
  private chain(name: string, span: Span): ChainState | undefined {
    const found = this.chains.get(name);
    if (found) return found;
    const id: ChainId = { family: this.family, table: this.name, chain: name };
    const earlier = this.earlier?.(id);
    if (earlier) {
      const continued: ChainState = {
        name,
        span: earlier.span,
        builtin: earlier.base !== undefined,
        policy: earlier.base?.policy ?? 'accept',
        rules: [...earlier.rules],
      };
      this.chains.set(name, continued);
      this.continued.push(id);
      return continued;
    }
    if (iptablesNftChain(this.name, name)) {
      const created: ChainState = { name, span, builtin: true, policy: 'accept', rules: [] };
      this.chains.set(name, created);
      return created;
    }
    this.report('error', 'unknown-chain', `chain "${name}" does not exist in table "${this.name}": iptables-restore fails here`, span);
    return undefined;
  }

  command(command: IptablesCommand): void {
    const { span } = command;
    switch (command.op) {
      case 'append':
      case 'insert':
      case 'replace':
      case 'delete': {
        const chain = command.chain === undefined ? undefined : this.chain(command.chain, span);
        if (!chain) return;
        if (command.op === 'delete') {
          this.deleteRule(chain, command);
          return;
        }
        if (command.rule?.target) this.checkTargetTable(command.rule.target);
        const rules = command.rule ? lowerRule(command.rule, this.family, span, this.diagnostics, this.chainName, this.isUserChain) : [];
        const index = (command.position ?? (command.op === 'append' ? chain.rules.length + 1 : 1)) - 1;
        if (command.op === 'append') chain.rules.push(...rules);
        else if (index < 0 || index > chain.rules.length - (command.op === 'replace' ? 1 : 0)) {
          this.report('error', 'bad-rule-index', `chain "${chain.name}" has no rule ${index + 1}: iptables-restore fails here`, span);
        } else chain.rules.splice(index, command.op === 'replace' ? 1 : 0, ...rules);
        return;
      }
      case 'check':
        return;
      case 'new-chain':
        if (command.chain === undefined) return;
        if (this.chains.has(command.chain)) {
          this.report('error', 'chain-exists', `chain "${command.chain}" already exists`, span);
          return;
        }
        this.chains.set(command.chain, { name: command.chain, span, builtin: false, policy: 'accept', rules: [] });
        return;
      case 'delete-chain':
        for (const chain of this.selected(command)) {
          if (chain.builtin) {
            if (command.chain !== undefined) this.report('error', 'builtin-chain', `built-in chain "${chain.name}" cannot be deleted`, span);
          } else if (chain.rules.length > 0) {
            this.report('error', 'chain-not-empty', `chain "${chain.name}" is not empty and cannot be deleted`, span);
          } else this.chains.delete(chain.name);
        }
        return;
      case 'flush':
        for (const chain of this.selected(command)) chain.rules = [];
        return;
      case 'zero':
        for (const chain of this.selected(command)) {
          chain.rules = chain.rules.map((r) => ({ ...r, stmts: r.stmts.map((s) => (s.kind === 'counter' ? { ...s, packets: 0, bytes: 0 } : s)) }));
        }
        return;
      case 'policy': {
        const chain = command.chain === undefined ? undefined : this.chain(command.chain, span);
        if (!chain) return;
        if (!chain.builtin) this.report('error', 'policy-on-user-chain', `chain "${chain.name}" is not a built-in chain and cannot have a policy`, span);
        else chain.policy = command.policy === 'DROP' ? 'drop' : 'accept';
        return;
      }
      case 'rename-chain':
        this.rename(command);
        return;
      default: {
        const exhaustive: never = command.op;
        return exhaustive;
      }
    }
  }

  private selected(command: IptablesCommand): ChainState[] {
    if (command.chain === undefined) return [...this.chains.values()];
    const chain = this.chain(command.chain, command.span);
    return chain ? [chain] : [];
  }

  private deleteRule(chain: ChainState, command: IptablesCommand): void {
    let index = -1;
    if (command.position !== undefined) index = command.position <= chain.rules.length ? command.position - 1 : -1;
    else if (command.rule) {
      // iptables -D by specification deletes the first rule with the same matches and target.
      const wanted = lowerRule(command.rule, this.family, command.span, []).map(ruleKey);
      index = chain.rules.findIndex((r) => wanted.includes(ruleKey(r)));
    }
    if (index < 0) this.report('error', 'no-such-rule', `chain "${chain.name}" has no such rule to delete: iptables-restore fails here`, command.span);
    else chain.rules.splice(index, 1);
  }

  private rename(command: IptablesCommand): void {
    const from = command.chain;
    const to = command.newName;
    if (from === undefined || to === undefined) return;
    const chain = this.chain(from, command.span);
    if (!chain) return;
    if (chain.builtin || this.chains.has(to)) {
      this.report('error', 'bad-rename', `chain "${from}" cannot be renamed to "${to}"`, command.span);
      return;
    }
    // Jumps point at the chain itself in nf_tables, so they follow the new name.
    const renamed = new Map<string, ChainState>();
    for (const [name, c] of this.chains) {
      c.rules = c.rules.map((r) =>
        r.stmts.some((s) => s.kind === 'verdict' && s.target === from)
          ? { ...r, stmts: r.stmts.map((s) => (s.kind === 'verdict' && s.target === from ? { ...s, target: to } : s)) }
          : r,
      );
      if (name === from) {
        c.name = to;
        renamed.set(to, c);
      } else renamed.set(name, c);
    }
    this.chains.clear();
    for (const [name, c] of renamed) this.chains.set(name, c);
  }

  toTable(span: Span): Table {
    if (!isIptablesNftTable(this.name)) {
      const message = `iptables-nft has no table "${this.name}"; its chains are kept as regular chains`;
      this.diagnostics.splice(this.firstDiagnostic, 0, { severity: 'error', code: 'unknown-table', message, span });
    }
    const chains: Chain[] = [];
    // The Map of chain states becomes the table's chains by name: each state is replaced by its
    // chain under the same key (chains-by-name.ts), which hashes no name again.
    const byName: Map<string, ChainState | Chain> = this.chains;
    for (const c of this.chains.values()) {
      const hook = iptablesNftChain(this.name, c.name);
      // One literal per case, not a conditional spread: a kube-proxy dump has 60,000 chains,
      // and the spread copies each chain node and gives it a shape of its own.
      const { span, name, rules } = c;
      const chain: Chain = hook
        ? {
            kind: 'chain',
            span,
            name,
            base: { type: hook.type, hook: hook.hook, priority: { span, offset: hook.priority, value: hook.priority }, policy: c.policy, devices: [] },
            rules,
          }
        : { kind: 'chain', span, name, rules };
      chains.push(chain);
      byName.set(name, chain);
    }
    recordChainsByName(chains, byName as ReadonlyMap<string, Chain>);
    return { kind: 'table', span, family: this.family, name: this.name, flags: [], objects: [], sets: [], flowtables: [], chains };
  }
}

/** A rule's identity for `-D` by specification: its statements without counter values. */
function ruleKey(rule: Rule): string {
  return formatRule({ ...rule, stmts: rule.stmts.filter((s) => s.kind !== 'counter') });
}

// ---------------------------------------------------------------------------------------------
// Rules

/** The nft rules one iptables rule becomes: one per source × destination address (iptables
 * expands `-s a,b`), none when the line is for the other family (`-4` in ip6tables-restore). */
export function lowerRule(
  rule: IptablesRule,
  family: 'ip' | 'ip6',
  span: Span,
  diagnostics: Diagnostic[],
  chainName: (name: string) => string = (name) => name,
  isUserChain: (name: string) => boolean = () => false,
): Rule[] {
  if (rule.onlyFamily !== undefined && (rule.onlyFamily === 'ipv6') !== (family === 'ip6')) return [];
  const sources = rule.source?.addresses ?? [undefined];
  const destinations = rule.destination?.addresses ?? [undefined];
  const rules: Rule[] = [];
  for (const s of sources) {
    for (const d of destinations) rules.push(new RuleLowering(rule, family, span, diagnostics, chainName, isUserChain).lower(s, d));
  }
  return rules;
}

const L4_PORT_MATCHES = new Set(['tcp', 'udp', 'udplite', 'sctp', 'dccp']);

/** The options of the port matches the lowering translates (sctp chunk types, dccp types and
 * the like keep the match an xt extension). */
function isLowerablePortOption(o: IptablesOption): boolean {
  switch (o.name) {
    case 'sport':
    case 'dport':
      return o.value.type === 'range';
    case 'tcp-option':
      return o.value.type === 'number';
    case 'tcp-flags':
      return o.value.type === 'tcp-flags';
    default:
      return o.name === 'syn';
  }
}

/** True for a match iptables-nft 1.8.9 adds as native payload expressions, not an xt match. */
function isNativePortMatch(m: IptablesMatch): boolean {
  return (m.name === 'tcp' || m.name === 'udp') && !m.options.some((o) => o.name === 'tcp-option');
}

class RuleLowering {
  private readonly stmts: Stmt[] = [];
  private comment: string | undefined;
  /** The `meta l4proto` match nft 1.0.6 leaves out of its listing as the implicit dependency
   * of the next transport header match, while it still can: only native expression matches
   * may come between (netlink_delinearize.c rule_parse_postprocess forgets the dependency at
   * any other statement, such as an xt match). */
  private dependency: { readonly stmt: Stmt; readonly protocol: string } | undefined;

  constructor(
    private readonly rule: IptablesRule,
    private readonly family: 'ip' | 'ip6',
    private readonly span: Span,
    private readonly diagnostics: Diagnostic[],
    private readonly chainName: (name: string) => string,
    private readonly isUserChain: (name: string) => boolean,
  ) {}

  lower(source: AddressSpec | undefined, destination: AddressSpec | undefined): Rule {
    const r = this.rule;
    const ipProto = this.family === 'ip' ? 'ip' : 'ip6';
    // The base matches come first, in the order nft_ipv4_add / nft_ipv6_add (iptables 1.8.9
    // iptables/nft-ipv4.c, nft-ipv6.c) add them: in-interface, out-interface, protocol, source,
    // destination, fragment; then each -m match in order. The protocol is `meta l4proto` in
    // both families (add_l4proto), never `ip protocol` as iptables-translate writes it.
    if (r.inInterface) this.interface('iifname', r.inInterface);
    if (r.outInterface) this.interface('oifname', r.outInterface);
    const protocol = r.protocol;
    if (protocol && protocol.number !== 0) {
      const name = protocol.number !== undefined ? protocolName(protocol.number) : protocol.name;
      this.match(protocol.span, meta(protocol.span, 'l4proto'), protocol.negated ? '!=' : 'implicit', lit(protocol.span, name));
      if (!protocol.negated) this.dependency = { stmt: this.stmts[this.stmts.length - 1]!, protocol: name };
    }
    if (source && r.source) this.address(r.source, source, payload(r.source.span, ipProto, 'saddr'));
    if (destination && r.destination) this.address(r.destination, destination, payload(r.destination.span, ipProto, 'daddr'));
    if (r.fragment) {
      const frag: Expr = binop(r.fragment.span, '&', payload(r.fragment.span, 'ip', 'frag-off'), lit(r.fragment.span, '0x1fff'));
      this.match(r.fragment.span, frag, r.fragment.negated ? '==' : '!=', lit(r.fragment.span, '0'));
    }
    for (const m of r.matches) this.lowerMatch(m);
    this.stmts.push({ kind: 'counter', span: r.counters?.span ?? this.span, packets: r.counters?.packets ?? 0, bytes: r.counters?.bytes ?? 0 });
    if (r.target) this.lowerTarget(r.target);
    // Object literals of one shape per branch rather than conditional spreads: this runs once
    // per rule of a 240,000-line dump, and a spread allocates (and shapes) each node twice.
    // The statements are copied with slice(): the array pushed to keeps spare capacity.
    const origin: RuleOrigin = { format: 'iptables', text: r.origin };
    const stmts = this.stmts.slice();
    return this.comment === undefined
      ? { kind: 'rule', span: this.span, stmts, origin }
      : { kind: 'rule', span: this.span, stmts, comment: this.comment, origin };
  }

  /** A match statement, its right-hand side typed against its left (what typeInner does to a
   * relational, without building the untyped relational first). */
  private match(span: Span, left: Expr, op: Relational['op'], right: Expr, slash?: boolean): void {
    const typedLeft = typeInner(left);
    const typedRight = typeAgainst(right, left, this.family);
    const rel: Relational = slash
      ? { kind: 'relational', span, op, left: typedLeft, right: typedRight, slash }
      : { kind: 'relational', span, op, left: typedLeft, right: typedRight };
    const stmt: MatchStmt = { kind: 'match', span, expr: rel };
    this.stmts.push(stmt);
  }

  private unsupported(span: Span, what: string): void {
    this.diagnostics.push({ severity: 'warning', code: 'unsupported', message: `${what} has no nft lowering in nftsim; kept as an xt extension`, span });
  }

  private xt(type: 'match' | 'target', span: Span, name: string, options: readonly IptablesOption[]): void {
    const xtOptions: XtOption[] = options.map((o) => ({ name: o.name, negated: o.negated, args: o.args, value: o.value }));
    this.stmts.push({ kind: 'xt-extension', span, type, name, options: xtOptions });
  }

  /** As iptables-nft stores interfaces (iptables/nft-shared.c add_iface, 1.8.9): a trailing `+`
   * becomes nft's trailing `*`; a literal trailing `*` (not special in iptables) is escaped; `-i +`
   * matches every interface and stores nothing; `! -i +` matches none and is stored as the name
   * no interface can have, "INVAL/D". */
  private interface(key: 'iifname' | 'oifname', m: { span: Span; negated: boolean; name: string; wildcard: boolean }): void {
    if (m.wildcard && m.name === '') {
      if (m.negated) this.match(m.span, meta(m.span, key, false), 'implicit', quotedLit(m.span, 'INVAL/D'));
      return;
    }
    const text = m.wildcard ? `${m.name}*` : m.name.replace(/\*$/, '\\*');
    this.match(m.span, meta(m.span, key, false), m.negated ? '!=' : 'implicit', quotedLit(m.span, text));
  }

  private address(m: AddressMatch, a: AddressSpec, left: Expr): void {
    const op = m.negated ? '!=' : 'implicit';
    const v6 = a.type === 'ipv6';
    const bits = v6 ? 128 : 32;
    if (a.mask !== undefined && a.prefixLength === undefined) {
      // A non-contiguous netmask: iptables-translate's `ip saddr & MASK == ADDR & MASK`.
      const masked = formatAddress(andAddress(a.address, a.mask, v6), v6);
      this.match(m.span, binop(m.span, '&', left, lit(m.span, a.mask)), m.negated ? '!=' : '==', lit(m.span, masked));
      return;
    }
    const prefix = a.prefixLength ?? bits;
    // `-s 0.0.0.0/0` matches everything: iptables-nft adds no expression for it.
    if (prefix === 0 && !m.negated) return;
    if (a.type === 'hostname' || prefix === bits) {
      this.match(m.span, left, op, lit(m.span, a.address));
      return;
    }
    const network = formatAddress(andAddress(a.address, prefixMask(prefix, v6), v6), v6);
    this.match(m.span, left, op, { kind: 'prefix', span: m.span, expr: lit(m.span, network), length: prefix });
  }

  // --- matches ------------------------------------------------------------------------------

  private lowerMatch(m: IptablesMatch): void {
    // Only native expression matches keep the protocol dependency (see `dependency`): the mark
    // match (nft.c add_nft_mark) and tcp/udp, which handle it themselves.
    if (m.name !== 'mark' && !isNativePortMatch(m)) this.dependency = undefined;
    if (!m.known || m.options.some((o) => o.value.type === 'raw')) {
      this.unsupported(m.span, `match "${m.name}"`);
      this.xt('match', m.span, m.name, m.options);
      return;
    }
    const lowering = MATCH_LOWERINGS[m.name];
    if (lowering === undefined || !lowering.call(this, m)) {
      if (!TYPED_XT_MATCHES.has(m.name)) this.unsupported(m.span, `match "${m.name}"`);
      this.xt('match', m.span, m.name, m.options);
    }
  }

  /** tcp, udp, udplite, sctp and dccp. iptables-nft 1.8.9 adds tcp and udp as native payload
   * matches (nft.c add_nft_tcp, add_nft_udp: flags, then ports, a port range starting at 0 as
   * `<=`), tcp with --tcp-option as an xt match; the others are xt matches nft lists through
   * their xlate (ports first, every range as a range). */
  ports(m: IptablesMatch): boolean {
    if (!m.options.every(isLowerablePortOption)) return false;
    const before = this.stmts.length;
    const native = isNativePortMatch(m);
    if (native) for (const o of m.options) this.tcpFlagsOption(o);
    // The source port first, as both orders do.
    const ports = m.options.filter((o) => o.name === 'sport').concat(m.options.filter((o) => o.name === 'dport'));
    // After `! -p tcp` the ports are read from whatever transport header there is: nft.c
    // add_nft_tcp/add_nft_udp add `th` payloads when the protocol is negated (checked with
    // iptables-nft 1.8.9: `! -p tcp -m tcp --dport 3` lists `meta l4proto != tcp th dport 3`).
    const header = native && this.rule.protocol?.negated ? 'th' : m.name;
    for (const o of ports) {
      if (o.value.type !== 'range') continue;
      const { from, to } = o.value;
      const left = payload(o.span, header, o.name);
      // The full range of tcp or udp: iptables-nft 1.8.9 stores no port test for it, inverted or
      // not (checked with the real tools: `! --sport 0:65535` leaves only `meta l4proto tcp`), so
      // in the kernel such a rule matches every packet of the protocol, though legacy iptables
      // matches none with the inverted range.
      if ((m.name === 'tcp' || m.name === 'udp') && from === 0 && to === 65535) continue;
      if (native && from === 0 && to !== 0) this.match(o.span, left, o.negated ? '>' : '<=', lit(o.span, String(to)));
      else this.match(o.span, left, o.negated ? '!=' : 'implicit', rangeLiteral(o.span, from, to));
    }
    for (const o of m.options) {
      if (o.name === 'tcp-option' && o.value.type === 'number') {
        this.match(o.span, { kind: 'tcp-option', span: o.span, option: tcpOptionName(String(o.value.n)) }, 'implicit', lit(o.span, o.negated ? 'missing' : 'exists'));
      } else if (!native) this.tcpFlagsOption(o);
    }
    // A native match with nothing to test is an empty xt match in the kernel (a blank in nft's
    // listing), which ends the protocol dependency like any xt match.
    const dependency = this.dependency;
    this.dependency = undefined;
    if (native && this.stmts.length > before && dependency?.protocol === m.name) this.stmts.splice(this.stmts.indexOf(dependency.stmt), 1);
    return true;
  }

  private tcpFlagsOption(o: IptablesOption): void {
    if (o.name === 'tcp-flags' && o.value.type === 'tcp-flags') this.tcpFlags(o, o.value.mask, o.value.compare);
    else if (o.name === 'syn') this.tcpFlags(o, ['FIN', 'SYN', 'RST', 'ACK'], ['SYN']);
  }

  private tcpFlags(o: IptablesOption, mask: readonly string[], compare: readonly string[]): void {
    const flags = (names: readonly string[]): Expr => {
      const expanded = TCP_FLAG_ORDER.filter((n) => names.includes('ALL') || names.includes(n));
      const items = expanded.map((n) => lit(o.span, n.toLowerCase()));
      if (items.length === 1) return items[0]!;
      return items.length === 0 ? lit(o.span, '0x0') : { kind: 'flag-list', span: o.span, items };
    };
    const left = binop(o.span, '&', payload(o.span, 'tcp', 'flags'), flags(mask));
    this.match(o.span, left, o.negated ? '!=' : '==', flags(compare), true);
  }

  icmp(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o === undefined || o.value.type !== 'icmp-type' || o.value.icmpType === undefined) return false;
    const proto = m.name === 'icmp' ? 'icmp' : 'icmpv6';
    if (o.value.name === 'any') {
      // Every ICMP type: only the protocol is tested. `! any` never matches (ip_tables.c
      // icmp_type_code_match), which no nft expression of the type says: it stays xt.
      if (o.negated) return false;
      const left = this.family === 'ip' ? payload(o.span, 'ip', 'protocol') : meta(o.span, 'l4proto');
      this.match(o.span, left, 'implicit', lit(o.span, this.family === 'ip' ? 'icmp' : 'ipv6-icmp'));
      return true;
    }
    const { icmpType, code } = o.value;
    const op = o.negated ? '!=' : 'implicit';
    if (code === undefined || (code.from === 0 && code.to === 0xff)) {
      this.match(o.span, payload(o.span, proto, 'type'), op, lit(o.span, String(icmpType)));
    } else if (o.negated) return false;
    else {
      this.match(o.span, payload(o.span, proto, 'type'), 'implicit', lit(o.span, String(icmpType)));
      this.match(o.span, payload(o.span, proto, 'code'), 'implicit', rangeLiteral(o.span, code.from, code.to));
    }
    return true;
  }

  commentMatch(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o?.value.type !== 'string') return false;
    this.comment = o.value.s;
    return true;
  }

  conntrack(m: IptablesMatch): boolean {
    // Order of conntrack_mt_xlate (libxt_conntrack.c).
    const order = ['ctdir', 'ctproto', 'ctstate', 'state', 'ctstatus', 'ctexpire', 'ctorigsrc', 'ctorigdst', 'ctreplsrc', 'ctrepldst', 'ctorigsrcport', 'ctorigdstport', 'ctreplsrcport', 'ctrepldstport'];
    const options = [...m.options].sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
    let tests = options;
    const stateTest = options.find((o) => o.name === 'ctstate' || o.name === 'state');
    if (stateTest?.value.type === 'names') {
      const names = stateTest.value.names;
      // SNAT/DNAT test the conntrack status, other states the state: a mix is an OR across two
      // keys that no single nft match expresses.
      const nat = names.filter((n) => n === 'SNAT' || n === 'DNAT').length;
      if (nat > 0 && nat < names.length) return false;
      // A packet without an entry (INVALID, UNTRACKED) gets the state test's answer alone
      // (conntrack_mt: `if (ct == NULL) return info->match_flags & XT_CONNTRACK_STATE`), where
      // nft's ct keys other than the state break, the status of `--ctstate DNAT` too: a state test
      // only such packets pass is the whole match, and one that both they and others pass is an OR
      // no nft rule expresses (kernel-checked).
      const entryless = names.filter((n) => n === 'INVALID' || n === 'UNTRACKED').length;
      const passesEntryless = stateTest.negated ? entryless < 2 : entryless > 0;
      if (passesEntryless && (nat > 0 || options.length > 1)) {
        if (stateTest.negated || entryless < names.length) return false;
        tests = [stateTest];
      }
    }
    for (const o of tests) {
      const op = o.negated ? '!=' : 'implicit';
      const v = o.value;
      if ((o.name === 'ctstate' || o.name === 'state') && v.type === 'names') {
        const nat = v.names.every((n) => n === 'SNAT' || n === 'DNAT');
        this.flagsMatch(o, ct(o.span, nat ? 'status' : 'state'), v.names.map((n) => (n === 'SNAT' ? 'snat' : n === 'DNAT' ? 'dnat' : n.toLowerCase())));
      } else if (o.name === 'ctstatus' && v.type === 'names') {
        const sorted = [...v.names].sort((a, b) => CT_STATUS_ORDER.indexOf(a) - CT_STATUS_ORDER.indexOf(b));
        // NONE is no bit (xt_conntrack tests `status & mask`): alone it never matches, negated
        // it always does; nft's ct_status has no name for it.
        this.flagsMatch(o, ct(o.span, 'status'), sorted.map((n) => (n === 'NONE' ? '0' : n.toLowerCase().replace('_', '-'))));
      } else if (o.name === 'ctdir' && v.type === 'names') {
        this.match(o.span, ct(o.span, 'direction'), op, lit(o.span, (v.names[0] ?? '').toLowerCase()));
      } else if (o.name === 'ctproto' && v.type === 'string') {
        const n = protocolNumber(v.s);
        if (n === undefined) return false;
        this.match(o.span, ct(o.span, 'protocol', 'original'), op, lit(o.span, String(n)));
      } else if (o.name === 'ctexpire' && v.type === 'range') {
        this.match(o.span, ct(o.span, 'expiration'), op, rangeLiteral(o.span, v.from, v.to));
      } else if (v.type === 'address' && CT_ADDRESS[o.name] !== undefined) {
        const [dir, key] = CT_ADDRESS[o.name]!;
        this.address({ span: o.span, negated: o.negated, addresses: [v.address] }, v.address, ct(o.span, key, dir));
      } else if (v.type === 'range' && CT_PORT[o.name] !== undefined) {
        const [dir, key] = CT_PORT[o.name]!;
        this.match(o.span, ct(o.span, key, dir), op, rangeLiteral(o.span, v.from, v.to));
      } else return false;
    }
    return true;
  }

  /** xt_conntrack tests `(bits & mask) != 0`, inverted by `!`: any of the names, or with `!`
   * none of them, `(x & mask) == 0` (printed `ct state ! new,related`). Not `!=`, which nft
   * compiles to a whole-value compare. */
  private flagsMatch(o: IptablesOption, left: Expr, items: readonly string[]): void {
    const mask = names(o.span, items);
    if (o.negated) this.match(o.span, binop(o.span, '&', left, mask), '==', lit(o.span, '0'));
    else this.match(o.span, left, 'implicit', mask);
  }

  mark(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o?.value.type !== 'mark') return false;
    const left: Expr = m.name === 'mark' ? meta(o.span, 'mark') : ct(o.span, 'mark');
    this.maskedMatch(o, left, o.value.value, o.value.mask);
    return true;
  }

  /** frag_mt6 (ip6t_frag.c): tests of the fragment header's fields; without the header it
   * matches nothing, negated or not, as nft's exthdr load breaks the rule. --fragres wants the
   * reserved bits clear, the byte's and the two in the offset word (frag_xlate's `frag reserved
   * 1` is the opposite); the kernel does not test --fraglen. With no test left (or an id of any
   * value) the match is `exthdr frag exists`. */
  frag(m: IptablesMatch): boolean {
    const lowerable = (o: IptablesOption): boolean => (o.name === 'fragid' ? o.value.type === 'range' : !o.negated);
    if (this.family !== 'ip6' || !m.options.every(lowerable)) return false;
    const before = this.stmts.length;
    for (const o of m.options) {
      const field = (name: string): Expr => ({ kind: 'exthdr', span: o.span, header: 'frag', field: name });
      if (o.name === 'fragid' && o.value.type === 'range') {
        const { from, to } = o.value;
        if (!(from === 0 && to === 0xffffffff && !o.negated)) this.match(o.span, field('id'), o.negated ? '!=' : 'implicit', rangeLiteral(o.span, from, to));
      } else if (o.name === 'fragres') {
        this.match(o.span, field('reserved'), 'implicit', lit(o.span, '0'));
        this.match(o.span, field('reserved2'), 'implicit', lit(o.span, '0'));
      } else if (o.name === 'fragfirst') this.match(o.span, field('frag-off'), 'implicit', lit(o.span, '0'));
      else if (o.name === 'fragmore' || o.name === 'fraglast') this.match(o.span, field('more-fragments'), 'implicit', lit(o.span, o.name === 'fragmore' ? '1' : '0'));
    }
    if (this.stmts.length === before) this.match(m.span, { kind: 'exthdr', span: m.span, header: 'frag', prefixed: true }, 'implicit', lit(m.span, 'exists'));
    return true;
  }

  /** Kept as xt (match-cluster.ts), after libxt_cluster.c's checks, which iptables-restore makes:
   * 1 to 32 nodes, a local node among them or a mask of them, and a hash seed. */
  cluster(m: IptablesMatch): boolean {
    const number = (name: string): number | undefined => optionNumber(m.options, name);
    const total = number('cluster-total-nodes');
    const node = number('cluster-local-node');
    const mask = number('cluster-local-nodemask');
    const problem =
      total === undefined || total < 1 || total > 32
        ? '--cluster-total-nodes must be from 1 to 32'
        : node === undefined && mask === undefined
          ? '--cluster-local-node or --cluster-local-nodemask must be given'
          : node !== undefined && (node < 1 || node > total)
            ? `--cluster-local-node must be from 1 to --cluster-total-nodes (${total})`
            : mask !== undefined && mask >= 2 ** total
              ? `--cluster-local-nodemask 0x${mask.toString(16)} is too big for ${total} nodes`
              : number('cluster-hash-seed') === undefined
                ? '--cluster-hash-seed must be given'
                : undefined;
    if (problem) this.diagnostics.push({ severity: 'error', code: 'bad-option', message: `cluster: ${problem}`, span: m.span });
    return false;
  }

  /** devgroup_xlate (libxt_devgroup.c): `iifgroup`, `oifgroup`, under a mask. xt_devgroup.c
   * tests `(group ^ value) & mask`, so the value's bits outside the mask do not count. */
  devgroup(m: IptablesMatch): boolean {
    if (m.options.some((o) => o.value.type !== 'mark')) return false;
    for (const o of m.options) {
      if (o.value.type !== 'mark') continue;
      const { value, mask } = o.value;
      this.maskedMatch(o, meta(o.span, o.name === 'src-group' ? 'iifgroup' : 'oifgroup', false), mask === undefined ? value : (value & mask) >>> 0, mask);
    }
    return true;
  }

  private maskedMatch(o: IptablesOption, left: Expr, value: number, mask: number | undefined): void {
    if (mask === undefined || mask === 0xffffffff) this.match(o.span, left, o.negated ? '!=' : 'implicit', hex(o.span, value));
    else this.match(o.span, binop(o.span, '&', left, hex(o.span, mask)), o.negated ? '!=' : '==', hex(o.span, value));
  }

  multiport(m: IptablesMatch): boolean {
    const protocol = this.rule.protocol;
    const pname = protocol?.number !== undefined ? protocolName(protocol.number) : protocol?.name;
    if (!protocol || protocol.negated || pname === undefined || !L4_PORT_MATCHES.has(pname)) return false;
    if (m.options.some((o) => o.value.type !== 'ranges')) return false;
    for (const o of m.options) {
      if (o.value.type !== 'ranges') continue;
      const set = (keys: readonly Expr[]): Expr =>
        keys.length === 1 ? keys[0]! : { kind: 'set', span: o.span, elements: keys.map((key) => ({ kind: 'element', span: o.span, key })) };
      const ranges = o.value.items.map((r) => rangeLiteral(o.span, r.from, r.to));
      if (o.name === 'ports') {
        // Either port in the list: multiport_xlate's `sport . dport` set, each port paired with
        // any port on the other side (it prints a range's two ends as two ports; the kernel
        // tests the range, as here).
        const any = rangeLiteral(o.span, 0, 65535);
        const concat = (parts: readonly Expr[]): Expr => ({ kind: 'concat', span: o.span, parts });
        const keys = ranges.flatMap((r) => [concat([any, r]), concat([r, any])]);
        const left = concat([payload(o.span, pname, 'sport'), payload(o.span, pname, 'dport')]);
        this.match(o.span, left, o.negated ? '!=' : 'implicit', { kind: 'set', span: o.span, elements: keys.map((key) => ({ kind: 'element', span: o.span, key })) });
      } else this.match(o.span, payload(o.span, pname, o.name === 'sports' ? 'sport' : 'dport'), o.negated ? '!=' : 'implicit', set(ranges));
    }
    return true;
  }

  addrtype(m: IptablesMatch): boolean {
    const iface = m.options.find((o) => o.name === 'limit-iface-in') ? 'iif' : m.options.find((o) => o.name === 'limit-iface-out') ? 'oif' : undefined;
    for (const o of m.options) {
      if (o.value.type !== 'names') continue;
      const types = [...o.value.names].sort((a, b) => ADDR_TYPE_ORDER.indexOf(a) - ADDR_TYPE_ORDER.indexOf(b)).map((n) => lit(o.span, n.toLowerCase()));
      const right: Expr = types.length === 1 ? types[0]! : { kind: 'set', span: o.span, elements: types.map((key) => ({ kind: 'element', span: o.span, key })) };
      const flags = [o.name === 'src-type' ? 'saddr' : 'daddr', ...(iface ? [iface] : [])];
      this.match(o.span, { kind: 'fib', span: o.span, flags, result: 'type' }, o.negated ? '!=' : 'implicit', right);
    }
    return true;
  }

  statistic(m: IptablesMatch): boolean {
    const get = (name: string) => m.options.find((o) => o.name === name);
    const mode = get('mode');
    const probability = get('probability');
    if (probability?.value.type === 'probability') {
      // xt_statistic: (get_random_u32() & 0x7fffffff) < lround(p * 2^31), libxt_statistic.c.
      const threshold = Math.round(probability.value.p * 0x80000000);
      const left = binop(probability.span, '&', meta(probability.span, 'random'), lit(probability.span, '2147483647'));
      this.match(probability.span, left, probability.negated ? '>=' : '<', lit(probability.span, String(threshold)));
      return true;
    }
    const every = get('every');
    const packet = get('packet');
    if (mode?.value.type === 'names' && mode.value.names[0] === 'nth' && every?.value.type === 'number') {
      // libxt_statistic.c refuses the rule without --packet, or with one outside 0..every-1.
      const n = packet?.value.type === 'number' ? packet.value.n : undefined;
      if (n === undefined || n >= every.value.n) {
        this.diagnostics.push({ severity: 'error', code: 'bad-option', message: n === undefined ? 'statistic: --every also requires --packet' : `statistic: --packet ${n} must be from 0 to --every minus 1 (${every.value.n - 1})`, span: (packet ?? every).span });
        return true;
      }
      const span = every.span;
      this.match(span, { kind: 'numgen', span, mode: 'inc', mod: every.value.n }, every.negated ? '!=' : 'implicit', lit(span, String(n)));
      return true;
    }
    return false;
  }

  limit(m: IptablesMatch): boolean {
    const rate = m.options.find((o) => o.name === 'limit');
    const burst = m.options.find((o) => o.name === 'limit-burst');
    // libxt_limit.c defaults: 3/hour, burst 5.
    const count = rate?.value.type === 'rate' ? rate.value.count : 3;
    const per = rate?.value.type === 'rate' ? rate.value.unit : 'hour';
    const b = burst?.value.type === 'number' ? burst.value.n : 5;
    this.stmts.push({ kind: 'limit', span: m.span, over: false, rate: count, unit: 'packets', per, burst: b });
    return true;
  }

  numberRange(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o?.value.type !== 'range') return false;
    const left: Expr = m.name === 'length' ? meta(o.span, 'length') : { kind: 'tcp-option', span: o.span, option: 'maxseg', field: 'size' };
    this.match(o.span, left, o.negated ? '!=' : 'implicit', rangeLiteral(o.span, o.value.from, o.value.to));
    return true;
  }

  pkttype(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o?.value.type !== 'names' || o.value.names.length !== 1) return false;
    // iptables' `otherhost` is nft's `other` (PACKET_OTHERHOST, 3).
    const name = o.value.names[0]!.toLowerCase();
    this.match(o.span, meta(o.span, 'pkttype', false), o.negated ? '!=' : 'implicit', lit(o.span, name === 'otherhost' ? 'other' : name));
    return true;
  }

  iprange(m: IptablesMatch): boolean {
    const ipProto = this.family === 'ip' ? 'ip' : 'ip6';
    const sorted = [...m.options].sort((a) => (a.name === 'src-range' ? -1 : 1));
    for (const o of sorted) {
      if (o.value.type !== 'address-range') return false;
      const range: Expr = { kind: 'range', span: o.span, low: lit(o.span, o.value.from), high: lit(o.span, o.value.to) };
      this.match(o.span, payload(o.span, ipProto, o.name === 'src-range' ? 'saddr' : 'daddr'), o.negated ? '!=' : 'implicit', range);
    }
    return true;
  }

  owner(m: IptablesMatch): boolean {
    if (m.options.some((o) => o.name !== 'uid-owner' && o.name !== 'gid-owner')) return false;
    for (const o of m.options) {
      if (o.value.type !== 'string') return false;
      const key = o.name === 'uid-owner' ? 'skuid' : 'skgid';
      const id = o.value.s === 'root' ? '0' : o.value.s;
      const range = /^(\d+)-(\d+)$/.exec(id);
      const right: Expr = range ? rangeLiteral(o.span, Number(range[1]), Number(range[2])) : lit(o.span, id);
      this.match(o.span, meta(o.span, key, false), o.negated ? '!=' : 'implicit', right);
    }
    return true;
  }

  helper(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o?.value.type !== 'string') return false;
    this.match(o.span, ct(o.span, 'helper'), o.negated ? '!=' : 'implicit', quotedLit(o.span, o.value.s));
    return true;
  }

  mac(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o?.value.type !== 'string') return false;
    this.match(o.span, payload(o.span, 'ether', 'saddr'), o.negated ? '!=' : 'implicit', lit(o.span, o.value.s.toLowerCase()));
    return true;
  }

  ttl(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o?.value.type !== 'number') return false;
    const left = m.name === 'ttl' ? payload(o.span, 'ip', 'ttl') : payload(o.span, 'ip6', 'hoplimit');
    const op = o.name.endsWith('-lt') ? '<' : o.name.endsWith('-gt') ? '>' : o.negated ? '!=' : 'implicit';
    this.match(o.span, left, op, lit(o.span, String(o.value.n)));
    return true;
  }

  /** dscp_xlate (libxt_dscp.c): `ip dscp 0x2e`, `ip6 dscp`. */
  dscp(m: IptablesMatch): boolean {
    const o = m.options[0];
    const value = o === undefined || m.options.length !== 1 ? undefined : dscpValue(o);
    if (o === undefined || value === undefined) return false;
    this.match(o.span, payload(o.span, this.family, 'dscp'), o.negated ? '!=' : 'implicit', lit(o.span, `0x${value.toString(16).padStart(2, '0')}`));
    return true;
  }

  /** cpu_xlate (libxt_cpu.c). */
  cpu(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o?.value.type !== 'number' || m.options.length !== 1) return false;
    this.match(o.span, meta(o.span, 'cpu', false), o.negated ? '!=' : 'implicit', lit(o.span, String(o.value.n)));
    return true;
  }

  /** cgroup_xlate (libxt_cgroup.c): the net_cls class id; a cgroup v2 path has no nft spelling
   * iptables-nft lists. */
  cgroup(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o?.name !== 'cgroup' || o.value.type !== 'number' || m.options.length !== 1) return false;
    this.match(o.span, meta(o.span, 'cgroup'), o.negated ? '!=' : 'implicit', lit(o.span, String(o.value.n)));
    return true;
  }

  /** esp_xlate (libxt_esp.c), ah_xlate (libipt_ah.c, libip6t_ah.c): the SPI range; the full
   * range tests nothing but the protocol, which ip6tables' ah (no -p needed) then tests. */
  spi(m: IptablesMatch): boolean {
    const o = m.options[0];
    // Only the SPI has a translation (`--ahlen`, `--ahres` stay xt matches).
    if (m.options.length > 1 || (o !== undefined && (o.name !== `${m.name}spi` || o.value.type !== 'range'))) return false;
    const full = o?.value.type === 'range' && o.value.from === 0 && o.value.to === 0xffffffff;
    // An inverted full range never matches in xt_esp/xt_ah; nothing in nft says "never": keep xt.
    if (full && o?.negated) return false;
    if (o?.value.type === 'range' && !full) {
      this.match(o.span, payload(o.span, m.name, 'spi'), o.negated ? '!=' : 'implicit', rangeLiteral(o.span, o.value.from, o.value.to));
    } else if (m.name === 'ah' && this.family === 'ip6') this.match(m.span, meta(m.span, 'l4proto'), 'implicit', lit(m.span, 'ah'));
    return true;
  }

  /** connbytes_xlate (libxt_connbytes.c): `--connbytes N` (iptables-save's spelling of `N:`,
   * up to the largest count) is `>= N`; both directions are nft's `ct` without a direction,
   * which sums them as xt_connbytes does. */
  connbytes(m: IptablesMatch): boolean {
    const get = (name: string) => m.options.find((o) => o.name === name);
    const count = get('connbytes');
    const dir = get('connbytes-dir')?.value;
    const mode = get('connbytes-mode')?.value;
    if (count?.value.type !== 'u64-range' || dir?.type !== 'string' || mode?.type !== 'string') return false;
    const key = CONNBYTES_MODES[mode.s];
    const direction = CONNBYTES_DIRECTIONS[dir.s];
    if (key === undefined || direction === undefined) return false;
    const span = count.span;
    const left = direction === 'both' ? ct(span, key) : ct(span, key, direction);
    // iptables negates by swapping the ends (libxt_connbytes.c), and xt_connbytes_mt matches
    // within a range whose ends are in order, else outside it: below its upper end or above its
    // lower one. So equal ends swap to the same range (`! --connbytes 10:10` is 10).
    const given = [BigInt(count.value.from), BigInt(count.value.to ?? U64_MAX)] as const;
    const [from, to] = count.negated ? [given[1], given[0]] : given;
    const inside = from <= to;
    const [low, high] = inside ? [from, to] : [to, from];
    const value = (n: bigint): Expr => lit(span, n.toString());
    if (high === U64_MAX) this.match(span, left, inside ? '>=' : '<', value(low));
    else if (low === high) this.match(span, left, inside ? 'implicit' : '!=', value(low));
    else this.match(span, left, inside ? 'implicit' : '!=', { kind: 'range', span, low: value(low), high: value(high) });
    return true;
  }

  /** quota_xlate (libxt_quota.c): `quota [over] N bytes`, for byte counts a number holds
   * exactly. */
  quota(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o?.value.type !== 'u64' || m.options.length !== 1) return false;
    const amount = Number(o.value.decimal);
    if (!Number.isSafeInteger(amount)) return false;
    this.stmts.push({ kind: 'quota', span: m.span, over: o.negated, amount, unit: 'bytes' });
    return true;
  }

  /** ecn_xlate (libxt_ecn.c): ECE and CWR are tcp flags (nft calls ECE `ecn`), the IP ECT
   * field is the ECN field of the family's header (xt_ecn.c ecn_mt4 / ecn_mt6). A negated
   * flag is the flag clear. */
  ecn(m: IptablesMatch): boolean {
    const order = ['ecn-tcp-ece', 'ecn-tcp-cwr', 'ecn-ip-ect'];
    const options = [...m.options].sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
    if (options.some((o) => o.name === 'ecn-ip-ect' && (o.value.type !== 'number' || o.value.n > 3))) return false;
    for (const o of options) {
      if (o.name === 'ecn-ip-ect' && o.value.type === 'number') {
        this.match(o.span, payload(o.span, this.family, 'ecn'), o.negated ? '!=' : 'implicit', lit(o.span, String(o.value.n)));
        continue;
      }
      const flag = lit(o.span, o.name === 'ecn-tcp-ece' ? 'ecn' : 'cwr');
      const flags = payload(o.span, 'tcp', 'flags');
      if (o.negated) this.match(o.span, binop(o.span, '&', flags, flag), '==', lit(o.span, '0x0'));
      else this.match(o.span, flags, 'implicit', flag);
    }
    return true;
  }

  /** realm_xlate (libipt_realm.c): the route's realm, masked. */
  realm(m: IptablesMatch): boolean {
    const o = m.options[0];
    if (o?.value.type !== 'mark') return false;
    const { value, mask } = o.value;
    const left = meta(o.span, 'rtclassid', false);
    if (mask === undefined || mask === 0xffffffff) this.match(o.span, left, o.negated ? '!=' : 'implicit', lit(o.span, String(value)));
    else this.match(o.span, binop(o.span, '&', left, lit(o.span, String(mask))), o.negated ? '!=' : '==', lit(o.span, String(value)));
    return true;
  }

  // --- targets ------------------------------------------------------------------------------

  private lowerTarget(t: IptablesTarget): void {
    const span = t.span;
    // A chain the dump declares is a chain whatever its name (iptables-restore 1.8.5 and later
    // register those names as no target's), and a target of the other family only is none here
    // (iptables loads none by that name): `-j HL` in an iptables dump jumps to a chain HL.
    const only = FAMILY_TARGETS[t.name];
    const otherFamily = only !== undefined && only !== (this.family === 'ip' ? 'ipv4' : 'ipv6');
    const chain = t.type === 'extension' && (this.isUserChain(t.name) || otherFamily);
    if (chain && t.options.length > 0) {
      this.diagnostics.push({ severity: 'error', code: 'bad-option', message: `unknown option "${t.options[0]!.spelling}": ${t.name} is a chain here, not a target`, span: t.options[0]!.span });
    }
    const type: IptablesTarget['type'] = chain ? 'chain' : t.type;
    switch (type) {
      case 'verdict':
        if (t.name === 'QUEUE') this.stmts.push({ kind: 'queue', span, num: lit(span, '0'), flags: [] });
        else this.stmts.push({ kind: 'verdict', span, verdict: t.name === 'ACCEPT' ? 'accept' : t.name === 'DROP' ? 'drop' : 'return' });
        return;
      case 'chain':
        this.stmts.push({ kind: 'verdict', span, verdict: t.jump === 'goto' ? 'goto' : 'jump', target: this.chainName(t.name) });
        return;
      case 'unknown':
        this.unsupported(span, `target "${t.name}"`);
        this.xt('target', span, t.name, t.options);
        return;
      case 'extension': {
        const lowering = TARGET_LOWERINGS[t.name];
        if (t.options.some((o) => o.value.type === 'raw') || lowering === undefined || !lowering.call(this, t)) {
          if (!isSimulatedXtTarget(t)) this.unsupported(span, `target "${t.name}"`);
          this.xt('target', span, t.name, t.options);
        }
        return;
      }
      default: {
        const exhaustive: never = type;
        return exhaustive;
      }
    }
  }

  reject(t: IptablesTarget): boolean {
    const o = t.options.find((x) => x.name === 'reject-with');
    if (o === undefined) {
      this.stmts.push({ kind: 'reject', span: t.span });
      return true;
    }
    if (o.value.type !== 'string') return false;
    const how = readIptablesRejectWith(o.value.s);
    if (!how) return false;
    const defaultCode = how.with === (this.family === 'ip' ? 'icmp' : 'icmpv6') && how.code === 'port-unreachable';
    if (defaultCode) this.stmts.push({ kind: 'reject', span: t.span });
    else this.stmts.push({ kind: 'reject', span: t.span, with: how.with as 'icmp' | 'icmpv6' | 'tcp reset', ...(how.code ? { code: how.code, typeKeyword: true } : {}) });
    return true;
  }

  log(t: IptablesTarget): boolean {
    const get = (name: string) => t.options.find((o) => o.name === name)?.value;
    const prefix = get('log-prefix');
    const level = get('log-level');
    const levelName = level?.type === 'string' ? (LOG_LEVELS[Number(level.s)] ?? level.s.toLowerCase()) : undefined;
    const has = (name: string) => t.options.some((o) => o.name === name);
    const flags: string[] = [];
    if (has('log-tcp-sequence') && has('log-tcp-options')) flags.push('tcp sequence,options');
    else if (has('log-tcp-sequence')) flags.push('tcp sequence');
    else if (has('log-tcp-options')) flags.push('tcp options');
    if (has('log-ip-options')) flags.push('ip options');
    if (has('log-uid')) flags.push('skuid');
    if (has('log-macdecode')) flags.push('ether');
    this.stmts.push({
      kind: 'log',
      span: t.span,
      ...(prefix?.type === 'string' ? { prefix: prefix.s } : {}),
      ...(levelName !== undefined ? { level: levelName === 'error' ? 'err' : levelName === 'warning' ? 'warn' : levelName === 'panic' ? 'emerg' : levelName } : {}),
      flags,
    });
    return true;
  }

  nflog(t: IptablesTarget): boolean {
    const num = (name: string) => {
      const v = t.options.find((o) => o.name === name)?.value;
      return v?.type === 'number' ? v.n : undefined;
    };
    const prefix = t.options.find((o) => o.name === 'nflog-prefix')?.value;
    const snaplen = num('nflog-size') ?? num('nflog-range');
    const threshold = num('nflog-threshold');
    this.stmts.push({
      kind: 'log',
      span: t.span,
      ...(prefix?.type === 'string' ? { prefix: prefix.s } : {}),
      group: num('nflog-group') ?? 0,
      ...(snaplen !== undefined ? { snaplen } : {}),
      ...(threshold !== undefined ? { queueThreshold: threshold } : {}),
      flags: [],
    });
    return true;
  }

  markTarget(t: IptablesTarget): boolean {
    const o = t.options[0];
    if (o === undefined || t.options.length !== 1) return false;
    const xmark = xmarkOf(o);
    if (!xmark) return false;
    this.stmts.push({ kind: 'meta-set', span: t.span, key: 'mark', qualified: true, value: markUpdate(o.span, meta(o.span, 'mark', false), xmark) });
    return true;
  }

  connmarkTarget(t: IptablesTarget): boolean {
    const get = (name: string) => t.options.find((o) => o.name === name);
    const span = t.span;
    if (get('save-mark') || get('restore-mark')) {
      // save: ctmark = (ctmark & ~ctmask) ^ (mark & nfmask); restore: the other way round
      // (xt_connmark.c). Only the default full masks without a shift have a plain nft spelling.
      if (get('left-shift-mark') || get('right-shift-mark')) return false;
      const { nfmask, ctmask } = connmarkMasks(t.options);
      if (get('save-mark')) {
        if (nfmask !== 0xffffffff || ctmask !== 0xffffffff) return false;
        this.stmts.push({ kind: 'ct-set', span, key: 'mark', value: meta(span, 'mark', false) });
      } else {
        if (ctmask !== 0xffffffff || nfmask !== 0xffffffff) return false;
        this.stmts.push({ kind: 'meta-set', span, key: 'mark', qualified: true, value: ct(span, 'mark') });
      }
      return true;
    }
    // Set, and a shift of the result (xt_connmark.c connmark_tg_shift shifts the new mark as a
    // whole), as iptables-nft writes it: `ct mark set (ct mark xor 0x1 and 0xffffff00) << 8`.
    const shift = get('left-shift-mark') ?? get('right-shift-mark');
    const ops = t.options.filter((option) => option !== shift);
    const o = ops[0];
    if (o === undefined || ops.length !== 1 || (shift && shift.value.type !== 'number')) return false;
    const xmark = xmarkOf(o);
    if (!xmark) return false;
    const updated = markUpdate(o.span, ct(o.span, 'mark'), xmark);
    const value: Expr = shift?.value.type === 'number' ? { kind: 'binop', span: shift.span, op: shift.name === 'left-shift-mark' ? '<<' : '>>', left: updated, right: typeWith(lit(shift.span, String(shift.value.n)), { name: 'integer', bits: 32 }) } : updated;
    this.stmts.push({ kind: 'ct-set', span, key: 'mark', value });
    return true;
  }

  /** A NAT target as its nft statement (xt-nat-statement.ts). A shifted port range (`/base`)
   * has none and stays xt (src/sim/xt-shifted-nat.ts); REDIRECT's is refused by iptables. */
  nat(t: IptablesTarget): boolean {
    const range = xtNatRange(t.options);
    if (range.portBase !== undefined) {
      if (t.name === 'REDIRECT') this.diagnostics.push({ severity: 'error', code: 'bad-option', message: 'REDIRECT: a shifted port range (`/base`) is refused by iptables ("Shifted portmap ranges not supported with this kernel")', span: t.span });
      return false;
    }
    const stmt = xtNatStatement(t.name, t.options, this.family, t.span);
    if (!stmt) return false;
    this.stmts.push(stmt);
    return true;
  }

  notrack(t: IptablesTarget): boolean {
    if (t.name === 'CT' && !(t.options.length === 1 && t.options[0]?.name === 'notrack')) {
      // A template in a zone given by number (0 without one, the netlink events aside) is `ct
      // zone set`; `--zone mark` and `--helper` stay xt (src/sim/xt-ct.ts).
      const zone = ctTemplateZone(t.options);
      const helper = t.options.some((o) => o.name === 'helper');
      // xt_ct_set_helper looks the helper up by name and the rule's protocol: ENOENT without one.
      if (helper && (this.rule.protocol === undefined || this.rule.protocol.negated)) this.diagnostics.push({ severity: 'error', code: 'bad-option', message: 'CT --helper needs -p with the protocol of the helper (the kernel refuses the rule)', span: t.span });
      if (zone === undefined || zone === 'mark' || helper) return false;
      const span = t.options.find((o) => o.name === 'zone')?.span ?? t.span;
      this.stmts.push({ kind: 'ct-set', span: t.span, key: 'zone', value: typeWith(lit(span, String(zone)), { name: 'integer', bits: 16 }) });
      return true;
    }
    this.stmts.push({ kind: 'notrack', span: t.span });
    return true;
  }

  /** Kept as xt (xt-tos.ts setEcn), after ipt_ECN.c ecn_tg_check's checks: the TCP flags only in
   * a rule of `-p tcp`, an ECN field of 0 to 3. */
  ecnTarget(t: IptablesTarget): boolean {
    const tcpFlags = t.options.some((o) => o.name === 'ecn-tcp-remove' || o.name === 'ecn-tcp-ece' || o.name === 'ecn-tcp-cwr');
    const protocol = this.rule.protocol;
    const ect = optionNumber(t.options, 'ecn-ip-ect');
    const problem = tcpFlags && (protocol?.number !== 6 || protocol.negated) ? 'its TCP flag options need -p tcp' : ect !== undefined && ect > 3 ? '--ecn-ip-ect must be from 0 to 3' : undefined;
    if (problem) this.diagnostics.push({ severity: 'error', code: 'bad-option', message: `ECN: ${problem} (the kernel refuses the rule)`, span: t.span });
    return false;
  }

  /** Kept as xt (xt-tcpoptstrip.ts), after xt_check_target's check of the target's .proto: a
   * rule of `-p tcp`. */
  tcpoptstrip(t: IptablesTarget): boolean {
    const protocol = this.rule.protocol;
    const list = t.options.find((o) => o.name === 'strip-options');
    const kinds = list?.value.type === 'string' ? readStripList(list.value.s) : undefined;
    if (typeof kinds === 'string') this.diagnostics.push({ severity: 'error', code: 'bad-option', message: `TCPOPTSTRIP: ${kinds}`, span: list!.span });
    else if (protocol?.number !== 6 || protocol.negated) this.diagnostics.push({ severity: 'error', code: 'bad-option', message: 'TCPOPTSTRIP needs -p tcp (the kernel refuses the rule)', span: t.span });
    return false;
  }

  /** Kept as xt (xt-hmark.ts), after libxt_HMARK.c's and hmark_tg_check's checks. */
  hmark(t: IptablesTarget): boolean {
    const read = readHmarkOptions(t.options, this.family === 'ip' ? 32 : 128);
    if (typeof read === 'string') this.diagnostics.push({ severity: 'error', code: 'bad-option', message: `HMARK: ${read}`, span: t.span });
    return false;
  }

  tproxy(t: IptablesTarget): boolean {
    const get = (name: string) => t.options.find((o) => o.name === name);
    const port = get('on-port')?.value;
    const ip = get('on-ip')?.value;
    const mark = get('tproxy-mark');
    const span = t.span;
    const addr = ip?.type === 'address' ? typeWith(lit(span, ip.address.address), { name: this.family === 'ip' ? 'ipv4_addr' : 'ipv6_addr', bits: 0 }) : undefined;
    const portExpr = port?.type === 'number' && (port.n !== 0 || addr === undefined) ? typeWith(lit(span, String(port.n)), { name: 'inet_service', bits: 16 }) : undefined;
    this.stmts.push({ kind: 'tproxy', span, ...(addr ? { addr } : {}), ...(portExpr ? { port: portExpr } : {}) });
    if (mark?.value.type === 'mark') {
      const m = mark.value.mask ?? 0xffffffff;
      this.stmts.push({ kind: 'meta-set', span, key: 'mark', qualified: true, value: markUpdate(mark.span, meta(mark.span, 'mark', false), { value: mark.value.value, mask: m }) });
    }
    // xt_TPROXY accepts the packet once redirected.
    this.stmts.push({ kind: 'verdict', span, verdict: 'accept' });
    return true;
  }

  tcpmss(t: IptablesTarget): boolean {
    const o = t.options[0];
    if (!o) return false;
    const value: Expr =
      o.name === 'clamp-mss-to-pmtu' ? { kind: 'rt', span: o.span, key: 'mtu' } : o.value.type === 'number' ? lit(o.span, String(o.value.n)) : lit(o.span, '0');
    this.stmts.push({ kind: 'payload-set', span: t.span, target: { kind: 'tcp-option', span: o.span, option: 'maxseg', field: 'size' }, value: typeWith(value, { name: 'integer', bits: 16 }) });
    return true;
  }

  trace(t: IptablesTarget): boolean {
    this.stmts.push({ kind: 'meta-set', span: t.span, key: 'nftrace', qualified: true, value: typeWith(lit(t.span, '1'), { name: 'integer', bits: 1 }) });
    return true;
  }

  /** DSCP_xlate (libxt_DSCP.c): xt_DSCP sets the DSCP bits and keeps the ECN bits, as a
   * payload set of the dscp field does. */
  dscpTarget(t: IptablesTarget): boolean {
    const o = t.options[0];
    const value = o === undefined || t.options.length !== 1 ? undefined : dscpValue(o);
    if (o === undefined || value === undefined) return false;
    const target = { kind: 'payload', span: o.span, protocol: this.family, field: 'dscp' } as const;
    this.stmts.push({ kind: 'payload-set', span: t.span, target, value: typeAgainst(lit(o.span, `0x${value.toString(16).padStart(2, '0')}`), target) });
    return true;
  }

  /** AUDIT_xlate (libxt_AUDIT.c): an audit log record; the kernel ignores --type since
   * Linux 4.12. */
  audit(t: IptablesTarget): boolean {
    this.stmts.push({ kind: 'log', span: t.span, level: 'audit', flags: [] });
    return true;
  }

  /** CLASSIFY_xlate (libxt_CLASSIFY.c): the skb priority as a tc class `major:minor`. */
  classify(t: IptablesTarget): boolean {
    const o = t.options[0];
    const parts = o?.value.type === 'string' ? /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(o.value.s) : null;
    if (!o || !parts) return false;
    const text = `${parseInt(parts[1]!, 16).toString(16)}:${parseInt(parts[2]!, 16).toString(16)}`;
    this.stmts.push({ kind: 'meta-set', span: t.span, key: 'priority', qualified: true, value: typeWith(lit(o.span, text), { name: 'classid', bits: 32 }) });
    return true;
  }

  /** TEE_xlate (libxt_TEE.c): a copy to the gateway, through the interface when given. */
  tee(t: IptablesTarget): boolean {
    const gateway = t.options.find((o) => o.name === 'gateway');
    const oif = t.options.find((o) => o.name === 'oif');
    if (gateway?.value.type !== 'address' || (oif !== undefined && oif.value.type !== 'string')) return false;
    const addr = typeWith(lit(gateway.span, gateway.value.address.address), this.family === 'ip' ? IPV4_ADDR : IPV6_ADDR);
    const device = oif?.value.type === 'string' ? quotedLit(oif.span, oif.value.s) : undefined;
    this.stmts.push({ kind: 'dup', span: t.span, addr, ...(device ? { device } : {}) });
    return true;
  }

  nfqueue(t: IptablesTarget): boolean {
    const get = (name: string) => t.options.find((o) => o.name === name)?.value;
    const num = get('queue-num');
    const balance = get('queue-balance');
    const span = t.span;
    const numExpr = balance?.type === 'range' ? rangeLiteral(span, balance.from, balance.to) : lit(span, String(num?.type === 'number' ? num.n : 0));
    const flags = [
      ...(t.options.some((o) => o.name === 'queue-bypass' || o.name === 'fail-open') ? ['bypass'] : []),
      ...(t.options.some((o) => o.name === 'queue-cpu-fanout') ? ['fanout'] : []),
    ];
    this.stmts.push({ kind: 'queue', span, num: typeWith(numExpr, { name: 'integer', bits: 16 }), flags });
    return true;
  }
}

type MatchLowering = (this: RuleLowering, m: IptablesMatch) => boolean;
type TargetLowering = (this: RuleLowering, t: IptablesTarget) => boolean;

const p = RuleLowering.prototype;

// Each returns false when this use of the extension has no equivalent nft expression; the
// match then stays an xt extension.
const MATCH_LOWERINGS: Readonly<Record<string, MatchLowering>> = {
  tcp: p.ports,
  udp: p.ports,
  udplite: p.ports,
  sctp: p.ports,
  dccp: p.ports,
  icmp: p.icmp,
  icmp6: p.icmp,
  comment: p.commentMatch,
  conntrack: p.conntrack,
  state: p.conntrack,
  mark: p.mark,
  connmark: p.mark,
  multiport: p.multiport,
  addrtype: p.addrtype,
  statistic: p.statistic,
  limit: p.limit,
  length: p.numberRange,
  tcpmss: p.numberRange,
  pkttype: p.pkttype,
  iprange: p.iprange,
  owner: p.owner,
  helper: p.helper,
  mac: p.mac,
  devgroup: p.devgroup,
  cluster: p.cluster,
  frag: p.frag,
  ttl: p.ttl,
  hl: p.ttl,
  dscp: p.dscp,
  cpu: p.cpu,
  cgroup: p.cgroup,
  esp: p.spi,
  ah: p.spi,
  connbytes: p.connbytes,
  quota: p.quota,
  ecn: p.ecn,
  realm: p.realm,
};

// Matches with real semantics that nft cannot express, kept as typed xt extensions for the
// simulator rather than reported (their options are all typed by the parser).
const TYPED_XT_MATCHES: ReadonlySet<string> = new Set(['cluster', 'connlabel', 'recent', 'set', 'physdev', 'socket', 'string', 'u32', 'bpf', 'conntrack', 'multiport', 'hashlimit', 'connlimit', 'policy', 'rpfilter', 'owner', 'tos']);

// Targets kept as xt extensions whose effect the simulator gives (evaluate-stmt.ts
// evaluateXtExtension): not reported either.
const TYPED_XT_TARGETS: ReadonlySet<string> = new Set(['TTL', 'HL', 'TOS', 'ECN', 'CHECKSUM', 'NETMAP', 'CONNMARK', 'TCPOPTSTRIP', 'HMARK']);

// Targets kept as xt in some of their forms only, which the simulator gives (a shifted port
// range, xt-shifted-nat.ts; CT's zone from the mark and its helper, xt-ct.ts).
const SIMULATED_XT_FORMS: Readonly<Record<string, (t: IptablesTarget) => boolean>> = {
  SNAT: hasShiftedPorts,
  DNAT: hasShiftedPorts,
  MASQUERADE: hasShiftedPorts,
  CT: (t) => ctTemplateZone(t.options) === 'mark' || (ctTemplateZone(t.options) !== undefined && t.options.some((o) => o.name === 'helper')),
};

function hasShiftedPorts(t: IptablesTarget): boolean {
  return xtNatRange(t.options).portBase !== undefined && t.name !== 'REDIRECT';
}

/** The simulator gives this target kept as xt its effect (not reported at lowering). */
function isSimulatedXtTarget(t: IptablesTarget): boolean {
  return TYPED_XT_TARGETS.has(t.name) || (SIMULATED_XT_FORMS[t.name]?.(t) ?? false);
}

const TARGET_LOWERINGS: Readonly<Record<string, TargetLowering>> = {
  REJECT: p.reject,
  LOG: p.log,
  NFLOG: p.nflog,
  MARK: p.markTarget,
  CONNMARK: p.connmarkTarget,
  SNAT: p.nat,
  DNAT: p.nat,
  MASQUERADE: p.nat,
  REDIRECT: p.nat,
  NOTRACK: p.notrack,
  CT: p.notrack,
  TPROXY: p.tproxy,
  TCPMSS: p.tcpmss,
  TRACE: p.trace,
  NFQUEUE: p.nfqueue,
  DSCP: p.dscpTarget,
  AUDIT: p.audit,
  CLASSIFY: p.classify,
  TEE: p.tee,
  ECN: p.ecnTarget,
  TCPOPTSTRIP: p.tcpoptstrip,
  HMARK: p.hmark,
};

// ---------------------------------------------------------------------------------------------
// Values

/** `mark = (mark & ~mask) ^ value`: the kernel's xt_mark_tginfo2 / xt_connmark_tginfo1. */
interface Xmark {
  readonly value: number;
  readonly mask: number;
}

/** The (value, mask) pair every MARK/CONNMARK option form stands for (libxt_MARK.c
 * mark_tg_parse, libxt_CONNMARK.c). */
function xmarkOf(o: IptablesOption): Xmark | undefined {
  const v = o.value;
  if (v.type === 'mark') {
    const mask = v.mask ?? 0xffffffff;
    return o.name === 'set-mark' ? { value: v.value, mask: (mask | v.value) >>> 0 } : { value: v.value, mask };
  }
  if (v.type !== 'number') return undefined;
  switch (o.name) {
    case 'and-mark':
      return { value: 0, mask: ~v.n >>> 0 };
    case 'or-mark':
      return { value: v.n, mask: v.n };
    case 'xor-mark':
      return { value: v.n, mask: 0 };
    default:
      return undefined;
  }
}

/** The new mark as iptables-nft's xlate writes it and nft lists it (`mark or 0x4000`,
 * `mark and 0xffffffcd xor 0x40`): the simplest form of (old & ~mask) ^ value. */
function markUpdate(span: Span, old: Expr, { value, mask }: Xmark): Expr {
  const word = (op: '&' | '|' | '^', left: Expr, n: number): Expr => ({ ...binop(span, op, left, lit(span, `0x${n.toString(16)}`)), word: true });
  let expr: Expr;
  if (mask === 0xffffffff) return typeWith(lit(span, `0x${value.toString(16)}`), { name: 'mark', bits: 32 });
  if (value === 0) expr = word('&', old, ~mask >>> 0);
  else if (value === mask) expr = word('|', old, value);
  else if (mask === 0) expr = word('^', old, value);
  else expr = word('^', word('&', old, ~mask >>> 0), value);
  return typeInner(expr);
}

// Bit order, in which nft lists flags: tcp flags (include/linux/tcp.h), ct status
// (nf_conntrack_common.h IPS_*).
const TCP_FLAG_ORDER = ['FIN', 'SYN', 'RST', 'PSH', 'ACK', 'URG'];
const CT_STATUS_ORDER = ['EXPECTED', 'SEEN_REPLY', 'ASSURED', 'CONFIRMED'];

// libxt_addrtype.c: types in bit order (the order iptables-translate lists them).
const ADDR_TYPE_ORDER = ['UNSPEC', 'UNICAST', 'LOCAL', 'BROADCAST', 'ANYCAST', 'MULTICAST', 'BLACKHOLE', 'UNREACHABLE', 'PROHIBIT', 'THROW', 'NAT', 'XRESOLVE'];

// The DiffServ classes iptables names (libxt_dscp_helper.c ds_classes).
const DSCP_CLASSES: Readonly<Record<string, number>> = {
  CS0: 0x00, CS1: 0x08, CS2: 0x10, CS3: 0x18, CS4: 0x20, CS5: 0x28, CS6: 0x30, CS7: 0x38, BE: 0x00,
  AF11: 0x0a, AF12: 0x0c, AF13: 0x0e, AF21: 0x12, AF22: 0x14, AF23: 0x16, AF31: 0x1a, AF32: 0x1c,
  AF33: 0x1e, AF41: 0x22, AF42: 0x24, AF43: 0x26, EF: 0x2e,
};

/** The DSCP value of a `--dscp` / `--dscp-class` (or `--set-dscp…`) option. */
function dscpValue(o: IptablesOption): number | undefined {
  if (o.value.type === 'number') return o.value.n <= 0x3f ? o.value.n : undefined;
  return o.value.type === 'string' ? DSCP_CLASSES[o.value.s.toUpperCase()] : undefined;
}

// libxt_connbytes.c modes and directions, and the nft ct keys they are.
const CONNBYTES_MODES: Readonly<Record<string, string>> = { packets: 'packets', bytes: 'bytes', avgpkt: 'avgpkt' };
const CONNBYTES_DIRECTIONS: Readonly<Record<string, 'original' | 'reply' | 'both'>> = { original: 'original', reply: 'reply', both: 'both' };

// syslog levels by number (LOG --log-level 4), as nft names them.
const LOG_LEVELS: readonly string[] = ['emerg', 'alert', 'crit', 'err', 'warn', 'notice', 'info', 'debug'];

const CT_ADDRESS: Readonly<Record<string, readonly ['original' | 'reply', string]>> = {
  ctorigsrc: ['original', 'saddr'],
  ctorigdst: ['original', 'daddr'],
  ctreplsrc: ['reply', 'saddr'],
  ctrepldst: ['reply', 'daddr'],
};

const CT_PORT: Readonly<Record<string, readonly ['original' | 'reply', string]>> = {
  ctorigsrcport: ['original', 'proto-src'],
  ctorigdstport: ['original', 'proto-dst'],
  ctreplsrcport: ['reply', 'proto-src'],
  ctrepldstport: ['reply', 'proto-dst'],
};

// The names nft prints for `meta l4proto` (getprotobynumber, datatypes.ts inet_proto): the
// first name of a number; the aliases after it are input spellings.
const PROTOCOL_NAMES: ReadonlyMap<number, string> = new Map([...datatypeSymbols('inet_proto')].reverse().map(([name, n]) => [n, name]));
const PROTOCOL_NUMBERS: ReadonlyMap<string, number> = new Map([...datatypeSymbols('inet_proto'), ['icmpv6', 58]]);

function protocolName(n: number): string {
  return PROTOCOL_NAMES.get(n) ?? String(n);
}

function protocolNumber(name: string): number | undefined {
  const lower = name.toLowerCase();
  return /^\d+$/.test(lower) ? Number(lower) : PROTOCOL_NUMBERS.get(lower);
}

// --- addresses ------------------------------------------------------------------------------

function parseAddressBits(address: string, v6: boolean): bigint {
  if (!v6) return address.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part) & 0xff), 0n);
  const [head = '', tail] = address.split('::');
  const groups = (s: string): string[] => (s === '' ? [] : s.split(':'));
  let parts = groups(head);
  const tailParts = tail === undefined ? [] : groups(tail);
  // An embedded IPv4 tail (`::ffff:1.2.3.4`) is two groups.
  const expand = (ps: string[]): string[] =>
    ps.flatMap((g) => {
      if (!g.includes('.')) return [g];
      const n = Number(parseAddressBits(g, false));
      return [(n >>> 16).toString(16), (n & 0xffff).toString(16)];
    });
  parts = expand(parts);
  const tails = expand(tailParts);
  const fill = tail === undefined ? [] : new Array<string>(8 - parts.length - tails.length).fill('0');
  return [...parts, ...fill, ...tails].reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g || '0', 16)), 0n);
}

function prefixMask(prefix: number, v6: boolean): string {
  const bits = v6 ? 128 : 32;
  const mask = ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - prefix)) - 1n);
  return formatAddress(mask, v6);
}

function andAddress(address: string, mask: string, v6: boolean): bigint {
  return parseAddressBits(address, v6) & parseAddressBits(mask, v6);
}

/** RFC 5952 text (the longest run of zero groups becomes `::`), as nft prints addresses. */
function formatAddress(bits: bigint, v6: boolean): string {
  if (!v6) return [24n, 16n, 8n, 0n].map((s) => String((bits >> s) & 0xffn)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => Number((bits >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j === i ? i + 1 : j;
  }
  const hexes = groups.map((g) => g.toString(16));
  if (best < 0) return hexes.join(':');
  return `${hexes.slice(0, best).join(':')}::${hexes.slice(best + bestLen).join(':')}`;
}

// --- node constructors ----------------------------------------------------------------------

function lit(span: Span, text: string): Literal {
  return { kind: 'literal', span, text };
}

function quotedLit(span: Span, text: string): Literal {
  return { kind: 'literal', span, text, quoted: true };
}

function hex(span: Span, n: number): Literal {
  return typeLiteral(lit(span, `0x${n.toString(16).padStart(8, '0')}`), 'mark');
}

function names(span: Span, items: readonly string[]): Expr {
  if (items.length === 1) return lit(span, items[0]!);
  return { kind: 'flag-list', span, items: items.map((i) => lit(span, i)) };
}

function rangeLiteral(span: Span, from: number, to: number): Expr {
  return from === to ? lit(span, String(from)) : { kind: 'range', span, low: lit(span, String(from)), high: lit(span, String(to)) };
}

function payload(span: Span, protocol: string, field: string): Expr {
  return { kind: 'payload', span, protocol, field };
}

function meta(span: Span, key: string, qualified = true): Expr {
  return { kind: 'meta', span, key, qualified };
}

function ct(span: Span, key: string, dir?: 'original' | 'reply'): Expr {
  return dir ? { kind: 'ct', span, key, dir } : { kind: 'ct', span, key };
}

function binop(span: Span, op: '&' | '|' | '^', left: Expr, right: Expr): Extract<Expr, { kind: 'binop' }> {
  return { kind: 'binop', span, op, left, right };
}
