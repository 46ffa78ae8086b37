import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Cluster, ClusterNode, EndpointSlice, Expectation, ExpectationQuery, Service, ServicePortSpec, SliceEndpoint } from '../../src/kube/cluster.js';
import { indexCluster } from '../../src/kube/cluster-index.js';
import { expectedEndpoints, isProxied, serviceAddresses } from '../../src/kube/expected-endpoints.js';

const AT = { file: 'cluster.json', line: 1, column: 1 };
const HTTP: ServicePortSpec = { name: 'http', protocol: 'tcp', port: 80, nodePort: 30080 };

function service(over: Partial<Service> = {}): Service {
  return {
    namespace: 'shop',
    name: 'web',
    type: 'NodePort',
    clusterIPs: ['10.96.0.10'],
    externalIPs: [],
    loadBalancerIPs: [],
    loadBalancerSourceRanges: [],
    ports: [HTTP],
    externalTrafficPolicy: 'Cluster',
    internalTrafficPolicy: 'Cluster',
    sessionAffinity: 'None',
    annotations: {},
    at: AT,
    ...over,
  };
}

/** An endpoint: `10.244.1.5@node-1`, with conditions and hints as given (ready by default). */
function ep(spec: string, over: Partial<SliceEndpoint> = {}): SliceEndpoint {
  const [address, nodeName] = spec.split('@');
  return { addresses: [address!], ready: true, serving: true, terminating: false, ...(nodeName && { nodeName }), ...over };
}
const notReady = { ready: false, serving: false, terminating: false };
const servingTerminating = { ready: false, serving: true, terminating: true };
const terminatingNotServing = { ready: false, serving: false, terminating: true };

function slice(endpoints: readonly SliceEndpoint[], over: Partial<EndpointSlice> = {}): EndpointSlice {
  return { namespace: 'shop', name: 'web-1', serviceName: 'web', addressType: 'IPv4', ports: [{ name: 'http', protocol: 'tcp', port: 8080 }], endpoints, at: AT, ...over };
}

const NODES: ClusterNode[] = [
  { name: 'node-1', addresses: [{ type: 'InternalIP', address: '192.0.2.11' }], podCIDRs: ['10.244.1.0/24'], labels: { 'topology.kubernetes.io/zone': 'a' } },
  { name: 'node-2', addresses: [{ type: 'InternalIP', address: '192.0.2.12' }], podCIDRs: ['10.244.2.0/24'], labels: { 'topology.kubernetes.io/zone': 'b' } },
  { name: 'node-nozone', addresses: [], podCIDRs: [], labels: {} },
];

interface Case {
  readonly service?: Partial<Service>;
  readonly port?: ServicePortSpec;
  readonly slices: readonly EndpointSlice[];
  readonly query?: Partial<ExpectationQuery>;
}

function expectation({ service: over = {}, port = HTTP, slices, query = {} }: Case): Expectation {
  const svc = service(over);
  const cluster: Cluster = { services: [svc], endpointSlices: slices, nodes: NODES };
  return expectedEndpoints(indexCluster(cluster), svc, port, { node: 'node-1', access: 'clusterIP', client: 'pod', family: 'ipv4', ...query });
}

/** The endpoints of an expectation as `ip:port share` lines, easy to compare. */
const shares = (e: Expectation) => e.endpoints.map((x) => `${x.endpoint} ${x.share.toFixed(4)}`);

const THREE_READY = [slice([ep('10.244.1.5@node-1'), ep('10.244.2.7@node-2'), ep('10.244.2.8@node-2')])];

describe('expectedEndpoints: the endpoints of a Service port (pkg/proxy/endpointslicecache.go)', () => {
  it.each<[string, Case, string[]]>([
    ['ready endpoints share new connections equally (iptables statistic 1/(n-i), nft numgen mod n), in kube-proxy\'s sorted order', { slices: THREE_READY }, ['10.244.1.5:8080 0.3333', '10.244.2.7:8080 0.3333', '10.244.2.8:8080 0.3333']],
    ['not-ready endpoints are not used while some endpoint is ready', { slices: [slice([ep('10.244.1.5@node-1'), ep('10.244.2.7@node-2', notReady)])] }, ['10.244.1.5:8080 1.0000']],
    ['the endpoint port is the slice port\'s number, not the Service port', { slices: [slice([ep('10.244.1.5')], { ports: [{ name: 'http', protocol: 'tcp', port: 9090 }] })] }, ['10.244.1.5:9090 1.0000']],
    ['the slice port is matched by the Service port\'s name', { slices: [slice([ep('10.244.1.5')], { ports: [{ name: 'metrics', protocol: 'tcp', port: 9100 }, { name: 'http', protocol: 'tcp', port: 8080 }] })] }, ['10.244.1.5:8080 1.0000']],
    ['a slice port of the same name but another protocol is not this port\'s (ServicePortName has the protocol)', { slices: [slice([ep('10.244.1.5')], { ports: [{ name: 'http', protocol: 'udp', port: 8080 }] })] }, []],
    ['endpoints of all the Service\'s slices are merged', { slices: [slice([ep('10.244.1.5')]), slice([ep('10.244.2.7')], { name: 'web-2' })] }, ['10.244.1.5:8080 0.5000', '10.244.2.7:8080 0.5000']],
    ['each slice\'s endpoints take that slice\'s port number (slices of one port may differ while pods roll)', { slices: [slice([ep('10.244.1.5')]), slice([ep('10.244.2.7')], { name: 'web-2', ports: [{ name: 'http', protocol: 'tcp', port: 8081 }] })] }, ['10.244.1.5:8080 0.5000', '10.244.2.7:8081 0.5000']],
    ['the same ip:port in two slices is one endpoint (an endpoint moving between slices)', { slices: [slice([ep('10.244.1.5')]), slice([ep('10.244.1.5')], { name: 'web-2' })] }, ['10.244.1.5:8080 1.0000']],
    ['of the same ip:port in two slices, the non-terminating one counts (a reused pod IP)', { slices: [slice([ep('10.244.1.5', servingTerminating), ep('10.244.2.7', servingTerminating)]), slice([ep('10.244.1.5')], { name: 'web-2' })] }, ['10.244.1.5:8080 1.0000']],
    ['only an endpoint\'s first address is used', { slices: [slice([{ ...ep('10.244.1.5'), addresses: ['10.244.1.5', '10.244.1.6'] }])] }, ['10.244.1.5:8080 1.0000']],
    ['slices of another Service or namespace are not this Service\'s', { slices: [slice([ep('10.244.1.5')], { serviceName: 'api' }), slice([ep('10.244.1.6')], { namespace: 'other' })] }, []],
    ['the IPv4 rules read only IPv4 slices (addressType; EndpointsChangeTracker ignores the others)', { slices: [slice([ep('fd00::5')], { addressType: 'IPv6' }), slice([ep('10.244.1.5')], { name: 'web-2' })] }, ['10.244.1.5:8080 1.0000']],
    ['the IPv6 rules read IPv6 slices, endpoints as [ip]:port', { service: { clusterIPs: ['10.96.0.10', 'fd00:96::a'] }, slices: [slice([ep('fd00::5')], { addressType: 'IPv6' }), slice([ep('10.244.1.5')], { name: 'web-2' })], query: { family: 'ipv6' } }, ['[fd00::5]:8080 1.0000']],
    ['FQDN slices are never proxied', { slices: [slice([ep('db.example')], { addressType: 'FQDN' })] }, []],
  ])('%s', (_name, c, expected) => {
    expect(shares(expectation(c))).toEqual(expected);
  });
});

describe('expectedEndpoints: which endpoints kube-proxy uses (pkg/proxy/topology.go CategorizeEndpoints)', () => {
  it.each<[string, Case, string[], string]>([
    ['ready endpoints', { slices: THREE_READY }, ['10.244.1.5:8080', '10.244.2.7:8080', '10.244.2.8:8080'], 'ready endpoints'],
    ['with no ready endpoint, the serving terminating ones (ProxyTerminatingEndpoints, GA in 1.28)', { slices: [slice([ep('10.244.1.5', servingTerminating), ep('10.244.2.7', terminatingNotServing), ep('10.244.2.8', notReady)])] }, ['10.244.1.5:8080'], 'serving terminating endpoints: no endpoint is ready'],
    ['a ready endpoint wins over serving terminating ones', { slices: [slice([ep('10.244.1.5', servingTerminating), ep('10.244.2.7')])] }, ['10.244.2.7:8080'], 'ready endpoints'],
    ['internalTrafficPolicy: Local: the node\'s own ready endpoints for the ClusterIP', { service: { internalTrafficPolicy: 'Local' }, slices: THREE_READY }, ['10.244.1.5:8080'], 'local ready endpoints (internalTrafficPolicy: Local)'],
    ['internalTrafficPolicy: Local: local serving terminating ones when no local endpoint is ready', { service: { internalTrafficPolicy: 'Local' }, slices: [slice([ep('10.244.1.5@node-1', servingTerminating), ep('10.244.2.7@node-2')])] }, ['10.244.1.5:8080'], 'local serving terminating endpoints (internalTrafficPolicy: Local): no local endpoint is ready'],
    ['internalTrafficPolicy: Local does not apply to a NodePort', { service: { internalTrafficPolicy: 'Local' }, slices: THREE_READY, query: { access: 'nodePort', client: 'external' } }, ['10.244.1.5:8080', '10.244.2.7:8080', '10.244.2.8:8080'], 'ready endpoints'],
    ['externalTrafficPolicy: Local: a client off the node reaching the NodePort gets the node\'s own endpoints', { service: { externalTrafficPolicy: 'Local' }, slices: THREE_READY, query: { access: 'nodePort', client: 'external' } }, ['10.244.1.5:8080'], 'local ready endpoints (externalTrafficPolicy: Local)'],
    ['externalTrafficPolicy: Local applies to LoadBalancer IPs', { service: { type: 'LoadBalancer', externalTrafficPolicy: 'Local', loadBalancerIPs: ['198.51.100.1'] }, slices: THREE_READY, query: { node: 'node-2', access: 'loadBalancer', client: 'external' } }, ['10.244.2.7:8080', '10.244.2.8:8080'], 'local ready endpoints (externalTrafficPolicy: Local)'],
    ['externalTrafficPolicy: Local applies to external IPs', { service: { type: 'ClusterIP', externalTrafficPolicy: 'Local', externalIPs: ['203.0.113.9'] }, slices: THREE_READY, query: { access: 'externalIP', client: 'external' } }, ['10.244.1.5:8080'], 'local ready endpoints (externalTrafficPolicy: Local)'],
    ['externalTrafficPolicy: Local: pod traffic to an external address is short-circuited to all endpoints (KUBE-EXT "pod traffic for … external destinations")', { service: { externalTrafficPolicy: 'Local' }, slices: THREE_READY, query: { access: 'nodePort', client: 'pod' } }, ['10.244.1.5:8080', '10.244.2.7:8080', '10.244.2.8:8080'], 'ready endpoints (externalTrafficPolicy: Local does not apply: pod traffic to an external address goes to the cluster-wide endpoints)'],
    ['externalTrafficPolicy: Local: the node\'s own traffic is routed to all endpoints (KUBE-EXT "route LOCAL traffic")', { service: { externalTrafficPolicy: 'Local' }, slices: THREE_READY, query: { access: 'nodePort', client: 'node' } }, ['10.244.1.5:8080', '10.244.2.7:8080', '10.244.2.8:8080'], "ready endpoints (externalTrafficPolicy: Local does not apply: the node's own traffic to an external address goes to the cluster-wide endpoints)"],
    ['externalTrafficPolicy: Local does not apply to the ClusterIP', { service: { externalTrafficPolicy: 'Local' }, slices: THREE_READY, query: { access: 'clusterIP', client: 'external' } }, ['10.244.1.5:8080', '10.244.2.7:8080', '10.244.2.8:8080'], 'ready endpoints'],
    ['an endpoint is local by its nodeName only', { service: { internalTrafficPolicy: 'Local' }, slices: [slice([ep('10.244.1.5'), ep('10.244.1.6@node-1'), ep('10.244.1.7@node-10')])] }, ['10.244.1.6:8080'], 'local ready endpoints (internalTrafficPolicy: Local)'],
  ])('%s', (_name, c, endpoints, basis) => {
    const e = expectation(c);
    expect(e.endpoints.map((x) => x.endpoint)).toEqual(endpoints);
    expect(e.basis).toBe(basis);
    expect(e.none).toBeUndefined();
  });

  it.each<[string, Case, 'reject' | 'drop', string]>([
    ['no endpoints at all: REJECT ("has no endpoints")', { slices: [] }, 'reject', 'no endpoints: kube-proxy rejects ("shop/web:http has no endpoints")'],
    ['only not-ready and terminating-not-serving endpoints: REJECT', { slices: [slice([ep('10.244.1.5', notReady), ep('10.244.1.6', terminatingNotServing)])] }, 'reject', 'no endpoints: kube-proxy rejects ("shop/web:http has no endpoints")'],
    ['internalTrafficPolicy: Local without a local endpoint: DROP ("has no local endpoints")', { service: { internalTrafficPolicy: 'Local' }, slices: [slice([ep('10.244.2.7@node-2')])] }, 'drop', 'no local endpoints (internalTrafficPolicy: Local): kube-proxy drops ("shop/web:http has no local endpoints")'],
    ['externalTrafficPolicy: Local without a local endpoint, from off the node: DROP', { service: { externalTrafficPolicy: 'Local' }, slices: [slice([ep('10.244.2.7@node-2')])], query: { access: 'nodePort', client: 'external' } }, 'drop', 'no local endpoints (externalTrafficPolicy: Local): kube-proxy drops ("shop/web:http has no local endpoints")'],
    ['externalTrafficPolicy: Local with no endpoint anywhere: REJECT, not DROP', { service: { externalTrafficPolicy: 'Local' }, slices: [], query: { access: 'nodePort', client: 'external' } }, 'reject', 'no endpoints: kube-proxy rejects ("shop/web:http has no endpoints")'],
    ['the unnamed port of a single-port Service is named ns/svc', { port: { name: '', protocol: 'tcp', port: 80 }, slices: [] }, 'reject', 'no endpoints: kube-proxy rejects ("shop/web has no endpoints")'],
  ])('%s', (_name, c, none, basis) => {
    expect(expectation(c)).toEqual({ endpoints: [], basis, none });
  });

  it('externalTrafficPolicy: Local without a local endpoint still short-circuits pod traffic to the others', () => {
    const e = expectation({ service: { externalTrafficPolicy: 'Local' }, slices: [slice([ep('10.244.2.7@node-2')])], query: { access: 'nodePort', client: 'pod' } });
    expect(shares(e)).toEqual(['10.244.2.7:8080 1.0000']);
  });
});

describe('expectedEndpoints: topology-aware routing (topology.go topologyModeFromHints)', () => {
  const zoned = (zoneB: readonly string[] | undefined) => [
    slice([ep('10.244.1.5@node-1', { zone: 'a', hintZones: ['a'] }), ep('10.244.1.6@node-1', { zone: 'a', hintZones: ['a'] }), ep('10.244.2.7@node-2', { zone: 'b', ...(zoneB && { hintZones: zoneB }) })]),
  ];
  it.each<[string, Case, string[], string]>([
    ['every ready endpoint has a zone hint and some are for the node\'s zone: only those', { slices: zoned(['b']) }, ['10.244.1.5:8080', '10.244.1.6:8080'], 'ready endpoints hinted for zone a (topology-aware routing)'],
    ['a hint for another zone than its own is followed (the controller balances zones)', { slices: zoned(['a']) }, ['10.244.1.5:8080', '10.244.1.6:8080', '10.244.2.7:8080'], 'ready endpoints hinted for zone a (topology-aware routing)'],
    ['one ready endpoint without a hint: hints are ignored, all endpoints', { slices: zoned(undefined) }, ['10.244.1.5:8080', '10.244.1.6:8080', '10.244.2.7:8080'], 'ready endpoints'],
    ['no endpoint hinted for the node\'s zone: all endpoints', { slices: zoned(['b']), query: { node: 'node-2' } }, ['10.244.2.7:8080'], 'ready endpoints hinted for zone b (topology-aware routing)'],
    ['a node without a zone label: all endpoints', { slices: zoned(['b']), query: { node: 'node-nozone' } }, ['10.244.1.5:8080', '10.244.1.6:8080', '10.244.2.7:8080'], 'ready endpoints'],
    ['a node not in the cluster file: its zone is unknown, all endpoints, and the basis says so', { slices: zoned(['b']), query: { node: 'node-9' } }, ['10.244.1.5:8080', '10.244.1.6:8080', '10.244.2.7:8080'], 'ready endpoints; node node-9 is not in the cluster file, so its zone is unknown and the zone hints are not applied'],
    ['hints of not-ready endpoints do not count', { slices: [slice([ep('10.244.1.5@node-1', { hintZones: ['a'] }), ep('10.244.2.7@node-2', { ...notReady })])] }, ['10.244.1.5:8080'], 'ready endpoints hinted for zone a (topology-aware routing)'],
    ['PreferSameNode: every ready endpoint has a node hint and some are for this node: only those', { slices: [slice([ep('10.244.1.5@node-1', { hintNodes: ['node-1'], hintZones: ['a'] }), ep('10.244.2.7@node-2', { hintNodes: ['node-2'], hintZones: ['a'] })])] }, ['10.244.1.5:8080'], 'ready endpoints hinted for node node-1 (topology hints, PreferSameNode)'],
    ['PreferSameNode falls back to zone hints when none is for this node', { slices: [slice([ep('10.244.2.6@node-2', { hintNodes: ['node-2'], hintZones: ['b'] }), ep('10.244.2.7@node-3', { hintNodes: ['node-3'], hintZones: ['a'] })])] }, ['10.244.2.7:8080'], 'ready endpoints hinted for zone a (topology-aware routing)'],
    ['node hints apply by the node\'s name even when the node is not in the cluster file', { slices: [slice([ep('10.244.1.5@node-9', { hintNodes: ['node-9'] }), ep('10.244.2.7@node-2', { hintNodes: ['node-2'] })])], query: { node: 'node-9' } }, ['10.244.1.5:8080'], 'ready endpoints hinted for node node-9 (topology hints, PreferSameNode)'],
    ['topology does not narrow the serving terminating fallback', { slices: [slice([ep('10.244.1.5@node-1', { ...servingTerminating, hintZones: ['a'] }), ep('10.244.2.7@node-2', { ...servingTerminating, hintZones: ['b'] })])] }, ['10.244.1.5:8080', '10.244.2.7:8080'], 'serving terminating endpoints: no endpoint is ready'],
    ['topology does not narrow a Local policy\'s endpoints', { service: { internalTrafficPolicy: 'Local' }, slices: [slice([ep('10.244.1.5@node-1', { hintZones: ['b'] }), ep('10.244.2.7@node-2', { hintZones: ['a'] })])] }, ['10.244.1.5:8080'], 'local ready endpoints (internalTrafficPolicy: Local)'],
  ])('%s', (_name, c, endpoints, basis) => {
    const e = expectation(c);
    expect(e.endpoints.map((x) => x.endpoint)).toEqual(endpoints);
    expect(e.basis).toBe(basis);
  });
});

describe('expectedEndpoints: what kube-proxy does not program', () => {
  it.each<[string, Case, string]>([
    ['a headless Service (clusterIP: None): ShouldSkipService', { service: { type: 'ClusterIP', clusterIPs: [] }, slices: THREE_READY }, 'headless Service (clusterIP: None): kube-proxy programs nothing'],
    ['an ExternalName Service', { service: { type: 'ExternalName', clusterIPs: [] }, slices: THREE_READY }, 'ExternalName Service: kube-proxy programs nothing (DNS answers for it)'],
    ['a single-stack IPv4 Service in the IPv6 rules (each family\'s proxier takes Services with a ClusterIP of its family)', { slices: THREE_READY, query: { family: 'ipv6' } }, 'no ipv6 ClusterIP: the ipv6 rules leave the Service out'],
    ['a NodePort access to a port without a nodePort', { port: { name: 'http', protocol: 'tcp', port: 80 }, slices: THREE_READY, query: { access: 'nodePort' } }, 'no nodePort in ipv4: kube-proxy writes no rule for it'],
    ['a LoadBalancer access without ingress IPs of the family', { service: { loadBalancerIPs: ['2001:db8::1'] }, slices: THREE_READY, query: { access: 'loadBalancer' } }, 'no loadBalancer in ipv4: kube-proxy writes no rule for it'],
  ])('%s', (_name, c, basis) => {
    expect(expectation(c)).toEqual({ endpoints: [], basis });
  });

  it.each<[string, Partial<Service>, boolean]>([
    ['a ClusterIP Service', { type: 'ClusterIP' }, true],
    ['a NodePort Service', {}, true],
    ['a headless Service', { type: 'ClusterIP', clusterIPs: [] }, false],
    ['an ExternalName Service', { type: 'ExternalName', clusterIPs: [] }, false],
  ])('isProxied: %s', (_name, over, proxied) => {
    expect(isProxied(service(over))).toBe(proxied);
  });
});

describe('serviceAddresses: where clients reach a Service port, per family', () => {
  const dual = service({
    type: 'LoadBalancer',
    clusterIPs: ['10.96.0.10', 'fd00:96::a'],
    externalIPs: ['203.0.113.9', '2001:db8::9'],
    loadBalancerIPs: ['198.51.100.1', '2001:db8::1'],
  });
  it.each<[string, Service, 'ipv4' | 'ipv6', string[]]>([
    ['ClusterIP, external IPs, LoadBalancer IPs with the Service port; the nodePort without an address', dual, 'ipv4', ['clusterIP 10.96.0.10:80', 'externalIP 203.0.113.9:80', 'loadBalancer 198.51.100.1:80', 'nodePort :30080']],
    ['only the addresses of the family', dual, 'ipv6', ['clusterIP fd00:96::a:80', 'externalIP 2001:db8::9:80', 'loadBalancer 2001:db8::1:80', 'nodePort :30080']],
    ['nothing in a family without a ClusterIP, even its external IPs (the proxier skips the Service)', service({ externalIPs: ['2001:db8::9'] }), 'ipv6', []],
    ['nothing for a headless Service', service({ type: 'ClusterIP', clusterIPs: [] }), 'ipv4', []],
  ])('%s', (_name, svc, family, expected) => {
    expect(serviceAddresses(svc, HTTP, family).map((a) => `${a.access} ${a.address}:${a.port}`)).toEqual(expected);
  });
});

describe('expectedEndpoints properties', () => {
  const endpointArb = fc.record({
    host: fc.integer({ min: 1, max: 40 }),
    node: fc.constantFrom(undefined, 'node-1', 'node-2'),
    ready: fc.boolean(),
    serving: fc.boolean(),
    terminating: fc.boolean(),
    hintZones: fc.constantFrom(undefined, ['a'], ['b'], ['a', 'b']),
  });
  const queryArb = fc.record({
    node: fc.constantFrom('node-1', 'node-2', 'node-9'),
    access: fc.constantFrom('clusterIP' as const, 'nodePort' as const),
    client: fc.constantFrom('pod' as const, 'node' as const, 'external' as const),
    family: fc.constant('ipv4' as const),
  });
  const policyArb = fc.record({ internalTrafficPolicy: fc.constantFrom('Cluster' as const, 'Local' as const), externalTrafficPolicy: fc.constantFrom('Cluster' as const, 'Local' as const) });

  /** Distinct addresses: the same ip:port with other conditions is kube-proxy's undefined case. */
  const endpointsArb = fc.uniqueArray(endpointArb, { selector: (e) => e.host, maxLength: 12 }).map((list) =>
    list.map(({ host, node, hintZones, ...conditions }): SliceEndpoint => ({ addresses: [`10.244.0.${host}`], ...conditions, ...(node && { nodeName: node }), ...(hintZones && { hintZones }) })),
  );

  it('gives every chosen endpoint an equal share, the shares summing to 1; none only when empty', () => {
    fc.assert(
      fc.property(endpointsArb, queryArb, policyArb, (endpoints, query, policy) => {
        const e = expectation({ service: policy, slices: [slice(endpoints)], query });
        if (e.endpoints.length === 0) {
          expect(e.none).toBeDefined();
          return;
        }
        expect(e.none).toBeUndefined();
        expect(new Set(e.endpoints.map((x) => x.endpoint)).size).toBe(e.endpoints.length);
        expect(e.endpoints.reduce((sum, x) => sum + x.share, 0)).toBeCloseTo(1, 12);
        for (const x of e.endpoints) expect(x.share).toBe(e.endpoints[0]!.share);
      }),
      { numRuns: 300 },
    );
  });

  it('does not depend on how the endpoints are split into slices, nor on their order (duplicates included)', () => {
    fc.assert(
      fc.property(
        endpointsArb,
        fc.array(fc.nat(3), { maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.integer({ min: 0, max: 11 }),
        queryArb,
        policyArb,
        (endpoints, cuts, order, duplicate, query, policy) => {
          const whole = expectation({ service: policy, slices: [slice(endpoints)], query });
          const shuffled = endpoints.map((e, i) => [order[i] ?? 0, e] as const).sort((a, b) => a[0] - b[0]).map(([, e]) => e);
          const again = endpoints[duplicate] ? [...shuffled, endpoints[duplicate]] : shuffled;
          const groups = new Map<number, SliceEndpoint[]>();
          again.forEach((e, i) => groups.set(cuts[i] ?? 0, [...(groups.get(cuts[i] ?? 0) ?? []), e]));
          const split = [...groups.values()].reverse().map((group, i) => slice(group, { name: `web-${i}` }));
          expect(expectation({ service: policy, slices: split, query })).toEqual(whole);
        },
      ),
      { numRuns: 300 },
    );
  });
});
