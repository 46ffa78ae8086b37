// The lookups kube-drift makes for every Service port of every node, built once per cluster.

import type { Cluster, ClusterNode, EndpointSlice, Service } from './cluster.js';

export interface ClusterIndex {
  readonly cluster: Cluster;
  /** The EndpointSlices labelled for the Service (`kubernetes.io/service-name` in its namespace),
   * in file order. */
  slicesOf(service: Service): readonly EndpointSlice[];
  node(name: string): ClusterNode | undefined;
}

export function indexCluster(cluster: Cluster): ClusterIndex {
  const slices = new Map<string, EndpointSlice[]>();
  for (const slice of cluster.endpointSlices) {
    const key = serviceKey(slice.namespace, slice.serviceName);
    const list = slices.get(key);
    if (list) list.push(slice);
    else slices.set(key, [slice]);
  }
  const nodes = new Map(cluster.nodes.map((node) => [node.name, node]));
  return {
    cluster,
    slicesOf: (service) => slices.get(serviceKey(service.namespace, service.name)) ?? [],
    node: (name) => nodes.get(name),
  };
}

function serviceKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
