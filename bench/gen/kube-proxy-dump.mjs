// @ts-check
// A kube-proxy-shaped iptables dump, the way `iptables-nft-save` prints it on a node whose
// kube-proxy runs in iptables mode. Deterministic for a seed. Used by the benchmark (10,000
// services) and by corpus/real/make.sh (small dumps loaded into a real kernel).
//
// Rule shapes follow kubernetes pkg/proxy/iptables/proxier.go (1.28+ era: KUBE-PROXY-FIREWALL,
// KUBE-EXT-*, no KUBE-MARK-DROP) and ../shared/research/kube-proxy.md. The text is what
// iptables-nft-save 1.8.9 prints back, not what kube-proxy feeds iptables-restore:
// - `-j MARK --or-mark 0x4000` saves as `--set-xmark 0x4000/0x4000`, `--xor-mark 0x4000` as
//   `--set-xmark 0x4000/0x0` (libxt_MARK mark_tg_save);
// - kube-proxy's `--probability %0.10f` of 1/n is stored as round(p * 2^31) and saved as `%.11f`
//   of that (libxt_statistic), hence 0.20000000019 for 1/5;
// - addresses gain `/32`, `-s/-d/-p` move before the matches, comments are always quoted,
//   `-m recent` prints every option, REJECT prints its default `--reject-with`;
// - user chains are listed sorted by name after the built-in ones, and rules chain by chain.
// test/corpus/kube-proxy-dump.test.ts loads a dump into a namespace and checks that
// iptables-nft-save prints it back unchanged.

import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';

/**
 * @typedef {object} KubeProxyDumpOptions
 * @property {number} services            service ports (one port per service)
 * @property {number} endpointsPerService endpoints of every service that has any
 * @property {number} seed                the same seed gives the same dump, byte for byte
 * @property {boolean} [nodePorts]        NodePort and LoadBalancer services (default true)
 * @property {boolean} [sessionAffinity]  ClientIP affinity on a few services (default true). Its
 *   `-m recent` match lists as `xt match recent` in `nft list ruleset`, which `nft -f` refuses,
 *   so the benchmark turns it off to be able to time `nft -c -f` on the listing.
 * @property {number} [nodes]  place the pods on this many nodes (at least 2), for a cluster to go
 *   with the dump (kube-cluster.mjs): node 0 is this node and holds the local endpoints in its pod
 *   /24, the others are spread over nodes 1… in turn. Without it pods fill the /24s in order
 *   (250 each) and `local` is only a flag, as the benchmark and corpus/real have always had it.
 */

/**
 * @typedef {object} Endpoint
 * @property {string} ip
 * @property {number} port
 * @property {boolean} local  on this node (matters for externalTrafficPolicy: Local)
 * @property {number} [node]  the node it runs on (with the `nodes` option; 0 is this node)
 */

/**
 * @typedef {object} ServicePort
 * @property {string} name          ServicePortName.String(): `ns/svc:port`, or `ns/svc` when unnamed
 * @property {'tcp' | 'udp'} protocol
 * @property {string} clusterIP
 * @property {number} port
 * @property {number} targetPort       the endpoints' port (the Service's targetPort)
 * @property {number} [nodePort]
 * @property {string} [loadBalancerIP]
 * @property {string[]} sourceRanges     LoadBalancerSourceRanges
 * @property {boolean} externalLocal     externalTrafficPolicy: Local
 * @property {boolean} [internalLocal]   internalTrafficPolicy: Local (never drawn at random; set
 *   by whoever builds a cluster around the plan, e.g. corpus/kube-drift/make.mjs)
 * @property {number} [healthCheckNodePort]
 * @property {boolean} affinity          sessionAffinity: ClientIP
 * @property {Endpoint[]} endpoints
 */

// Cluster conventions of kube-proxy's own tests (../shared/research/kube-proxy.md), widened
// where 10,000 services need more room.
const POD_CIDR = '10.0.0.0/8'; // the local-traffic detector's `! -s` / `-s`
const SERVICE_NET = [172, 30]; // ClusterIPs 172.30.0.0/16
const LB_NET = [198, 18]; // LoadBalancer IPs (benchmark range 198.18.0.0/15)
const LB_SOURCE_RANGE = '203.0.113.0/25';
const NODE_PORT_MIN = 30000; // default --service-node-port-range
const NODE_PORT_MAX = 32767;
const MASQ_MARK = '0x4000'; // --iptables-masquerade-bit 14
const STICKY_SECONDS = 10800; // ClientIP affinity default timeout
// kube-proxy drops the per-endpoint comments above this many endpoints (largeClusterMode).
const LARGE_CLUSTER_ENDPOINTS = 1000;

const NAMESPACES = ['default', 'kube-system', 'monitoring', 'ingress', 'payments', 'checkout',
  'search', 'auth', 'billing', 'catalog', 'media', 'analytics'];
const SERVICE_WORDS = ['api', 'web', 'worker', 'db', 'cache', 'gateway', 'frontend', 'backend',
  'metrics', 'queue', 'store', 'proxy'];
/** @type {readonly { name: string, port: number, targetPort: number, protocol: 'tcp' | 'udp' }[]} */
const PORTS = [
  { name: 'http', port: 80, targetPort: 8080, protocol: 'tcp' },
  { name: 'https', port: 443, targetPort: 8443, protocol: 'tcp' },
  { name: 'grpc', port: 9090, targetPort: 9090, protocol: 'tcp' },
  { name: 'metrics', port: 9100, targetPort: 9100, protocol: 'tcp' },
  { name: 'redis', port: 6379, targetPort: 6379, protocol: 'tcp' },
  { name: 'dns', port: 53, targetPort: 5353, protocol: 'udp' },
  { name: 'syslog', port: 514, targetPort: 5514, protocol: 'udp' },
];

/**
 * What varies between services besides names and addresses.
 * @typedef {object} Shape
 * @property {'ClusterIP' | 'NodePort' | 'LoadBalancer'} type
 * @property {boolean} externalLocal   externalTrafficPolicy: Local (LoadBalancer only)
 * @property {boolean} localEndpoint   the first endpoint runs on this node
 * @property {boolean} sourceRanges    LoadBalancerSourceRanges set (LoadBalancer only)
 * @property {boolean} hasEndpoints
 * @property {boolean} affinity        sessionAffinity: ClientIP
 */

/** @param {Partial<Shape>} shape @returns {Shape} */
const shapeOf = (shape) => ({ type: 'ClusterIP', externalLocal: false, localEndpoint: false,
  sourceRanges: false, hasEndpoints: true, affinity: false, ...shape });

// The first services take every shape kube-proxy writes differently, so that even a 5-service
// dump shows them all; the rest are drawn at random (randomShape).
const SHOWCASE = [
  shapeOf({ type: 'NodePort', affinity: true }),
  shapeOf({ type: 'LoadBalancer', externalLocal: true, localEndpoint: true, sourceRanges: true }),
  shapeOf({ hasEndpoints: false }),
  shapeOf({ type: 'LoadBalancer', externalLocal: true }),
  shapeOf({ type: 'NodePort', hasEndpoints: false }),
];

/** Rough proportions of a large cluster: mostly ClusterIP, some NodePort, few LoadBalancers.
 * @param {() => number} random @returns {Shape} */
function randomShape(random) {
  const roll = random();
  return shapeOf({
    type: roll < 0.05 ? 'LoadBalancer' : roll < 0.2 ? 'NodePort' : 'ClusterIP',
    externalLocal: random() < 0.4,
    localEndpoint: random() < 0.5,
    sourceRanges: random() < 0.3,
    hasEndpoints: random() >= 0.02,
    affinity: random() < 0.03,
  });
}

/**
 * @param {KubeProxyDumpOptions} options
 * @returns {string}
 */
export function generateKubeProxyDump(options) {
  const header = `nftsim bench/gen/kube-proxy-dump.mjs services=${options.services} endpointsPerService=${options.endpointsPerService} seed=${options.seed}`;
  return formatKubeProxyDump(planServices(options), header);
}

/**
 * The dump kube-proxy writes for these service ports (a plan, or one changed from a plan).
 * @param {readonly ServicePort[]} services
 * @param {string} header  the `# Generated by` comment of each table
 * @returns {string}
 */
export function formatKubeProxyDump(services, header) {
  const largeClusterMode =
    services.reduce((n, s) => n + s.endpoints.length, 0) > LARGE_CLUSTER_ENDPOINTS;
  const filter = newTable(['INPUT', 'FORWARD', 'OUTPUT']);
  const nat = newTable(['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING']);
  const mangle = newTable(['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING']);

  writeFixedRules(filter, nat, mangle);
  for (const svc of services) writeServiceRules(filter, nat, svc, largeClusterMode);
  addRule(nat, 'KUBE-SERVICES', '-m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS');

  return [
    printTable('mangle', mangle, header),
    printTable('filter', filter, header),
    printTable('nat', nat, header),
  ].join('');
}

// ---------------------------------------------------------------------------------------------
// The cluster

/**
 * @param {KubeProxyDumpOptions} options
 * @returns {ServicePort[]}
 */
export function planServices({ services, endpointsPerService, seed, nodePorts = true, sessionAffinity = true, nodes }) {
  if (!Number.isInteger(services) || services < 1 || services > 65000) {
    throw new RangeError(`services must be an integer in 1..65000 (ClusterIPs come from a /16), got ${services}`);
  }
  if (!Number.isInteger(endpointsPerService) || endpointsPerService < 1) {
    throw new RangeError(`endpointsPerService must be a positive integer, got ${endpointsPerService}`);
  }
  if (nodes !== undefined && (!Number.isInteger(nodes) || nodes < 2 || nodes > 32768)) {
    throw new RangeError(`nodes must be an integer in 2..32768 (pod /24s come from 10.128.0.0/9), got ${nodes}`);
  }
  const random = mulberry32(seed);
  const pick = (/** @type {number} */ n) => Math.floor(random() * n);
  // ClusterIPs walk the /16 with a seeded start and stride; a stride coprime with the 65534
  // usable offsets visits each at most once.
  let ipStride = 2 * pick(5000) + 40001;
  while (gcd(ipStride, 65534) !== 1) ipStride += 2;
  const ipStart = pick(65534);
  let nextNodePort = NODE_PORT_MIN;
  const takeNodePort = () => (nextNodePort <= NODE_PORT_MAX ? nextNodePort++ : undefined);
  let nextPod = 0;
  let nextLoadBalancer = 1;
  const placePod = nodes === undefined ? undefined : podPlacer(nodes);

  /** @type {ServicePort[]} */
  const result = [];
  for (let i = 0; i < services; i++) {
    const ns = NAMESPACES[pick(NAMESPACES.length)];
    const svcName = `${SERVICE_WORDS[pick(SERVICE_WORDS.length)]}-${i}`;
    const portSpec = PORTS[pick(PORTS.length)];
    // Single-port services often leave the port unnamed; ServicePortName then has no `:port`.
    const name = random() < 0.3 ? `${ns}/${svcName}` : `${ns}/${svcName}:${portSpec.name}`;
    const offset = 1 + ((ipStart + i * ipStride) % 65534);
    const clusterIP = `${SERVICE_NET[0]}.${SERVICE_NET[1]}.${offset >> 8}.${offset & 255}`;

    const shape = i < SHOWCASE.length ? SHOWCASE[i] : randomShape(random);
    const type = nodePorts ? shape.type : 'ClusterIP';
    const nodePort = type === 'ClusterIP' ? undefined : takeNodePort();
    // Once the NodePort range is used up the service stays ClusterIP-only.
    const exposed = nodePort !== undefined;
    const externalLocal = exposed && type === 'LoadBalancer' && shape.externalLocal;
    const healthCheckNodePort = externalLocal ? takeNodePort() : undefined;
    const loadBalancerIP = exposed && type === 'LoadBalancer'
      ? `${LB_NET[0]}.${LB_NET[1] + (nextLoadBalancer >> 16)}.${(nextLoadBalancer >> 8) & 255}.${nextLoadBalancer++ & 255}`
      : undefined;
    const sourceRanges = loadBalancerIP !== undefined && shape.sourceRanges ? [LB_SOURCE_RANGE] : [];
    /** @type {Endpoint[]} */
    const endpoints = [];
    for (let j = 0; shape.hasEndpoints && j < endpointsPerService; j++) {
      const local = j === 0 && shape.localEndpoint;
      endpoints.push(placePod ? { ...placePod(local), port: portSpec.targetPort, local } : { ip: podIP(nextPod++), port: portSpec.targetPort, local });
    }
    result.push({
      name,
      protocol: portSpec.protocol,
      clusterIP,
      port: portSpec.port,
      targetPort: portSpec.targetPort,
      nodePort: exposed ? nodePort : undefined,
      loadBalancerIP,
      sourceRanges,
      externalLocal,
      healthCheckNodePort,
      affinity: sessionAffinity && shape.affinity,
      endpoints,
    });
  }
  // kube-proxy walks its service map in Go's random map order; the rules of the shared chains
  // (KUBE-SERVICES, KUBE-NODEPORTS…) keep that order.
  for (let i = result.length - 1; i > 0; i--) {
    const j = pick(i + 1);
    [result[i], result[j]] = [result[j], result[i]];
  }
  return result;
}

/** Pod n of the cluster: 250 pods per node /24 (hosts .2–.251), nodes from 10.128.0.0/9.
 * @param {number} n */
function podIP(n) {
  return podAddress(Math.floor(n / 250), n % 250);
}

/** The pod CIDR of node `node` (its spec.podCIDR): a /24 of 10.128.0.0/9.
 * @param {number} node */
export function podCIDR(node) {
  return `10.${128 + (node >> 8)}.${node & 255}.0/24`;
}

/** @param {number} node @param {number} i */
function podAddress(node, i) {
  return `10.${128 + (node >> 8)}.${node & 255}.${2 + (i % 250)}`;
}

/** Pods on `nodes` nodes: local ones on node 0, the others on nodes 1… in turn, each node's pods
 * taking its /24's hosts .2–.251 in order. A node with more than 250 pods (the 10,000-service
 * benchmark) starts its range again, as one pod may back several Services.
 * @param {number} nodes */
function podPlacer(nodes) {
  const used = new Array(nodes).fill(0);
  let nextRemote = 0;
  return (/** @type {boolean} */ local) => {
    const node = local ? 0 : 1 + (nextRemote++ % (nodes - 1));
    return { ip: podAddress(node, used[node]++), node };
  };
}

/** @param {number} a @param {number} b @returns {number} */
function gcd(a, b) {
  return b === 0 ? a : gcd(b, a % b);
}

/** A small seeded PRNG (mulberry32): fast and the same on every platform.
 * @param {number} seed */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// Chain names: proxier.go portProtoHash / servicePortEndpointChainName — the first 16
// characters of base32(sha256(servicePortName + protocol [+ "ip:port"])).

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** @param {string} text */
export function kubeChainHash(text) {
  const digest = createHash('sha256').update(text).digest();
  let out = '';
  let bits = 0;
  let value = 0;
  for (let i = 0; out.length < 16; i++) {
    value = ((value << 8) | digest[i]) & 0xffff;
    bits += 8;
    while (bits >= 5 && out.length < 16) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

/** @param {ServicePort} svc @param {'SVC' | 'SVL' | 'EXT' | 'FW'} prefix */
function serviceChain(svc, prefix) {
  return `KUBE-${prefix}-${kubeChainHash(svc.name + svc.protocol)}`;
}

/** @param {ServicePort} svc @param {Endpoint} ep */
function endpointChain(svc, ep) {
  return `KUBE-SEP-${kubeChainHash(`${svc.name}${svc.protocol}${ep.ip}:${ep.port}`)}`;
}

/** kube-proxy passes `%0.10f` of 1/n; libxt_statistic stores round(p * 2^31) and saves `%.11f`.
 * @param {number} n */
function probability(n) {
  const stored = Math.round(0x80000000 * Number((1 / n).toFixed(10)));
  return (stored / 0x80000000).toFixed(11);
}

// ---------------------------------------------------------------------------------------------
// Rules

/**
 * @typedef {object} Table
 * @property {readonly string[]} builtins
 * @property {Map<string, string[]>} chains  every chain, built-in or not, to its rules
 */

/** @param {readonly string[]} builtins @returns {Table} */
function newTable(builtins) {
  return { builtins, chains: new Map(builtins.map((name) => [name, []])) };
}

/** @param {Table} table @param {string} chain */
function declareChain(table, chain) {
  if (!table.chains.has(chain)) table.chains.set(chain, []);
}

/** @param {Table} table @param {string} chain @param {string} spec */
function addRule(table, chain, spec) {
  declareChain(table, chain);
  /** @type {string[]} */ (table.chains.get(chain)).push(spec);
}

/** The jump rules kube-proxy and kubelet insert (iptables -I, so the last inserted is first),
 * the canaries and the chains written on every sync.
 * @param {Table} filter @param {Table} nat @param {Table} mangle */
function writeFixedRules(filter, nat, mangle) {
  for (const table of [filter, nat, mangle]) {
    declareChain(table, 'KUBE-KUBELET-CANARY');
    declareChain(table, 'KUBE-PROXY-CANARY');
  }
  declareChain(mangle, 'KUBE-IPTABLES-HINT');
  for (const chain of ['KUBE-SERVICES', 'KUBE-EXTERNAL-SERVICES', 'KUBE-FORWARD', 'KUBE-NODEPORTS', 'KUBE-PROXY-FIREWALL']) {
    declareChain(filter, chain);
  }
  for (const chain of ['KUBE-SERVICES', 'KUBE-NODEPORTS', 'KUBE-POSTROUTING', 'KUBE-MARK-MASQ']) {
    declareChain(nat, chain);
  }
  const isNew = '-m conntrack --ctstate NEW';
  addRule(filter, 'INPUT', `${isNew} -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL`);
  addRule(filter, 'INPUT', '-m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS');
  addRule(filter, 'INPUT', `${isNew} -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES`);
  addRule(filter, 'INPUT', '-j KUBE-FIREWALL');
  addRule(filter, 'FORWARD', `${isNew} -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL`);
  addRule(filter, 'FORWARD', '-m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD');
  addRule(filter, 'FORWARD', `${isNew} -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`);
  addRule(filter, 'FORWARD', `${isNew} -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES`);
  addRule(filter, 'OUTPUT', `${isNew} -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL`);
  addRule(filter, 'OUTPUT', `${isNew} -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`);
  addRule(filter, 'OUTPUT', '-j KUBE-FIREWALL');
  addRule(filter, 'KUBE-FIREWALL', '! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP');
  addRule(filter, 'KUBE-FORWARD', '-m conntrack --ctstate INVALID -j DROP');
  addRule(filter, 'KUBE-FORWARD', `-m comment --comment "kubernetes forwarding rules" -m mark --mark ${MASQ_MARK}/${MASQ_MARK} -j ACCEPT`);
  addRule(filter, 'KUBE-FORWARD', '-m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT');

  addRule(nat, 'PREROUTING', '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES');
  addRule(nat, 'OUTPUT', '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES');
  addRule(nat, 'POSTROUTING', '-m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING');
  addRule(nat, 'KUBE-MARK-MASQ', `-j MARK --set-xmark ${MASQ_MARK}/${MASQ_MARK}`);
  addRule(nat, 'KUBE-POSTROUTING', `-m mark ! --mark ${MASQ_MARK}/${MASQ_MARK} -j RETURN`);
  addRule(nat, 'KUBE-POSTROUTING', `-j MARK --set-xmark ${MASQ_MARK}/0x0`);
  addRule(nat, 'KUBE-POSTROUTING', '-m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully');
}

/** One service port, as proxier.go syncProxyRules writes it.
 * @param {Table} filter @param {Table} nat @param {ServicePort} svc @param {boolean} largeClusterMode */
function writeServiceRules(filter, nat, svc, largeClusterMode) {
  const { name, protocol: p } = svc;
  const hasEndpoints = svc.endpoints.length > 0;
  const localEndpoints = svc.endpoints.filter((ep) => ep.local);
  const hasExternalEndpoints = hasEndpoints && (!svc.externalLocal || localEndpoints.length > 0);
  // internalTrafficPolicy: Local sends ClusterIP traffic to the SVL chain; the SVC chain (and the
  // SEP chains of other nodes' endpoints) exist only when external traffic still uses them
  // (ServicePortInfo.UsesClusterEndpoints). kube-proxy also gives the EXT chain's short-circuits
  // to SVC when both policies are Local, a chain it never writes: not generated.
  const internalLocal = svc.internalLocal === true;
  if (internalLocal && svc.externalLocal) throw new Error(`${name}: internal and external traffic policy both Local is not generated`);
  const hasInternalEndpoints = hasEndpoints && (!internalLocal || localEndpoints.length > 0);
  const usesClusterChain = !internalLocal || (svc.nodePort !== undefined && !svc.externalLocal);
  const svcChain = serviceChain(svc, 'SVC');
  const svlChain = serviceChain(svc, 'SVL');
  const extChain = serviceChain(svc, 'EXT');
  const fwChain = serviceChain(svc, 'FW');
  const usesFirewall = hasEndpoints && svc.loadBalancerIP !== undefined && svc.sourceRanges.length > 0;
  // The filter rule for traffic no endpoint takes: REJECT when the Service has none at all, DROP
  // when only a Local policy's (this node's) are missing; the same for internal and external.
  const noEndpointTarget = hasEndpoints ? 'DROP' : 'REJECT --reject-with icmp-port-unreachable';
  const noEndpointComment = hasEndpoints ? `${name} has no local endpoints` : `${name} has no endpoints`;
  const dport = `-m ${p} --dport`;

  const internalChain = internalLocal ? svlChain : svcChain;
  if (hasInternalEndpoints) {
    addRule(nat, 'KUBE-SERVICES', `-d ${svc.clusterIP}/32 -p ${p} -m comment --comment "${name} cluster IP" ${dport} ${svc.port} -j ${internalChain}`);
  } else {
    addRule(filter, 'KUBE-SERVICES', `-d ${svc.clusterIP}/32 -p ${p} -m comment --comment "${noEndpointComment}" ${dport} ${svc.port} -j ${noEndpointTarget}`);
  }
  if (svc.loadBalancerIP !== undefined) {
    const lb = `-d ${svc.loadBalancerIP}/32 -p ${p}`;
    if (hasEndpoints) {
      addRule(nat, 'KUBE-SERVICES', `${lb} -m comment --comment "${name} loadbalancer IP" ${dport} ${svc.port} -j ${usesFirewall ? fwChain : extChain}`);
    }
    if (usesFirewall) {
      addRule(filter, 'KUBE-PROXY-FIREWALL', `${lb} -m comment --comment "${name} traffic not accepted by ${fwChain}" ${dport} ${svc.port} -j DROP`);
    }
    if (!hasExternalEndpoints) {
      addRule(filter, 'KUBE-EXTERNAL-SERVICES', `${lb} -m comment --comment "${noEndpointComment}" ${dport} ${svc.port} -j ${noEndpointTarget}`);
    }
  }
  if (svc.nodePort !== undefined) {
    if (hasEndpoints) {
      addRule(nat, 'KUBE-NODEPORTS', `-p ${p} -m comment --comment "${name}" ${dport} ${svc.nodePort} -j ${extChain}`);
    }
    if (!hasExternalEndpoints) {
      addRule(filter, 'KUBE-EXTERNAL-SERVICES', `-p ${p} -m comment --comment "${noEndpointComment}" -m addrtype --dst-type LOCAL ${dport} ${svc.nodePort} -j ${noEndpointTarget}`);
    }
  }
  if (svc.healthCheckNodePort !== undefined) {
    addRule(filter, 'KUBE-NODEPORTS', `-p tcp -m comment --comment "${name} health check node port" -m tcp --dport ${svc.healthCheckNodePort} -j ACCEPT`);
  }
  if (!hasEndpoints) return;

  // Off-cluster traffic to the ClusterIP is masqueraded (the local-traffic detector).
  if (hasInternalEndpoints) {
    addRule(nat, internalChain, `! -s ${POD_CIDR} -d ${svc.clusterIP}/32 -p ${p} -m comment --comment "${name} cluster IP" ${dport} ${svc.port} -j KUBE-MARK-MASQ`);
  }

  if (svc.nodePort !== undefined) {
    if (!svc.externalLocal) {
      addRule(nat, extChain, `-m comment --comment "masquerade traffic for ${name} external destinations" -j KUBE-MARK-MASQ`);
    } else {
      addRule(nat, extChain, `-s ${POD_CIDR} -m comment --comment "pod traffic for ${name} external destinations" -j ${svcChain}`);
      addRule(nat, extChain, `-m comment --comment "masquerade LOCAL traffic for ${name} external destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ`);
      addRule(nat, extChain, `-m comment --comment "route LOCAL traffic for ${name} external destinations" -m addrtype --src-type LOCAL -j ${svcChain}`);
    }
    if (hasExternalEndpoints) addRule(nat, extChain, `-j ${svc.externalLocal ? svlChain : svcChain}`);
  }
  if (usesFirewall) {
    for (const range of svc.sourceRanges) {
      addRule(nat, fwChain, `-s ${range} -m comment --comment "${name} loadbalancer IP" -j ${extChain}`);
    }
    addRule(nat, fwChain, `-m comment --comment "other traffic to ${name} will be dropped by KUBE-PROXY-FIREWALL"`);
  }

  if (usesClusterChain) writeEndpointChoice(nat, svc, svcChain, svc.endpoints, largeClusterMode);
  if ((svc.externalLocal || internalLocal) && localEndpoints.length > 0) {
    writeEndpointChoice(nat, svc, svlChain, localEndpoints, largeClusterMode);
  }
  for (const ep of usesClusterChain ? svc.endpoints : localEndpoints) {
    const sep = endpointChain(svc, ep);
    const comment = largeClusterMode ? '' : ` -m comment --comment "${name}"`;
    const recent = svc.affinity ? ` -m recent --set --name ${sep} --mask 255.255.255.255 --rsource` : '';
    addRule(nat, sep, `-s ${ep.ip}/32${comment} -j KUBE-MARK-MASQ`);
    addRule(nat, sep, `-p ${p}${comment}${recent} -m ${p} -j DNAT --to-destination ${ep.ip}:${ep.port}`);
  }
}

/** proxier.go writeServiceToEndpointRules: affinity checks, then 1/n, 1/(n-1)… random jumps.
 * @param {Table} nat @param {ServicePort} svc @param {string} chain @param {Endpoint[]} endpoints
 * @param {boolean} largeClusterMode */
function writeEndpointChoice(nat, svc, chain, endpoints, largeClusterMode) {
  /** @param {Endpoint} ep */
  const comment = (ep) => (largeClusterMode ? '' : `-m comment --comment "${svc.name} -> ${ep.ip}:${ep.port}" `);
  if (svc.affinity) {
    for (const ep of endpoints) {
      const sep = endpointChain(svc, ep);
      addRule(nat, chain, `${comment(ep)}-m recent --rcheck --seconds ${STICKY_SECONDS} --reap --name ${sep} --mask 255.255.255.255 --rsource -j ${sep}`);
    }
  }
  endpoints.forEach((ep, i) => {
    const rest = endpoints.length - i;
    const statistic = rest > 1 ? `-m statistic --mode random --probability ${probability(rest)} ` : '';
    addRule(nat, chain, `${comment(ep)}${statistic}-j ${endpointChain(svc, ep)}`);
  });
}

// ---------------------------------------------------------------------------------------------
// Printing, as iptables-nft-save does: built-in chains with policy, then user chains sorted by
// name; then every chain's rules in that order.

/** @param {string} name @param {Table} table @param {string} header */
function printTable(name, table, header) {
  const userChains = [...table.chains.keys()].filter((c) => !table.builtins.includes(c)).sort();
  const order = [...table.builtins, ...userChains];
  const lines = [`# Generated by ${header}`, `*${name}`];
  for (const chain of table.builtins) lines.push(`:${chain} ACCEPT [0:0]`);
  for (const chain of userChains) lines.push(`:${chain} - [0:0]`);
  for (const chain of order) {
    for (const spec of /** @type {string[]} */ (table.chains.get(chain))) lines.push(`-A ${chain} ${spec}`);
  }
  lines.push('COMMIT', '# Completed', '');
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// `node bench/gen/kube-proxy-dump.mjs --services 5 --endpoints 3 --seed 1 [--no-node-ports]
// [--no-session-affinity] [--nodes 4]` writes a dump to stdout.

/**
 * The plan options of the generators' command lines (this file, kube-proxy-nft.mjs,
 * kube-cluster.mjs), with `extra` options of the caller's own.
 * @param {Record<string, { type: 'string', default?: string }>} extra
 * @returns {{ options: KubeProxyDumpOptions, values: Record<string, string | boolean | undefined> }}
 */
export function planArgs(extra) {
  const parsed = parseArgs({
    options: {
      services: { type: 'string', default: '5' },
      endpoints: { type: 'string', default: '3' },
      seed: { type: 'string', default: '1' },
      'no-node-ports': { type: 'boolean', default: false },
      'no-session-affinity': { type: 'boolean', default: false },
      nodes: { type: 'string' },
      ...extra,
    },
  });
  /** @type {Record<string, string | boolean | undefined>} */
  const values = parsed.values;
  /** @type {KubeProxyDumpOptions} */
  const options = {
    services: Number(values.services),
    endpointsPerService: Number(values.endpoints),
    seed: Number(values.seed),
    nodePorts: !values['no-node-ports'],
    sessionAffinity: !values['no-session-affinity'],
    ...(values.nodes !== undefined && { nodes: Number(values.nodes) }),
  };
  return { options, values };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(generateKubeProxyDump(planArgs({}).options));
}
