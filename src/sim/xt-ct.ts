// iptables' CT target in the forms the lowering keeps as xt: `--zone mark` (with `--ctevents`
// or `--expevents`, which only choose netlink events): a template whose zone conntrack takes
// from the packet's mark when it looks the packet up (xt_CT.c with XT_CT_ZONE_MARK,
// nf_conntrack_zones.h nf_ct_zone_tmpl), zone-template.ts; and `--helper`, a template of its
// zone whose helper acts on payload nftsim's packets do not carry (an FTP command, a SIP
// message): it expects no connection, and `ct helper` / `-m helper` read an expected
// connection's master, not this one. The other forms are not modelled: `--timeout` (no clock),
// and a zone of one direction (`--zone-orig`, `--zone-reply`: nftsim's packets look a
// connection up in one zone, where the kernel compares each direction's tuple in its own,
// nf_ct_zone_equal).

import type { XtExtensionStmt } from '../model/ast.js';
import { ctTemplateZone } from '../model/xt-option.js';
import { NotModelled, type SimContext } from './sim-context.js';
import { attachZoneTemplate } from './zone-template.js';

export function runCtTarget(stmt: XtExtensionStmt, ctx: SimContext): void {
  const zone = ctTemplateZone(stmt.options);
  if (zone === undefined) {
    const options = stmt.options.filter((o) => o.name !== 'ctevents' && o.name !== 'expevents').map((o) => `--${o.name}`);
    throw new NotModelled(`iptables target CT ${options.join(' ')}`);
  }
  attachZoneTemplate(ctx, zone, 'iptables target CT');
}
