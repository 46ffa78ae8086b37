// iptables' NETMAP target (xt_NETMAP.c netmap_tg4, netmap_tg6): at prerouting and output the
// destination, at input and postrouting the source, keeps its host part and takes the network
// part of --to, the ports untouched. That is nft's `dnat ip prefix to` / `snat ip prefix to`
// (NF_NAT_RANGE_NETMAP), which evaluate-stmt.ts models: the target runs as that statement, the
// kind picked by the hook as the kernel picks it at run time (a user chain may be reached from
// either).

import type { NatStmt, XtExtensionStmt } from '../model/ast.js';
import { typeLiteral } from '../model/datatypes.js';
import { NO_MATCH, planNat, resultOf, setUpNat, type NatPlan, type RuleResult } from './evaluate-stmt.js';
import { NotModelled, type SimContext } from './sim-context.js';

const PLANS = new WeakMap<XtExtensionStmt, { dnat?: NatPlan; snat?: NatPlan }>();

export function runNetmapTarget(stmt: XtExtensionStmt, ctx: SimContext): RuleResult {
  const type = ctx.hook === 'prerouting' || ctx.hook === 'output' ? 'dnat' : 'snat';
  let plans = PLANS.get(stmt);
  if (!plans) PLANS.set(stmt, (plans = {}));
  const plan = (plans[type] ??= planNat(netmapStatement(stmt, type)));
  const verdict = setUpNat(plan, ctx, undefined);
  return verdict ? resultOf(verdict) : NO_MATCH;
}

function netmapStatement(stmt: XtExtensionStmt, type: 'dnat' | 'snat'): NatStmt {
  const to = stmt.options.find((o) => o.name === 'to')?.value;
  if (to?.type !== 'address' || to.address.type === 'hostname' || to.address.mask !== undefined) {
    throw new NotModelled('NETMAP --to that is not an address or a prefix');
  }
  const { address, type: addressType, prefixLength } = to.address;
  const family = addressType === 'ipv4' ? 'ip' : 'ip6';
  const span = stmt.span;
  const literal = typeLiteral({ kind: 'literal', span, text: address }, addressType === 'ipv4' ? 'ipv4_addr' : 'ipv6_addr');
  const addr = { kind: 'prefix' as const, span, expr: literal, length: prefixLength ?? (family === 'ip' ? 32 : 128) };
  return { kind: 'nat', span, type, family, form: 'prefix', addr, flags: [] };
}
