import type { Chain, Expr, Relational, Rule, Span, Stmt, Table } from '../model/ast.js';
import { formatExpr, formatStmt } from '../model/format-ruleset.js';
import { iptablesNftChain, isIptablesNftTable } from '../model/iptables-nft-chains.js';
import {
  IPTABLES_NFT_CONSUMERS,
  iptablesNftReadback,
  PARSED_META_KEYS,
  PARSED_PAYLOAD_FIELDS,
  UNREADABLE_EXPRS,
  type IptablesNftReadback,
} from './facts/iptables-nft-readback.js';
import type { Fix, LintContext, LintRule, Severity } from './framework/lint-rule.js';
import { forEachExpr } from './framework/walk-rule.js';

// Programs that share a node's ip/ip6 filter, nat, mangle, raw and security tables read them
// through iptables-nft, which understands only what iptables-nft itself writes. A native rule
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

const RANK: Readonly<Record<Outcome, number>> = { 'table-unreadable': 0, 'fatal-parse': 1, crash: 2, unrestorable: 3, lossy: 4 };

export const iptablesNftIncompatible: LintRule = {
  id: 'iptables-nft-incompatible',
  meta: {
    description: 'A native nft rule or base chain in a table iptables-nft manages that iptables-nft cannot read back.',
    severity: 'error',
    docs: 'docs/rules/iptables-nft-incompatible.md',
    messages: {
      'table-unreadable':
        "{{construct}} in {{where}} is outside what iptables-nft {{version}} can read: iptables-nft-save prints \"# Table `{{table}}' is incompatible, use 'nft' tool.\" and skips the table, `iptables -L` and `-S {{chain}}` fail{{check}}; " +
        IPTABLES_NFT_CONSUMERS +
        ' cannot list or save it',
      'fatal-parse':
        'iptables-nft {{version}} cannot parse {{construct}} in {{where}} ("Error: {{detail}}", "Parsing nftables rule failed", exit 3): save, `-L`, `-S`, and `-C`/`-D` on {{chain}} fail; kube-proxy and kube-router jump checks (`iptables -C {{chain}} … -j KUBE-…`) fail every sync while this rule comes before their jump, and ' +
        'Docker, Calico and firewalld cannot save the table',
      crash:
        'iptables-nft {{version}} crashes printing {{construct}} in {{where}} (segmentation fault, exit 139): iptables-nft-save and `iptables -S {{chain}}` fail, so ' +
        IPTABLES_NFT_CONSUMERS +
        ' cannot save or list the table',
      unrestorable:
        'iptables-nft {{version}} reads this rule in {{where}} with {{detail}}, which iptables-restore rejects: restoring a save of the table (' +
        IPTABLES_NFT_CONSUMERS +
        ') fails',
      lossy:
        'iptables-nft {{version}} reads this rule in {{where}} without {{construct}} ({{detail}}): iptables-save shows, and a save/restore round trip (' +
        IPTABLES_NFT_CONSUMERS +
        ') writes back, a different rule',
      'base-chain': 'base chain {{chain}} ({{spec}}) is not a built-in chain of iptables-nft table {{table}}: {{effect}}',
      'origin-unknown':
        '{{construct}} in {{where}} would break iptables-nft {{version}} if a program added it with nft, but this listing cannot tell whether iptables-nft wrote it itself (it prints its own xt matches as native nft); give `nft -j list ruleset` or the iptables-save dump to tell',
      'same-origin-unknown': 'and {{construct}} here, origin unknown as well',
    },
  },
  check(context) {
    const facts = iptablesNftReadback(context.iptablesVersion);
    const managed = context.ruleset.tables.filter((t) => (t.family === 'ip' || t.family === 'ip6') && isIptablesNftTable(t.name));
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
    const builtin = iptablesNftChain(table.name, chain.name);
    if (builtin && builtin.type === base.type && builtin.hook === base.hook && builtin.priority === base.priority.value) continue;
    const spec = `type ${base.type} hook ${base.hook} priority ${base.priority.value ?? base.priority.name ?? base.priority.offset}`;
    const effect = builtin
      ? `iptables-nft expects type ${builtin.type} hook ${builtin.hook} priority ${builtin.priority} and cannot add rules to it ("CHAIN_ADD failed (Operation not supported)")`
      : facts.hidesBaseChains
        ? `iptables-nft ${context.iptablesVersion} hides it ("# Table \`${table.name}' contains incompatible base-chains"), and a flushing iptables-restore of the table deletes it`
        : `iptables-nft ${context.iptablesVersion} reports the whole table as incompatible`;
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

function originOf(rule: Rule, telling: boolean): Origin {
  if (hasIptablesSignal(rule)) return 'iptables';
  // iptables-nft adds a counter to every rule it writes (nft.c add_counters).
  if (telling || !rule.stmts.some((s) => s.kind === 'counter')) return 'native';
  return 'unknown';
}

function checkRules(context: LintContext, table: Table, facts: IptablesNftReadback, managed: readonly Table[]): void {
  const telling = isListingTelling(table);
  const where = (chain: Chain) => `${table.family} ${table.name} ${chain.name}`;
  const unknown: { problem: Problem; chain: Chain }[] = [];
  for (const chain of table.chains) {
    for (const rule of chain.rules) {
      const problems = problemsOf(rule, table, chain, facts);
      const problem = worstOf(problems);
      if (problem === undefined) continue;
      const origin = originOf(rule, telling);
      if (origin === 'iptables') continue;
      if (origin === 'unknown') {
        if (problem.outcome !== 'lossy') unknown.push({ problem, chain });
        continue;
      }
      // -C and -D skip gate 1 but run the rule parser on every rule before the one they look for.
      const check =
        problem.outcome === 'table-unreadable' && facts.fatalParse && (isFirstMatchSkipped(rule) || problems.some((p) => p.outcome === 'fatal-parse'))
          ? `, and \`iptables -C\`/\`-D\` on ${chain.name} exit 3 (${isFirstMatchSkipped(rule) ? '"cmp sreg undef"' : 'a parse error'}) when they reach it`
          : '';
      const fix = fixFor(rule, table, chain, managed);
      const severity: Severity | undefined = problem.outcome === 'lossy' && problem.broadens !== true ? 'warning' : undefined;
      context.report({
        messageId: problem.outcome,
        data: { construct: problem.construct, detail: problem.detail, where: where(chain), table: table.name, chain: chain.name, version: context.iptablesVersion, check },
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
    data: { construct: first.problem.construct, where: where(first.chain), version: context.iptablesVersion },
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
  const twinFamily = table.family === 'ip' ? 'ip6' : 'ip';
  const twin = managed.find((t) => t.family === twinFamily && t.name === table.name)?.chains.find((c) => c.name === chain.name);
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
  for (const stmt of rule.stmts) checkStmt(stmt, table.family, hasVerdict, hasIcmpType, facts, add);
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
  for (const stmt of rule.stmts) {
    if (stmt.kind === 'verdict' && stmt.verdict === 'drop' && table.name === 'nat') {
      add({ outcome: 'unrestorable', construct: '`drop`', detail: '`-j DROP` (\'The "nat" table is not intended for filtering\')', span: stmt.span });
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
      if (stmt.verdict === 'continue') add({ outcome: 'lossy', construct: '`continue`', detail: 'the rule is read without a verdict', broadens: false, span: stmt.span });
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
      return unreadable(`\`${stmt.op} @${stmt.set}\` (dynset)`);
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
    // nft leaves out `meta protocol ip` / `meta nfproto ipv4` in an ip table (always true).
    if ((left.key === 'protocol' || left.key === 'nfproto') && rel.op === 'implicit' && rel.right.kind === 'literal' && isOwnFamily(rel.right.text, family)) return;
    const gate = PARSED_META_KEYS[left.key];
    if (gate === undefined) add(unparsed(facts, construct, `unknown ${family === 'ip6' ? 'ipv6' : 'ipv4'} meta key`, rel.span));
    else if (!has(gate)) add({ outcome: 'lossy', construct, detail: 'the parser drops it', broadens: true, span: rel.span });
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
        add({ outcome: 'crash', construct, detail: '', span: rel.span });
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
