// Statements of a rule evaluated in order, as nft_do_chain runs a rule's expressions: a failed
// match ends the rule, a verdict ends it with that verdict, the rest change the packet, its
// marks, its conntrack entry or NAT mapping.

import type { Expr, NatStmt, Rule, StatefulObject, Stmt, XtExtensionStmt } from '../model/ast.js';
import { chainIndexNamed, type ChainIndex } from './chain-index.js';
import { familyBits, formatAddress, parseAddress, prefixMask, type Address, type AddressFamily } from './address.js';
import { ipv6RedirectAddress, ipv6Scope, localInterfaceOf, lookupRoute, primaryAddress, routeUsesDevice } from './host.js';
import { HOST_KEY } from './route-rules.js';
import { constantOf, evaluateExpr, mapData, matchRelational, readMapData, type RtValue } from './evaluate-expr.js';
import { invertTransport, IPS, NAT_DONE, type NatManip } from './conntrack-table.js';
import { lookupElement, lookupKey, MISSES } from './lookup-element.js';
import { evaluateSetOp, passesElementStatements } from './dynset.js';
import { masqueradeSource } from './masquerade-source.js';
import { nexthopOf } from './evaluate-special-expr.js';
import { matchRecent } from './match-recent.js';
import { matchConnlabel } from './match-connlabel.js';
import { matchCluster } from './match-cluster.js';
import { connmarkMasks, optionNumber } from '../model/xt-option.js';
import { matchIpset, runSetTarget } from './match-ipset.js';
import { isCtCountPassed, matchConnlimit } from './conn-count.js';
import { matchHashlimit } from './match-hashlimit.js';
import { matchU32 } from './match-u32.js';
import { matchTos, setEcn, setTos } from './xt-tos.js';
import { runNetmapTarget } from './xt-netmap.js';
import { attachZoneTemplate } from './zone-template.js';
import { runShiftedNatTarget } from './xt-shifted-nat.js';
import { runCtTarget } from './xt-ct.js';
import { runHmarkTarget } from './xt-hmark.js';
import { runTcpOptStripTarget, stripTcpOptions } from './xt-tcpoptstrip.js';
import { formatMark, type Loc, type NatEvent } from './outcome.js';
import { ctMarkOf, currentRule, hasConntrackEntry, hasZoneTemplate, isIptablesRule, NotModelled, locOf, stateBeforeConntrack, type PacketState, type SimContext } from './sim-context.js';
import { headersLengthOf, TCP_MSS_LENGTH, TCP_MSS_OPTION, writePayload } from './packet-bytes.js';
import { isLimitPassed, isQuotaPassed } from './limit-and-quota.js';
import { natField, natKeyOf, replyTransport, uniqueTuple, type NatRequest, type NatValue } from './unique-tuple.js';
import { NAT_MANIP } from './pipeline.js';
import { L4_NUMBERS, type CtStateName } from './packet.js';

/** A rule's verdict; `text` is how the trace shows it (`jump KUBE-SVC-…`; a reject as the drop
 * the kernel's trace shows, nft_reject_inet.c ends the packet with NF_DROP). */
export type Verdict =
  | { readonly name: 'continue' | 'accept' | 'drop' | 'reject' | 'queue' | 'return'; readonly text: string }
  | { readonly name: 'jump' | 'goto'; readonly target: string; readonly text: string };

export type RuleResult =
  | { readonly matched: false }
  | {
      readonly matched: true;
      /** The verdict's name, beside it: evaluate-chain.ts reads the verdict itself only for its
       * text (a new trace event) or an unresolved target (results are shared by the packets and
       * rules that give them, and each object read is a cache miss when they are many). */
      readonly name: Verdict['name'];
      readonly verdict: Verdict;
      /** The target chain's index, for a jump or goto to a chain of the rule's table
       * (verdictResult). */
      readonly to?: ChainIndex;
    };

export const NO_MATCH: RuleResult = { matched: false };

type PlainVerdict = Exclude<Verdict['name'], 'jump' | 'goto'>;

// The results of the verdicts without a target are the same for every rule and packet: made
// once, not per evaluated rule.
export const PLAIN_RESULTS: Readonly<Record<PlainVerdict, RuleResult & { matched: true }>> = {
  continue: { matched: true, name: 'continue', verdict: { name: 'continue', text: 'continue' } },
  accept: { matched: true, name: 'accept', verdict: { name: 'accept', text: 'accept' } },
  drop: { matched: true, name: 'drop', verdict: { name: 'drop', text: 'drop' } },
  reject: { matched: true, name: 'reject', verdict: { name: 'reject', text: 'drop' } },
  queue: { matched: true, name: 'queue', verdict: { name: 'queue', text: 'queue' } },
  return: { matched: true, name: 'return', verdict: { name: 'return', text: 'return' } },
};

export function resultOf(verdict: Verdict): RuleResult {
  return verdict.name === 'jump' || verdict.name === 'goto' ? { matched: true, name: verdict.name, verdict } : PLAIN_RESULTS[verdict.name];
}

/** The result of a verdict statement or map element in the table being evaluated (the rule's):
 * for a jump or goto, the target chain's one result for the verb, which carries the chain's index
 * (evaluate-chain.ts enters it from there, and no packet makes the verdict's text anew). A target
 * not in the table has a result of its own, without an index: evaluate-chain.ts reports it. */
export function verdictResult(name: string, target: string | undefined, ctx: SimContext): RuleResult {
  const index = (name === 'jump' || name === 'goto') && target !== undefined ? chainIndexNamed(ctx.index, ctx.table, target) : undefined;
  if (!index) return resultOf(verdictOf(name, target));
  if (name === 'jump') return (index.jump ??= { matched: true, name, verdict: verdictOf(name, target), to: index });
  return (index.goto ??= { matched: true, name: 'goto', verdict: verdictOf(name, target), to: index });
}

/** Records that nftsim could not model something of the current rule, and what it assumed. */
export function reportUnsupported(ctx: SimContext, reason: string, at = currentRule(ctx) ?? ctx.chain): void {
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

export function isTest(stmt: Stmt): boolean {
  return stmt.kind === 'match' || stmt.kind === 'vmap' || ((stmt.kind === 'xt' || stmt.kind === 'xt-extension') && stmt.type === 'match') || (stmt.kind === 'unsupported' && stmt.test === true);
}

/** A rule as nft_do_chain runs its expressions; with indexes on, rules run compiled instead
 * once met (compile-rule.ts runCompiledRule, which does the same). */
export function evaluateRule(rule: Rule, ctx: SimContext): RuleResult {
  for (const stmt of rule.stmts) {
    let result: RuleResult | undefined;
    try {
      result = evaluateStmt(stmt, ctx);
    } catch (error) {
      if (!(error instanceof NotModelled)) throw error;
      reportNotModelled(ctx, error, isTest(stmt));
      if (isTest(stmt)) return NO_MATCH;
      continue;
    }
    if (result) return result;
  }
  return PLAIN_RESULTS.continue;
}

/** The states iptables' `-m conntrack --ctstate` / `-m state --state` names, as bits
 * (xt_conntrack.c XT_CONNTRACK_STATE_*: the conntrack states, and SNAT / DNAT from the entry's
 * status). */
const XT_STATES = { NEW: 1, ESTABLISHED: 2, RELATED: 4, INVALID: 8, UNTRACKED: 16, SNAT: 32, DNAT: 64 } as const;

export const XT_CT_STATE_BITS: Readonly<Record<string, number>> = XT_STATES;

/** The bit of each conntrack state, by nftsim's name of it. */
const XT_STATE_OF: Readonly<Record<CtStateName, number>> = {
  new: XT_STATES.NEW,
  established: XT_STATES.ESTABLISHED,
  related: XT_STATES.RELATED,
  invalid: XT_STATES.INVALID,
  untracked: XT_STATES.UNTRACKED,
};

/** The packet's state as the conntrack match sees it (before conntrack ran:
 * stateBeforeConntrack). */
export function xtCtStateOf(ctx: SimContext): number {
  const ct = ctx.ct;
  if (!ctx.ctAttached) return XT_STATE_OF[stateBeforeConntrack(ctx)];
  let bits = XT_STATE_OF[ct.state];
  if (hasConntrackEntry(ctx)) bits |= (ct.status & IPS.srcNat ? XT_STATES.SNAT : 0) | (ct.status & IPS.dstNat ? XT_STATES.DNAT : 0);
  return bits;
}

/** What a rule reports for a statement nftsim cannot evaluate, and what it assumes. */
export function reportNotModelled(ctx: SimContext, error: NotModelled, test: boolean): void {
  reportUnsupported(ctx, `${error.message}: not modelled; assumed ${test ? 'no match' : 'no effect'}`);
}

/** One statement: undefined to go on with the rule, a result to end it. */
export function evaluateStmt(stmt: Stmt, ctx: SimContext): RuleResult | undefined {
  switch (stmt.kind) {
    case 'match':
      return matchRelational(stmt.expr, ctx) ? undefined : NO_MATCH;
    case 'verdict':
      return verdictResult(stmt.verdict, stmt.target, ctx);
    case 'vmap': {
      const key = lookupKey(stmt.map, stmt.key, ctx);
      if (key === undefined || key === MISSES) return NO_MATCH;
      const element = lookupElement(stmt.map, key, stmt.key, ctx);
      const data = element?.data;
      if (!data || !passesElementStatements(element, stmt.map, ctx)) return NO_MATCH;
      if (data.kind !== 'verdict') throw new NotModelled('verdict map element without a verdict');
      return verdictResult(data.verdict, data.target, ctx);
    }
    case 'counter':
    case 'log':
    case 'last':
    case 'flow-offload':
      // No effect on the first packet's way (a flow is offloaded once established).
      return undefined;
    case 'limit':
      return isLimitPassed(stmt, stmt, ctx) ? undefined : NO_MATCH;
    case 'quota':
      return isQuotaPassed(stmt, stmt, ctx) ? undefined : NO_MATCH;
    case 'ct-count':
      return isCtCountPassed(stmt, stmt, ctx) ? undefined : NO_MATCH;
    case 'meta-set':
      if (stmt.key === 'nftrace' || stmt.key === 'priority') {
        // skb->nf_trace (a bit) and skb->priority: nothing on the packet's way reads them but
        // `meta nftrace` / `meta priority` (nft_meta.c nft_meta_set_eval).
        const value = evaluateExpr(stmt.value, ctx);
        if (value === undefined) return NO_MATCH;
        const n = integerOf(value, `meta ${stmt.key} set`);
        if (stmt.key === 'nftrace') ctx.pkt.nftrace = n & 1;
        else ctx.pkt.priority = n;
        return undefined;
      }
      if (stmt.key !== 'mark') throw new NotModelled(`meta ${stmt.key} set`);
      {
        // An expression with no value (`ct mark` without a conntrack entry) ends the rule as a
        // mismatch: the expression sets NFT_BREAK (nft_ct.c nft_ct_get_eval), which is not traced.
        const value = evaluateExpr(stmt.value, ctx);
        if (value === undefined) return isIptablesRule(ctx) ? undefined : NO_MATCH;
        ctx.pkt.mark = integerOf(value, 'meta mark set');
      }
      return undefined;
    case 'ct-set': {
      if (stmt.key === 'event' || stmt.key === 'expectation') return undefined; // no effect on this packet's way
      if (stmt.key !== 'mark' && stmt.key !== 'zone' && stmt.key !== 'label') throw new NotModelled(`ct ${stmt.key} set`);
      // A zone of one direction (nf_conntrack_zones.h nf_ct_zone_id): the other direction's tuple
      // is in zone 0, where a reply without a zone of its own finds the connection.
      if (stmt.key === 'zone' && stmt.dir !== undefined) throw new NotModelled(`ct ${stmt.dir} zone set (a zone of one direction; the other's tuple is in zone 0)`);
      const source = evaluateExpr(stmt.value, ctx);
      if (source === undefined) return isIptablesRule(ctx) ? undefined : NO_MATCH;
      if (stmt.key === 'zone') {
        attachZoneTemplate(ctx, integerOf(source, 'ct zone set') & 0xffff);
        return undefined;
      }
      // Without a conntrack entry there is nothing to set (nft_ct.c nft_ct_set_eval), nor in a
      // zone template; iptables' CONNMARK writes a template's mark (xt_connmark.c).
      if (isIptablesRule(ctx) && hasZoneTemplate(ctx)) throw new NotModelled(TEMPLATE_MARK_WRITE);
      if (!ctx.ctAttached || ctx.ct.state === 'invalid' || ctx.ct.state === 'untracked') return undefined;
      if (stmt.key === 'mark') ctx.ct.mark = integerOf(source, 'ct mark set');
      else if (typeof source === 'bigint') ctx.ct.labels = (ctx.ct.labels ?? 0n) | source; // nf_connlabels_replace with the bit's mask
      return undefined;
    }
    case 'payload-set':
      return setPayload(stmt.target, stmt.value, ctx);
    case 'nat': {
      const verdict = setUpNat(planNat(stmt), ctx, undefined);
      return verdict ? resultOf(verdict) : NO_MATCH;
    }
    case 'reject':
      return PLAIN_RESULTS.reject;
    case 'queue':
      return PLAIN_RESULTS.queue;
    case 'notrack':
      // nft_notrack_eval leaves a packet that has an entry: after conntrack found or made one, or
      // `ct zone set` attached a template. Before conntrack, and after it for a packet it found
      // invalid (which it leaves without one), the packet becomes untracked (kernel-checked).
      const hasEntry = ctx.ctAttached ? ctx.ct.state !== 'invalid' : ctx.zoneTemplate !== false;
      if (!hasEntry && ctx.ct.state !== 'untracked') {
        ctx.untrackedFrom = ctx.ct.state;
        ctx.ct.state = 'untracked';
      }
      return undefined;
    case 'set-op':
      return evaluateSetOp(stmt, ctx);
    case 'objref':
      return evaluateObjRef(stmt, ctx);
    case 'xt-extension':
      return evaluateXtExtension(stmt, ctx);
    case 'xt':
      throw new NotModelled(stmt.name ? `xt ${stmt.type} ${stmt.name}` : 'an xt match nft lists as blank (use the iptables-save dump)');
    case 'unsupported':
      throw new NotModelled(`'${stmt.text}'`);
    case 'option-reset':
      // nft_exthdr_tcp_strip_eval: no TCP header breaks the rule; the option found is
      // overwritten with NOPs, as TCPOPTSTRIP does (xt-tcpoptstrip.ts).
      if (ctx.pkt.l4proto !== 6) return NO_MATCH;
      if (stmt.target.option === 'maxseg') stripTcpOptions(ctx.pkt, [TCP_MSS_OPTION]);
      return undefined;
    case 'dup':
      // nft_dup_ipv4/6: a copy goes to the given address or device; the packet itself goes on
      // unchanged. The copy's way is not simulated.
      return undefined;
    case 'tproxy':
      throw new NotModelled('tproxy (whether a transparent socket listens there is not in the host model)');
    case 'fwd':
      throw new NotModelled('fwd (forwarding from the netdev ingress hook ends the packet\'s way there)');
    case 'synproxy':
      throw new NotModelled('synproxy (answers a SYN itself and consumes it)');
    default: {
      const exhaustive: never = stmt;
      return exhaustive;
    }
  }
}

export function verdictOf(name: string, target: string | undefined): Verdict {
  if (name === 'jump' || name === 'goto') {
    if (target === undefined) throw new NotModelled(`${name} without a target`);
    return { name, target, text: `${name} ${target}` };
  }
  if (name === 'continue' || name === 'accept' || name === 'drop' || name === 'queue' || name === 'return') return PLAIN_RESULTS[name].verdict;
  throw new NotModelled(`verdict ${name}`);
}

function integerOf(value: RtValue | undefined, what: string): number {
  if (typeof value !== 'bigint') throw new NotModelled(`${what} with a value that is not an integer`);
  return Number(value & 0xffffffffn);
}

/** A payload statement (`ip dscp set cs1`, `tcp dport set 8080`, `@nh,8,8 set 0x10`): the
 * field changes in the packet (packet-bytes.ts), and later matches see the new value. The kernel
 * rewrites the packet only: the conntrack entry keeps its tuples (a stateless rewrite is not NAT,
 * and later packets of the flow are not rewritten back). A field whose header the packet lacks
 * ends the rule (nft's protocol dependency). */
function setPayload(target: Expr, valueExpr: Expr, ctx: SimContext): RuleResult | undefined {
  if (target.kind === 'tcp-option') return setTcpOption(target, valueExpr, ctx);
  if (target.kind !== 'payload' && target.kind !== 'raw-payload') throw new NotModelled(`${target.kind} set`);
  if (evaluateExpr(target, ctx) === undefined) return NO_MATCH;
  const value = evaluateExpr(valueExpr, ctx);
  if (value === undefined) return NO_MATCH;
  if (typeof value !== 'bigint') throw new NotModelled('payload set with a value that is not an integer');
  writePayload(target, value, ctx);
  return undefined;
}

/** nftsim's TCP packets have no option but an MSS one (the input's, or TCPMSS's). nft's
 * `tcp option … set` changes an option the packet has (nft_exthdr_tcp_set_eval), TCPMSS (which
 * the lowering lists as `tcp option maxseg size set`, xt_TCPMSS.c tcpmss_mangle_packet) inserts
 * it too: into a header without data, at most 536 (IPv4) or 1220 (IPv6), the RFC 879 default,
 * growing the packet by 4 bytes. Neither ever raises an MSS. */
function setTcpOption(target: Extract<Expr, { kind: 'tcp-option' }>, valueExpr: Expr, ctx: SimContext): RuleResult | undefined {
  const p = ctx.pkt;
  const iptables = isIptablesRule(ctx);
  // The value is loaded first: `rt mtu` before routing breaks the rule.
  const value = evaluateExpr(valueExpr, ctx);
  if (value === undefined) return iptables ? undefined : NO_MATCH;
  // Without a TCP header nft's set breaks the rule (nft_tcp_header_pointer); TCPMSS's rule has -p tcp.
  if (p.l4proto !== 6) return iptables ? undefined : NO_MATCH;
  // A raw write into the MSS option the packet carries is not modelled; into one it lacks, it
  // finds nothing to write, as a named one (nft_exthdr_tcp_set_eval).
  if (target.option.startsWith('@') && (p.tcpMss !== undefined || p.tcpNops !== undefined)) throw new NotModelled(`tcp option ${target.option} set`);
  if (target.option !== 'maxseg' || target.field !== 'size') return undefined;
  // TCPMSS inserts into a header without data, its options (the NOPs of a stripped one) aside.
  if (p.tcpMss === undefined && (!iptables || p.length > headersLengthOf(ctx.family, p))) return undefined;
  const mss = integerOf(value, 'tcp option maxseg size set') & 0xffff;
  if (p.tcpMss !== undefined) {
    if (mss < p.tcpMss) p.tcpMss = mss;
    return undefined;
  }
  p.tcpMss = Math.min(mss, ctx.family === 'ip' ? 536 : 1220);
  p.length += TCP_MSS_LENGTH;
  return undefined;
}

/** `ct expectation set "e"` (nft_ct.c nft_ct_expect_obj_eval): a packet whose connection
 * conntrack has not confirmed yet has it expect another, from its reply tuple's source to its
 * destination, of the object's protocol and port, up to the object's `size` per connection; any
 * other packet breaks the rule. Conntrack keeps the expectation once it confirms the connection
 * (simulate-packet.ts confirm); the expected connection is related. */
function expectConnection(object: Extract<StatefulObject, { kind: 'ct-expectation-object' }>, ctx: SimContext): RuleResult | undefined {
  const conn = ctx.conn;
  if (!hasConntrackEntry(ctx) || conn.entry || !conn.tuple) return NO_MATCH;
  const pending = (conn.expectations ??= []);
  if (pending.length >= object.size) return NO_MATCH;
  const family = object.l3proto === 'ip6' ? 'ip6' : object.l3proto === 'ip' ? 'ip' : ctx.family;
  const l4proto = L4_NUMBERS[object.protocol];
  if (l4proto === undefined) throw new NotModelled(`ct expectation of protocol ${object.protocol}`);
  // The reply tuple: the original one inverted, as NAT set up so far left it.
  const reply = ctx.ct.reply;
  const src = reply ? reply.src.n : conn.tuple.dst;
  const dst = reply ? reply.dst.n : conn.tuple.src;
  if (family === ctx.family) pending.push({ family, l4proto, src, dst, dport: object.dport, zone: ctx.ct.zone });
  return undefined;
}

/** `counter name …`, `quota name …`, `limit name …`, `ct helper set …` and the other named
 * stateful objects of the table. */
function evaluateObjRef(stmt: Extract<Stmt, { kind: 'objref' }>, ctx: SimContext): RuleResult | undefined {
  if (stmt.type === 'counter') return undefined;
  const nameValue = stmt.name.kind === 'literal' ? stmt.name.text : undefined;
  if (nameValue === undefined) throw new NotModelled(`${stmt.type} object chosen by a map`);
  const object = ctx.table.objects.find((o) => o.name === nameValue);
  if (!object) throw new NotModelled(`${stmt.type} object "${nameValue}" is not defined in table ${ctx.table.family} ${ctx.table.name}`);
  switch (object.kind) {
    case 'quota-object':
      return isQuotaPassed({ over: object.over, amount: object.bytes, unit: 'bytes', ...(object.used !== undefined && { used: object.used }) }, object, ctx) ? undefined : NO_MATCH;
    case 'limit-object':
      return isLimitPassed(object.limit, object, ctx) ? undefined : NO_MATCH;
    case 'ct-expectation-object':
      return expectConnection(object, ctx);
    case 'ct-helper-object':
    case 'ct-timeout-object':
      // A helper (which acts on the connection's payload and expected connections, nft_ct.c
      // nft_ct_helper_obj_eval) or a timeout policy: no effect on this packet's way; `ct helper`
      // reads the master connection's, not this one's (evaluate-expr.ts).
      return undefined;
    default:
      throw new NotModelled(`${stmt.type} object`);
  }
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
  if (stmt.type === 'match') {
    const matched = matchXt(stmt, ctx);
    return matched ? undefined : NO_MATCH;
  }
  if (stmt.name === 'CHECKSUM') return undefined; // fills in a partial checksum: no effect on the way
  if (stmt.name === 'NETMAP') return runNetmapTarget(stmt, ctx);
  if (stmt.name === 'DNAT' || stmt.name === 'SNAT' || stmt.name === 'MASQUERADE') return runShiftedNatTarget(stmt, ctx);
  const effect = XT_TARGET_EFFECTS[stmt.name];
  if (effect) {
    effect(stmt, ctx);
    return undefined;
  }
  if (stmt.name === 'CONNMARK' && (option('save-mark') || option('restore-mark'))) {
    // The masked and shifted forms the lowering keeps as xt (xt_connmark.c connmark_tg_shift):
    // save: ctmark = (ctmark & ~ctmask) ^ shifted(mark & nfmask); restore: mark = (mark &
    // ~nfmask) ^ shifted(ctmark & ctmask); `--mask` sets both masks. No conntrack entry: no
    // effect.
    const { nfmask, ctmask } = connmarkMasks(stmt.options);
    const left = optionNumber(stmt.options, 'left-shift-mark');
    const right = optionNumber(stmt.options, 'right-shift-mark');
    const shifted = (v: number): number => (left !== undefined ? v << left : right !== undefined ? v >>> right : v) >>> 0;
    const ctMark = ctMarkOf(ctx);
    if (ctMark === undefined) return undefined;
    if (option('save-mark')) {
      if (!hasConntrackEntry(ctx)) throw new NotModelled(TEMPLATE_MARK_WRITE);
      ctx.ct.mark = ((ctMark & ~ctmask) ^ shifted(ctx.pkt.mark & nfmask)) >>> 0;
    } else ctx.pkt.mark = ((ctx.pkt.mark & ~nfmask) ^ shifted(ctMark & ctmask)) >>> 0;
    return undefined;
  }
  throw new NotModelled(XT_NOT_MODELLED[stmt.name] ?? `iptables target ${stmt.name}`);
}

/** The xt targets kept as xt whose effect is on the packet or its conntrack template, and
 * which go on to the next rule (XT_CONTINUE). */
const XT_TARGET_EFFECTS: Readonly<Record<string, (stmt: XtExtensionStmt, ctx: SimContext) => void>> = {
  SET: runSetTarget,
  TTL: setHopLimit,
  HL: setHopLimit,
  TOS: setTos,
  ECN: setEcn,
  CT: runCtTarget,
  HMARK: runHmarkTarget,
  TCPOPTSTRIP: runTcpOptStripTarget,
};

/** xt_HL.c ttl_tg and hl_tg6: the IPv4 TTL (TTL, an ip table's) or the IPv6 hop limit (HL, an
 * ip6 table's) set to the option's value, or raised or lowered by it within 0-255. The routing
 * decision after prerouting reads the new value (ip_forward drops at 1 or less). */
function setHopLimit(stmt: XtExtensionStmt, ctx: SimContext): void {
  const [o] = stmt.options;
  const prefix = stmt.name === 'TTL' ? 'ttl' : 'hl';
  if (stmt.options.length !== 1 || o?.value.type !== 'number') throw new NotModelled(`iptables target ${stmt.name} without one --${prefix}-set, --${prefix}-inc or --${prefix}-dec`);
  const n = o.value.n;
  const p = ctx.pkt;
  if (o.name === `${prefix}-set`) p.ttl = n;
  else if (o.name === `${prefix}-inc`) p.ttl = Math.min(255, p.ttl + n);
  else if (o.name === `${prefix}-dec`) p.ttl = Math.max(0, p.ttl - n);
  else throw new NotModelled(`iptables target ${stmt.name} --${o.name}`);
}

/** A template is shared: xt_CT's by every packet of its rule, nft's per CPU, and conntrack does
 * not copy its mark into the entry it makes (init_conntrack), so what CONNMARK writes there is
 * read by later packets, on whichever CPU. */
const TEMPLATE_MARK_WRITE = 'CONNMARK writing the mark of a conntrack zone template (the kernel keeps it in the shared template for later packets)';

/** Why an xt extension is not modelled: the state or host facts it depends on. */
const XT_NOT_MODELLED: Readonly<Record<string, string>> = {
  physdev: 'iptables match physdev (bridge ports are not in the host model)',
  string: 'iptables match string (the packet payload is not in the packet model)',
  bpf: 'iptables match bpf (a BPF program)',
  owner: 'iptables match owner (the socket owner of a locally generated packet)',
  devgroup: 'iptables match devgroup by a group name of /etc/iproute2/group, which a capture does not include',
};

/** The xt matches iptables-nft keeps as xt expressions that nftsim gives their semantics. */
function matchXt(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  const option = (name: string) => stmt.options.find((o) => o.name === name);
  switch (stmt.name) {
    case 'conntrack':
    case 'state': {
      // xt_conntrack.c conntrack_mt: `--ctstate` mixing SNAT/DNAT with states tests one bit
      // mask: the state's bit, plus SNAT/DNAT from the status (no entry: INVALID, notrack:
      // UNTRACKED); `!` inverts.
      if (stmt.options.length !== 1) throw new NotModelled(`iptables match ${stmt.name} with ${stmt.options.map((o) => o.name).join(', ')}`);
      const o = stmt.options[0]!;
      if ((o.name !== 'ctstate' && o.name !== 'state') || o.value.type !== 'names') throw new NotModelled(`iptables match ${stmt.name} --${o.name}`);
      const bits = xtCtStateOf(ctx);
      return o.value.names.some((n) => (bits & (XT_CT_STATE_BITS[n] ?? 0)) !== 0) !== o.negated;
    }
    case 'set':
      return matchIpset(stmt, ctx);
    case 'connlimit':
      return matchConnlimit(stmt, ctx);
    case 'hashlimit':
      return matchHashlimit(stmt, ctx);
    case 'policy': {
      // xt_policy.c: nftsim's packets have no IPsec (no secpath, no xfrm bundle): `--pol none`
      // matches, `--pol ipsec` does not.
      const pol = option('pol');
      if (pol?.value.type !== 'names') throw new NotModelled('iptables match policy without --pol');
      return pol.value.names.includes('none') !== pol.negated;
    }
    case 'rpfilter':
      return matchRpfilter(stmt, ctx);
    case 'recent':
      return matchRecent(stmt, ctx);
    case 'connlabel':
      return matchConnlabel(stmt, ctx);
    case 'cluster':
      return matchCluster(stmt, ctx);
    case 'icmp':
    case 'icmp6':
      return matchIcmp(stmt, ctx);
    case 'u32':
      return matchU32(stmt, ctx);
    case 'tos':
      return matchTos(stmt, ctx);
    case 'socket':
      // xt_socket.c: a packet to a non-local address has no socket (the host model lists none).
      if (ctx.iif !== undefined && !localInterfaceOf(ctx.host, ctx.pkt.dst)) return false;
      throw new NotModelled('iptables match socket (the host model has no sockets)');
    default:
      throw new NotModelled(XT_NOT_MODELLED[stmt.name] ?? `iptables match ${stmt.name}`);
  }
}

/** The icmp and icmp6 matches the lowering keeps as xt (`! --icmp-type any`, a negated code
 * range): ip_tables.c icmp_type_code_match, `(type 255 (any, IPv4 only) || type == t && min <=
 * code <= max) ^ invert`, of the header after the `-p icmp` the match requires. */
function matchIcmp(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  const [o] = stmt.options;
  if (stmt.options.length !== 1 || o?.value.type !== 'icmp-type' || o.value.icmpType === undefined) throw new NotModelled(`iptables match ${stmt.name} without one --icmp-type`);
  const { icmpType, code } = o.value;
  const p = ctx.pkt;
  if (p.icmpType === undefined) throw new NotModelled(`iptables match ${stmt.name} of a packet that is not ICMP`);
  const packetCode = p.icmpCode ?? 0;
  const any = stmt.name === 'icmp' && icmpType === 0xff;
  return (any || (p.icmpType === icmpType && packetCode >= (code?.from ?? 0) && packetCode <= (code?.to ?? 0xff))) !== o.negated;
}

/** xt_rpfilter.c rpfilter_mt (prerouting only): a packet from lo passes; otherwise the route
 * back to the source must be unicast through the input interface (`--loose`: any interface), a
 * local source passing only with `--accept-local`; `--invert` inverts. */
function matchRpfilter(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  const flag = (name: string): boolean => stmt.options.some((o) => o.name === name);
  const invert = flag('invert');
  if (ctx.iif === undefined) throw new NotModelled('iptables match rpfilter outside prerouting');
  if (ctx.iif === 'lo') return !invert;
  if (flag('validmark')) throw new NotModelled('iptables match rpfilter --validmark (policy routing)');
  let passed: boolean;
  if (localInterfaceOf(ctx.host, ctx.pkt.src)) passed = flag('accept-local');
  else {
    // xt_rpfilter.c: from LOOPBACK_IFINDEX, the mark only with --validmark (refused above).
    const route = lookupRoute(ctx.host, ctx.pkt.src, { ...HOST_KEY, src: ctx.pkt.dst });
    // The route back counts when any of its nexthops uses the input interface
    // (rpfilter_lookup_reverse: fib_info_nh_uses_dev).
    passed = route !== undefined && (flag('loose') || routeUsesDevice(route, ctx.iif));
  }
  return passed !== invert;
}

export function formatEndpoint(address: string, port: string | undefined, family: 'ip' | 'ip6'): string {
  if (port === undefined) return address;
  return family === 'ip6' ? `[${address}]:${port}` : `${address}:${port}`;
}

function natText(value: NatValue, format: (n: bigint) => string): string {
  return value.low === value.high ? format(value.low) : `${format(value.low)}-${format(value.high)}`;
}

/** Turns a NAT address or port expression into a value: a range, a prefix (nft gives the kernel
 * its first and last address), a map's element whose data is either, or a single value. */
function natValue(expr: Expr | undefined, ctx: SimContext): NatValue | undefined {
  if (!expr) return undefined;
  if (expr.kind === 'map') {
    const data = mapData(expr, ctx);
    return data && natValue(data, ctx);
  }
  if (expr.kind === 'range') {
    const low = natPart(expr.low, ctx);
    const high = natPart(expr.high, ctx);
    if (typeof low !== 'bigint' || typeof high !== 'bigint') throw new NotModelled('NAT range');
    return { low, high };
  }
  if (expr.kind === 'prefix') {
    const base = natPart(expr.expr, ctx);
    if (typeof base !== 'bigint') throw new NotModelled('NAT prefix');
    const bits = familyBits(ctx.family);
    const mask = prefixMask(bits, expr.length);
    return { low: base & mask, high: (base & mask) | (((1n << BigInt(bits)) - 1n) ^ mask) };
  }
  const value = natPart(expr, ctx);
  if (typeof value !== 'bigint') throw new NotModelled('NAT target that is not a single value');
  return { low: value, high: value };
}

/** A NAT address or port: nft types `dnat to 10.0.0.1:80` from the table family, which the
 * model leaves untyped in an inet table or without `ip`; read such a literal by its spelling. */
function natPart(expr: Expr, ctx: SimContext): RtValue | undefined {
  return literalNatPart(expr) ?? evaluateExpr(expr, ctx);
}

function literalNatPart(expr: Expr): bigint | undefined {
  if (expr.kind === 'literal' && !expr.value) {
    const address = parseAddress(expr.text);
    if (address) return address.n;
    if (/^\d+$/.test(expr.text)) return BigInt(expr.text);
  }
  return undefined;
}

/** What natValue gives for a single literal (the same for every packet), undefined when it is
 * not one or evaluating it throws (then it is evaluated per packet, and throws there). */
function natConstant(expr: Expr | undefined): bigint | undefined {
  if (expr?.kind !== 'literal') return undefined;
  const value = literalNatPart(expr) ?? constantOf(expr);
  return typeof value === 'bigint' ? value : undefined;
}

/** What setUpNat reads of a NAT statement, worked out once (planNat): a compiled rule keeps the
 * plan of its NAT statement (compile-rule.ts), so that a packet reads one object where the
 * statement, its flags and its literals are several, cold in memory when packets meet many
 * rules. */
export interface NatPlan {
  readonly wants: NatManip;
  readonly type: NatStmt['type'];
  readonly family: NatStmt['family'];
  /** `random` or `fully-random`. */
  readonly random: boolean;
  readonly persistent: boolean;
  /** The address is looked up in a map, or gives the address and the port together. */
  readonly mapped: boolean;
  /** `prefix`: the range maps networks, host part kept (netmapped). */
  readonly netmap: boolean;
  /** The key of the map the address is looked up in. */
  readonly mapKey: Expr | undefined;
  readonly addr: Expr | undefined;
  readonly port: Expr | undefined;
  /** The port when it is a range (of which DNAT may keep the packet's port). */
  readonly portRange: Extract<Expr, { kind: 'range' }> | undefined;
  /** The literal address and port, the same for every packet (natConstant); else evaluated. */
  readonly constantAddress: NatValue | undefined;
  readonly constantPort: NatValue | undefined;
  /** The literal port as the packet gets it and as the NAT event shows it. */
  readonly constantPortNumber: number | undefined;
  readonly constantPortText: string | undefined;
  /** iptables' shifted port range (xt-shifted-nat.ts): the base the kernel shifts from. */
  readonly shiftBase: number | undefined;
  /** The address a literal, masquerade or redirect last rewrote a packet to, and its text, kept
   * for what it was made for (`madeFor`): the literal address for a family (every packet's, but
   * in an inet table), or the host address masquerade or redirect took (the same for the packets
   * through one interface). An address is never changed once made, so packets share it. */
  to: NatTo | undefined;
}

interface NatTo {
  readonly madeFor: AddressFamily | Address;
  readonly address: Address;
  readonly text: string;
}

/** `plan.to` when made for `madeFor`, else a new one kept there. */
function natTo(plan: NatPlan, madeFor: AddressFamily | Address, family: AddressFamily, n: bigint): NatTo {
  if (plan.to?.madeFor === madeFor) return plan.to;
  const address: Address = { family, n };
  return (plan.to = { madeFor, address, text: formatAddress(address) });
}

/** Where redirect sends a received IPv6 packet (host.ts ipv6RedirectAddress). Every interface
 * has a link-local address, which a host description may leave out: a link-local destination
 * with none listed is not modelled. */
function ipv6Redirect(ctx: SimContext, dev: string): Address | undefined {
  const own = ipv6RedirectAddress(ctx.host, dev, ctx.pkt.dst);
  if (!own && ipv6Scope(ctx.pkt.dst.n) === 'link') throw new NotModelled(`redirect of a link-local destination: the host description lists no link-local address on ${dev}`);
  return own;
}

/** Where redirect sends a locally generated packet (nf_nat_redirect.c: the loopback address). */
const LOCAL_REDIRECT: Readonly<Record<AddressFamily, Address>> = { ip: parseAddress('127.0.0.1')!, ip6: parseAddress('::1')! };

export function planNat(stmt: NatStmt): NatPlan {
  const constant = (expr: Expr | undefined): NatValue | undefined => {
    const value = natConstant(expr);
    return value === undefined ? undefined : { low: value, high: value };
  };
  const constantPort = constant(stmt.port);
  return {
    wants: stmt.type === 'dnat' || stmt.type === 'redirect' ? 'dst' : 'src',
    type: stmt.type,
    family: stmt.family,
    random: stmt.flags.includes('random') || stmt.flags.includes('fully-random'),
    persistent: stmt.flags.includes('persistent'),
    mapped: stmt.form === 'addr . port' || stmt.addr?.kind === 'map',
    netmap: stmt.form === 'prefix',
    mapKey: stmt.addr?.kind === 'map' ? stmt.addr.key : undefined,
    addr: stmt.addr,
    port: stmt.port,
    portRange: stmt.port?.kind === 'range' ? stmt.port : undefined,
    constantAddress: constant(stmt.addr),
    constantPort,
    constantPortNumber: constantPort && Number(constantPort.low),
    constantPortText: constantPort && String(constantPort.low),
    shiftBase: undefined,
    to: undefined,
  };
}

/** `snat ip prefix to …` (NF_NAT_RANGE_NETMAP, nf_nat_core.c find_best_ips_proto): the address
 * keeps its host part and takes the network part of the range's first address, the network
 * being where the range's first and last addresses agree. */
function netmapped(address: bigint, range: NatValue, family: AddressFamily): NatValue {
  const all = (1n << BigInt(familyBits(family))) - 1n;
  const netmask = all ^ (range.low ^ range.high);
  const mapped = (address & (all ^ netmask)) | (range.low & netmask);
  return { low: mapped, high: mapped };
}

/** Sets up a NAT mapping as nf_nat_setup_info does and returns the verdict the nat expressions
 * return (NF_ACCEPT: a NAT statement ends its chain, nft_nat.c nft_nat_eval). The packet is
 * rewritten now: the chain ends here and later nat chains at this hook are skipped, so only
 * the chains after the NAT hook see it, as after nf_nat_packet. Undefined: a map had no element
 * for the packet, so the rule does not match. */
export function setUpNat(plan: NatPlan, ctx: SimContext, at: Loc | undefined): Verdict | undefined {
  const manip = NAT_MANIP[ctx.hook];
  const wants = plan.wants;
  if (manip !== wants) throw new NotModelled(`${plan.type} at the ${ctx.hook} hook (the kernel refuses it there)`);
  // A map's key is loaded before the NAT runs: `ip daddr` of an IPv6 packet breaks the rule
  // (nft's implicit `meta nfproto ipv4` dependency) before nft_nat_inet_eval's family check.
  if (plan.mapKey && evaluateExpr(plan.mapKey, ctx) === undefined) return undefined;
  if (plan.family && plan.family !== ctx.family) return PLAIN_RESULTS.continue.verdict;
  const family = ctx.family;
  const p = ctx.pkt;
  let addressValue = plan.constantAddress;
  let portValue = plan.constantPort;
  let portExpr = plan.port;
  // `dnat ip addr . port to ip daddr . tcp dport map @m` (kube-proxy nftables mode): the map's
  // data is an address and a port.
  if (plan.mapped) {
    // No element for the key: NFT_BREAK, the rule does not match (nft_lookup.c).
    const data = plan.addr?.kind === 'map' ? mapData(plan.addr, ctx) : plan.addr;
    if (data === undefined) return undefined;
    if (data.kind === 'range' || data.kind === 'prefix') addressValue = natValue(data, ctx);
    else {
      const both = readMapData(data, ctx);
      if (Array.isArray(both) && both.length === 2 && typeof both[0] === 'bigint' && typeof both[1] === 'bigint') {
        addressValue = { low: both[0], high: both[0] };
        portValue = { low: both[1], high: both[1] };
        portExpr = undefined;
        // The address alone: kept, so that the element (and its statements) is not looked up
        // again below.
      } else if (typeof both === 'bigint') addressValue = { low: both, high: both };
      else if (both === undefined) return undefined;
    }
  }
  let own: Address | undefined;
  let addresses: NatValue;
  if (plan.type === 'masquerade' || plan.type === 'redirect') {
    // A local packet from 0.0.0.0 (a DHCP client's) is accepted, not masqueraded
    // (nf_nat_masquerade_ipv4); the NAT hook's null binding follows.
    // The tuple's source, as everywhere NAT reads the connection (natView).
    if (plan.type === 'masquerade' && family === 'ip' && ctx.ct.original.src.n === 0n) return PLAIN_RESULTS.accept.verdict;
    const dev = plan.type === 'masquerade' ? ctx.oif : ctx.iif;
    own =
      dev === undefined
        ? LOCAL_REDIRECT[family]
        : plan.type === 'masquerade'
          ? masqueradeSource(ctx.host, dev, p.dst, () => nexthopOf(ctx))
          : family === 'ip6'
            ? ipv6Redirect(ctx, dev)
            : primaryAddress(ctx.host, dev, family);
    // No address to give: the kernel drops (nf_nat_masquerade.c, nf_nat_redirect.c: NF_DROP).
    if (!own) return PLAIN_RESULTS.drop.verdict;
    addresses = { low: own.n, high: own.n };
  } else if (plan.addr === undefined) {
    // Ports only (`--to-destination :8080`): no NF_NAT_RANGE_MAP_IPS, so find_best_ips_proto
    // leaves the tuple's address as it is.
    const current = natView(ctx)[wants];
    addresses = { low: current.n, high: current.n };
  } else {
    const a = addressValue ?? natValue(plan.addr, ctx);
    if (!a) throw new NotModelled(`${plan.type} without an address`);
    addresses = a;
  }
  const ports = portValue ?? natValue(portExpr, ctx);
  const view = natView(ctx);
  if (plan.netmap) addresses = netmapped((wants === 'dst' ? view.dst : view.src).n, addresses, family);
  const chosen = uniqueTuple({ wants, pkt: view, zone: ctx.ct.zone, addresses, ports, random: plan.random, persistent: plan.persistent, shiftBase: plan.shiftBase }, ctx.conn.table);
  let address: Address;
  let addressText: string;
  if (own && chosen.address === own.n) ({ address, text: addressText } = natTo(plan, own, family, own.n));
  else if (addressValue !== undefined && addressValue === plan.constantAddress && chosen.address === addressValue.low) {
    ({ address, text: addressText } = natTo(plan, family, family, addressValue.low));
  } else {
    address = { family, n: chosen.address };
    addressText = formatAddress(address);
  }
  const rewrite = natField(p, wants);
  const oldPort = natKeyOf(view, wants);
  if (rewrite === 'icmpId' && chosen.port !== undefined && chosen.port !== oldPort) checkIdentifierMovable(p);
  let portText: string | undefined;
  let newPort = oldPort;
  if (typeof chosen.port === 'number') {
    // The event shows a port that was given, or that the kernel changed.
    if (ports || chosen.port !== oldPort) portText = chosen.port === plan.constantPortNumber ? plan.constantPortText : String(chosen.port);
    newPort = chosen.port;
  } else if (chosen.port) {
    if (ports && ports.low !== ports.high) reportUnsupported(ctx, 'NAT to a port range: the kernel picks the port; the trace shows the range');
    portText = natText(chosen.port, String);
    newPort = portText;
  }
  // An ICMP identifier is no port of the address NAT maps to: the packet shows it.
  const endpointPort = rewrite === 'icmpId' ? undefined : portText;
  mapConnection(ctx, wants, view, address, newPort, { type: plan.type, to: formatEndpoint(addressText, endpointPort, family), at: at ?? locOf(currentRule(ctx)!) });
  return PLAIN_RESULTS.accept.verdict;
}

/** The connection's tuple as NAT maps it (get_unique_tuple's orig_tuple: the original tuple
 * with the manipulations set up so far), not the packet: a rule after conntrack's place may have
 * rewritten the packet's addresses or ports, which the tuple does not follow. */
function natView(ctx: SimContext): NatRequest['pkt'] {
  const l4proto = ctx.pkt.l4proto;
  const { original, reply } = ctx.ct;
  const icmp = natField(ctx.pkt, 'src') === 'icmpId';
  // One shape for every view (a tenth of a kube-proxy packet's time went to making views of
  // several); the current tuple is the reply one inverted once a manipulation is set up.
  if (!reply) return viewOf(original.src, original.dst, l4proto, original.sport, original.dport, icmp);
  if (!icmp) return viewOf(reply.dst, reply.src, l4proto, reply.dport, reply.sport, false);
  const { sport, dport } = invertTransport({ l4proto, sport: reply.sport, dport: reply.dport });
  return viewOf(reply.dst, reply.src, l4proto, sport, dport, true);
}

/** A NAT view of a tuple's parts: the ports, or an ICMP query's identifier (sport) and type and
 * code (dport, `type << 8 | code`). */
function viewOf(src: Address, dst: Address, l4proto: number, sport: number | string | undefined, dport: number | string | undefined, icmp: boolean): NatRequest['pkt'] {
  if (icmp && typeof dport === 'number') return { src, dst, l4proto, sport: undefined, dport: undefined, icmpType: dport >> 8, icmpCode: dport & 0xff, icmpId: sport };
  return { src, dst, l4proto, sport, dport, icmpType: undefined, icmpCode: undefined, icmpId: undefined };
}

/** The null binding nf_nat_inet_fn sets up at a NAT hook for a new connection no nat chain
 * mapped there (nf_nat_alloc_null_binding): a mapping to the address the packet has, marked done
 * for later hooks. It goes through get_unique_tuple too, so a source whose tuple is another
 * connection's already gets another port, as with masquerade: a client that reached one server
 * through two DNATs from the same port. A destination port cannot move without a range; an ICMP
 * query's identifier can, at either hook (nf_nat_l4proto_unique_tuple): a host answering an echo
 * it masqueraded for another client, with the same identifier, sends its own with another one. */
export function setUpNullBinding(ctx: SimContext, manip: NatManip): void {
  const p = ctx.pkt;
  const isNew = (ctx.natDone & NAT_DONE[manip]) === 0 && ctx.conn.tuple !== undefined && !ctx.conn.entry;
  ctx.natDone |= NAT_DONE[manip];
  if (!isNew || ctx.conn.table.entries.length === 0) return;
  const rewrite = natField(p, manip);
  if (manip === 'dst' && rewrite !== 'icmpId') return;
  const view = natView(ctx);
  const address = manip === 'dst' ? view.dst : view.src;
  const { port } = uniqueTuple({ wants: manip, pkt: view, zone: ctx.ct.zone, addresses: { low: address.n, high: address.n }, ports: undefined, random: false, persistent: false }, ctx.conn.table);
  if (port === undefined || port === natKeyOf(view, manip)) return;
  checkIdentifierMovable(p);
  const picked = typeof port === 'number' ? port : natText(port, String);
  const to = formatEndpoint(formatAddress(address), rewrite === 'icmpId' ? undefined : String(picked), ctx.family);
  mapConnection(ctx, manip, view, address, picked, { type: manip === 'dst' ? 'dnat' : 'snat', to });
}

/** NAT moves an ICMPv6 node information query's identifier in the conntrack tuple only: the
 * packet's bytes there are its Qtype, which icmpv6_manip_pkt rewrites for echoes alone
 * (nf_nat_proto.c), so the packet and its connection no longer agree. */
function checkIdentifierMovable(p: PacketState): void {
  if (isNodeInformation(p)) throw new NotModelled('NAT moving an ICMPv6 node information query\'s identifier (the kernel moves it in the conntrack tuple, not in the packet)');
}

/** An ICMPv6 node information query or response (RFC 4620), whose bytes 4-5 conntrack reads as
 * its identifier. */
export function isNodeInformation(p: PacketState): boolean {
  return p.l4proto === L4_NUMBERS.icmpv6 && (p.icmpType === ICMPV6_NODE_INFORMATION.query || p.icmpType === ICMPV6_NODE_INFORMATION.response);
}

/** ICMPv6 node information query and response types (RFC 4620). */
const ICMPV6_NODE_INFORMATION = { query: 139, response: 140 } as const;

/** The connection is mapped (nf_nat_setup_info): its tuple (`view`) goes to (DNAT) or comes from
 * (SNAT) `address` and `port`, the packet too when that changes the tuple, the entry's reply
 * tuple expects that (nf_conntrack_alter_reply, for `ct reply saddr` and friends), and the
 * manipulation is done. */
function mapConnection(ctx: SimContext, wants: NatManip, view: NatRequest['pkt'], address: Address, port: number | string | undefined, event: NatEvent): void {
  const p = ctx.pkt;
  const field = natField(p, wants);
  // nf_nat_setup_info marks the entry SNAT/DNAT only when the new tuple differs from the old, and
  // nf_nat_packet rewrites the packet's side from the new tuple only then: a rule's rewrite of
  // the packet after conntrack stays otherwise.
  const changed = (wants === 'dst' ? view.dst : view.src).n !== address.n || natKeyOf(view, wants) !== port;
  if (changed) {
    if (wants === 'dst') p.dst = address;
    else p.src = address;
    // icmpv6_manip_pkt writes the identifier of echoes only (checkIdentifierMovable).
    if (port !== undefined && !isNodeInformation(p)) p[field] = port;
    ctx.ct.status |= wants === 'dst' ? IPS.dstNat : IPS.srcNat;
  }
  // The new tuple inverted: the view with this side mapped.
  const { sport, dport } = replyTransport(view, wants, port);
  ctx.ct.reply = { src: wants === 'dst' ? address : view.dst, dst: wants === 'src' ? address : view.src, sport, dport };
  ctx.natDone |= NAT_DONE[wants];
  ctx.conn.mapped[wants] = { addr: address, port };
  ctx.nat.push(event);
}
