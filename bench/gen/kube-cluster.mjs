// @ts-check
// The cluster around a kube-proxy-shaped dump: what `kubectl get services,endpointslices -A -o json`
// and `kubectl get nodes -o json` print for the services of planServices (kube-proxy-dump.mjs),
// so that `nftsim kube-drift` has a cluster to compare a node's rules with. Deterministic: names,
// uids and timestamps are derived from the plan.
//
// The plan must place its pods on nodes (planServices' `nodes` option): node 0 is the node the
// dump generators call "this node" (its endpoints are the `local` ones) and its pod /24 holds
// them; the other nodes hold the rest. A plan entry is one Service with one port (its
// ServicePortName is the plan's `name`: `ns/svc:port`, or `ns/svc` for an unnamed port).
//
// The plan's endpoints may carry EndpointSlice conditions (`conditions`, default ready); nodePlan
// says which endpoints kube-proxy on a node programs from them (pkg/proxy/topology.go
// CategorizeEndpoints), which is what the dump generators need to write that node's rules.
//
// Objects are printed with their keys sorted, as kubectl prints them (unstructured maps).

import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { planArgs, planServices, podCIDR } from './kube-proxy-dump.mjs';

/** @typedef {ReturnType<typeof planServices>[number]} ServicePort */
/** @typedef {ServicePort['endpoints'][number]} Endpoint */

/**
 * EndpointSlice endpoint conditions (discovery.k8s.io/v1 EndpointConditions).
 * @typedef {object} Conditions
 * @property {boolean} ready
 * @property {boolean} serving
 * @property {boolean} terminating
 */

/** An endpoint of the cluster's state: a plan endpoint and its slice conditions.
 * @typedef {Endpoint & { conditions?: Conditions }} StateEndpoint */
/** A Service port of the cluster's state.
 * @typedef {Omit<ServicePort, 'endpoints'> & { endpoints: StateEndpoint[] }} StateServicePort */

/** @type {Conditions} */
export const READY = { ready: true, serving: true, terminating: false };

const ZONES = ['zone-a', 'zone-b', 'zone-c'];
const REGION = 'region-1';
const KUBE_VERSION = 'v1.30.4';
// Everything the cluster shows happened on this day; objects are spread over it by their names.
const EPOCH = Date.UTC(2025, 0, 15, 8, 0, 0);
// Kubernetes' utilrand alphabet: generated name suffixes and pod-template hashes.
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** `node-1` for node 0 (this node), `node-2`, … @param {number} node */
export function nodeName(node) {
  return `node-${node + 1}`;
}

/** A node's InternalIP, in 192.168.0.0/16. @param {number} node */
export function nodeAddress(node) {
  return `192.168.${(node + 10) >> 8}.${(node + 10) & 255}`;
}

/** @param {number} node */
function zoneOf(node) {
  return ZONES[node % ZONES.length];
}

/** `ns/svc:port` → its parts; an unnamed port has port name ''. @param {ServicePort} svc */
export function servicePortName(svc) {
  const [nsName, portName = ''] = svc.name.split(':');
  const [namespace, name] = nsName.split('/');
  return { namespace, name, portName };
}

/** `10.128.1.2:8080` @param {{ ip: string, port: number }} ep */
export function endpointKey(ep) {
  return `${ep.ip}:${ep.port}`;
}

/**
 * What kube-proxy on `node` programs from the cluster state: for each Service port the endpoints
 * it uses (ready ones; when none is ready, the serving terminating ones), `local` when on that
 * node. Local traffic policies pick among the local ones of these (the dump generators do);
 * kube-proxy's separate fallback for local endpoints (a terminating local endpoint beside ready
 * remote ones) is not generated.
 * @param {readonly StateServicePort[]} state
 * @param {number} node
 * @returns {ServicePort[]}
 */
export function nodePlan(state, node) {
  return state.map((svc) => {
    const usable = usableEndpoints(svc.endpoints);
    if ((svc.externalLocal || svc.internalLocal) && usable.length !== svc.endpoints.length) {
      throw new Error(`${svc.name}: endpoints that are not ready under a Local traffic policy are not generated`);
    }
    return { ...svc, endpoints: usable.map(({ conditions: _, ...ep }) => ({ ...ep, local: nodeOf(svc, ep) === node })) };
  });
}

/** CategorizeEndpoints for Cluster policy: ready endpoints, else serving terminating ones.
 * @param {readonly StateEndpoint[]} endpoints */
export function usableEndpoints(endpoints) {
  const ready = endpoints.filter((ep) => (ep.conditions ?? READY).ready);
  if (ready.length > 0) return ready;
  return endpoints.filter((ep) => (ep.conditions ?? READY).serving && (ep.conditions ?? READY).terminating);
}

/** @param {ServicePort | StateServicePort} svc @param {Endpoint} ep */
function nodeOf(svc, ep) {
  if (ep.node === undefined) throw new Error(`${svc.name}: the plan has no node placement (planServices needs the \`nodes\` option)`);
  return ep.node;
}

// ---------------------------------------------------------------------------------------------
// Deterministic names

/** @param {string} text */
function digest(text) {
  return createHash('sha256').update(text).digest();
}

/** A version-4-shaped uid. @param {string} text */
function uidOf(text) {
  const hex = digest(`uid ${text}`).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${'89ab'[parseInt(hex[16], 16) & 3]}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** `n` characters of the utilrand alphabet. @param {string} text @param {number} n */
function suffixOf(text, n) {
  const bytes = digest(`suffix ${text}`);
  let out = '';
  for (let i = 0; i < n; i++) out += NAME_ALPHABET[bytes[i] % NAME_ALPHABET.length];
  return out;
}

/** An RFC 3339 time on EPOCH's day, later by `minutes` plus a few derived from `text`.
 * @param {string} text @param {number} [minutes] */
function timeOf(text, minutes = 0) {
  const offset = digest(`time ${text}`).readUInt16BE(0) % 600;
  return new Date(EPOCH + (offset + minutes) * 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
}

/** @param {string} text */
function resourceVersionOf(text) {
  return String(100_000 + (digest(`rv ${text}`).readUInt32BE(0) % 900_000));
}

// ---------------------------------------------------------------------------------------------
// Objects

/** @param {StateServicePort} svc */
function typeOf(svc) {
  if (svc.loadBalancerIP !== undefined) return 'LoadBalancer';
  return svc.nodePort !== undefined ? 'NodePort' : 'ClusterIP';
}

/** @param {StateServicePort} svc */
function serviceObject(svc) {
  const { namespace, name, portName } = servicePortName(svc);
  const type = typeOf(svc);
  const key = `${namespace}/${name}`;
  /** @type {Record<string, unknown>} */
  const port = { port: svc.port, protocol: svc.protocol.toUpperCase(), targetPort: svc.targetPort };
  if (portName !== '') port.name = portName;
  if (svc.nodePort !== undefined) port.nodePort = svc.nodePort;
  /** @type {Record<string, unknown>} */
  const spec = {
    clusterIP: svc.clusterIP,
    clusterIPs: [svc.clusterIP],
    internalTrafficPolicy: svc.internalLocal ? 'Local' : 'Cluster',
    ipFamilies: ['IPv4'],
    ipFamilyPolicy: 'SingleStack',
    ports: [port],
    selector: { 'app.kubernetes.io/name': name },
    sessionAffinity: svc.affinity ? 'ClientIP' : 'None',
    type,
  };
  if (svc.affinity) spec.sessionAffinityConfig = { clientIP: { timeoutSeconds: 10800 } };
  if (type !== 'ClusterIP') spec.externalTrafficPolicy = svc.externalLocal ? 'Local' : 'Cluster';
  if (type === 'LoadBalancer') spec.allocateLoadBalancerNodePorts = true;
  if (svc.healthCheckNodePort !== undefined) spec.healthCheckNodePort = svc.healthCheckNodePort;
  if (svc.sourceRanges.length > 0) spec.loadBalancerSourceRanges = svc.sourceRanges;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      creationTimestamp: timeOf(key),
      labels: { 'app.kubernetes.io/name': name, 'app.kubernetes.io/part-of': namespace },
      name,
      namespace,
      resourceVersion: resourceVersionOf(key),
      uid: uidOf(`service ${key}`),
    },
    spec,
    status: { loadBalancer: svc.loadBalancerIP !== undefined ? { ingress: [{ ip: svc.loadBalancerIP, ipMode: 'VIP' }] } : {} },
  };
}

/** The one EndpointSlice of a single-port Service of a few endpoints, as the EndpointSlice
 * controller writes it; a Service without endpoints keeps an empty placeholder slice.
 * @param {StateServicePort} svc */
function endpointSliceObject(svc) {
  const { namespace, name, portName } = servicePortName(svc);
  const key = `${namespace}/${name}`;
  const sliceName = `${name}-${suffixOf(`slice ${key}`, 5)}`;
  const podPrefix = `${name}-${suffixOf(`replicaset ${key}`, 10)}`;
  const endpoints = svc.endpoints.map((ep) => {
    const node = nodeOf(svc, ep);
    const pod = `${podPrefix}-${suffixOf(`pod ${key} ${ep.ip}`, 5)}`;
    return {
      addresses: [ep.ip],
      conditions: ep.conditions ?? READY,
      nodeName: nodeName(node),
      targetRef: { kind: 'Pod', name: pod, namespace, uid: uidOf(`pod ${namespace}/${pod}`) },
      zone: zoneOf(node),
    };
  });
  return {
    addressType: 'IPv4',
    apiVersion: 'discovery.k8s.io/v1',
    endpoints: endpoints.length > 0 ? endpoints : null,
    kind: 'EndpointSlice',
    metadata: {
      annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': timeOf(key, 600) },
      creationTimestamp: timeOf(key),
      generateName: `${name}-`,
      generation: 1 + (digest(`generation ${key}`)[0] % 8),
      labels: {
        'app.kubernetes.io/name': name,
        'app.kubernetes.io/part-of': namespace,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
        'kubernetes.io/service-name': name,
      },
      name: sliceName,
      namespace,
      ownerReferences: [{ apiVersion: 'v1', blockOwnerDeletion: true, controller: true, kind: 'Service', name, uid: uidOf(`service ${key}`) }],
      resourceVersion: resourceVersionOf(`slice ${key}`),
      uid: uidOf(`slice ${key}`),
    },
    ports: endpoints.length > 0 ? [{ name: portName, port: svc.targetPort, protocol: svc.protocol.toUpperCase() }] : null,
  };
}

/** @param {number} node */
function nodeObject(node) {
  const name = nodeName(node);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
      creationTimestamp: timeOf(`node ${name}`, -1440),
      labels: {
        'beta.kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'topology.kubernetes.io/region': REGION,
        'topology.kubernetes.io/zone': zoneOf(node),
      },
      name,
      resourceVersion: resourceVersionOf(`node ${name}`),
      uid: uidOf(`node ${name}`),
    },
    spec: { podCIDR: podCIDR(node), podCIDRs: [podCIDR(node)] },
    status: {
      addresses: [{ address: nodeAddress(node), type: 'InternalIP' }, { address: name, type: 'Hostname' }],
      conditions: [{
        lastHeartbeatTime: timeOf(`node ${name}`, 900),
        lastTransitionTime: timeOf(`node ${name}`, -1430),
        message: 'kubelet is posting ready status',
        reason: 'KubeletReady',
        status: 'True',
        type: 'Ready',
      }],
      nodeInfo: {
        architecture: 'amd64',
        containerRuntimeVersion: 'containerd://1.7.20',
        kernelVersion: '6.1.0-25-amd64',
        kubeProxyVersion: KUBE_VERSION,
        kubeletVersion: KUBE_VERSION,
        operatingSystem: 'linux',
        osImage: 'Debian GNU/Linux 12 (bookworm)',
      },
    },
  };
}

/** @param {unknown} value @returns {unknown} */
function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys(/** @type {Record<string, unknown>} */ (value)[k])]));
}

/** @param {unknown[]} items */
function list(items) {
  return sortKeys({ apiVersion: 'v1', items, kind: 'List', metadata: { resourceVersion: '' } });
}

/**
 * The two kubectl listings for a cluster state (a plan made with `nodes`, possibly changed):
 * kubectl lists every Service (by namespace, then name), then every EndpointSlice.
 * @param {readonly StateServicePort[]} state
 * @param {{ nodes: number }} options  how many nodes the plan placed its pods on
 * @returns {{ services: unknown, nodes: unknown }}  `kubectl get services,endpointslices -A -o json`, `kubectl get nodes -o json`
 */
export function generateCluster(state, { nodes }) {
  const sorted = [...state].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    services: list([...sorted.map(serviceObject), ...sorted.map(endpointSliceObject)]),
    nodes: list(Array.from({ length: nodes }, (_, node) => nodeObject(node))),
  };
}

// ---------------------------------------------------------------------------------------------
// `node bench/gen/kube-cluster.mjs --services 5 --endpoints 3 --seed 1 --nodes 4 [--no-node-ports]
// [--no-session-affinity] [--kind nodes]` writes the services and endpoint slices (or, with
// `--kind nodes`, the nodes) of the cluster whose node-1 has the rules that kube-proxy-dump.mjs
// and kube-proxy-nft.mjs write with the same options (kube-proxy-nft.mjs writes no session
// affinity: pair it with --no-session-affinity).

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { options, values } = planArgs({ nodes: { type: 'string', default: '4' }, kind: { type: 'string', default: 'services' } });
  const cluster = generateCluster(planServices(options), { nodes: options.nodes ?? 4 });
  process.stdout.write(`${JSON.stringify(values.kind === 'nodes' ? cluster.nodes : cluster.services, null, 4)}\n`);
}
