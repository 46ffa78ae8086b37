// The small cluster and node-1 rules of test/kube/fixtures (README.md there), and ways to change
// them into each drift case.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster } from '../../src/kube/cluster.js';
import { kubeDrift, type KubeDriftOptions, type NodeDrift } from '../../src/kube/kube-drift.js';
import { readCluster } from '../../src/kube/read-cluster.js';
import type { NodeSource } from '../../src/parser/parse-ruleset.js';
import type { HostInput } from '../../src/sim/host.js';

export const FIXTURES = join(import.meta.dirname, 'fixtures');

export function fixture(name: string): string {
  return readFileSync(join(FIXTURES, name), 'utf8');
}

/** The cluster.json List, as objects to change. */
export interface KubeList {
  readonly items: Record<string, any>[];
}

export function clusterList(): KubeList {
  return JSON.parse(fixture('cluster.json')) as KubeList;
}

export function readClusterList(list: KubeList): Cluster {
  const { cluster, diagnostics } = readCluster([{ file: 'cluster.json', text: JSON.stringify(list, null, 2) }]);
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (!cluster || errors.length > 0) throw new Error(`test cluster does not read: ${errors.map((d) => d.message).join('; ')}`);
  return cluster;
}

/** The EndpointSlice (or Service) of `namespace/name`. */
export function objectOf(list: KubeList, kind: 'Service' | 'EndpointSlice', namespace: string, name: string): Record<string, any> {
  const found = list.items.find((o) => o.kind === kind && o.metadata.namespace === namespace && (kind === 'Service' ? o.metadata.name : o.metadata.labels['kubernetes.io/service-name']) === name);
  if (!found) throw new Error(`no ${kind} for ${namespace}/${name} in the fixture`);
  return found;
}

export function endpoint(ip: string, nodeName: string, conditions = { ready: true, serving: true, terminating: false }): Record<string, unknown> {
  return { addresses: [ip], conditions, nodeName };
}

/** Checks one node's sources against the cluster list. */
export function driftOf(list: KubeList, sources: readonly NodeSource[], options: { name?: string; host?: HostInput } & KubeDriftOptions = {}): NodeDrift {
  const { name = 'node-1', host, ...rest } = options;
  const result = kubeDrift(readClusterList(list), [{ name, snapshot: { label: name, sources, ...(host && { host }) } }], rest);
  const errors = result.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new Error(`test snapshot does not read: ${errors.map((d) => d.message).join('; ')}`);
  return result.nodes[0]!;
}

export const NODE_1: readonly NodeSource[] = [{ text: fixture('node-1.save'), file: 'node-1.save' }];
