// Statements of a rule evaluated in order, as nft_do_chain runs a rule's expressions: a failed
// match ends the rule, a verdict ends it with that verdict, the rest change the packet, its
// marks, its conntrack entry or NAT mapping.

import type { Expr, NatStmt, Rule, Stmt, XtExtensionStmt } from '../model/ast.js';
import { formatAddress, parseAddress, type Address } from './address.js';
import { primaryAddress } from './host.js';
import { CT_STATUS, evaluateExpr, lookupElement, matchRelational, namedSet, type RtValue } from './evaluate-expr.js';
import { formatMark } from './outcome.js';
import { NotModelled, locOf, type SimContext } from './sim-context.js';
import { NAT_MANIP } from './pipeline.js';

export type Verdict =
  | { readonly name: 'continue' | 'accept' | 'drop' | 'reject' | 'queue' | 'return' }
  | { readonly name: 'jump' | 'goto'; readonly target: string };

export type RuleResult = { readonly matched: false } | { readonly matched: true; readonly verdict: Verdict };

const NO_MATCH: RuleResult = { matched: false };

/** Records that nftsim could not model something of the current rule, and what it assumed. */
export function reportUnsupported(ctx: SimContext, reason: string, at = ctx.rule ?? ctx.chain): void {
  ctx.uncertain = true;
  ctx.trace.push({
    hook: ctx.hook,
    family: ctx.table.family,
    table: ctx.table.name,
    chain: ctx.chain.name,
    priority: ctx.basePriority,
    kind: 'unsupported',
    verdict: 'continue',
    mark: formatMark(ctx.pkt.mark),
    at: locOf(at),
    ...(ctx.orderDependent && { orderDependent: true }),
    reason,
  });
}

/** Statements that test the packet: when nftsim cannot evaluate one, it assumes no match. */
function isTest(stmt: Stmt): boolean {
  return stmt.kind === 'match' || stmt.kind === 'vmap' || ((stmt.kind === 'xt' || stmt.kind === 'xt-extension') && stmt.type === 'match');
}

export function evaluateRule(rule: Rule, ctx: SimContext): RuleResult {
  ctx.rule = rule;
  for (const stmt of rule.stmts) {
    let result: RuleResult | undefined;
    try {
      result = evaluateStmt(stmt, ctx);
    } catch (error) {
      if (!(error instanceof NotModelled)) throw error;
      const test = isTest(stmt);
      reportUnsupported(ctx, `${error.message}: not modelled; assumed ${test ? 'no match' : 'no effect'}`);
      if (test) return NO_MATCH;
      continue;
    }
    if (result) return result;
  }
  return { matched: true, verdict: { name: 'continue' } };
}

/** One statement: undefined to go on with the rule, a result to end it. */
function evaluateStmt(stmt: Stmt, ctx: SimContext): RuleResult | undefined {
  switch (stmt.kind) {
    case 'match':
      return matchRelational(stmt.expr, ctx) ? undefined : NO_MATCH;
    case 'verdict':
      return { matched: true, verdict: verdictOf(stmt.verdict, stmt.target) };
    case 'vmap': {
      const key = evaluateExpr(stmt.key, ctx);
      if (key === undefined) return NO_MATCH;
      const data = lookupElement(stmt.map, key, stmt.key, ctx)?.data;
      if (!data) return NO_MATCH;
      if (data.kind !== 'verdict') throw new NotModelled('verdict map element without a verdict');
      return { matched: true, verdict: verdictOf(data.verdict, data.target) };
    }
    case 'counter':
    case 'log':
    case 'last':
    case 'flow-offload':
      // No effect on the first packet's way (a flow is offloaded once established).
      return undefined;
    case 'limit':
    case 'quota': {
      // Their state depends on all the traffic before: assume the packet is within the limit.
      reportUnsupported(ctx, `${stmt.kind} depends on earlier traffic: assumed not exceeded`);
      return stmt.over ? NO_MATCH : undefined;
    }
    case 'meta-set':
      if (stmt.key === 'nftrace') return undefined;
      if (stmt.key !== 'mark') throw new NotModelled(`meta ${stmt.key} set`);
      {
        // An expression with no value (`ct mark` without a conntrack entry) ends the rule as a
        // mismatch: the expression sets NFT_BREAK (nft_ct.c nft_ct_get_eval), which is not traced.
        const value = evaluateExpr(stmt.value, ctx);
        if (value === undefined) return NO_MATCH;
        ctx.pkt.mark = integerOf(value, 'meta mark set');
      }
      return undefined;
    case 'ct-set': {
      if (stmt.key !== 'mark' && stmt.key !== 'zone') throw new NotModelled(`ct ${stmt.key} set`);
      const source = evaluateExpr(stmt.value, ctx);
      if (source === undefined) return NO_MATCH;
      const value = integerOf(source, `ct ${stmt.key} set`);
      // Without a conntrack entry there is nothing to set (nft_ct.c nft_ct_set_eval).
      if (!ctx.ctAttached || ctx.ct.state === 'invalid' || ctx.ct.state === 'untracked') return undefined;
      if (stmt.key === 'mark') ctx.ct.mark = value;
      else ctx.ct.zone = value;
      return undefined;
    }
    case 'payload-set':
      setPayload(stmt.target, stmt.value, ctx);
      return undefined;
    case 'nat':
      return { matched: true, verdict: setUpNat(stmt, ctx) };
    case 'reject':
      return { matched: true, verdict: { name: 'reject' } };
    case 'queue':
      return { matched: true, verdict: { name: 'queue' } };
    case 'notrack':
      // Only before conntrack looked the packet up (raw priority); later it has an entry.
      if (!ctx.ctAttached) ctx.ct.state = 'untracked';
      return undefined;
    case 'set-op': {
      const set = namedSet(stmt.set, ctx);
      const value = evaluateExpr(stmt.element.key, ctx);
      if (value === undefined) return NO_MATCH;
      const added = ctx.dynamicSets.get(set) ?? [];
      if (stmt.op === 'delete') ctx.dynamicSets.set(set, added.filter((v) => JSON.stringify(v, bigintJson) !== JSON.stringify(value, bigintJson)));
      else ctx.dynamicSets.set(set, [...added, value]);
      return undefined;
    }
    case 'objref':
      if (stmt.type === 'counter') return undefined;
      throw new NotModelled(`${stmt.type} object`);
    case 'xt-extension':
      return evaluateXtExtension(stmt, ctx);
    case 'xt':
      throw new NotModelled(stmt.name ? `xt ${stmt.type} ${stmt.name}` : 'an xt match nft lists as blank (use the iptables-save dump)');
    case 'unsupported':
      throw new NotModelled(`'${stmt.text}'`);
    case 'option-reset':
    case 'tproxy':
    case 'dup':
    case 'fwd':
    case 'synproxy':
      throw new NotModelled(`${stmt.kind} statement`);
    default: {
      const exhaustive: never = stmt;
      return exhaustive;
    }
  }
}

function bigintJson(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

function verdictOf(name: string, target: string | undefined): Verdict {
  if (name === 'jump' || name === 'goto') {
    if (target === undefined) throw new NotModelled(`${name} without a target`);
    return { name, target };
  }
  if (name === 'continue' || name === 'accept' || name === 'drop' || name === 'queue' || name === 'return') return { name };
  throw new NotModelled(`verdict ${name}`);
}

function integerOf(value: RtValue | undefined, what: string): number {
  if (typeof value !== 'bigint') throw new NotModelled(`${what} with a value that is not an integer`);
  return Number(value & 0xffffffffn);
}

function setPayload(target: Expr, valueExpr: Expr, ctx: SimContext): void {
  const value = evaluateExpr(valueExpr, ctx);
  if (typeof value !== 'bigint' || target.kind !== 'payload') throw new NotModelled('payload set');
  const field = `${target.protocol} ${target.field}`;
  const p = ctx.pkt;
  if ((target.protocol === 'ip' || target.protocol === 'ip6') && target.protocol === ctx.family) {
    if (target.field === 'saddr') return void (p.src = { family: ctx.family, n: value });
    if (target.field === 'daddr') return void (p.dst = { family: ctx.family, n: value });
    if (target.field === 'dscp') return void (p.dscp = Number(value));
    if (target.field === 'ttl' || target.field === 'hoplimit') return void (p.ttl = Number(value));
  }
  if (['tcp', 'udp', 'th', 'sctp', 'udplite'].includes(target.protocol) && p.sport !== undefined) {
    if (target.field === 'sport') return void (p.sport = Number(value));
    if (target.field === 'dport') return void (p.dport = Number(value));
  }
  throw new NotModelled(`${field} set`);
}

function evaluateXtExtension(stmt: XtExtensionStmt, ctx: SimContext): RuleResult | undefined {
  const option = (name: string) => stmt.options.find((o) => o.name === name);
  if (stmt.type === 'match' && stmt.name === 'statistic') {
    const mode = option('mode')?.value;
    const probability = option('probability');
    if (mode?.type === 'string' && mode.s === 'random' && probability?.value.type === 'probability') {
      // xt_statistic.c: matches when get_random_u32() & 0x7fffffff < probability * 2^31,
      // inverted by `!`.
      const p = probability.negated ? 1 - probability.value.p : probability.value.p;
      if (p <= 0 || p >= 1) return p >= 1 ? undefined : NO_MATCH;
      return ctx.choose([p, 1 - p]) === 0 ? undefined : NO_MATCH;
    }
  }
  if (stmt.type === 'match' && stmt.name === 'comment') return undefined;
  throw new NotModelled(`iptables ${stmt.type} ${stmt.name}`);
}

function formatEndpoint(address: string, port: string | undefined, family: 'ip' | 'ip6'): string {
  if (port === undefined) return address;
  return family === 'ip6' ? `[${address}]:${port}` : `${address}:${port}`;
}

/** Turns a NAT address or port expression into a value: a single one, or a range the kernel
 * picks from (shown as the range, the packet keeping the first value). */
function natValue(expr: Expr | undefined, ctx: SimContext): { first: bigint; text: (f: (n: bigint) => string) => string } | undefined {
  if (!expr) return undefined;
  if (expr.kind === 'range') {
    const low = natPart(expr.low, ctx);
    const high = natPart(expr.high, ctx);
    if (typeof low !== 'bigint' || typeof high !== 'bigint') throw new NotModelled('NAT range');
    if (low === high) return { first: low, text: (f) => f(low) };
    reportUnsupported(ctx, 'NAT to a range: the kernel picks one by hash; the trace keeps the first');
    return { first: low, text: (f) => `${f(low)}-${f(high)}` };
  }
  const value = natPart(expr, ctx);
  if (typeof value !== 'bigint') throw new NotModelled('NAT target that is not a single value');
  return { first: value, text: (f) => f(value) };
}

/** A NAT address or port: nft types `dnat to 10.0.0.1:80` from the table family, which the
 * model leaves untyped in an inet table or without `ip`; read such a literal by its spelling. */
function natPart(expr: Expr, ctx: SimContext): RtValue | undefined {
  if (expr.kind === 'literal' && !expr.value) {
    const address = parseAddress(expr.text);
    if (address) return address.n;
    if (/^\d+$/.test(expr.text)) return BigInt(expr.text);
  }
  return evaluateExpr(expr, ctx);
}

/** Sets up a NAT mapping as nf_nat_setup_info does and returns the verdict the nat expressions
 * return (NF_ACCEPT: a NAT statement ends its chain, nft_nat.c nft_nat_eval). The packet is
 * rewritten now: the chain ends here and later nat chains at this hook are skipped, so only
 * the chains after the NAT hook see it, as after nf_nat_packet. */
function setUpNat(stmt: NatStmt, ctx: SimContext): Verdict {
  const manip = NAT_MANIP[ctx.hook];
  const wants = stmt.type === 'dnat' || stmt.type === 'redirect' ? 'dst' : 'src';
  if (manip !== wants) throw new NotModelled(`${stmt.type} at the ${ctx.hook} hook (the kernel refuses it there)`);
  if (stmt.family && stmt.family !== ctx.family) return { name: 'continue' };
  const family = ctx.family;
  const p = ctx.pkt;
  let addressExpr = stmt.addr;
  let portExpr = stmt.port;
  // `dnat ip addr . port to ip daddr . tcp dport map @m` (kube-proxy nftables mode): the map's
  // data is an address and a port.
  if (stmt.form === 'addr . port' || (addressExpr && addressExpr.kind === 'map')) {
    const both = addressExpr ? evaluateExpr(addressExpr, ctx) : undefined;
    if (Array.isArray(both) && both.length === 2 && typeof both[0] === 'bigint' && typeof both[1] === 'bigint') {
      addressExpr = { kind: 'literal', span: stmt.span, text: formatAddress({ family, n: both[0] }), value: { type: family === 'ip' ? 'ipv4' : 'ipv6', addr: formatAddress({ family, n: both[0] }) } };
      portExpr = { kind: 'literal', span: stmt.span, text: String(both[1]), value: { type: 'integer', n: Number(both[1]) } };
    } else if (both === undefined) return { name: 'continue' };
  }
  let address: Address | undefined;
  let addressText: string;
  if (stmt.type === 'masquerade' || stmt.type === 'redirect') {
    const dev = stmt.type === 'masquerade' ? ctx.oif : ctx.iif;
    address = dev === undefined ? parseAddress(family === 'ip' ? '127.0.0.1' : '::1') : primaryAddress(ctx.host, dev, family);
    // No address on the egress interface: the kernel drops (nf_nat_masquerade.c returns NF_DROP).
    if (!address) return { name: 'drop' };
    addressText = formatAddress(address);
  } else {
    const a = natValue(addressExpr, ctx);
    if (!a) throw new NotModelled(`${stmt.type} without an address`);
    address = { family, n: a.first };
    addressText = a.text((n) => formatAddress({ family, n }));
  }
  const port = natValue(portExpr, ctx);
  const random = stmt.flags.includes('random') || stmt.flags.includes('fully-random');
  const rewrite = wants === 'dst' ? 'dport' : 'sport';
  let portText: string | undefined;
  if (port) {
    portText = port.text((n) => String(n));
    p[rewrite] = portText.includes('-') ? portText : Number(port.first);
  } else if (random && typeof p[rewrite] === 'number') {
    // A random source port from the default range (nf_nat_proto.c nf_nat_l4proto_unique_tuple:
    // 1024-65535 for ports from 1024, 1-1023 below): not invented, shown as the range.
    portText = (p[rewrite] as number) >= 1024 ? '1024-65535' : '1-1023';
    p[rewrite] = portText;
  }
  if (wants === 'dst') p.dst = address;
  else p.src = address;
  ctx.natDone.add(wants);
  ctx.ct.status |= wants === 'dst' ? CT_STATUS.dnat : CT_STATUS.snat;
  ctx.nat.push({ type: stmt.type, to: formatEndpoint(addressText, portText, family), at: locOf(ctx.rule!) });
  return { name: 'accept' };
}
