// The conntrack template nft's `ct zone set` and iptables' CT target attach to a packet before
// conntrack (nft_ct.c nft_ct_set_zone_eval, xt_CT.c xt_ct_target): conntrack then looks the
// packet up, and makes its entry, in the template's zone. `CT --zone mark` makes a template
// whose zone is the packet's mark as conntrack finds it (NF_CT_FLAG_MARK, nf_conntrack_zones.h
// nf_ct_zone_tmpl: the mark's low 16 bits, read in nf_conntrack_in, not when the target ran).

import { isIptablesRule, NotModelled, type SimContext } from './sim-context.js';

/** A zone number (16 bits), or `mark`: the packet's mark when conntrack looks it up. */
export type TemplateZone = number | 'mark';

/** Attaches a template with `zone`, unless the packet has one or an entry: only a packet
 * conntrack has not seen yet gets it; once it has an entry, or a template, nothing changes: the
 * first zone stays. An untracked packet has none (nf_ct_get), so nft's template replaces what
 * notrack did; iptables' CT (xt_CT.c xt_ct_target) leaves a packet with anything attached
 * (`skb->_nfct != 0`), untracked too (kernel-checked). `what` names the statement for what is
 * not modelled. */
export function attachZoneTemplate(ctx: SimContext, zone: TemplateZone, what = 'ct zone set'): void {
  const untrackedKept = ctx.ct.state === 'untracked' && isIptablesRule(ctx);
  // After conntrack, a packet it left without an entry (invalid, or untracked) gets the
  // template too, with ctinfo NEW, and the nat chains of later NAT hooks run for it
  // (nf_nat_inet_fn asks only for an entry; seen on Linux 6.18). nftsim has no model of a
  // template in place of an entry (docs/simulator-limits.md): it says so.
  if (ctx.ctAttached && !ctx.zoneTemplate && !untrackedKept && (ctx.ct.state === 'invalid' || ctx.ct.state === 'untracked')) {
    throw new NotModelled(`${what} on a packet conntrack left ${ctx.ct.state === 'invalid' ? 'invalid' : 'untracked'}: the kernel attaches a zone template, and later nat chains run for it`);
  }
  if (ctx.ctAttached || ctx.zoneTemplate || untrackedKept) return;
  // A packet the input gave as untracked: what conntrack makes of it is not known.
  if (ctx.ct.state === 'untracked' && ctx.untrackedFrom === undefined) throw new NotModelled(`${what} on a packet given as untracked`);
  ctx.zoneTemplate = zone === 'mark' ? 'mark' : true;
  if (zone !== 'mark') ctx.ct.zone = zone;
  if (ctx.untrackedFrom !== undefined) ctx.ct.state = ctx.untrackedFrom;
}

/** The zone conntrack looks the packet up in, set on the packet as it does so: a `mark`
 * template's is the mark's low 16 bits now (nf_ct_zone_init takes a u16). */
export function settleTemplateZone(ctx: SimContext): void {
  if (ctx.zoneTemplate === 'mark') ctx.ct.zone = ctx.pkt.mark & 0xffff;
}
