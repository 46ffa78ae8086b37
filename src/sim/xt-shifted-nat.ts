// iptables' DNAT, SNAT and MASQUERADE with a shifted port range (`--to-destination
// 10.0.0.1:1000-2000/70`, NF_NAT_RANGE_PROTO_OFFSET): nft has no spelling for it (libxt_NAT.c
// __NAT_xlate gives up), so the target stays xt and runs here as its NAT statement
// (src/model/xt-nat-statement.ts) with the base the kernel gets, from which
// nf_nat_l4proto_unique_tuple shifts the port instead of keeping it (unique-tuple.ts).

import type { XtExtensionStmt } from '../model/ast.js';
import { xtNatRange, xtNatShiftBase, xtNatStatement } from '../model/xt-nat-statement.js';
import { NO_MATCH, planNat, resultOf, setUpNat, type NatPlan, type RuleResult } from './evaluate-stmt.js';
import { NotModelled, type SimContext } from './sim-context.js';

const PLANS = new WeakMap<XtExtensionStmt, NatPlan>();

export function runShiftedNatTarget(stmt: XtExtensionStmt, ctx: SimContext): RuleResult {
  let plan = PLANS.get(stmt);
  if (!plan) PLANS.set(stmt, (plan = planShiftedNat(stmt, ctx.family)));
  const verdict = setUpNat(plan, ctx, undefined);
  return verdict ? resultOf(verdict) : NO_MATCH;
}

function planShiftedNat(stmt: XtExtensionStmt, family: 'ip' | 'ip6'): NatPlan {
  const shiftBase = xtNatShiftBase(stmt.name, xtNatRange(stmt.options));
  const nat = xtNatStatement(stmt.name, stmt.options, family, stmt.span);
  if (!nat || shiftBase === undefined) throw new NotModelled(`iptables target ${stmt.name} kept as xt without a shifted port range`);
  return { ...planNat(nat), shiftBase };
}
