// The node kube-drift's probes run on, and where each kind of client sends from. The snapshot's
// host description when it has one; else a host made from the cluster's Node object (its
// InternalIPs on eth0, the gateway of its podCIDRs on cni0, default routes); else, for a node the
// cluster file does not know, documentation addresses (RFC 5737, RFC 3849), which the output says.

import type { HostInput, HostRouteInput } from '../sim/host.js';
import { lookupRoute, readHost, type Host } from '../sim/host.js';
import { familyBits, formatAddress, isInCidr, parseAddress, parseCidr, prefixMask, type AddressFamily, type Cidr } from '../sim/address.js';
import type { ClusterNode, IpFamily } from './cluster.js';

/** Where the clients of one address family send from. */
export interface FamilyClients {
  /** The node's addresses a NodePort is probed on. */
  readonly nodeAddresses: readonly string[];
  /** The interface off-node clients arrive on. */
  readonly externalIif: string;
  readonly externalSrc: string;
  /** The interface a pod's packets arrive on, and a pod address of the node. */
  readonly podIif: string;
  readonly podSrc: string;
}

export interface ProbeHost {
  readonly host: Host;
  /** Where the host came from. */
  readonly source: 'snapshot' | 'cluster' | 'documentation';
  readonly clients: Readonly<Partial<Record<IpFamily, FamilyClients>>>;
  /** What was assumed, in words, for the output. */
  readonly notes: readonly string[];
  /** A snapshot host that does not read (readHost's messages). */
  readonly errors: readonly string[];
}

const NFT_FAMILY: Readonly<Record<IpFamily, AddressFamily>> = { ipv4: 'ip', ipv6: 'ip6' };

// Documentation addresses: the node on TEST-NET-1 / 2001:db8::/64, its pods on TEST-NET-2 /
// 2001:db8:1::/64, the off-cluster client on TEST-NET-3 / 2001:db8:ffff::/64 (the external client
// of kube-proxy's own tests, ../shared/research/kube-proxy.md).
const DOCUMENTATION: Readonly<Record<IpFamily, { readonly node: string; readonly gateway: string; readonly pods: string; readonly external: string }>> = {
  ipv4: { node: '192.0.2.10/24', gateway: '192.0.2.1', pods: '198.51.100.0/24', external: '203.0.113.2' },
  ipv6: { node: '2001:db8::10/64', gateway: '2001:db8::1', pods: '2001:db8:1::/64', external: '2001:db8:ffff::2' },
};

/** The host and clients for a node named `name`; `node` is its Node object, when the cluster
 * file has it. */
export function probeHostOf(input: HostInput | undefined, node: ClusterNode | undefined, name: string, families: readonly IpFamily[]): ProbeHost {
  const notes: string[] = [];
  const made = input === undefined ? hostFromNode(node, name, families, notes) : undefined;
  const read = readHost([{ value: made?.host ?? input, path: ['host'] }]);
  const host = read.host;
  const clients: Partial<Record<IpFamily, FamilyClients>> = {};
  for (const family of families) {
    const af = NFT_FAMILY[family];
    const known = (node?.addresses ?? []).filter((a) => a.type === 'InternalIP' || a.type === 'ExternalIP').map((a) => a.address);
    const local = known.filter((a) => {
      const address = parseAddress(a);
      return address?.family === af && host.interfaces.some((i) => i.addresses.some((c) => c.family === af && c.n === address.n));
    });
    const defaultDev = host.routes.find((r) => r.dst.family === af && r.dst.prefix === 0)?.dev;
    const own = host.interfaces.filter((i) => i.name !== 'lo').flatMap((i) => i.addresses.filter((c) => c.family === af).map((c) => ({ iface: i.name, address: c })));
    const fallback = own.find((o) => o.iface === defaultDev) ?? own[0];
    const nodeAddresses = local.length > 0 ? local : fallback ? [formatAddress(fallback.address)] : [];
    const ofFamily = known.filter((a) => parseAddress(a)?.family === af);
    if (nodeAddresses.length === 0) notes.push(`${family}: the host has no ${family} address: NodePorts not probed`);
    else if (local.length === 0 && ofFamily.length > 0) notes.push(`${family}: the Node's address ${ofFamily.join(', ')} is not on this host: NodePorts probed on ${nodeAddresses.join(', ')}`);
    const nodeIface = host.interfaces.find((i) => i.addresses.some((c) => nodeAddresses.includes(formatAddress(c))))?.name;
    const externalIif = nodeIface ?? defaultDev ?? own[0]?.iface ?? 'lo';
    const pod = podClient(host, node, family, externalIif, notes);
    clients[family] = { nodeAddresses, externalIif, externalSrc: DOCUMENTATION[family].external, podIif: pod.iif, podSrc: pod.src };
  }
  return { host, source: input !== undefined ? 'snapshot' : made!.source, clients, notes, errors: read.errors.map((e) => e.message) };
}

/** A host made from the Node object: InternalIPs on eth0 (as host addresses, the node's subnet
 * being unknown) with default routes, the first address of each podCIDR on cni0 as the pods'
 * gateway; documentation addresses for what the Node does not say. */
function hostFromNode(node: ClusterNode | undefined, name: string, families: readonly IpFamily[], notes: string[]): { host: HostInput; source: 'cluster' | 'documentation' } {
  const eth0: string[] = [];
  const cni0: string[] = [];
  const routes: HostRouteInput[] = [];
  const filled: string[] = [];
  for (const family of families) {
    const af = NFT_FAMILY[family];
    const doc = DOCUMENTATION[family];
    const internal = (node?.addresses ?? []).filter((a) => a.type === 'InternalIP' && parseAddress(a.address)?.family === af);
    if (internal.length > 0) {
      eth0.push(...internal.map((a) => `${a.address}/${familyBits(af)}`));
      // `default` is IPv4's unless a gateway says otherwise.
      routes.push({ dst: af === 'ip6' ? '::/0' : 'default', dev: 'eth0' });
    } else {
      eth0.push(doc.node);
      routes.push({ dst: 'default', via: doc.gateway, dev: 'eth0' });
      filled.push(`${doc.node} on eth0`);
    }
    const podCidrs = (node?.podCIDRs ?? []).map(parseCidr).filter((c): c is Cidr => c?.family === af);
    const pods = podCidrs.length > 0 ? podCidrs : [parseCidr(doc.pods)!];
    if (podCidrs.length === 0) filled.push(`pods ${doc.pods} on cni0`);
    for (const cidr of pods) cni0.push(`${formatAddress({ family: af, n: networkOf(cidr) + 1n })}/${cidr.prefix}`);
  }
  const host: HostInput = { interfaces: [{ name: 'eth0', addresses: eth0 }, { name: 'cni0', addresses: cni0 }], routes, forwarding: true };
  if (!node) {
    notes.push(`${name} is not a Node of the cluster file: host made from documentation addresses (${filled.join(', ')}); no endpoint counts as local to it`);
    return { host, source: 'documentation' };
  }
  notes.push(`host made from the cluster's Node ${name} (no host description in the snapshot)${filled.length > 0 ? `; documentation addresses for what the Node does not say: ${filled.join(', ')}` : ''}`);
  return { host, source: 'cluster' };
}

/** A pod of the node: the host's route into the node's podCIDR (a bridge's connected route, or
 * a per-pod route of a routed CNI) gives the interface and an address; without a podCIDR, an
 * interface other than the external one. */
function podClient(host: Host, node: ClusterNode | undefined, family: IpFamily, externalIif: string, notes: string[]): { iif: string; src: string } {
  const af = NFT_FAMILY[family];
  const podCidr = (node?.podCIDRs ?? []).map(parseCidr).find((c): c is Cidr => c?.family === af);
  if (podCidr) {
    const route = host.routes.find((r) => r.dst.family === af && r.dst.prefix >= podCidr.prefix && r.dst.prefix > 0 && isInCidr(r.dst, podCidr));
    if (route) return { iif: route.dev, src: formatAddress({ family: af, n: lastAddress(route.dst) }) };
    const src = formatAddress({ family: af, n: lastAddress(podCidr) });
    const dev = lookupRoute(host, { family: af, n: lastAddress(podCidr) })?.dev ?? externalIif;
    notes.push(`${family}: no route into the pod CIDR ${formatAddress(podCidr)}/${podCidr.prefix} on this host: pod probes come from ${src} on ${dev}`);
    return { iif: dev, src };
  }
  const other = host.interfaces.find((i) => i.name !== 'lo' && i.name !== externalIif && i.addresses.some((c) => c.family === af && c.prefix < familyBits(af)));
  const subnet = other?.addresses.find((c) => c.family === af)!;
  if (other) {
    const src = formatAddress({ family: af, n: lastAddress(subnet) });
    notes.push(`${family}: the node's pod CIDR is unknown: pod probes come from ${src} on ${other.name}`);
    return { iif: other.name, src };
  }
  const src = formatAddress({ family: af, n: lastAddress(parseCidr(DOCUMENTATION[family].pods)!) });
  notes.push(`${family}: the node's pod CIDR is unknown and no interface looks like the pods': pod probes come from ${src} on ${externalIif}`);
  return { iif: externalIif, src };
}

function networkOf(cidr: Cidr): bigint {
  return cidr.n & prefixMask(familyBits(cidr.family), cidr.prefix);
}

/** The last address a host of the prefix can have (below IPv4's broadcast address); the
 * address itself for a host route. */
function lastAddress(cidr: Cidr): bigint {
  const bits = familyBits(cidr.family);
  if (cidr.prefix >= bits - 1) return cidr.n;
  const all = networkOf(cidr) | (~prefixMask(bits, cidr.prefix) & ((1n << BigInt(bits)) - 1n));
  return all - 1n;
}
