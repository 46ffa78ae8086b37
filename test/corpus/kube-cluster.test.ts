import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { generateCluster, nodePlan, READY, type StateServicePort } from '../../bench/gen/kube-cluster.mjs';
import { formatKubeProxyDump, planServices } from '../../bench/gen/kube-proxy-dump.mjs';
import { formatKubeProxyNft } from '../../bench/gen/kube-proxy-nft.mjs';
import { readCluster } from '../../src/kube/read-cluster.js';

// The cluster around a kube-proxy-shaped dump (bench/gen/kube-cluster.mjs): what kubectl prints
// for the plan's Services, EndpointSlices and Nodes, and which endpoints a node's kube-proxy
// programs from them; and the internalTrafficPolicy: Local rules the dump generators write.

interface K8sObject {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown> & { ports?: { name?: string; port: number; nodePort?: number }[]; podCIDR?: string };
  status?: { addresses?: { type: string; address: string }[]; loadBalancer?: { ingress?: { ip: string }[] } };
  endpoints?: { addresses: string[]; nodeName: string; conditions: typeof READY }[] | null;
  ports?: { name: string; port: number; protocol: string }[] | null;
}

const OPTIONS = { services: 30, endpointsPerService: 3, seed: 5, nodes: 4 };
const plan = planServices(OPTIONS);
const cluster = generateCluster(plan, { nodes: OPTIONS.nodes });
const items = (cluster.services as { items: K8sObject[] }).items;
const services = items.filter((i) => i.kind === 'Service');
const slices = items.filter((i) => i.kind === 'EndpointSlice');
const nodes = (cluster.nodes as { items: K8sObject[] }).items;
const sliceOf = (svc: K8sObject) => slices.find((s) => s.metadata.namespace === svc.metadata.namespace && s.metadata.labels?.['kubernetes.io/service-name'] === svc.metadata.name)!;

/** Whether an IPv4 address is in a /24. */
const inSlash24 = (ip: string, cidr: string) => ip.split('.').slice(0, 3).join('.') === cidr.split('.').slice(0, 3).join('.');

describe('generateCluster', () => {
  it('writes a Service and an EndpointSlice, owned by the EndpointSlice controller, per service port of the plan', () => {
    expect(services).toHaveLength(plan.length);
    expect(slices).toHaveLength(plan.length);
    for (const svc of services) {
      expect(sliceOf(svc).metadata.labels).toMatchObject({ 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' });
    }
  });

  // ServicePortName.String(): `ns/svc:port`, or `ns/svc` for the unnamed port of a single-port Service.
  it('names each port as the plan\'s ServicePortName does, an unnamed one without a name', () => {
    for (const entry of plan) {
      const [nsName, portName] = entry.name.split(':');
      const svc = services.find((s) => `${s.metadata.namespace}/${s.metadata.name}` === nsName)!;
      expect(svc.spec!.ports![0]!.name).toBe(portName);
      expect(svc.spec!.ports![0]!.port).toBe(entry.port);
      if (entry.endpoints.length > 0) expect(sliceOf(svc).ports![0]!.name).toBe(portName ?? '');
    }
    expect(plan.some((p) => !p.name.includes(':'))).toBe(true);
  });

  it('places every endpoint on a node whose podCIDR holds its address, the local ones on node-1', () => {
    const podCIDRs = new Map(nodes.map((n) => [n.metadata.name, n.spec!.podCIDR!]));
    for (const slice of slices) {
      for (const ep of slice.endpoints ?? []) expect(inSlash24(ep.addresses[0]!, podCIDRs.get(ep.nodeName)!), `${ep.addresses[0]} on ${ep.nodeName}`).toBe(true);
    }
    const local = plan.flatMap((p) => p.endpoints.filter((ep) => ep.local).map((ep) => ep.ip));
    expect(local.length).toBeGreaterThan(0);
    for (const ip of local) expect(inSlash24(ip, podCIDRs.get('node-1')!)).toBe(true);
  });

  it('keeps an empty placeholder slice (no endpoints, no ports) for a Service without endpoints', () => {
    const empty = plan.filter((p) => p.endpoints.length === 0);
    expect(empty.length).toBeGreaterThan(0);
    for (const p of empty) {
      const slice = slices.find((s) => p.name.startsWith(`${s.metadata.namespace}/${s.metadata.labels!['kubernetes.io/service-name']}`))!;
      expect(slice.endpoints).toBeNull();
      expect(slice.ports).toBeNull();
    }
  });

  it('writes what kube-proxy reads of NodePort and LoadBalancer Services', () => {
    const lb = plan.find((p) => p.loadBalancerIP !== undefined && p.externalLocal && p.sourceRanges.length > 0)!;
    const svc = services.find((s) => lb.name.startsWith(`${s.metadata.namespace}/${s.metadata.name}`))!;
    expect(svc.spec).toMatchObject({ type: 'LoadBalancer', externalTrafficPolicy: 'Local', healthCheckNodePort: lb.healthCheckNodePort, loadBalancerSourceRanges: lb.sourceRanges });
    expect(svc.spec!.ports![0]!.nodePort).toBe(lb.nodePort);
    expect(svc.status!.loadBalancer!.ingress).toEqual([expect.objectContaining({ ip: lb.loadBalancerIP })]);
    const sticky = services.find((s) => s.spec!.sessionAffinity === 'ClientIP')!;
    expect(sticky.spec!.sessionAffinityConfig).toEqual({ clientIP: { timeoutSeconds: 10800 } });
  });

  it('gives each node its InternalIP and podCIDR, and reads back through readCluster without errors', () => {
    const read = readCluster([
      { file: 'cluster.json', text: JSON.stringify(cluster.services, null, 4) },
      { file: 'nodes.json', text: JSON.stringify(cluster.nodes, null, 4) },
    ]);
    expect(read.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(read.cluster!.services).toHaveLength(plan.length);
    expect(read.cluster!.nodes.map((n) => n.name)).toEqual(['node-1', 'node-2', 'node-3', 'node-4']);
    expect(read.cluster!.nodes[0]).toMatchObject({ addresses: expect.arrayContaining([{ type: 'InternalIP', address: '192.168.0.10' }]), podCIDRs: ['10.128.0.0/24'] });
  });

  it('is the same for the same plan', () => {
    expect(JSON.stringify(generateCluster(planServices(OPTIONS), { nodes: OPTIONS.nodes }))).toBe(JSON.stringify(cluster));
  });
});

describe('nodePlan', () => {
  const terminating = { ready: false, serving: true, terminating: true };
  const starting = { ready: false, serving: false, terminating: false };
  const service = (conditions: (typeof READY)[]): StateServicePort => ({
    ...plan.find((p) => p.endpoints.length >= 3 && !p.externalLocal)!,
    endpoints: conditions.map((c, i) => ({ ip: `10.128.1.${10 + i}`, port: 8080, local: false, node: i % 2, conditions: c })),
  });
  // pkg/proxy/topology.go CategorizeEndpoints (ProxyTerminatingEndpoints, GA in 1.28).
  it.each([
    ['uses the ready endpoints', [READY, READY, READY], ['10.128.1.10', '10.128.1.11', '10.128.1.12']],
    ['leaves out a terminating endpoint beside ready ones', [READY, terminating, READY], ['10.128.1.10', '10.128.1.12']],
    ['falls back to serving terminating endpoints when none is ready', [terminating, terminating, starting], ['10.128.1.10', '10.128.1.11']],
    ['never uses an endpoint that is neither ready nor serving', [starting, READY, starting], ['10.128.1.11']],
  ])('%s', (_, conditions, used) => {
    expect(nodePlan([service(conditions)], 0)[0]!.endpoints.map((ep) => ep.ip)).toEqual(used);
  });

  it('marks the endpoints of the node asked about as local', () => {
    const [svc] = nodePlan([service([READY, READY, READY])], 1);
    expect(svc!.endpoints.map((ep) => ep.local)).toEqual([false, true, false]);
  });
});

// internalTrafficPolicy: Local (proxier.go: internalTrafficChain is the SVL chain; without local
// endpoints the ClusterIP is dropped, "has no local endpoints").
describe('internalTrafficPolicy: Local rules', () => {
  const clusterIP = plan.filter((p) => p.nodePort === undefined && p.endpoints.length > 0);
  const withLocal = { ...clusterIP.find((p) => p.endpoints.some((ep) => ep.local))!, internalLocal: true };
  const withoutLocal = { ...clusterIP.find((p) => p.endpoints.every((ep) => !ep.local))!, internalLocal: true };
  const dump = formatKubeProxyDump([withLocal, withoutLocal], 'test');
  const nft = formatKubeProxyNft([withLocal, withoutLocal]);

  it('sends the ClusterIP to the SVL chain of the local endpoints, and writes no SVC chain', () => {
    const rule = dump.split('\n').find((l) => l.startsWith('-A KUBE-SERVICES') && l.includes(`-d ${withLocal.clusterIP}/32`))!;
    expect(rule).toMatch(/-j KUBE-SVL-/);
    expect(dump).not.toMatch(new RegExp(`-A KUBE-SVC-\\S+ .*${withLocal.name}`));
    expect(dump.match(/-j DNAT/g)).toHaveLength(1);
  });

  it('drops the ClusterIP without local endpoints', () => {
    expect(dump).toContain(`-A KUBE-SERVICES -d ${withoutLocal.clusterIP}/32 -p ${withoutLocal.protocol} -m comment --comment "${withoutLocal.name} has no local endpoints" -m ${withoutLocal.protocol} --dport ${withoutLocal.port} -j DROP`);
  });

  it('in nftables mode, maps the ClusterIP to the local- chain or drops it', () => {
    expect(nft).toMatch(new RegExp(`${withLocal.clusterIP.replaceAll('.', '\\.')} \\. ${withLocal.protocol} \\. ${withLocal.port} : goto local-`));
    expect(nft).toContain(`${withoutLocal.clusterIP} . ${withoutLocal.protocol} . ${withoutLocal.port} comment "${withoutLocal.name}" : drop`);
    expect(nft).not.toMatch(/chain service-[A-Z2-7]{8}-/);
  });

  const kernelSkip = process.getuid?.() !== 0 ? 'not root'
    : ['ip', 'iptables-nft-restore', 'iptables-nft-save', 'nft'].find((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  if (kernelSkip) console.warn(`internalTrafficPolicy rules not loaded into a kernel: ${kernelSkip === 'not root' ? kernelSkip : `${kernelSkip} not installed`}`);

  it.runIf(!kernelSkip)('loads into a kernel: iptables-nft-save prints the dump back, nft accepts the table', () => {
    const ns = `${process.env.NFTSIM_NETNS_PREFIX ?? 'nftsim-test'}-${process.pid}-itp`;
    const run = (args: string[], input?: string) => spawnSync('ip', ['netns', 'exec', ns, ...args], { input, encoding: 'utf8' });
    expect(spawnSync('ip', ['netns', 'add', ns]).status).toBe(0);
    try {
      expect(run(['iptables-nft-restore'], dump).stderr).toBe('');
      const withoutComments = (text: string) => text.split('\n').filter((line) => !line.startsWith('#'));
      expect(withoutComments(run(['iptables-nft-save']).stdout)).toEqual(withoutComments(dump));
      const check = run(['nft', '-c', '-f', '-'], nft);
      expect(check.stderr).toBe('');
      expect(check.status).toBe(0);
    } finally {
      spawnSync('ip', ['netns', 'del', ns]);
    }
  });
});
