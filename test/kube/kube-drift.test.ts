import { describe, expect, it } from 'vitest';
import { generateCluster } from '../../bench/gen/kube-cluster.mjs';
import { planServices } from '../../bench/gen/kube-proxy-dump.mjs';
import { generateKubeProxyNft } from '../../bench/gen/kube-proxy-nft.mjs';
import { kubeDrift, type NodeDrift, type ServiceDrift } from '../../src/kube/kube-drift.js';
import { readCluster } from '../../src/kube/read-cluster.js';
import { clusterList, driftOf, endpoint, fixture, NODE_1, objectOf, type KubeList } from './kube-drift-fixtures.js';

/** The cluster fixture changed by `change`. */
function changed(change: (list: KubeList) => void): KubeList {
  const list = clusterList();
  change(list);
  return list;
}

function service(node: NodeDrift, name: string): ServiceDrift {
  const found = [...node.services, ...node.undecided].find((s) => `${s.namespace}/${s.name}` === name);
  if (!found) throw new Error(`${name} is not among the drifting services: ${node.services.map((s) => `${s.namespace}/${s.name}`).join(', ')}`);
  return found;
}

const WEB_ENDPOINTS = (list: KubeList) => objectOf(list, 'EndpointSlice', 'default', 'web').endpoints as Record<string, unknown>[];

describe('kubeDrift on a node in iptables mode', () => {
  it('finds a node whose rules match the cluster in sync', () => {
    const node = driftOf(clusterList(), NODE_1);
    expect(node).toMatchObject({
      node: 'node-1',
      status: 'in-sync',
      mode: 'iptables',
      families: [{ family: 'ipv4', mode: 'iptables' }],
      verdict: 'node-1: in sync (9 endpoints across 5 services)',
      summary: { services: 5, endpointsExpected: 9, missing: 0, stale: 0, wrongShare: 0, noRules: 0, orphans: 0, drifting: 0 },
      services: [],
      host: 'cluster',
    });
  });

  it.each([
    [
      'an endpoint added after the last sync is missing (the others keep their even shares among themselves)',
      changed((l) => WEB_ENDPOINTS(l).push(endpoint('10.128.2.8', 'node-3'))),
      { missing: ['10.128.2.8:8080'], stale: [], wrongShare: [] },
      'node-1: 1 of 10 endpoints missing across 1 service',
    ],
    [
      'an endpoint deleted after the last sync is stale',
      changed((l) => WEB_ENDPOINTS(l).splice(1, 1)),
      { missing: [], stale: ['10.128.1.6:8080'], wrongShare: [] },
      'node-1: 1 stale endpoint across 1 service',
    ],
    [
      'a rollout: every old endpoint stale, every new one missing',
      changed((l) => WEB_ENDPOINTS(l).splice(0, 3, endpoint('10.128.0.30', 'node-1'), endpoint('10.128.1.31', 'node-2'))),
      { missing: ['10.128.0.30:8080', '10.128.1.31:8080'], stale: ['10.128.0.5:8080', '10.128.1.6:8080', '10.128.2.7:8080'], wrongShare: [] },
      'node-1: 2 of 8 endpoints missing across 1 service; 3 stale endpoints across 1 service',
    ],
    [
      'a terminating endpoint (ready false) is not used while others are ready: stale in the rules',
      changed((l) => (WEB_ENDPOINTS(l)[2]!.conditions = { ready: false, serving: true, terminating: true })),
      { missing: [], stale: ['10.128.2.7:8080'], wrongShare: [] },
      'node-1: 1 stale endpoint across 1 service',
    ],
  ])('%s', (_, list, web, verdict) => {
    const node = driftOf(list, NODE_1);
    expect(node.status).toBe('drift');
    expect(node.verdict).toBe(verdict);
    expect(node.services).toHaveLength(1);
    expect(service(node, 'default/web')).toMatchObject({ port: 80, portName: 'http', protocol: 'tcp', family: 'ipv4', ...web, explainedBy: [] });
  });

  it('reports a wrong share with what the endpoint should get', () => {
    const dump = fixture('node-1.save').replace(
      /(-A KUBE-SVC-\S+ -m comment --comment "default\/web:http -> 10\.128\.0\.5:8080" -m statistic --mode random --probability )0\.33333333349/,
      '$10.50000000000',
    );
    expect(dump).not.toBe(fixture('node-1.save'));
    const node = driftOf(clusterList(), [{ text: dump, file: 'node-1.save' }]);
    const web = service(node, 'default/web');
    expect(web.missing).toEqual([]);
    expect(web.stale).toEqual([]);
    const fromPod = web.wrongShare.filter((w) => w.client === 'pod');
    expect(fromPod.map((w) => [w.endpoint, Number(w.share.toFixed(3)), Number(w.expected.toFixed(3))])).toEqual([
      ['10.128.0.5:8080', 0.5, 0.333],
      ['10.128.1.6:8080', 0.25, 0.333],
      ['10.128.2.7:8080', 0.25, 0.333],
    ]);
    expect(node.summary.wrongShare).toBe(3);
    expect(node.verdict).toBe('node-1: 3 endpoints with a wrong share across 1 service');
  });

  it('reports a Service port the rules do not have at all', () => {
    const list = changed((l) => {
      const web = objectOf(l, 'Service', 'default', 'web');
      const slice = objectOf(l, 'EndpointSlice', 'default', 'web');
      l.items.push(
        { ...web, metadata: { name: 'new', namespace: 'default' }, spec: { ...web.spec, clusterIP: '172.30.0.60', clusterIPs: ['172.30.0.60'] } },
        { ...slice, metadata: { name: 'new-xyz', namespace: 'default', labels: { 'kubernetes.io/service-name': 'new' } }, endpoints: [endpoint('10.128.0.20', 'node-1')] },
      );
    });
    const node = driftOf(list, NODE_1);
    expect(service(node, 'default/new')).toMatchObject({ noRules: true, missing: ['10.128.0.20:8080'], stale: [] });
    expect(node.summary).toMatchObject({ noRules: 1, missing: 1, endpointsExpected: 10 });
    expect(node.verdict).toBe('node-1: 1 of 10 endpoints missing across 1 service; 1 service without rules');
  });

  it('reports the rules of a deleted Service as an orphan, every endpoint they reach stale', () => {
    const list = changed((l) => l.items.splice(0, l.items.length, ...l.items.filter((o) => !(o.metadata.namespace === 'default' && (o.metadata.name === 'api' || o.metadata.labels?.['kubernetes.io/service-name'] === 'api')))));
    const node = driftOf(list, NODE_1);
    expect(service(node, 'default/api')).toMatchObject({ orphan: true, port: 443, portName: '', protocol: 'tcp', stale: ['10.128.0.8:8443', '10.128.1.9:8443'], missing: [] });
    expect(service(node, 'default/api').probes.map((p) => `${p.client} → ${p.access} ${p.packet.dst}:${p.packet.dport}`)).toEqual([
      'pod → clusterIP 172.30.0.20:443',
      'external → nodePort 192.168.0.2:30443',
    ]);
    expect(node.summary).toMatchObject({ services: 4, orphans: 1, stale: 2 });
    expect(node.verdict).toBe('node-1: 2 stale endpoints across 1 service; rules for 1 service that no longer exists');
  });

  it('checks externalTrafficPolicy: Local against the node\'s own endpoints (node-1\'s rules read as node-2\'s)', () => {
    const node = driftOf(clusterList(), NODE_1, { name: 'node-2' });
    expect(node.services.map((s) => `${s.namespace}/${s.name}`)).toEqual(['shop/lb']);
    const lb = service(node, 'shop/lb');
    expect(lb.missing).toEqual(['10.128.1.11:8443']);
    expect(lb.stale).toEqual([]);
    expect(lb.wrongShare.map((w) => `${w.access} ${w.endpoint} ${w.share} expected ${w.expected}`)).toEqual([
      'loadBalancer 10.128.0.10:8443 1 expected 0',
      'nodePort 10.128.0.10:8443 1 expected 0',
    ]);
    // The ClusterIP is not subject to externalTrafficPolicy: both endpoints, and they match.
    expect(lb.probes.map((p) => p.access)).toEqual(['loadBalancer', 'nodePort']);
  });

  it.each([
    ['ClientIP in the spec, none in the rules', 'web', { sessionAffinity: 'ClientIP' }, { spec: 'ClientIP', rules: 'None' }],
    ['none in the spec, ClientIP in the rules', 'sticky', { sessionAffinity: 'None' }, { spec: 'None', rules: 'ClientIP' }],
  ])('reports session affinity that differs: %s', (_, name, spec, affinity) => {
    const node = driftOf(changed((l) => Object.assign(objectOf(l, 'Service', 'default', name).spec, spec)), NODE_1);
    expect(service(node, `default/${name}`)).toMatchObject({ affinity, missing: [], stale: [], wrongShare: [] });
    expect(node.verdict).toBe('node-1: 1 other service differing (see notes)');
  });

  it('measures the endpoints of an affinity service from a new client (its `-m recent --rcheck` finds no entry)', () => {
    const node = driftOf(changed((l) => objectOf(l, 'EndpointSlice', 'default', 'sticky').endpoints.pop()), NODE_1);
    expect(service(node, 'default/sticky')).toMatchObject({ stale: ['10.128.1.13:5353'], missing: [], wrongShare: [] });
  });

  it('reports a no-endpoints Service whose reject rule is missing', () => {
    const dump = fixture('node-1.save').replace(/^-A KUBE-SERVICES .*default\/empty:http has no endpoints.*\n/m, '');
    const node = driftOf(clusterList(), [{ text: dump, file: 'node-1.save' }]);
    const empty = service(node, 'default/empty');
    expect(empty.noRules).toBe(true);
    expect(empty.notes).toEqual([
      'pod → clusterIP 172.30.0.40:80: no endpoints, kube-proxy should reject it, but it is forwarded',
      'node → clusterIP 172.30.0.40:80: no endpoints, kube-proxy should reject it, but it is sent',
    ]);
  });

  it('uses the snapshot\'s host description when it has one', () => {
    const host = { interfaces: [{ name: 'ens5', addresses: ['192.168.0.2/24'] }, { name: 'cni0', addresses: ['10.128.0.1/24'] }], routes: [{ dst: 'default', via: '192.168.0.1', dev: 'ens5' }] };
    const node = driftOf(clusterList(), NODE_1, { host });
    expect(node).toMatchObject({ status: 'in-sync', host: 'snapshot', notes: [] });
  });

  it('says when a node is not in the cluster file (documentation addresses, no local endpoints)', () => {
    const node = driftOf(clusterList(), NODE_1, { name: 'node-9' });
    expect(node.host).toBe('documentation');
    expect(node.notes[0]).toMatch(/^node-9 is not a Node of the cluster file: host made from documentation addresses \(192\.0\.2\.10\/24 on eth0, pods 198\.51\.100\.0\/24 on cni0\)/);
    // With no local endpoint, the Local Service should drop outside traffic; the rules send it to
    // node-1's endpoint.
    expect(service(node, 'shop/lb').wrongShare.map((w) => w.access)).toEqual(['loadBalancer', 'nodePort']);
  });
});

describe('kubeDrift explains a node that drifts with the lint findings that keep kube-proxy from syncing', () => {
  const WT0 = [
    { text: fixture('node-1-wt0/iptables.save'), file: 'iptables.save' },
    { text: fixture('node-1-wt0/ruleset.nft'), file: 'ruleset.nft' },
  ];

  it('links a stale node to the iptables-nft-incompatible finding of the native wt0 rule', () => {
    const node = driftOf(changed((l) => WEB_ENDPOINTS(l).splice(1, 1)), WT0);
    const finding = { rule: 'iptables-nft-incompatible', file: 'ruleset.nft', line: 17, column: 17 };
    // default/empty's reject is in the table only the nft listing has, behind a jump whose
    // comment match the listing prints as a blank: undecided.
    expect(node.verdict).toBe(
      'node-1: 1 stale endpoint across 1 service; 1 of 5 services undecided: nftsim does not model a rule on their way (see notes); kube-proxy has probably not synced — see iptables-nft-incompatible finding at ruleset.nft:17',
    );
    expect(service(node, 'default/web')).toMatchObject({ stale: ['10.128.1.6:8080'], explainedBy: [finding] });
    expect(node.explainedBy).toMatchObject([{ rule: 'iptables-nft-incompatible', messageId: 'table-unreadable', severity: 'error', family: 'ipv4', location: { file: 'ruleset.nft', line: 17, column: 17 } }]);
  });

  it('leaves undecided what the nft listing alone cannot tell (iptables-nft\'s comment matches print as blanks)', () => {
    const node = driftOf(clusterList(), [WT0[1]!]);
    expect(node).toMatchObject({ status: 'undecided', summary: { services: 5, drifting: 0, undecided: 5, missing: 0 } });
    expect(node.verdict).toBe('node-1: no drift found, but 5 of 5 services undecided: nftsim does not model a rule on their way (see notes)');
    expect(service(node, 'default/web')).toMatchObject({ undecided: true, missing: [] });
    expect(service(node, 'default/web').notes[0]).toMatch(/^pod → clusterIP 172\.30\.0\.10:80: undecided \(not modelled on its way: ruleset\.nft:\d+ and \d+ more\)$/);
    expect(node.notes.some((n) => n.includes('an xt match nft lists as blank (use the iptables-save dump)'))).toBe(true);
  });

  it('names no finding for a node that does not drift despite it', () => {
    const node = driftOf(clusterList(), WT0);
    expect(node).toMatchObject({ status: 'undecided', explainedBy: [], verdict: 'node-1: no drift found, but 1 of 5 services undecided: nftsim does not model a rule on their way (see notes)' });
    expect(node.services).toEqual([]);
    expect(node.undecided.map((s) => `${s.namespace}/${s.name}`)).toEqual(['default/empty']);
    expect(node.undecided[0]!.notes[0]).toMatch(/^pod → clusterIP 172\.30\.0\.40:80: undecided whether kube-proxy rejects it \(not modelled on its way: ruleset\.nft:\d+ and \d+ more\)$/);
  });
});

describe('kubeDrift on a node in nftables mode', () => {
  const plan = planServices({ services: 8, endpointsPerService: 3, seed: 3, nodes: 3, sessionAffinity: false });
  const rules = [{ text: generateKubeProxyNft({ services: 8, endpointsPerService: 3, seed: 3, nodes: 3 }), file: 'ruleset.nft' }];
  const clusterOf = (state: typeof plan) => {
    const files = generateCluster(state, { nodes: 3 }) as { services: unknown; nodes: unknown };
    const { cluster } = readCluster([
      { file: 'cluster.json', text: JSON.stringify(files.services) },
      { file: 'nodes.json', text: JSON.stringify(files.nodes) },
    ]);
    return cluster!;
  };
  const check = (state: typeof plan) => kubeDrift(clusterOf(state), [{ name: 'node-1', snapshot: { label: 'node-1', sources: rules } }]).nodes[0]!;

  it('finds the generated node in sync', () => {
    const node = check(plan);
    expect(node).toMatchObject({ mode: 'nftables', families: [{ family: 'ipv4', mode: 'nftables' }], status: 'in-sync' });
    expect(node.summary.services).toBe(8);
  });

  it('reports the endpoints of a scaled-down Service stale and a deleted Service\'s map entries as an orphan', () => {
    const withEndpoints = plan.filter((s) => s.endpoints.length > 1 && !s.externalLocal);
    const [scaled, deleted] = [withEndpoints[0]!, withEndpoints[1]!];
    const gone = scaled.endpoints[1]!;
    const state = plan.filter((s) => s !== deleted).map((s) => (s === scaled ? { ...s, endpoints: s.endpoints.filter((e) => e !== gone) } : s));
    const node = check(state);
    const [ns, rest] = scaled.name.split('/') as [string, string];
    expect(service(node, `${ns}/${rest.split(':')[0]}`)).toMatchObject({ stale: [`${gone.ip}:${gone.port}`], missing: [] });
    const [dns, drest] = deleted.name.split('/') as [string, string];
    const orphan = service(node, `${dns}/${drest.split(':')[0]}`);
    expect(orphan).toMatchObject({ orphan: true, stale: deleted.endpoints.map((e) => `${e.ip}:${e.port}`).sort() });
    expect(orphan.at!.file).toBe('ruleset.nft');
  });
});

describe('kubeDrift on a node whose rules are neither kube-proxy mode', () => {
  it.each([
    [
      'Cilium\'s kube-proxy replacement',
      '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:CILIUM_FORWARD - [0:0]\n-A FORWARD -m comment --comment "cilium-feeder: CILIUM_FORWARD" -j CILIUM_FORWARD\n-A CILIUM_FORWARD -o cilium_host -m comment --comment "cilium: any->cluster on cilium_host forward accept" -j ACCEPT\nCOMMIT\n',
      /^node-1: not checked — kube-proxy replacement \(eBPF\): Cilium's rules are here \(CILIUM_FORWARD\), its service handling is in BPF programs nftsim cannot see$/,
    ],
    [
      'kube-proxy in IPVS mode',
      '*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-LOAD-BALANCER - [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\n-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT\nCOMMIT\n',
      /^node-1: not checked — kube-proxy in IPVS mode: the kernel's IPVS balances Services, which nftsim cannot see$/,
    ],
    ['nothing of kube-proxy', 'table inet filter {\n\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n\t}\n}\n', /^node-1: not checked — no kube-proxy rules found/],
  ])('says so: %s', (_, text, verdict) => {
    const node = driftOf(clusterList(), [{ text, file: 'rules' }]);
    expect(node).toMatchObject({ status: 'unchecked', mode: 'none', summary: { services: 0, drifting: 0 }, services: [] });
    expect(node.verdict).toMatch(verdict);
  });

  it('returns the parser\'s diagnostics for rules that do not parse, and leaves the node unchecked', () => {
    const result = kubeDrift(readCluster([{ file: 'cluster.json', text: fixture('cluster.json') }]).cluster!, [{ name: 'node-1', snapshot: { label: 'node-1', sources: [{ text: 'table ip t { chain c { bogus } }\n', file: 'bad.nft' }] } }]);
    expect(result.nodes[0]).toMatchObject({ status: 'unchecked', verdict: 'node-1: not checked — its rules do not parse (see the errors above)' });
    expect(result.diagnostics.some((d) => d.severity === 'error' && d.span?.file === 'bad.nft')).toBe(true);
  });
});

describe('kubeDrift per address family', () => {
  const IP6TABLES = [
    '*nat',
    ':PREROUTING ACCEPT [0:0]',
    ':INPUT ACCEPT [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    ':POSTROUTING ACCEPT [0:0]',
    ':KUBE-SEP-AAAAAAAAAAAAAAAA - [0:0]',
    ':KUBE-SEP-BBBBBBBBBBBBBBBB - [0:0]',
    ':KUBE-SERVICES - [0:0]',
    ':KUBE-SVC-CCCCCCCCCCCCCCCC - [0:0]',
    '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A KUBE-SEP-AAAAAAAAAAAAAAAA -p tcp -m comment --comment "default/web6:http" -m tcp -j DNAT --to-destination [fd00:128::5]:8080',
    '-A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m comment --comment "default/web6:http" -m tcp -j DNAT --to-destination [fd00:128:1::6]:8080',
    '-A KUBE-SERVICES -d fd00:30::10/128 -p tcp -m comment --comment "default/web6:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-CCCCCCCCCCCCCCCC',
    '-A KUBE-SVC-CCCCCCCCCCCCCCCC -m comment --comment "default/web6:http -> [fd00:128::5]:8080" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-AAAAAAAAAAAAAAAA',
    '-A KUBE-SVC-CCCCCCCCCCCCCCCC -m comment --comment "default/web6:http -> [fd00:128:1::6]:8080" -j KUBE-SEP-BBBBBBBBBBBBBBBB',
    'COMMIT',
    '',
  ].join('\n');
  const IP6 = { text: IP6TABLES, file: 'ip6tables.save' };
  /** The fixture cluster with an IPv6 Service, node-1 dual-stack. */
  const dualStack = (change: (list: KubeList) => void = () => {}) =>
    changed((l) => {
      const web = objectOf(l, 'Service', 'default', 'web');
      const slice = objectOf(l, 'EndpointSlice', 'default', 'web');
      l.items.push(
        { ...web, metadata: { name: 'web6', namespace: 'default' }, spec: { ...web.spec, clusterIP: 'fd00:30::10', clusterIPs: ['fd00:30::10'], ipFamilies: ['IPv6'] } },
        { ...slice, metadata: { name: 'web6-xyz', namespace: 'default', labels: { 'kubernetes.io/service-name': 'web6' } }, addressType: 'IPv6', endpoints: [endpoint('fd00:128::5', 'node-1'), endpoint('fd00:128:1::6', 'node-2')] },
      );
      const node1 = l.items.find((o) => o.kind === 'Node' && o.metadata.name === 'node-1')!;
      node1.spec.podCIDRs = ['10.128.0.0/24', 'fd00:128::/64'];
      node1.status.addresses.push({ type: 'InternalIP', address: 'fd00::2' });
      change(l);
    });

  it('checks each family the node has kube-proxy rules for', () => {
    const node = driftOf(dualStack(), [...NODE_1, IP6]);
    expect(node).toMatchObject({ status: 'in-sync', families: [{ family: 'ipv4' }, { family: 'ipv6' }], summary: { services: 6, endpointsExpected: 11 } });
  });

  it('says which family it could not check', () => {
    const node = driftOf(dualStack(), [IP6]);
    expect(node).toMatchObject({ status: 'in-sync', families: [{ family: 'ipv6', mode: 'iptables' }], summary: { services: 1, endpointsExpected: 2 } });
    expect(node.notes).toContain('IPv4: no kube-proxy rules on this node; 5 IPv4 service ports not checked');
  });

  it('reports IPv6 endpoints as the simulator writes them', () => {
    const node = driftOf(dualStack((l) => objectOf(l, 'EndpointSlice', 'default', 'web6').endpoints.pop()), [...NODE_1, IP6]);
    expect(service(node, 'default/web6')).toMatchObject({ family: 'ipv6', stale: ['[fd00:128:1::6]:8080'], missing: [] });
    expect(service(node, 'default/web6').probes[0]!.packet).toMatchObject({ iif: 'cni0', src: 'fd00:128::ffff:ffff:ffff:fffe', dst: 'fd00:30::10' });
  });
});
