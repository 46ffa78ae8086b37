// Which component wrote a chain or a rule, from the names components give their chains and
// tables, the comments they put on rules, and the mark bits each one is known to use. Source:
// ../shared/research/marks.md and marks.tsv (each row checked against the component's code; the
// file and version are in the tsv's source_path and version columns). Longer prefixes come first:
// KUBE-ROUTER- before KUBE-.

import type { Rule, Table } from '../../model/ast.js';
import { iptablesNftChain } from '../../model/iptables-nft-chains.js';
import { componentsFromProfiles } from '../../components/components-from-profiles.js';
import type { Ownership } from '../framework/lint-rule.js';

export interface KnownComponent {
  readonly name: string;
  /** Chain-name prefixes, case-sensitive, as the component creates them. */
  readonly chainPrefixes: readonly string[];
  /** Table names the component owns outright. */
  readonly tables: readonly string[];
  /** How the component's rule comments start, for its rules in chains it shares with others
   * (iptables' built-in chains); absent when it leaves no recognisable comment. */
  readonly commentPrefixes?: readonly string[];
  /** Mark bits the component sets or tests with its default configuration, and what for. */
  readonly bits: readonly { readonly mask: number; readonly meaning: string }[];
}

const FROM_MARKS_TSV: readonly KnownComponent[] = [
  // cloudnativelabs/kube-router pkg/controllers/netpol: 0x10000 matched, 0x20000 accept.
  { name: 'kube-router', chainPrefixes: ['KUBE-ROUTER-', 'KUBE-NWPLCY-', 'KUBE-POD-FW-'], tables: [], bits: [{ mask: 0x30000, meaning: 'network-policy' }] },
  // kubernetes pkg/proxy/iptables/proxier.go (masqueradeBit 14), kubelet KUBE-MARK-DROP (bit 15, before 1.28).
  // Its rules in the built-in chains say "kubernetes service portals", "kubernetes forwarding rules"….
  { name: 'kube-proxy', chainPrefixes: ['KUBE-'], tables: ['kube-proxy'], commentPrefixes: ['kubernetes '], bits: [{ mask: 0x4000, meaning: 'masquerade' }, { mask: 0x8000, meaning: 'legacy drop' }] },
  // projectcalico/calico felix/config/config_params.go IptablesMarkMask 0xffff0000.
  // Every felix rule carries a `cali:<hash>` comment (felix/iptables/table.go), also in FORWARD.
  { name: 'calico', chainPrefixes: ['cali-'], tables: ['calico'], commentPrefixes: ['cali:'], bits: [{ mask: 0xffff0000, meaning: 'policy' }] },
  // cilium pkg/datapath/linux/linux_defaults/mark.go MagicMarkHostMask 0x0f00.
  { name: 'cilium', chainPrefixes: ['CILIUM_', 'OLD_CILIUM_'], tables: [], bits: [{ mask: 0x0f00, meaning: 'magic' }] },
  // tailscale tsconst/linuxfw.go LinuxFwmarkMask 0xff0000.
  { name: 'tailscale', chainPrefixes: ['ts-'], tables: [], bits: [{ mask: 0xff0000, meaning: 'subnet-route and bypass' }] },
  // flannel pkg/trafficmngr: KubeProxyMark 0x4000; nftables mode tables flannel-ipv4/-ipv6.
  { name: 'flannel', chainPrefixes: ['FLANNEL-'], tables: ['flannel-ipv4', 'flannel-ipv6'], bits: [{ mask: 0x4000, meaning: 'kube-proxy masquerade' }] },
  // containernetworking/plugins portmap markMasqBit 13; containers/netavark MASQUERADE_MASK 0x2000.
  { name: 'cni-portmap', chainPrefixes: ['CNI-HOSTPORT-'], tables: [], bits: [{ mask: 0x2000, meaning: 'hostport masquerade' }] },
  { name: 'netavark', chainPrefixes: ['NETAVARK-'], tables: ['netavark'], bits: [{ mask: 0x2000, meaning: 'hostport masquerade' }] },
  // netbirdio/netbird client/net/net.go: 0x1BD00 family, full-word values.
  { name: 'netbird', chainPrefixes: ['NETBIRD-', 'netbird-'], tables: ['netbird'], bits: [{ mask: 0x1bd33, meaning: 'control and data plane' }] },
  // antrea pkg/agent/types/marks.go: bits 30-31 and the SNAT-IP byte.
  { name: 'antrea', chainPrefixes: ['ANTREA-'], tables: ['antrea'], bits: [{ mask: 0xc00000ff, meaning: 'host-local and SNAT' }] },
  { name: 'docker', chainPrefixes: ['DOCKER'], tables: [], bits: [] },
];

/** The components of marks.tsv, completed with what the shipped component profiles
 * (corpus/components, docs/components.md) declare: their owned tables, chain and comment
 * prefixes, and mark bits not already known. */
export const KNOWN_COMPONENTS: readonly KnownComponent[] = mergeComponents(FROM_MARKS_TSV, componentsFromProfiles().components);

/** `extra` merged into `base` by name: new names appended, known ones completed with what they
 * lack (a bit counts as known when a known mask covers it). */
function mergeComponents(base: readonly KnownComponent[], extra: readonly KnownComponent[]): KnownComponent[] {
  const out = [...base];
  const union = (a: readonly string[] = [], b: readonly string[] = []): string[] => [...a, ...b.filter((x) => !a.includes(x))];
  for (const e of extra) {
    const i = out.findIndex((c) => c.name === e.name);
    if (i < 0) {
      out.push(e);
      continue;
    }
    const known = out[i]!;
    const comments = union(known.commentPrefixes, e.commentPrefixes);
    out[i] = {
      name: known.name,
      chainPrefixes: union(known.chainPrefixes, e.chainPrefixes),
      tables: union(known.tables, e.tables),
      ...(comments.length > 0 && { commentPrefixes: comments }),
      bits: [...known.bits, ...e.bits.filter((b) => !known.bits.some((k) => (b.mask & ~k.mask) >>> 0 === 0))],
    };
  }
  return out;
}

/** The component that wrote a chain: declared ownership first, then the known names; undefined
 * when nothing says. */
export function componentOf(ownership: Ownership, family: string, table: string, chain: string): string | undefined {
  const declared = ownership.chains[`${family} ${table} ${chain}`] ?? ownership.tables[`${family} ${table}`];
  if (declared !== undefined) return declared;
  const known = KNOWN_COMPONENTS.find((c) => c.tables.includes(table) || c.chainPrefixes.some((p) => chain.startsWith(p)));
  return known?.name;
}

/** The component that wrote a rule that reads or writes the mark bits `bits`. Its chain says
 * first (componentOf). A rule in a chain many components share (iptables' built-in chains, where
 * Calico puts `-j MARK --set-xmark 0x10000/0x10000` into FORWARD) is told by its comment, else by
 * its bits: the one component present on the node (`present()`, computed on demand) whose declared or known bits hold
 * all of them. A rule that also touches anyone else's bits stays unattributed (undefined), so a
 * platform rule that tests 0x20 and clears kube-proxy's 0x4000 is not mistaken for kube-proxy. */
export function componentOfRule(
  ownership: Ownership,
  table: Table,
  chain: string,
  rule: Rule,
  bits: number,
  present: () => ReadonlySet<string>,
): string | undefined {
  const named = componentOf(ownership, table.family, table.name, chain);
  if (named !== undefined || iptablesNftChain(table.name, chain) === undefined) return named;
  const comment = rule.comment;
  const byComment = comment === undefined ? undefined : KNOWN_COMPONENTS.find((c) => c.commentPrefixes?.some((p) => comment.startsWith(p)));
  if (byComment) return byComment.name;
  if (bits === 0) return undefined;
  const owners = [
    ...Object.entries(ownership.marks).filter(([, mask]) => (bits & ~mask) === 0).map(([name]) => name),
    ...KNOWN_COMPONENTS.filter((c) => present().has(c.name) && c.bits.some((b) => (bits & ~b.mask) === 0)).map((c) => c.name),
  ];
  return owners.length === 1 || (owners.length > 0 && owners.every((o) => o === owners[0])) ? owners[0] : undefined;
}

/** What a bit means to the component that owns it, when known. */
export function meaningOf(component: string, bits: number): string | undefined {
  return KNOWN_COMPONENTS.find((c) => c.name === component)?.bits.find((b) => (b.mask & bits) === bits)?.meaning;
}
