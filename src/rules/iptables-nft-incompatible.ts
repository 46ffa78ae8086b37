import type { Chain, Expr, Relational, Rule, Span, Stmt, Table } from '../model/ast.js';
import { formatExpr, formatStmt } from '../model/format-ruleset.js';
import { iptablesNftChain, isIptablesNftTable } from '../model/iptables-nft-chains.js';
import {
  ARP_FIELDS,
  ARP_META_KEYS,
  BRIDGE_META_KEYS,
  ETHER_OFFSETS,
  NETWORK_OFFSETS,
  iptablesNftConsumers,
  iptablesNftReadback,
  PARSED_META_KEYS,
  PARSED_PAYLOAD_FIELDS,
  UNREADABLE_EXPRS,
  type IptablesNftReadback,
} from './facts/iptables-nft-readback.js';
import type { Fix, LintContext, LintRule, Severity } from './framework/lint-rule.js';
import { forEachExpr } from './framework/walk-rule.js';

// Programs that share a node's ip/ip6 filter, nat, mangle, raw and security tables read them
// through iptables-nft, which understands only what iptables-nft itself writes; the same holds
// for arptables-nft (`arp filter`) and ebtables-nft (`bridge filter`, `bridge nat`, from 1.8.10
// `bridge broute`), which share iptables' nf_tables code and its gates. A native rule
// another program adds there (the Netbird wt0 incident) breaks them at one of three gates
// (../shared/research/iptables-nft-compat.md): the whole table becomes unreadable, the rule
// parser aborts (exit 3), or the rule is read back as a different, usually broader, rule.

/** What iptables-nft does with a rule, worst first. */
type Outcome = 'table-unreadable' | 'fatal-parse' | 'crash' | 'unrestorable' | 'lossy';

interface Problem {
  readonly outcome: Outcome;
  /** The construct, as nft writes it. */
  readonly construct: string;
  /** fatal-parse: iptables' error text; unrestorable: what restore rejects; lossy: what the
   * reading becomes. */
  readonly detail: string;
  /** lossy: the reading matches more packets than the rule. */
  readonly broadens?: boolean;
  readonly span: Span;
}

/** The tool that manages each family, its command, its chain listing and its check option
 * (ebtables has no -S and takes the check as --check). */
const TOOLS: Readonly<Record<string, { readonly tool: string; readonly cmd: string; readonly show: string; readonly checkFlag: string }>> = {
  ip: { tool: 'iptables-nft', cmd: 'iptables', show: '-S', checkFlag: '-C' },
  ip6: { tool: 'ip6tables-nft', cmd: 'ip6tables', show: '-S', checkFlag: '-C' },
  arp: { tool: 'arptables-nft', cmd: 'arptables', show: '-S', checkFlag: '-C' },
  bridge: { tool: 'ebtables-nft', cmd: 'ebtables', show: '-L', checkFlag: '--check' },
};

const RANK: Readonly<Record<Outcome, number>> = { 'table-unreadable': 0, 'fatal-parse': 1, crash: 2, unrestorable: 3, lossy: 4 };

export const iptablesNftIncompatible: LintRule = {
  id: 'iptables-nft-incompatible',
  meta: {
    description: 'A native nft rule or base chain in a table iptables-nft manages that iptables-nft cannot read back.',
    severity: 'error',
    docs: 'docs/rules/iptables-nft-incompatible.md',
    messages: {
      'table-unreadable':
        "{{construct}} in {{where}} is outside what {{tool}} {{version}} can read: {{tool}}-save prints \"# Table `{{table}}' is incompatible, use 'nft' tool.\" and skips the table, `{{cmd}} -L` and `{{show}} {{chain}}` fail{{check}}; {{consumers}} cannot list or save it",
      'fatal-parse':
        '{{tool}} {{version}} cannot parse {{construct}} in {{where}} ("Error: {{detail}}", "Parsing nftables rule failed", exit 3): save, `-L`, `{{show}}`, and `{{checkOption}}`/`-D` on {{chain}} fail; {{impact}}',
      crash:
        '{{tool}} {{version}} crashes on {{construct}} in {{where}} ({{detail}}): {{tool}}-save and `{{cmd}} {{show}} {{chain}}` fail, so {{consumers}} cannot save or list the table',
      unrestorable:
        '{{tool}} {{version}} reads this rule in {{where}} with {{detail}}, which {{cmd}}-restore rejects: restoring a save of the table ({{consumers}}) fails',
      lossy:
        '{{tool}} {{version}} reads this rule in {{where}} without {{construct}} ({{detail}}): {{cmd}}-save shows, and a save/restore round trip ({{consumers}}) writes back, a different rule',
      'base-chain': 'base chain {{chain}} ({{spec}}) is not a built-in chain of iptables-nft table {{table}}: {{effect}}',
      'origin-unknown':
        '{{construct}} in {{where}} would break {{tool}} {{version}} if a program added it with nft, but this listing cannot tell whether iptables-nft wrote it itself (it prints its own xt matches as native nft); give `nft -j list ruleset` or the iptables-save dump to tell',
      'same-origin-unknown': 'and {{construct}} here, origin unknown as well',
    },
  },
  check(context) {
    const facts = iptablesNftReadback(context.iptablesVersion);
    const managed = context.ruleset.tables.filter((t) => isIptablesNftTable(t.name, t.family) && (t.family !== 'bridge' || t.name !== 'broute' || facts.bridgeBroute));
    for (const table of managed) {
      checkBaseChains(context, table, facts);
      checkRules(context, table, facts, managed);
    }
  },
};

function checkBaseChains(context: LintContext, table: Table, facts: IptablesNftReadback): void {
  for (const chain of table.chains) {
    const base = chain.base;
    if (base === undefined) continue;
    const builtin = iptablesNftChain(table.name, chain.name, table.family);
    if (builtin && builtin.type === base.type && builtin.hook === base.hook && builtin.priority === base.priority.value) continue;
    const spec = `type ${base.type} hook ${base.hook} priority ${base.priority.value ?? base.priority.name ?? base.priority.offset}`;
    const effect = builtin
      ? `${TOOLS[table.family]?.tool ?? 'iptables-nft'} expects type ${builtin.type} hook ${builtin.hook} priority ${builtin.priority} and cannot add rules to it ("CHAIN_ADD failed (Operation not supported)")`
      : facts.hidesBaseChains
        ? `${TOOLS[table.family]?.tool ?? 'iptables-nft'} ${context.iptablesVersion} hides it ("# Table \`${table.name}' contains incompatible base-chains"), and a flushing iptables-restore of the table deletes it`
        : `${TOOLS[table.family]?.tool ?? 'iptables-nft'} ${context.iptablesVersion} reports the whole table as incompatible`;
    context.report({
      messageId: 'base-chain',
      data: { chain: chain.name, spec, table: `${table.family} ${table.name}`, effect },
      span: chain.span,
      ...(!builtin && facts.hidesBaseChains && { severity: 'warning' as const }),
    });
  }
}

type Origin = 'iptables' | 'native' | 'unknown';

// xt extensions nft prints through their translation when built with libxtables (`-m conntrack`
// as `ct state`, `-m comment` as a blank): seeing one by name means the listing shows xt
// expressions (nft -j, or nft without libxtables), so a rule without one is native.
const TRANSLATED_XT = new Set(['conntrack', 'comment', 'addrtype', 'mark', 'MARK', 'REJECT', 'MASQUERADE', 'multiport']);

function hasIptablesSignal(rule: Rule): boolean {
  if (rule.origin?.format === 'iptables') return true;
  return rule.stmts.some((stmt) => {
    if (stmt.kind === 'xt' || stmt.kind === 'xt-extension') return true;
    let word = false;
    forEachExpr(stmt, (expr) => {
      if (expr.kind === 'binop' && expr.word === true) word = true;
    });
    return word;
  });
}

/** How the table's listing lets rules be told apart: a dump aligned with it, or xt by name. */
function isListingTelling(table: Table): boolean {
  return table.chains.some((c) =>
    c.rules.some((r) => r.origin?.format === 'iptables' || r.stmts.some((s) => s.kind === 'xt' && s.name !== undefined && TRANSLATED_XT.has(s.name))),
  );
}

function originOf(rule: Rule, telling: boolean, family: string): Origin {
  if (hasIptablesSignal(rule)) return 'iptables';
  // arptables-nft starts every rule it writes with `arp htype 1 arp hlen 6 arp plen 4`
  // (nft-arp.c v1.8.9 nft_arp_add, measured: `arptables-nft -A INPUT -j ACCEPT`).
  if (family === 'arp' && !hasArpMatch(rule, 'hlen')) return 'native';
  // iptables-nft adds a counter to every rule it writes (nft.c add_counters).
  if (telling || !rule.stmts.some((s) => s.kind === 'counter')) return 'native';
  return 'unknown';
}

function checkRules(context: LintContext, table: Table, facts: IptablesNftReadback, managed: readonly Table[]): void {
  const telling = isListingTelling(table);
  const tool = TOOLS[table.family] ?? TOOLS.ip!;
  const consumers = iptablesNftConsumers(table.family);
  const where = (chain: Chain) => `${table.family} ${table.name} ${chain.name}`;
  const unknown: { problem: Problem; chain: Chain }[] = [];
  for (const chain of table.chains) {
    for (const rule of chain.rules) {
      // What iptables-nft wrote itself it reads back: its rules (all of a dump's) are not checked.
      const origin = originOf(rule, telling, table.family);
      if (origin === 'iptables') continue;
      const problems = problemsOf(rule, table, chain, facts);
      const problem = worstOf(problems);
      if (problem === undefined) continue;
      if (origin === 'unknown') {
        if (problem.outcome !== 'lossy') unknown.push({ problem, chain });
        continue;
      }
      // -C and -D skip gate 1 but run the rule parser on every rule before the one they look for.
      const check =
        problem.outcome === 'table-unreadable' && facts.fatalParse && (isFirstMatchSkipped(rule) || problems.some((p) => p.outcome === 'fatal-parse'))
          ? `, and \`${tool.cmd} ${tool.checkFlag}\`/\`-D\` on ${chain.name} exit 3 (${isFirstMatchSkipped(rule) ? '"cmp sreg undef"' : 'a parse error'}) when they reach it`
          : '';
      const impact =
        tool.cmd === 'iptables'
          ? `kube-proxy and kube-router jump checks (\`iptables -C ${chain.name} … -j KUBE-…\`) fail every sync while this rule comes before their jump, and Docker, Calico and firewalld cannot save the table`
          : `${consumers} cannot save or list the table`;
      const fix = fixFor(rule, table, chain, managed);
      const severity: Severity | undefined = problem.outcome === 'lossy' && problem.broadens !== true ? 'warning' : undefined;
      context.report({
        messageId: problem.outcome,
        data: {
          construct: problem.construct,
          detail: problem.detail,
          where: where(chain),
          table: table.name,
          chain: chain.name,
          version: context.iptablesVersion,
          check,
          impact,
          consumers,
          ...tool,
          checkOption: `${tool.cmd} ${tool.checkFlag}`,
        },
        span: problem.span,
        ...(fix && { fix }),
        ...(severity && { severity }),
      });
    }
  }
  // One finding per table, not per rule: a listing without xt names is every kube-proxy node's.
  const [first, ...rest] = unknown;
  if (first === undefined) return;
  context.report({
    messageId: 'origin-unknown',
    data: { construct: first.problem.construct, where: where(first.chain), version: context.iptablesVersion, tool: tool.tool },
    span: first.problem.span,
    related: rest.map(({ problem }) => ({ messageId: 'same-origin-unknown', data: { construct: problem.construct }, span: problem.span })),
    severity: 'info',
  });
}

/** `nft delete rule` for the rule and for the same rule in the twin table of the other family
 * (agents add their rules to ip and ip6 alike), when the listing has handles. */
function fixFor(rule: Rule, table: Table, chain: Chain, managed: readonly Table[]): Fix | undefined {
  if (rule.handle === undefined) return undefined;
  const text = ruleText(rule);
  const commands = [`nft delete rule ${table.family} ${table.name} ${chain.name} handle ${rule.handle}`];
  const twinFamily = table.family === 'ip' ? 'ip6' : table.family === 'ip6' ? 'ip' : undefined;
  const twin = twinFamily && managed.find((t) => t.family === twinFamily && t.name === table.name)?.chains.find((c) => c.name === chain.name);
  for (const other of twin?.rules ?? []) {
    if (other.handle !== undefined && ruleText(other) === text) commands.push(`nft delete rule ${twinFamily} ${table.name} ${chain.name} handle ${other.handle}`);
  }
  return { description: 'delete the native rule (and its twin in the other family); add it with iptables, or in a table of its own, instead', commands };
}

function ruleText(rule: Rule): string {
  return rule.stmts.map((s) => formatStmt(s)).join(' ');
}

// Expressions the rule parser skips without setting their register: a comparison on one as the
// rule's first match reads an undefined register ("cmp sreg undef", 1.8.9+, even for -C); a set
// lookup on one does not compare (nft-shared.c v1.8.9 nft_parse_cmp, nft_parse_lookup).
function isFirstMatchSkipped(rule: Rule): boolean {
  const first = rule.stmts.find((s) => s.kind === 'match');
  return first?.kind === 'match' && !isLookup(first.expr) && Object.hasOwn(UNREADABLE_EXPRS, innermost(first.expr.left).kind);
}

function isLookup(rel: Relational): boolean {
  return rel.right.kind === 'set' || rel.right.kind === 'set-ref' || rel.right.kind === 'map' || rel.left.kind === 'map';
}

function innermost(expr: Expr): Expr {
  return expr.kind === 'binop' ? innermost(expr.left) : expr;
}

function worstOf(problems: readonly Problem[]): Problem | undefined {
  let worst: Problem | undefined;
  for (const problem of problems) if (worst === undefined || RANK[problem.outcome] < RANK[worst.outcome]) worst = problem;
  return worst;
}

/** Everything iptables-nft trips over in `rule`, at every gate. */
function problemsOf(rule: Rule, table: Table, chain: Chain, facts: IptablesNftReadback): Problem[] {
  const problems: Problem[] = [];
  const add = (problem: Problem): void => void problems.push(problem);
  const hasVerdict = rule.stmts.some((s) => s.kind === 'verdict' || s.kind === 'vmap');
  const hasIcmpType = rule.stmts.some((s) => s.kind === 'match' && s.expr.left.kind === 'payload' && s.expr.left.field === 'type' && (s.expr.left.protocol === 'icmp' || s.expr.left.protocol === 'icmpv6'));
  const family = table.family;
  for (const [i, stmt] of rule.stmts.entries()) {
    if (family === 'arp' || family === 'bridge') checkLinkLayerStmt(stmt, family, rule.stmts.slice(0, i), add);
    checkStmt(stmt, family, hasVerdict, hasIcmpType, facts, add);
  }
  if (problems.every((p) => RANK[p.outcome] > RANK.unrestorable)) checkRestorable(rule, table, chain, add);
  return problems;
}

// iptables-restore checks a rule's interfaces against the chain's name and refuses DROP in nat,
// in every version (iptables/iptables.c v1.8.4 l.1537-1630, iptables/xshared.c v1.8.9
// l.1823-1882, v1.8.11 l.1949-2003): a native rule iptables-nft reads with `-i` in OUTPUT is
// printed by iptables-save, and restoring that save fails.
const NO_IN_INTERFACE = new Set(['OUTPUT', 'POSTROUTING']);
const NO_OUT_INTERFACE = new Set(['PREROUTING', 'INPUT']);

function checkRestorable(rule: Rule, table: Table, chain: Chain, add: (p: Problem) => void): void {
  // arptables-nft prints a rule without an `arp hlen` match as `--h-length 0/0`, which
  // arptables-restore refuses; without `arp plen` it restores `arp plen 4` (nft-arp.c v1.8.9
  // nft_arp_save_rule / nft_arp_add, measured with the real tool).
  if (table.family === 'arp') {
    const span = rule.stmts[0]?.span ?? rule.span;
    if (!hasArpMatch(rule, 'hlen')) return add({ outcome: 'unrestorable', construct: 'an `arp hlen` match', detail: '`--h-length 0/0`', span });
    if (!hasArpMatch(rule, 'plen')) return add({ outcome: 'lossy', construct: 'an `arp plen` match', detail: 'a round trip adds `arp plen 4`', broadens: false, span });
    return;
  }
  for (const stmt of rule.stmts) {
    if (stmt.kind === 'verdict' && stmt.verdict === 'drop' && table.name === 'nat') {
      if (table.family === 'ip' || table.family === 'ip6') add({ outcome: 'unrestorable', construct: '`drop`', detail: '`-j DROP` (\'The "nat" table is not intended for filtering\')', span: stmt.span });
    }
    if (stmt.kind !== 'match' || isLookup(stmt.expr) || stmt.expr.left.kind !== 'meta') continue;
    const key = stmt.expr.left.key;
    const option = key === 'iifname' || key === 'iif' ? '-i' : key === 'oifname' || key === 'oif' ? '-o' : undefined;
    if (option === undefined || !(option === '-i' ? NO_IN_INTERFACE : NO_OUT_INTERFACE).has(chain.name)) continue;
    add({ outcome: 'unrestorable', construct: `\`${formatExpr(stmt.expr)}\``, detail: `\`${option}\` ("Can't use ${option} with ${chain.name}")`, span: stmt.span });
  }
}

/** A construct the parser does not know: fatal from 1.8.9, silently dropped before. */
function unparsed(facts: IptablesNftReadback, construct: string, error: string, span: Span): Problem {
  return facts.fatalParse
    ? { outcome: 'fatal-parse', construct, detail: error, span }
    : { outcome: 'lossy', construct, detail: 'the parser drops it', broadens: true, span };
}

function checkStmt(stmt: Stmt, family: string, hasVerdict: boolean, hasIcmpType: boolean, facts: IptablesNftReadback, add: (p: Problem) => void): void {
  const unreadable = (construct: string): void => add({ outcome: 'table-unreadable', construct, detail: '', span: stmt.span });
  // Gate 1 on every expression, wherever the statement holds it.
  forEachExpr(stmt, (expr) => {
    const kernel = UNREADABLE_EXPRS[expr.kind];
    if (kernel !== undefined) add({ outcome: 'table-unreadable', construct: `\`${formatExpr(expr)}\` (${kernel})`, detail: '', span: expr.span });
    if (expr.kind === 'binop' && (expr.op === '<<' || expr.op === '>>') && facts.bitwiseMaskXorOnly) {
      add({ outcome: 'table-unreadable', construct: `a ${expr.op} shift (bitwise)`, detail: '', span: expr.span });
    }
  });
  switch (stmt.kind) {
    case 'match':
      return checkMatch(stmt.expr, family, hasIcmpType, facts, add);
    case 'meta-set':
      return checkMetaSet(stmt, hasVerdict, facts, add);
    case 'vmap':
      return add({ outcome: 'lossy', construct: 'its verdict map', detail: 'the rule is read without a verdict', broadens: false, span: stmt.span });
    case 'verdict':
      // ebtables has a CONTINUE target (nft-bridge.c reads the verdict as `-j CONTINUE`).
      if (stmt.verdict === 'continue' && family !== 'bridge') add({ outcome: 'lossy', construct: '`continue`', detail: 'the rule is read without a verdict', broadens: false, span: stmt.span });
      return;
    case 'log':
      if (stmt.group === undefined) return unreadable('`log` without `group`');
      if (!facts.logGroup) return unreadable('`log group` (nflog)');
      // Measured with 1.8.9 and nft 1.0.6: gate 1 passes but save prints the rule without its
      // NFLOG target (nft sets log attributes iptables' own NFLOG lowering never does).
      return add({ outcome: 'lossy', construct: '`log group`', detail: 'the log statement is dropped', broadens: false, span: stmt.span });
    case 'limit':
      if (stmt.over) return unreadable('`limit rate over`');
      if (stmt.unit !== 'packets') unreadable('a byte-based `limit`');
      return;
    case 'payload-set':
      if (stmt.target.kind === 'payload' || stmt.target.kind === 'raw-payload') {
        add({ outcome: 'lossy', construct: `\`${formatStmt(stmt)}\``, detail: 'payload writes are ignored', broadens: false, span: stmt.span });
      }
      return;
    case 'ct-set':
      return unreadable(`\`${formatStmt(stmt)}\` (ct)`);
    case 'nat':
      return unreadable(`\`${stmt.type}\` (${stmt.type === 'masquerade' ? 'masq' : stmt.type === 'redirect' ? 'redir' : 'nat'})`);
    case 'reject':
    case 'notrack':
    case 'dup':
    case 'fwd':
    case 'queue':
    case 'quota':
    case 'last':
    case 'tproxy':
    case 'synproxy':
      return unreadable(`\`${stmt.kind}\``);
    case 'objref':
      return unreadable(`a named ${stmt.type} (objref)`);
    case 'set-op':
      return unreadable(stmt.meter ? `\`meter ${stmt.set}\` (dynset)` : `\`${stmt.op} @${stmt.set}\` (dynset)`);
    case 'ct-count':
      return unreadable('`ct count` (connlimit)');
    case 'flow-offload':
      return unreadable('`flow add` (flow_offload)');
    case 'option-reset':
      return unreadable('`reset tcp option` (exthdr)');
    case 'unsupported':
      // Every expression gate 1 allows is modelled; what the model keeps verbatim is not one.
      return unreadable(`\`${stmt.text}\``);
    case 'counter':
    case 'xt':
    case 'xt-extension':
      return;
    default: {
      const exhaustive: never = stmt;
      return exhaustive;
    }
  }
}

function checkMetaSet(stmt: Stmt & { kind: 'meta-set' }, hasVerdict: boolean, facts: IptablesNftReadback, add: (p: Problem) => void): void {
  const constant = stmt.value.kind === 'literal';
  // `meta nftrace set 1` reads as `-j TRACE`, and a rule has one target: a verdict wins.
  if (stmt.key === 'nftrace' && constant) {
    if (hasVerdict) add({ outcome: 'lossy', construct: `\`${formatStmt(stmt)}\``, detail: 'the verdict takes the only target, tracing is dropped', broadens: false, span: stmt.span });
    return;
  }
  if (stmt.key === 'mark' && constant && facts.metaMarkSetConst) return;
  const error = facts.metaMarkSetConst && !constant ? 'meta sreg is not an immediate' : 'meta sreg key not supported';
  add(unparsed(facts, `\`${formatStmt(stmt)}\``, error, stmt.span));
}

function checkMatch(rel: Relational, family: string, hasIcmpType: boolean, facts: IptablesNftReadback, add: (p: Problem) => void): void {
  const left = innermost(rel.left);
  const construct = `\`${formatExpr(rel)}\``;
  const ordered = rel.op === '<' || rel.op === '>' || rel.op === '<=' || rel.op === '>=';
  const has = (gate: keyof IptablesNftReadback | 'always' | undefined): boolean => gate === 'always' || (gate !== undefined && facts[gate]);
  if (left.kind === 'meta') {
    // nft converts host-order meta values with `byteorder` for ordered comparisons.
    // The parser still sees the key behind it, which matters to -C (an unknown key fails it).
    if ((ordered || rel.right.kind === 'range') && !['iifname', 'oifname', 'l4proto', 'pkttype', 'nfproto', 'protocol'].includes(left.key)) {
      add({ outcome: 'table-unreadable', construct: `${construct} (byteorder)`, detail: '', span: rel.span });
    }
    // arptables-nft and ebtables-nft read matches with their own parsers (checkLinkLayerMatch).
    if (family === 'arp' || family === 'bridge') return;
    // nft leaves out `meta protocol ip` / `meta nfproto ipv4` in an ip table (always true).
    if ((left.key === 'protocol' || left.key === 'nfproto') && rel.op === 'implicit' && rel.right.kind === 'literal' && isOwnFamily(rel.right.text, family)) return;
    const gate = PARSED_META_KEYS[left.key];
    if (gate === undefined) add(unparsed(facts, construct, `unknown ${family === 'ip6' ? 'ipv6' : 'ipv4'} meta key`, rel.span));
    else if (!has(gate)) add({ outcome: 'lossy', construct, detail: 'the parser drops it', broadens: true, span: rel.span });
  } else if (family === 'arp' || family === 'bridge') {
    return;
  } else if (left.kind === 'payload') {
    const fields = PARSED_PAYLOAD_FIELDS[left.protocol];
    const isNetwork = left.protocol === 'ip' || left.protocol === 'ip6';
    if (fields === undefined) {
      add(unparsed(facts, construct, isNetwork ? 'unknown payload offset' : 'unsupported layer 4 protocol value', rel.span));
    } else {
      const gate = fields[left.field];
      const isIcmp = left.protocol === 'icmp' || left.protocol === 'icmpv6';
      if (gate === undefined) {
        // nft_parse_icmp (nft-shared.c v1.8.9) knows the type and code bytes only.
        if (isNetwork || isIcmp) add(unparsed(facts, construct, isNetwork ? 'unknown payload offset' : 'unexpected payload offset', rel.span));
        else add({ outcome: 'lossy', construct, detail: `the ${left.protocol} ${left.field} match is ignored`, broadens: true, span: rel.span });
      } else if (!has(gate)) {
        add({ outcome: 'lossy', construct, detail: 'the parser drops it', broadens: true, span: rel.span });
      } else if (left.protocol === 'ip6' && left.field === 'nexthdr' && facts.ip6NexthdrBug) {
        add({ outcome: 'lossy', construct, detail: 'it reads as `-p X -m hl --hl-eq X`', broadens: false, span: rel.span });
      } else if (isIcmp && left.field === 'code' && !hasIcmpType) {
        // A code alone is read with the type "any", which ip6tables' icmp6 match cannot say.
        if (family === 'ip6') add(unparsed(facts, construct, 'icmp6 code with any type match not supported', rel.span));
        else add({ outcome: 'lossy', construct, detail: 'it reads as `--icmp-type any`', broadens: true, span: rel.span });
      } else if (left.protocol === 'tcp' && left.field === 'flags' && rel.op === '!=' && rel.left.kind === 'payload' && facts.tcpFlagsNeqCrash) {
        add({ outcome: 'crash', construct, detail: 'segmentation fault printing it, exit 139', span: rel.span });
      }
    }
    if (rel.right.kind === 'range') {
      if (rel.op === '!=') {
        if (!facts.range) add({ outcome: 'table-unreadable', construct: `${construct} (range)`, detail: '', span: rel.span });
        else if (isNetwork) add(unparsed(facts, construct, 'range with unknown payload base', rel.span));
      } else if (isNetwork) {
        add({ outcome: 'lossy', construct, detail: 'an address range keeps only its upper bound', broadens: false, span: rel.span });
      }
    }
  } else if (left.kind === 'raw-payload') {
    // nft_parse_cmp (nft-shared.c v1.8.9) ignores link-layer payload outside the bridge family.
    if (left.base === 'll') add({ outcome: 'lossy', construct, detail: 'link-layer matches are ignored', broadens: true, span: rel.span });
    else add(unparsed(facts, construct, left.base === 'nh' ? 'unknown payload offset' : 'unsupported layer 4 protocol value', rel.span));
  }
  if (isLookup(rel)) {
    add({ outcome: 'lossy', construct: `the set lookup ${construct}`, detail: 'sets and maps are dropped, so the rule matches more', broadens: true, span: rel.span });
  }
}

function isOwnFamily(value: string, family: string): boolean {
  return family === 'ip' ? value === 'ip' || value === 'ipv4' : value === 'ip6' || value === 'ipv6';
}

// arptables-nft and ebtables-nft: gate 1 is iptables' (nft_is_expr_compatible runs for every
// family), the rule parser is their own (nft-arp.c, nft-bridge.c v1.8.9; facts in
// facts/iptables-nft-readback.ts). `before`: the statements ahead of `stmt` in the rule.
function checkLinkLayerStmt(stmt: Stmt, family: 'arp' | 'bridge', before: readonly Stmt[], add: (p: Problem) => void): void {
  if (stmt.kind === 'limit' && family === 'arp' && !stmt.over && stmt.unit === 'packets') {
    // nft_parse_limit (nft-shared.c v1.8.9 l.1188-1229) knows ip, ip6 and bridge only.
    add({ outcome: 'crash', construct: '`limit`', detail: '"BUG: nft_parse_limit() unknown family 3", exit 1', span: stmt.span });
  }
  // A verdict map is a lookup too; arptables-nft drops it (checkStmt says so), ebtables-nft
  // analyses its key like a set's.
  if (stmt.kind === 'vmap' && family === 'bridge') {
    const key = stmt.key.kind === 'concat' ? stmt.key : innermost(stmt.key);
    const error = key.kind === 'meta' ? 'lookup reg is not payload type' : isAmongKey(key) ? undefined : 'unsupported lookup key length';
    if (error) add({ outcome: 'fatal-parse', construct: `\`${formatStmt(stmt)}\``, detail: error, span: stmt.span });
    return;
  }
  if (stmt.kind !== 'match') return;
  const rel = stmt.expr;
  const left = rel.left.kind === 'concat' ? rel.left : innermost(rel.left);
  const construct = `\`${formatExpr(rel)}\``;
  const fatal = (error: string): void => add({ outcome: 'fatal-parse', construct, detail: error, span: rel.span });
  if (isLookup(rel)) {
    if (family === 'arp') return add({ outcome: 'lossy', construct: `the set lookup ${construct}`, detail: 'arptables-nft has no set parser, so the rule matches more', broadens: true, span: rel.span });
    // nft-bridge.c v1.8.9 lookup_analyze_payloads (l.334-410): only ether addresses, alone or
    // with an IPv4 address (the among match), are read.
    if (left.kind === 'meta') return fatal('lookup reg is not payload type');
    if (!isAmongKey(left)) fatal('unsupported lookup key length');
    return;
  }
  if (rel.right.kind === 'range' && rel.op === '!=') return fatal('range with unknown payload base');
  if (left.kind === 'meta') {
    if (family === 'arp') {
      const known = ARP_META_KEYS[left.key];
      if (known === undefined) fatal('Unknown arp meta key');
      else if (known === 'dropped') add({ outcome: 'lossy', construct, detail: 'arptables-nft parses it but never prints it', broadens: true, span: rel.span });
      return;
    }
    const known = BRIDGE_META_KEYS[left.key];
    if (known === undefined) fatal('unknown meta key');
    else if (known === 'ignored') add({ outcome: 'lossy', construct, detail: 'ebtables-nft skips it', broadens: true, span: rel.span });
    else if (known === 'crash') add({ outcome: 'crash', construct, detail: 'segmentation fault in the rule parser, exit 139, `--check` too', span: rel.span });
    else if (known !== 'read') fatal(known);
    return;
  }
  if (left.kind !== 'payload') return;
  if (family === 'arp') {
    // nft adds `meta iiftype ether` before an ether match in the arp family.
    if (left.protocol === 'ether') return fatal('Unknown arp meta key');
    const field = left.protocol === 'arp' ? ARP_FIELDS[left.field] : undefined;
    if (field === undefined) return fatal('unknown payload offset');
    if (field === 'plen' && !(rel.op !== '!=' && rel.right.kind === 'literal' && Number(rel.right.text) === 4)) return fatal('unexpected ARP protocol length match');
    if (field === 'after-hlen' && !before.some((s) => s.kind === 'match' && isArpMatch(s.expr, 'hlen'))) return fatal('unknown payload offset');
    if (rel.right.kind === 'range') add({ outcome: 'lossy', construct, detail: 'an address range keeps only its upper bound', broadens: false, span: rel.span });
    return;
  }
  if (left.protocol === 'ether') {
    if (!['saddr', 'daddr', 'type'].includes(left.field)) fatal('unknown payload offset');
    return;
  }
  const offset = NETWORK_OFFSETS[left.protocol]?.[left.field];
  // A transport match brings nft's `meta l4proto` dependency, which ebtables cannot read.
  if (offset === undefined) return fatal(left.protocol === 'vlan' || NETWORK_OFFSETS[left.protocol] ? 'unknown payload offset' : 'unknown meta key');
  const misread = ETHER_OFFSETS[offset];
  if (misread === undefined) return fatal('unknown payload offset');
  add({ outcome: 'lossy', construct, detail: `ebtables-nft reads it as ${misread}`, broadens: false, span: rel.span });
}

function isAmongKey(left: Expr): boolean {
  const isEtherAddr = (e: Expr) => e.kind === 'payload' && e.protocol === 'ether' && (e.field === 'saddr' || e.field === 'daddr');
  if (left.kind !== 'concat') return isEtherAddr(left);
  const [mac, ip] = left.parts;
  return left.parts.length === 2 && mac !== undefined && isEtherAddr(mac) && ip?.kind === 'payload' && ip.protocol === 'ip' && (ip.field === 'saddr' || ip.field === 'daddr');
}

function isArpMatch(rel: Relational, field: string): boolean {
  const left = innermost(rel.left);
  return left.kind === 'payload' && left.protocol === 'arp' && left.field === field && rel.op !== '!=' && !isLookup(rel);
}

function hasArpMatch(rule: Rule, field: string): boolean {
  return rule.stmts.some((s) => s.kind === 'match' && isArpMatch(s.expr, field));
}
