import { describe, expect, it } from 'vitest';
import type { Cluster, EndpointSlice, Service } from '../../src/kube/cluster.js';
import { indexCluster } from '../../src/kube/cluster-index.js';

const AT = { file: 'c.json', line: 1, column: 1 };
const svc = (namespace: string, name: string) => ({ namespace, name }) as Service;
const slice = (namespace: string, name: string, serviceName: string): EndpointSlice => ({ namespace, name, serviceName, addressType: 'IPv4', ports: [], endpoints: [], at: AT });

const CLUSTER: Cluster = {
  services: [svc('shop', 'web'), svc('blog', 'web'), svc('shop', 'api')],
  endpointSlices: [slice('shop', 'web-1', 'web'), slice('blog', 'web-1', 'web'), slice('shop', 'web-2', 'web'), slice('shop', 'orphan-1', 'gone')],
  nodes: [{ name: 'node-1', addresses: [], podCIDRs: [], labels: {} }],
};

describe('indexCluster', () => {
  const index = indexCluster(CLUSTER);
  it.each([
    ['the slices labelled for the Service, in file order', svc('shop', 'web'), ['shop/web-1', 'shop/web-2']],
    ['only those of its namespace (a label names a Service of the slice\'s namespace)', svc('blog', 'web'), ['blog/web-1']],
    ['none for a Service without slices', svc('shop', 'api'), []],
  ])('slicesOf: %s', (_name, service, expected) => {
    expect(index.slicesOf(service).map((s) => `${s.namespace}/${s.name}`)).toEqual(expected);
  });

  it('looks nodes up by name', () => {
    expect(index.node('node-1')?.name).toBe('node-1');
    expect(index.node('node-2')).toBeUndefined();
    expect(index.cluster).toBe(CLUSTER);
  });
});
