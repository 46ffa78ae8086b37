import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { Diagnostic } from '../../src/model/diagnostic.js';
import type { Cluster } from '../../src/kube/cluster.js';
import { readCluster } from '../../src/kube/read-cluster.js';

// Objects as `kubectl get … -o json` prints them (trimmed of fields kube-proxy does not read).
const SERVICE = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'shop', annotations: { 'service.kubernetes.io/topology-mode': 'Auto' } },
  spec: {
    type: 'NodePort',
    clusterIP: '10.96.0.10',
    clusterIPs: ['10.96.0.10', 'fd00:10:96::a'],
    externalTrafficPolicy: 'Local',
    internalTrafficPolicy: 'Cluster',
    ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080, nodePort: 30080 }],
    sessionAffinity: 'None',
  },
  status: { loadBalancer: {} },
};
const SLICE = {
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  addressType: 'IPv4',
  metadata: { name: 'web-abcde', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
  ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  endpoints: [
    { addresses: ['10.244.1.5'], conditions: { ready: true, serving: true, terminating: false }, nodeName: 'node-1', zone: 'a', hints: { forZones: [{ name: 'a' }] } },
    { addresses: ['10.244.2.7'], conditions: { ready: false, serving: true, terminating: true }, nodeName: 'node-2' },
  ],
};
const NODE = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'node-1', labels: { 'topology.kubernetes.io/zone': 'a' } },
  spec: { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'] },
  status: { addresses: [{ type: 'InternalIP', address: '192.0.2.11' }, { type: 'Hostname', address: 'node-1' }] },
};

const list = (kind: string, items: readonly unknown[]) => ({ apiVersion: 'v1', kind, metadata: { resourceVersion: '' }, items });
const json = (value: unknown) => `${JSON.stringify(value, null, 4)}\n`;
const read = (...files: [string, string][]) => readCluster(files.map(([file, text]) => ({ file, text })));
const place = (d: Diagnostic) => `${d.span?.file}:${d.span?.line}:${d.span?.column}`;

/** 1-based line and column of an offset, as spans give them. */
function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: before.at(-1)!.length + 1 };
}

/** Where the object holding `needle` (one of its top-level members, like `"kind": "Pod"`) starts. */
function objectStartOf(text: string, needle: string): [string, number] {
  const at = text.indexOf(needle);
  if (at < 0) throw new Error(`'${needle}' is not in the text`);
  return [text, text.lastIndexOf('{', at)];
}

const placeOf = ([text, offset]: [string, number]) => {
  const { line, column } = lineAndColumn(text, offset);
  return `${line}:${column}`;
};

describe('readCluster reads what kubectl prints', () => {
  it('reads `kubectl get services,endpointslices -A -o json` (one List), placing each object', () => {
    const text = json(list('List', [SERVICE, SLICE]));
    const { cluster, diagnostics } = read(['cluster.json', text]);
    expect(diagnostics).toEqual([]);
    expect(cluster!.services).toEqual([
      {
        namespace: 'shop',
        name: 'web',
        type: 'NodePort',
        clusterIPs: ['10.96.0.10', 'fd00:10:96::a'],
        externalIPs: [],
        loadBalancerIPs: [],
        loadBalancerSourceRanges: [],
        ports: [{ name: 'http', protocol: 'tcp', port: 80, nodePort: 30080 }],
        externalTrafficPolicy: 'Local',
        internalTrafficPolicy: 'Cluster',
        sessionAffinity: 'None',
        annotations: { 'service.kubernetes.io/topology-mode': 'Auto' },
        at: { file: 'cluster.json', line: 8, column: 9 },
      },
    ]);
    expect(cluster!.endpointSlices).toEqual([
      {
        namespace: 'shop',
        name: 'web-abcde',
        serviceName: 'web',
        addressType: 'IPv4',
        ports: [{ name: 'http', protocol: 'tcp', port: 8080 }],
        endpoints: [
          { addresses: ['10.244.1.5'], ready: true, serving: true, terminating: false, nodeName: 'node-1', zone: 'a', hintZones: ['a'] },
          { addresses: ['10.244.2.7'], ready: false, serving: true, terminating: true, nodeName: 'node-2' },
        ],
        at: { file: 'cluster.json', ...lineAndColumn(...objectStartOf(text, '"kind": "EndpointSlice"')) },
      },
    ]);
    expect(cluster!.nodes).toEqual([]);
  });

  it('reads two files, a ServiceList and an EndpointSliceList whose items have no kind (the API\'s own lists)', () => {
    const bare = ({ kind: _k, apiVersion: _a, ...rest }: Record<string, unknown>) => rest;
    const { cluster, diagnostics } = read(['svc.json', json(list('ServiceList', [bare(SERVICE)]))], ['eps.json', json(list('EndpointSliceList', [bare(SLICE)]))]);
    expect(diagnostics).toEqual([]);
    expect(cluster!.services.map((s) => [s.name, s.at.file])).toEqual([['web', 'svc.json']]);
    expect(cluster!.endpointSlices.map((s) => [s.name, s.at.file])).toEqual([['web-abcde', 'eps.json']]);
  });

  it('reads `-o yaml` the same as `-o json`, with YAML lines', () => {
    const text = stringify(list('List', [SERVICE, SLICE]));
    const fromYaml = read(['cluster.yaml', text]);
    const fromJson = read(['cluster.json', json(list('List', [SERVICE, SLICE]))]);
    expect(fromYaml.diagnostics).toEqual([]);
    const withoutAt = (c: Cluster) => ({ ...c, services: c.services.map(({ at: _, ...s }) => s), endpointSlices: c.endpointSlices.map(({ at: _, ...s }) => s) });
    expect(withoutAt(fromYaml.cluster!)).toEqual(withoutAt(fromJson.cluster!));
    expect(fromYaml.cluster!.services[0]!.at).toEqual({ file: 'cluster.yaml', ...lineAndColumn(text, text.indexOf('apiVersion: v1\n    kind: Service')) });
  });

  it('reads `kubectl get nodes -o json`: addresses, pod CIDRs, labels', () => {
    const { cluster, diagnostics } = read(['nodes.json', json(list('NodeList', [NODE]))]);
    expect(diagnostics).toEqual([]);
    expect(cluster!.nodes).toEqual([
      {
        name: 'node-1',
        addresses: [{ type: 'InternalIP', address: '192.0.2.11' }, { type: 'Hostname', address: 'node-1' }],
        podCIDRs: ['10.244.1.0/24'],
        labels: { 'topology.kubernetes.io/zone': 'a' },
      },
    ]);
  });

  it('reads a single object (kubectl get service web -o json)', () => {
    const { cluster, diagnostics } = read(['web.json', json(SERVICE)]);
    expect(diagnostics).toEqual([]);
    expect(cluster!.services.map((s) => [s.name, s.at])).toEqual([['web', { file: 'web.json', line: 1, column: 1 }]]);
  });
});

const minimalService = (spec: Record<string, unknown>, status: Record<string, unknown> = {}) => ({
  kind: 'Service',
  metadata: { name: 's', namespace: 'n' },
  spec: { clusterIP: '10.96.0.1', ports: [{ port: 80 }], ...spec },
  status,
});
const minimalSlice = (endpoint: Record<string, unknown>, port: Record<string, unknown> = { port: 8080 }) => ({
  kind: 'EndpointSlice',
  metadata: { name: 's-1', namespace: 'n', labels: { 'kubernetes.io/service-name': 's' } },
  addressType: 'IPv4',
  ports: [port],
  endpoints: [{ addresses: ['10.244.0.1'], ...endpoint }],
});
const serviceOf = (spec: Record<string, unknown>, status?: Record<string, unknown>) => read(['c.json', json(minimalService(spec, status))]).cluster!.services[0]!;
const endpointOf = (endpoint: Record<string, unknown>) => read(['c.json', json(minimalSlice(endpoint))]).cluster!.endpointSlices[0]!.endpoints[0]!;

describe('readCluster applies the API defaults (core/v1 and discovery/v1 defaults.go)', () => {
  it.each([
    ['type ClusterIP', {}, { type: 'ClusterIP' }],
    ['protocol TCP, no port name', {}, { ports: [{ name: '', protocol: 'tcp', port: 80 }] }],
    ['externalTrafficPolicy Cluster', {}, { externalTrafficPolicy: 'Cluster' }],
    ['internalTrafficPolicy Cluster', {}, { internalTrafficPolicy: 'Cluster' }],
    ['sessionAffinity None', {}, { sessionAffinity: 'None' }],
    ['sessionAffinity ClientIP: timeout 10800 s', { sessionAffinity: 'ClientIP' }, { sessionAffinity: 'ClientIP', sessionAffinityTimeout: 10800 }],
    ['sessionAffinity ClientIP with its timeout', { sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } } }, { sessionAffinityTimeout: 60 }],
    ['clusterIP None: a headless Service, no ClusterIP', { clusterIP: 'None', clusterIPs: ['None'] }, { clusterIPs: [] }],
    ['spec.clusterIP alone when clusterIPs is absent', { clusterIP: '10.96.0.7' }, { clusterIPs: ['10.96.0.7'] }],
    ['IPv6 addresses in canonical text (as kube-proxy and nft print them)', { clusterIP: 'FD00:0:0::0A', externalIPs: ['2001:DB8:0::1'] }, { clusterIPs: ['fd00::a'], externalIPs: ['2001:db8::1'] }],
    ['nodePort 0 is no nodePort (allocateLoadBalancerNodePorts: false)', { type: 'LoadBalancer', ports: [{ port: 80, nodePort: 0 }] }, { ports: [{ name: '', protocol: 'tcp', port: 80 }] }],
    ['protocol lowercased', { ports: [{ port: 53, protocol: 'UDP' }, { port: 9, protocol: 'SCTP' }] }, { ports: [{ name: '', protocol: 'udp', port: 53 }, { name: '', protocol: 'sctp', port: 9 }] }],
    ['LoadBalancer source ranges trimmed, as kube-proxy trims them', { loadBalancerSourceRanges: [' 203.0.113.0/25 '] }, { loadBalancerSourceRanges: ['203.0.113.0/25'] }],
  ])('Service: %s', (_name, spec, expected) => {
    expect(serviceOf(spec)).toMatchObject(expected);
  });

  it('has no affinity timeout without ClientIP affinity', () => {
    expect(serviceOf({})).not.toHaveProperty('sessionAffinityTimeout');
  });

  it('takes LoadBalancer ingress IPs, leaving out hostnames and `ipMode: Proxy` ones (kube-proxy writes no rule for those)', () => {
    const service = serviceOf({ type: 'LoadBalancer' }, { loadBalancer: { ingress: [{ ip: '198.51.100.1' }, { hostname: 'lb.example' }, { ip: '198.51.100.2', ipMode: 'Proxy' }, { ip: '198.51.100.3', ipMode: 'VIP' }] } });
    expect(service.loadBalancerIPs).toEqual(['198.51.100.1', '198.51.100.3']);
  });

  it.each([
    ['no conditions: ready, serving, not terminating', {}, { ready: true, serving: true, terminating: false }],
    ['ready: false alone: serving as kube-proxy reads it (true), not terminating', { conditions: { ready: false } }, { ready: false, serving: true, terminating: false }],
    ['terminating alone', { conditions: { terminating: true } }, { ready: true, serving: true, terminating: true }],
    ['all three given', { conditions: { ready: false, serving: false, terminating: true } }, { ready: false, serving: false, terminating: true }],
  ])('EndpointSlice endpoint conditions: %s (endpointslicecache.go)', (_name, endpoint, expected) => {
    expect(endpointOf(endpoint)).toMatchObject(expected);
  });

  it('EndpointSlice port: name "" and protocol TCP when absent (SetDefaults_EndpointPort); endpoints: null is none', () => {
    const { cluster } = read(['c.json', json({ ...minimalSlice({}), endpoints: null })]);
    expect(cluster!.endpointSlices[0]).toMatchObject({ ports: [{ name: '', protocol: 'tcp', port: 8080 }], endpoints: [] });
  });

  it('a namespaced object without a namespace is in `default`, as kubectl would create it', () => {
    const { cluster } = read(['c.json', json({ ...minimalService({}), metadata: { name: 's' } })]);
    expect(cluster!.services[0]!.namespace).toBe('default');
  });
});

describe('readCluster reports problems at file:line:column and never throws', () => {
  // A hand-written file, so the expected places can be read off the text.
  const FILE = [
    '{', //                                                        1
    '  "kind": "List",', //                                        2
    '  "items": [', //                                             3
    '    {', //                                                    4
    '      "kind": "Service",', //                                 5
    '      "metadata": { "name": "s", "namespace": "n" },', //     6
    '      "spec": { "clusterIP": "10.96.0.1", "ports": [', //     7
    '        { "name": "a", "protocol": "TCP", "port": 80 }', //   8
    '      ] }', //                                                9
    '    },', //                                                  10
    '    {', //                                                   11
    '      "kind": "EndpointSlice",', //                          12
    '      "metadata": { "name": "s-1", "namespace": "n", "labels": { "kubernetes.io/service-name": "s" } },', // 13
    '      "addressType": "IPv4",', //                            14
    '      "ports": [ { "name": "a", "port": 8080 } ],', //        15
    '      "endpoints": [ { "addresses": [ "10.244.0.1" ] } ]', // 16
    '    }', //                                                   17
    '  ]', //                                                     18
    '}', //                                                       19
    '',
  ].join('\n');

  it('reads the hand-written file cleanly', () => {
    const { cluster, diagnostics } = read(['c.json', FILE]);
    expect(diagnostics).toEqual([]);
    expect(cluster!.services[0]!.at).toEqual({ file: 'c.json', line: 4, column: 5 });
    expect(cluster!.endpointSlices[0]!.at).toEqual({ file: 'c.json', line: 11, column: 5 });
  });

  it.each([
    ['a Service port without a number', ['"port": 80 }', '}'], 'c.json:8:9', 'items[0].spec.ports[0].port: missing (an integer from 1 to 65535)'],
    ['a port number out of range', ['"port": 80', '"port": 70000'], 'c.json:8:43', 'items[0].spec.ports[0].port: expected an integer from 1 to 65535'],
    ['an unknown protocol', ['"protocol": "TCP"', '"protocol": "TPC"'], 'c.json:8:24', "items[0].spec.ports[0].protocol: unknown protocol 'TPC' (expected TCP, UDP or SCTP)"],
    ['an unknown Service type', ['"clusterIP": "10.96.0.1"', '"type": "Nodeport", "clusterIP": "10.96.0.1"'], 'c.json:7:17', "items[0].spec.type: unknown value 'Nodeport' (expected one of ClusterIP, NodePort, LoadBalancer, ExternalName)"],
    ['a ClusterIP that is not an address', ['"10.96.0.1"', '"10.96.0.300"'], 'c.json:7:17', "items[0].spec.clusterIP: '10.96.0.300' is not an IP address"],
    ['an EndpointSlice without addressType', ['"addressType": "IPv4",', ''], 'c.json:11:5', 'items[1].addressType: missing (one of IPv4, IPv6, FQDN)'],
    ['an endpoint address of the other family', ['"10.244.0.1"', '"fd00::1"'], 'c.json:16:39', "items[1].endpoints[0].addresses[0]: 'fd00::1' is not an IPv4 address (the slice's addressType)"],
    ['an endpoint without addresses', ['"addresses": [ "10.244.0.1" ]', '"addresses": []'], 'c.json:16:24', 'items[1].endpoints[0].addresses: expected at least one address'],
    ['a condition that is not a boolean', ['[ "10.244.0.1" ] }', '[ "10.244.0.1" ], "conditions": { "ready": "yes" } }'], 'c.json:16:71', 'items[1].endpoints[0].conditions.ready: expected true or false'],
    ['an item without a kind', ['"kind": "Service",', ''], 'c.json:4:5', 'items[0].kind: expected the kind of the object (Service, EndpointSlice, Node…)'],
  ])('%s', (_name, [from, to], at, message) => {
    const { cluster, diagnostics } = read(['c.json', FILE.replace(from!, to!)]);
    expect(diagnostics.map((d) => [d.severity, place(d), d.message])).toEqual([['error', at, message]]);
    // The object with the error is left out; the rest of the cluster is read.
    expect(cluster!.services.length + cluster!.endpointSlices.length).toBe(1);
  });

  it.each([
    ['a JSON syntax error', 'c.json', '{ "kind": "List", "items": [ { "kind": "Service", } ', /^c\.json:1:\d+$/, /^JSON: /],
    ['a YAML syntax error', 'c.yaml', 'kind: List\nitems:\n  - kind: Service\n   metadata: {\n', /^c\.yaml:\d+:\d+$/, /^YAML: /],
    ['a file that is not a Kubernetes object', 'c.json', '[1, 2]\n', /^c\.json:1:1$/, /expected a Kubernetes object or list with a kind/],
    ['a List whose items are not an array', 'c.json', '{ "kind": "List", "items": 5 }', /^c\.json:1:19$/, /^items: expected an array$/],
  ])('gives no cluster for %s', (_name, file, text, at, message) => {
    const { cluster, diagnostics } = read([file, text]);
    expect(cluster).toBeUndefined();
    const errors = diagnostics.filter((d) => d.severity === 'error');
    expect(errors.length).toBeGreaterThan(0);
    expect(place(errors[0]!)).toMatch(at);
    expect(errors[0]!.message).toMatch(message);
  });

  it('leaves out other kinds with one info diagnostic per kind, at the first, with the count', () => {
    const endpoints = { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 's', namespace: 'n' } };
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'n' } };
    const text = json(list('List', [endpoints, SERVICE, endpoints, pod, endpoints]));
    const { cluster, diagnostics } = read(['c.json', text]);
    expect(cluster!.services).toHaveLength(1);
    expect(diagnostics.map((d) => [d.severity, d.code, place(d), d.message])).toEqual([
      ['info', 'ignored-kind', `c.json:${placeOf(objectStartOf(text, '"kind": "Endpoints"'))}`, 'ignored 3 Endpoints objects: kube-drift reads Services, EndpointSlices and Nodes'],
      ['info', 'ignored-kind', `c.json:${placeOf(objectStartOf(text, '"kind": "Pod"'))}`, 'ignored 1 Pod object: kube-drift reads Services, EndpointSlices and Nodes'],
    ]);
  });

  it('skips an EndpointSlice without the kubernetes.io/service-name label, as kube-proxy does (another controller owns it), with an info', () => {
    const text = FILE.replace('"labels": { "kubernetes.io/service-name": "s" }', '"labels": {}');
    const { cluster, diagnostics } = read(['c.json', text]);
    expect(cluster!.endpointSlices).toEqual([]);
    expect(cluster!.services).toHaveLength(1);
    expect(diagnostics.map((d) => [d.severity, place(d), d.message])).toEqual([
      ['info', 'c.json:11:5', 'ignored 1 EndpointSlice without the kubernetes.io/service-name label: kube-proxy reads only the slices of a Service'],
    ]);
  });

  it('warns about an object given twice and keeps the first', () => {
    const { cluster, diagnostics } = read(['a.json', json(SERVICE)], ['b.json', json(list('List', [{ ...SERVICE, spec: { ...SERVICE.spec, type: 'ClusterIP' } }]))]);
    expect(cluster!.services.map((s) => s.type)).toEqual(['NodePort']);
    expect(diagnostics.map((d) => [d.severity, d.code, place(d), d.message])).toEqual([
      ['warning', 'duplicate-object', 'b.json:8:9', 'Service shop/web is also at a.json:1:1; the first one is used'],
    ]);
  });
});
