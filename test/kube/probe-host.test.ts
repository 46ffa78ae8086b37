import { describe, expect, it } from 'vitest';
import type { ClusterNode } from '../../src/kube/cluster.js';
import { probeHostOf } from '../../src/kube/probe-host.js';
import type { HostInput } from '../../src/sim/host.js';

const NODE: ClusterNode = { name: 'node-1', addresses: [{ type: 'InternalIP', address: '192.168.0.2' }, { type: 'Hostname', address: 'node-1' }], podCIDRs: ['10.128.0.0/24'], labels: {} };

describe('probeHostOf: where the probes of a node come from', () => {
  it.each<[string, HostInput | undefined, ClusterNode | undefined, Record<string, string>]>([
    [
      'a Node of the cluster: InternalIP on eth0, pods behind cni0',
      undefined,
      NODE,
      { source: 'cluster', nodeAddresses: '192.168.0.2', externalIif: 'eth0', podIif: 'cni0', podSrc: '10.128.0.254', externalSrc: '203.0.113.2' },
    ],
    [
      'a node the cluster does not know: documentation addresses',
      undefined,
      undefined,
      { source: 'documentation', nodeAddresses: '192.0.2.10', externalIif: 'eth0', podIif: 'cni0', podSrc: '198.51.100.254' },
    ],
    [
      'the snapshot\'s host with a bridge for the pods',
      { interfaces: [{ name: 'ens5', addresses: ['192.168.0.2/24'] }, { name: 'cbr0', addresses: ['10.128.0.1/24'] }], routes: [{ dst: 'default', via: '192.168.0.1', dev: 'ens5' }] },
      NODE,
      { source: 'snapshot', nodeAddresses: '192.168.0.2', externalIif: 'ens5', podIif: 'cbr0', podSrc: '10.128.0.254' },
    ],
    [
      'a routed CNI (a route per pod, no bridge): a pod of the node and its interface',
      { interfaces: [{ name: 'ens5', addresses: ['192.168.0.2/24'] }, { name: 'cali1234', addresses: [] }], routes: [{ dst: 'default', via: '192.168.0.1', dev: 'ens5' }, { dst: '10.128.0.7/32', dev: 'cali1234' }] },
      NODE,
      { source: 'snapshot', nodeAddresses: '192.168.0.2', externalIif: 'ens5', podIif: 'cali1234', podSrc: '10.128.0.7' },
    ],
    [
      'a host without the node\'s InternalIP: the address on the default route\'s interface',
      { interfaces: [{ name: 'eth1', addresses: ['172.16.0.9/24'] }, { name: 'eth0', addresses: ['198.51.100.7/24'] }, { name: 'cni0', addresses: ['10.128.0.1/24'] }], routes: [{ dst: 'default', via: '198.51.100.1', dev: 'eth0' }] },
      NODE,
      { source: 'snapshot', nodeAddresses: '198.51.100.7', externalIif: 'eth0', podIif: 'cni0' },
    ],
  ])('%s', (_, input, node, expected) => {
    const probe = probeHostOf(input, node, 'node-1', ['ipv4']);
    expect(probe.errors).toEqual([]);
    const clients = probe.clients.ipv4!;
    const seen: Record<string, string> = { source: probe.source, nodeAddresses: clients.nodeAddresses.join(','), externalIif: clients.externalIif, podIif: clients.podIif, podSrc: clients.podSrc, externalSrc: clients.externalSrc };
    expect(Object.fromEntries(Object.keys(expected).map((k) => [k, seen[k]]))).toEqual(expected);
  });

  it('notes a Node address the host does not have', () => {
    const probe = probeHostOf({ interfaces: [{ name: 'eth0', addresses: ['198.51.100.7/24'] }, { name: 'cni0', addresses: ['10.128.0.1/24'] }], routes: [{ dst: 'default', via: '198.51.100.1', dev: 'eth0' }] }, NODE, 'node-1', ['ipv4']);
    expect(probe.notes).toEqual(['ipv4: the Node\'s address 192.168.0.2 is not on this host: NodePorts probed on 198.51.100.7']);
  });

  it('notes where pods come from when the host has no route into the pod CIDR', () => {
    const probe = probeHostOf({ interfaces: [{ name: 'eth0', addresses: ['192.168.0.2/24'] }], routes: [{ dst: 'default', via: '192.168.0.1', dev: 'eth0' }] }, NODE, 'node-1', ['ipv4']);
    expect(probe.clients.ipv4).toMatchObject({ podIif: 'eth0', podSrc: '10.128.0.254' });
    expect(probe.notes).toEqual(['ipv4: no route into the pod CIDR 10.128.0.0/24 on this host: pod probes come from 10.128.0.254 on eth0']);
  });

  it('reports a host description that does not read, without throwing', () => {
    const probe = probeHostOf({ interfaces: [{ name: 'eth0', addresses: ['not-an-address'] }] }, NODE, 'node-1', ['ipv4']);
    expect(probe.errors.length).toBeGreaterThan(0);
  });
});
