// Which component wrote a chain, from the names components give their chains and tables, and
// the mark bits each one is known to use. Source: ../shared/research/marks.md and marks.tsv (each
// row checked against the component's code; the file and version are in the tsv's source_path
// and version columns). Longer prefixes come first: KUBE-ROUTER- before KUBE-.

import type { Ownership } from '../framework/lint-rule.js';

export interface KnownComponent {
  readonly name: string;
  /** Chain-name prefixes, case-sensitive, as the component creates them. */
  readonly chainPrefixes: readonly string[];
  /** Table names the component owns outright. */
  readonly tables: readonly string[];
  /** Mark bits the component sets or tests with its default configuration, and what for. */
  readonly bits: readonly { readonly mask: number; readonly meaning: string }[];
}

export const KNOWN_COMPONENTS: readonly KnownComponent[] = [
  // cloudnativelabs/kube-router pkg/controllers/netpol: 0x10000 matched, 0x20000 accept.
  { name: 'kube-router', chainPrefixes: ['KUBE-ROUTER-', 'KUBE-NWPLCY-', 'KUBE-POD-FW-'], tables: [], bits: [{ mask: 0x30000, meaning: 'network-policy' }] },
  // kubernetes pkg/proxy/iptables/proxier.go (masqueradeBit 14), kubelet KUBE-MARK-DROP (bit 15, before 1.28).
  { name: 'kube-proxy', chainPrefixes: ['KUBE-'], tables: ['kube-proxy'], bits: [{ mask: 0x4000, meaning: 'masquerade' }, { mask: 0x8000, meaning: 'legacy drop' }] },
  // projectcalico/calico felix/config/config_params.go IptablesMarkMask 0xffff0000.
  { name: 'calico', chainPrefixes: ['cali-'], tables: ['calico'], bits: [{ mask: 0xffff0000, meaning: 'policy' }] },
  // cilium pkg/datapath/linux/linux_defaults/mark.go MagicMarkHostMask 0x0f00.
  { name: 'cilium', chainPrefixes: ['CILIUM_', 'OLD_CILIUM_'], tables: [], bits: [{ mask: 0x0f00, meaning: 'magic' }] },
  // tailscale tsconst/linuxfw.go LinuxFwmarkMask 0xff0000.
  { name: 'tailscale', chainPrefixes: ['ts-'], tables: [], bits: [{ mask: 0xff0000, meaning: 'subnet-route and bypass' }] },
  // flannel pkg/trafficmngr: KubeProxyMark 0x4000.
  { name: 'flannel', chainPrefixes: ['FLANNEL-'], tables: ['flannel'], bits: [{ mask: 0x4000, meaning: 'kube-proxy masquerade' }] },
  // containernetworking/plugins portmap markMasqBit 13; containers/netavark MASQUERADE_MASK 0x2000.
  { name: 'cni-portmap', chainPrefixes: ['CNI-HOSTPORT-'], tables: [], bits: [{ mask: 0x2000, meaning: 'hostport masquerade' }] },
  { name: 'netavark', chainPrefixes: ['NETAVARK-'], tables: ['netavark'], bits: [{ mask: 0x2000, meaning: 'hostport masquerade' }] },
  // netbirdio/netbird client/net/net.go: 0x1BD00 family, full-word values.
  { name: 'netbird', chainPrefixes: ['NETBIRD-', 'netbird-'], tables: ['netbird'], bits: [{ mask: 0x1bd33, meaning: 'control and data plane' }] },
  // antrea pkg/agent/types/marks.go: bits 30-31 and the SNAT-IP byte.
  { name: 'antrea', chainPrefixes: ['ANTREA-'], tables: ['antrea'], bits: [{ mask: 0xc00000ff, meaning: 'host-local and SNAT' }] },
  { name: 'docker', chainPrefixes: ['DOCKER'], tables: [], bits: [] },
];

/** The component that wrote a chain: declared ownership first, then the known names; undefined
 * when nothing says. */
export function componentOf(ownership: Ownership, family: string, table: string, chain: string): string | undefined {
  const declared = ownership.chains[`${family} ${table} ${chain}`] ?? ownership.tables[`${family} ${table}`];
  if (declared !== undefined) return declared;
  const known = KNOWN_COMPONENTS.find((c) => c.tables.includes(table) || c.chainPrefixes.some((p) => chain.startsWith(p)));
  return known?.name;
}

/** What a bit means to the component that owns it, when known. */
export function meaningOf(component: string, bits: number): string | undefined {
  return KNOWN_COMPONENTS.find((c) => c.name === component)?.bits.find((b) => (b.mask & bits) === bits)?.meaning;
}
