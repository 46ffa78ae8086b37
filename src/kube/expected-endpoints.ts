// What kube-proxy on one node should program for a Service port: the endpoints a new connection is
// DNATed to, each with its share, or what happens instead when there is none. It follows
// kube-proxy's own reading of Services and EndpointSlices (kubernetes pkg/proxy): the endpoints of
// a port as endpointslicecache.go merges them, the Cluster and Local sets as topology.go's
// CategorizeEndpoints makes them, the traffic policies as iptables/proxier.go and
// nftables/proxier.go apply them to each kind of access.

import { parseAddress } from '../sim/address.js';
import type { ClusterIndex } from './cluster-index.js';
import type { EndpointSlice, Expectation, ExpectationQuery, ExpectedEndpoint, IpFamily, Service, ServiceAccess, ServicePortSpec } from './cluster.js';
import { servicePortName } from './service-port-name.js';

/** The node label kube-proxy reads its zone from (core/v1 LabelTopologyZone). */
const ZONE_LABEL = 'topology.kubernetes.io/zone';

/** The EndpointSlice addressType each family's kube-proxy reads; it ignores the others
 * (pkg/proxy/endpointschangetracker.go, EndpointSliceUpdate). */
const SLICE_ADDRESS_TYPE = { ipv4: 'IPv4', ipv6: 'IPv6' } as const satisfies Record<IpFamily, EndpointSlice['addressType']>;

/** Whether kube-proxy programs the Service at all: not an ExternalName Service, and not one
 * without a ClusterIP (headless, `clusterIP: None`): pkg/proxy/util ShouldSkipService. */
export function isProxied(service: Service): boolean {
  return service.type !== 'ExternalName' && service.clusterIPs.length > 0;
}

/** The addresses a client reaches a Service port at, in one family: ClusterIP, externalIPs and
 * LoadBalancer IPs with the Service port, and the nodePort (address '': it is every node address,
 * which the node side knows). Empty when kube-proxy of that family leaves the Service out: each
 * family's kube-proxy takes only Services with a ClusterIP of its family, and then only the
 * external and LoadBalancer IPs of its family (pkg/proxy/servicechangetracker.go, serviceport.go). */
export function serviceAddresses(service: Service, port: ServicePortSpec, family: IpFamily): { access: ServiceAccess; address: string; port: number }[] {
  if (!isProxied(service) || !service.clusterIPs.some((ip) => isOfFamily(ip, family))) return [];
  const at = (access: ServiceAccess, ips: readonly string[]) =>
    ips.filter((ip) => isOfFamily(ip, family)).map((address) => ({ access, address, port: port.port }));
  return [
    ...at('clusterIP', service.clusterIPs),
    ...at('externalIP', service.externalIPs),
    ...at('loadBalancer', service.loadBalancerIPs),
    ...(port.nodePort !== undefined ? [{ access: 'nodePort' as const, address: '', port: port.nodePort }] : []),
  ];
}

/** The endpoints kube-proxy on `query.node` should DNAT a new connection to, each with an equal
 * share (its random choice: `statistic --probability 1/(n-i)`, `numgen random mod n`). */
export function expectedEndpoints(index: ClusterIndex, service: Service, port: ServicePortSpec, query: ExpectationQuery): Expectation {
  const notProgrammed = whyNotProgrammed(service, port, query);
  if (notProgrammed) return { endpoints: [], basis: notProgrammed };

  const name = servicePortName(service, port);
  const endpoints = endpointsOfPort(index.slicesOf(service), port, query);
  const hasAny = endpoints.some(isUsable);
  if (!hasAny) return { endpoints: [], basis: `no endpoints: kube-proxy rejects ("${name} has no endpoints")`, none: 'reject' };

  const policy = localPolicyOf(service, query);
  if (policy) {
    const local = endpoints.filter((e) => e.local);
    const ready = local.filter((e) => e.ready);
    if (ready.length > 0) return expect(ready, `local ready endpoints (${policy}: Local)`);
    const serving = local.filter(isServingTerminating);
    if (serving.length > 0) return expect(serving, `local serving terminating endpoints (${policy}: Local): no local endpoint is ready`);
    return { endpoints: [], basis: `no local endpoints (${policy}: Local): kube-proxy drops ("${name} has no local endpoints")`, none: 'drop' };
  }

  // The Cluster set: ready endpoints (narrowed by topology), else serving terminating ones
  // (ProxyTerminatingEndpoints, GA in 1.28), which topology never narrows.
  const shortCut = shortCircuitOf(service, query);
  const ready = endpoints.filter((e) => e.ready);
  if (ready.length === 0) return expect(endpoints.filter(isServingTerminating), `serving terminating endpoints: no endpoint is ready${shortCut}`);
  const node = index.node(query.node);
  const topology = topologyOf(ready, query.node, node?.labels[ZONE_LABEL]);
  if (topology) return expect(ready.filter(topology.keeps), `ready endpoints ${topology.basis}${shortCut}`);
  const unknownZone =
    !node && ready.every((e) => (e.hintZones?.length ?? 0) > 0)
      ? `; node ${query.node} is not in the cluster file, so its zone is unknown and the zone hints are not applied`
      : '';
  return expect(ready, `ready endpoints${shortCut}${unknownZone}`);
}

/** Why kube-proxy writes no rule for this access at all, if it does not. */
function whyNotProgrammed(service: Service, port: ServicePortSpec, query: ExpectationQuery): string | undefined {
  if (service.type === 'ExternalName') return 'ExternalName Service: kube-proxy programs nothing (DNS answers for it)';
  if (service.clusterIPs.length === 0) return 'headless Service (clusterIP: None): kube-proxy programs nothing';
  const addresses = serviceAddresses(service, port, query.family);
  if (addresses.length === 0) return `no ${query.family} ClusterIP: the ${query.family} rules leave the Service out`;
  if (!addresses.some((a) => a.access === query.access)) return `no ${query.access} in ${query.family}: kube-proxy writes no rule for it`;
  return undefined;
}

/** Which traffic policy restricts this access to the node's own endpoints, if one does:
 * internalTrafficPolicy for the ClusterIP, externalTrafficPolicy for NodePort, LoadBalancer and
 * external IPs reached from off the node (serviceport.go: ExternalPolicyLocal needs an externally
 * accessible Service, which one with such an address is). */
function localPolicyOf(service: Service, query: ExpectationQuery): 'internalTrafficPolicy' | 'externalTrafficPolicy' | undefined {
  if (query.access === 'clusterIP') return service.internalTrafficPolicy === 'Local' ? 'internalTrafficPolicy' : undefined;
  return service.externalTrafficPolicy === 'Local' && query.client === 'external' ? 'externalTrafficPolicy' : undefined;
}

/** For a pod or the node reaching an external address of an externalTrafficPolicy: Local Service:
 * kube-proxy sends it to the Cluster set (KUBE-EXT: "pod traffic for … external destinations",
 * "route LOCAL traffic for … external destinations"; nft: "short-circuit pod/local traffic"), as if
 * it had gone out to the load balancer and come back. */
function shortCircuitOf(service: Service, query: ExpectationQuery): string {
  if (query.access === 'clusterIP' || service.externalTrafficPolicy !== 'Local' || query.client === 'external') return '';
  const from = query.client === 'pod' ? 'pod traffic' : "the node's own traffic";
  return ` (externalTrafficPolicy: Local does not apply: ${from} to an external address goes to the cluster-wide endpoints)`;
}

/** One endpoint of the port as kube-proxy keeps it. */
interface PortEndpoint {
  /** `ip:port`, `[ip6]:port`: net.JoinHostPort, as kube-proxy names endpoints, and the form of the
   * simulator's NatEvent.to. */
  readonly endpoint: string;
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  /** On the queried node (nodeName equal to its name). */
  readonly local: boolean;
  readonly hintZones?: readonly string[];
  readonly hintNodes?: readonly string[];
}

/** The endpoints of the Service port, merged from its slices as endpointslicecache.go does: slices
 * of the family's addressType, the slice port with the Service port's name and protocol, the
 * endpoint's first address with that slice port's number. The same ip:port in several slices (an
 * endpoint moving between slices, or an IP reused by a new pod) is one endpoint: kube-proxy keeps
 * a non-terminating one over a terminating one and leaves the rest to map order; here a ready,
 * then serving, then local one is kept, then the first, so that the answer does not depend on the
 * order of the slices. */
function endpointsOfPort(slices: readonly EndpointSlice[], port: ServicePortSpec, query: ExpectationQuery): PortEndpoint[] {
  const byEndpoint = new Map<string, PortEndpoint>();
  for (const slice of slices) {
    if (slice.addressType !== SLICE_ADDRESS_TYPE[query.family]) continue;
    const slicePort = slice.ports.find((p) => p.name === port.name && p.protocol === port.protocol);
    if (!slicePort) continue;
    for (const e of slice.endpoints) {
      const address = e.addresses[0];
      if (address === undefined) continue;
      const candidate: PortEndpoint = {
        endpoint: query.family === 'ipv6' ? `[${address}]:${slicePort.port}` : `${address}:${slicePort.port}`,
        ready: e.ready,
        serving: e.serving,
        terminating: e.terminating,
        local: e.nodeName !== undefined && e.nodeName === query.node,
        ...(e.hintZones && { hintZones: e.hintZones }),
        ...(e.hintNodes && { hintNodes: e.hintNodes }),
      };
      const kept = byEndpoint.get(candidate.endpoint);
      if (!kept || rank(candidate) > rank(kept)) byEndpoint.set(candidate.endpoint, candidate);
    }
  }
  return [...byEndpoint.values()];
}

function rank(e: PortEndpoint): number {
  return (e.terminating ? 0 : 8) + (e.ready ? 4 : 0) + (e.serving ? 2 : 0) + (e.local ? 1 : 0);
}

/** An endpoint CategorizeEndpoints may use: ready, or serving and terminating. */
function isUsable(e: PortEndpoint): boolean {
  return e.ready || isServingTerminating(e);
}

function isServingTerminating(e: PortEndpoint): boolean {
  return e.serving && e.terminating;
}

/** topology.go topologyModeFromHints: when every ready endpoint has node hints and one is for this
 * node, those hinted for the node (trafficDistribution PreferSameNode); otherwise when every ready
 * endpoint has zone hints and one is for the node's zone, those hinted for the zone
 * (topology-mode Auto, topology-aware-hints, trafficDistribution PreferClose / PreferSameZone; the
 * EndpointSlice controller writes hints only for those). Otherwise none. */
function topologyOf(
  ready: readonly PortEndpoint[],
  node: string,
  zone: string | undefined,
): { keeps: (e: PortEndpoint) => boolean; basis: string } | undefined {
  if (ready.every((e) => (e.hintNodes?.length ?? 0) > 0) && ready.some((e) => e.hintNodes!.includes(node))) {
    return { keeps: (e) => e.hintNodes!.includes(node), basis: `hinted for node ${node} (topology hints, PreferSameNode)` };
  }
  if (zone !== undefined && ready.every((e) => (e.hintZones?.length ?? 0) > 0) && ready.some((e) => e.hintZones!.includes(zone))) {
    return { keeps: (e) => e.hintZones!.includes(zone), basis: `hinted for zone ${zone} (topology-aware routing)` };
  }
  return undefined;
}

/** Equal shares, in kube-proxy's order (sorted by endpoint text, endpointslicecache.go byEndpoint). */
function expect(endpoints: readonly PortEndpoint[], basis: string): Expectation {
  const sorted = endpoints.map((e) => e.endpoint).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const share = 1 / sorted.length;
  return { endpoints: sorted.map((endpoint): ExpectedEndpoint => ({ endpoint, share })), basis };
}

function isOfFamily(ip: string, family: IpFamily): boolean {
  return parseAddress(ip)?.family === (family === 'ipv4' ? 'ip' : 'ip6');
}
