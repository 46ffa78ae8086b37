// What `nftsim kube-drift` knows of a cluster (issue 7): the Services, EndpointSlices and Nodes a
// user captured with `kubectl get services,endpointslices -A -o json` (and `kubectl get nodes -o
// json`), reduced to the fields kube-proxy reads. readCluster builds it; expectedEndpoints says
// what kube-proxy should program for it.

import type { Loc } from '../sim/outcome.js';

export type ServiceType = 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
export type ServiceProtocol = 'tcp' | 'udp' | 'sctp';
export type TrafficPolicy = 'Cluster' | 'Local';
export type IpFamily = 'ipv4' | 'ipv6';

export interface ServicePortSpec {
  /** Empty for the one unnamed port of a single-port Service. */
  readonly name: string;
  readonly protocol: ServiceProtocol;
  readonly port: number;
  readonly nodePort?: number;
}

export interface Service {
  readonly namespace: string;
  readonly name: string;
  readonly type: ServiceType;
  /** spec.clusterIPs (spec.clusterIP when absent); empty for a headless Service (`None`). IP
   * addresses throughout the Cluster are in canonical text, as kube-proxy (ParseIPSloppy(…).String())
   * and nft print them. */
  readonly clusterIPs: readonly string[];
  readonly externalIPs: readonly string[];
  /** status.loadBalancer.ingress[].ip, without those of `ipMode: Proxy` (kube-proxy leaves those to
   * the load balancer: pkg/proxy/serviceport.go, proxyutil.IsVIPMode). */
  readonly loadBalancerIPs: readonly string[];
  readonly loadBalancerSourceRanges: readonly string[];
  readonly ports: readonly ServicePortSpec[];
  readonly externalTrafficPolicy: TrafficPolicy;
  readonly internalTrafficPolicy: TrafficPolicy;
  readonly sessionAffinity: 'None' | 'ClientIP';
  /** sessionAffinityConfig.clientIP.timeoutSeconds (10800 by default). */
  readonly sessionAffinityTimeout?: number;
  /** metadata.annotations, for topology-aware routing (`service.kubernetes.io/topology-mode`). */
  readonly annotations: Readonly<Record<string, string>>;
  /** spec.trafficDistribution (`PreferClose`), for topology-aware routing. */
  readonly trafficDistribution?: string;
  /** Where the Service was written in the cluster file. */
  readonly at: Loc;
}

export interface SliceEndpoint {
  readonly addresses: readonly string[];
  /** conditions.ready, serving and terminating; an absent condition is read as kube-proxy reads it
   * (pkg/proxy/endpointslicecache.go): ready and serving true, terminating false. (discovery/v1
   * types.go asks consumers to read an absent serving as ready; kube-proxy, whose rules nftsim
   * checks, reads it as true. They differ only for `ready: false` without `serving`.) */
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  readonly nodeName?: string;
  readonly zone?: string;
  /** hints.forZones[].name */
  readonly hintZones?: readonly string[];
  /** hints.forNodes[].name (trafficDistribution PreferSameNode, Kubernetes 1.33+). */
  readonly hintNodes?: readonly string[];
}

export interface EndpointSlice {
  readonly namespace: string;
  readonly name: string;
  /** The `kubernetes.io/service-name` label. */
  readonly serviceName: string;
  readonly addressType: 'IPv4' | 'IPv6' | 'FQDN';
  readonly ports: readonly { readonly name: string; readonly protocol: ServiceProtocol; readonly port: number }[];
  readonly endpoints: readonly SliceEndpoint[];
  readonly at: Loc;
}

export interface ClusterNode {
  readonly name: string;
  /** status.addresses: InternalIP and ExternalIP addresses. */
  readonly addresses: readonly { readonly type: string; readonly address: string }[];
  /** spec.podCIDRs (spec.podCIDR when absent). */
  readonly podCIDRs: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
}

export interface Cluster {
  readonly services: readonly Service[];
  readonly endpointSlices: readonly EndpointSlice[];
  readonly nodes: readonly ClusterNode[];
}

/** How a client reaches a Service port: the address it sends to. */
export type ServiceAccess = 'clusterIP' | 'nodePort' | 'loadBalancer' | 'externalIP';

/** Where the client is: a pod on the node, the node itself (output path), or off the node. */
export type ServiceClient = 'pod' | 'node' | 'external';

/** One endpoint kube-proxy should DNAT to and the share of new connections it should get. */
export interface ExpectedEndpoint {
  /** `10.0.0.1:8080`, `[2001:db8::1]:8080` — the form of the simulator's NatEvent.to. */
  readonly endpoint: string;
  readonly share: number;
}

export interface Expectation {
  readonly endpoints: readonly ExpectedEndpoint[];
  /** Why this set, in Kubernetes' words (`ready endpoints`, `local ready endpoints
   * (externalTrafficPolicy: Local)`, `serving terminating endpoints: no endpoint is ready`). */
  readonly basis: string;
  /** With no endpoint: what kube-proxy does to the packet instead (`reject`: "has no endpoints",
   * `drop`: "has no local endpoints"). Absent with no endpoint when kube-proxy writes no rule for
   * this access at all (a headless Service, no address of the family, no nodePort): `basis` says
   * why. */
  readonly none?: 'reject' | 'drop';
}

/** What expectedEndpoints is asked: which node's rules, how the client reaches the Service port,
 * from where, and in which address family (one iptables dump or nft table per family). */
export interface ExpectationQuery {
  /** The node whose rules are checked (endpoints with this nodeName are its local ones). */
  readonly node: string;
  readonly access: ServiceAccess;
  readonly client: ServiceClient;
  readonly family: IpFamily;
}
