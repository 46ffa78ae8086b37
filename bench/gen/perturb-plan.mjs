// @ts-check
// How a cluster moves on while a node's kube-proxy does not follow, and what a drift check must
// then report: the one place where corpus/kube-drift/make.mjs changes cluster states.
//
// evolveCluster applies events (a rollout replaces a Service's pods, a scale-up adds one, a
// Service is created or deleted, a pod is terminating…) to a cluster state (a plan of
// kube-proxy-dump.mjs made with `nodes`, see kube-cluster.mjs) and logs, per event, which
// endpoints a node whose rules predate it lacks (missing) or keeps (stale). driftTruth says the
// same from the two states alone, by Kubernetes' rules for which endpoints a node's kube-proxy
// programs on each path (ClusterIP: internalTrafficPolicy; NodePort and LoadBalancer from
// outside: externalTrafficPolicy), so that make.mjs can check one against the other. Neither
// runs nftsim: they are the oracle its kube-drift report is tested against.

import { endpointKey, nodePlan, servicePortName } from './kube-cluster.mjs';
import { mulberry32, podCIDR } from './kube-proxy-dump.mjs';

/** @typedef {import('./kube-cluster.mjs').StateServicePort} StateServicePort */
/** @typedef {import('./kube-cluster.mjs').StateEndpoint} StateEndpoint */
/** @typedef {import('./kube-cluster.mjs').ServicePort} ServicePort */

/**
 * What happens to a Service (each event takes a different one, drawn at random among the
 * Services with Cluster traffic policies):
 * - `rollout`: every pod replaced by a new one (a Deployment update): new addresses;
 * - `scale-up`: `pods` more (default 1); `scale-down`: `pods` fewer, gone from the slice;
 * - `scale-down-terminating`: one pod fewer, still in the slice as terminating (ready false,
 *   serving true), which kube-proxy does not use while others are ready;
 * - `starting`: one pod more that is not ready yet (ready false, serving false): not used;
 * - `all-terminating`: every pod terminating but still serving: kube-proxy falls back to them
 *   (the same endpoints as before, so no drift);
 * - `created`: the Service did not exist before (the state given must hold it: it is taken out
 *   of the earlier state); `deleted`: the Service is gone.
 * @typedef {'rollout' | 'scale-up' | 'scale-down' | 'scale-down-terminating' | 'starting' | 'all-terminating' | 'created' | 'deleted'} EventKind
 */

/**
 * One event as it happened, and what it means for a node whose rules were written before it
 * (with Cluster traffic policy, every node alike).
 * @typedef {object} Change
 * @property {EventKind} kind
 * @property {string} service  its ServicePortName
 * @property {string[]} missing
 * @property {string[]} stale
 */

/** Slice conditions of a pod going away and of one coming up.
 * @type {Readonly<Record<'terminating' | 'starting', import('./kube-cluster.mjs').Conditions>>} */
const CONDITIONS = {
  terminating: { ready: false, serving: true, terminating: true },
  starting: { ready: false, serving: false, terminating: false },
};

/**
 * The cluster after `events`: `before` is the state a node last synced to (the Services `created`
 * since taken out), `after` the state now; `changes` logs each event.
 * @param {readonly StateServicePort[]} state  the cluster now, before `deleted` and the endpoint events
 * @param {readonly { kind: EventKind, count: number, pods?: number }[]} events  `count` Services each
 * @param {{ seed: number, nodes: number }} options
 * @returns {{ before: StateServicePort[], after: StateServicePort[], changes: Change[] }}
 */
export function evolveCluster(state, events, { seed, nodes }) {
  const random = mulberry32(seed);
  const allocate = podAllocator(state, nodes, random);
  // Each event takes its own Service: eligible ones in a seeded order.
  const eligible = state.filter((svc) => !svc.externalLocal && !svc.internalLocal);
  for (let i = eligible.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [eligible[i], eligible[j]] = [eligible[j], eligible[i]];
  }
  /** @type {Map<string, StateServicePort>} */
  const after = new Map(state.map((svc) => [svc.name, { ...svc, endpoints: svc.endpoints.map((ep) => ({ ...ep })) }]));
  const created = new Set();
  /** @type {Change[]} */
  const changes = [];
  for (const { kind, count, pods = 1 } of events) {
    for (let n = 0; n < count; n++) {
      // Enough endpoints for the event to leave one ready (or, for created and deleted, to show).
      const minimum = kind === 'scale-down' ? pods + 1 : kind === 'all-terminating' || kind === 'scale-down-terminating' ? 2 : kind === 'scale-up' || kind === 'starting' ? 0 : 1;
      const index = eligible.findIndex((svc) => svc.endpoints.length >= minimum);
      if (index < 0) throw new Error(`no Service left for ${kind}`);
      const [svc] = eligible.splice(index, 1);
      const next = /** @type {StateServicePort} */ (after.get(svc.name));
      const old = next.endpoints.map(endpointKey);
      /** @type {Change} */
      const change = { kind, service: svc.name, missing: [], stale: [] };
      switch (kind) {
        case 'rollout':
          next.endpoints = next.endpoints.map((ep) => ({ ...allocate(), port: ep.port, local: false }));
          change.missing = next.endpoints.map(endpointKey);
          change.stale = old;
          break;
        case 'scale-up':
          for (let i = 0; i < pods; i++) next.endpoints.push({ ...allocate(), port: svc.targetPort, local: false });
          change.missing = next.endpoints.slice(-pods).map(endpointKey);
          break;
        case 'scale-down':
          change.stale = next.endpoints.splice(-pods).map(endpointKey);
          break;
        case 'scale-down-terminating':
          next.endpoints[next.endpoints.length - 1].conditions = CONDITIONS.terminating;
          change.stale = [old[old.length - 1]];
          break;
        case 'starting':
          next.endpoints.push({ ...allocate(), port: svc.targetPort, local: false, conditions: CONDITIONS.starting });
          break;
        case 'all-terminating':
          for (const ep of next.endpoints) ep.conditions = CONDITIONS.terminating;
          break;
        case 'created':
          created.add(svc.name);
          change.missing = old;
          break;
        case 'deleted':
          after.delete(svc.name);
          change.stale = old;
          break;
        default: {
          const unknown = /** @type {never} */ (kind);
          throw new Error(`unknown event ${unknown}`);
        }
      }
      changes.push(change);
    }
  }
  return { before: state.filter((svc) => !created.has(svc.name)), after: [...after.values()], changes };
}

/** New pods on the nodes other than node 0, each taking its node's next free address.
 * @param {readonly StateServicePort[]} state @param {number} nodes @param {() => number} random */
function podAllocator(state, nodes, random) {
  const used = new Set(state.flatMap((svc) => svc.endpoints.map((ep) => ep.ip)));
  return () => {
    const node = 1 + Math.floor(random() * (nodes - 1));
    const prefix = podCIDR(node).replace(/0\/24$/, '');
    for (let host = 2; host <= 251; host++) {
      const ip = `${prefix}${host}`;
      if (!used.has(ip)) {
        used.add(ip);
        return { ip, node };
      }
    }
    throw new Error(`node ${node} has no free pod address`);
  };
}

// ---------------------------------------------------------------------------------------------
// The truth

/**
 * @typedef {object} ServiceTruth
 * @property {string} namespace
 * @property {string} name
 * @property {string} portName   '' for an unnamed port
 * @property {number} port
 * @property {'tcp' | 'udp'} protocol
 * @property {string[]} expected    every endpoint the node should DNAT to, on some path
 * @property {string[]} missing     expected on a path whose rules do not DNAT to it
 * @property {string[]} stale       DNATed to, but expected on no path (gone from the slices, or
 *   not used: a terminating pod beside ready ones)
 * @property {string[]} wrongShare  DNATed to on a path that should not reach it, although another
 *   path of the Service should (a Local policy's path reaching another node's endpoint): its
 *   share there should be 0
 * @property {true} [noRules]       the node has no rule for it (created since) and its packets go
 *   through untouched: not in nftables mode, whose `cluster-ips-check` drops packets to a
 *   ClusterIP it does not know
 * @property {true} [orphan]        only the node's rules still know it (deleted since)
 * @property {{ clusterIP: string, nodePort?: number, loadBalancerIP?: string }} addresses
 *   where clients send to (the cluster's, or for an orphan the rules')
 * @property {PathTruth[]} paths
 */

/**
 * One way in: `internal` (to the ClusterIP, from a pod or the node) or `external` (to the
 * NodePort and LoadBalancer IP, from outside); what it should reach and what the rules reach.
 * @typedef {object} PathTruth
 * @property {'internal' | 'external'} path
 * @property {string[]} expected
 * @property {string[]} rules
 */

/**
 * What a drift check must report for a node: from the cluster state now, and the state (and
 * node) its kube-proxy wrote the rules from. Per Service port and path a client has (ClusterIP:
 * internalTrafficPolicy; NodePort and LoadBalancer from outside: externalTrafficPolicy; Local
 * means the node's own endpoints), kube-proxy spreads new connections evenly over the endpoints
 * of the path, in the rules as in what they should be: taken relative to the endpoints both
 * have (a missing or stale endpoint changes every other share, which is not a wrong share of its
 * own), the shares agree. Services that drift only.
 * @param {{ cluster: readonly StateServicePort[], node: number, rulesFrom: readonly StateServicePort[], rulesNode?: number, mode?: 'iptables' | 'nftables' }} args
 * @returns {{ services: ServiceTruth[], checked: number, endpointsExpected: number, missing: number, stale: number, wrongShare: number }}
 */
export function driftTruth({ cluster, node, rulesFrom, rulesNode = node, mode = 'iptables' }) {
  const expected = new Map(nodePlan(cluster, node).map((svc) => [svc.name, svc]));
  const programmed = new Map(nodePlan(rulesFrom, rulesNode).map((svc) => [svc.name, svc]));
  const names = [...new Set([...expected.keys(), ...programmed.keys()])].sort();
  const all = names.map((key) => {
    const want = expected.get(key);
    const have = programmed.get(key);
    const paths = /** @type {const} */ (['internal', 'external']).map((path) => ({ path, want: endpointsOn(want, path), have: endpointsOn(have, path) }));
    const known = new Set(paths.flatMap((p) => p.want));
    /** @type {Set<string>} */ const missing = new Set();
    /** @type {Set<string>} */ const stale = new Set();
    /** @type {Set<string>} */ const wrongShare = new Set();
    for (const path of paths) {
      for (const ep of path.want) if (!path.have.includes(ep)) missing.add(ep);
      for (const ep of path.have) if (!path.want.includes(ep)) (known.has(ep) ? wrongShare : stale).add(ep);
    }
    const svc = /** @type {ServicePort} */ (want ?? have);
    const { namespace, name, portName } = servicePortName(svc);
    return {
      namespace,
      name,
      portName,
      port: svc.port,
      protocol: svc.protocol,
      addresses: {
        clusterIP: svc.clusterIP,
        ...(svc.nodePort !== undefined && { nodePort: svc.nodePort }),
        ...(svc.loadBalancerIP !== undefined && { loadBalancerIP: svc.loadBalancerIP }),
      },
      paths: paths.filter((p) => p.path === 'internal' || isExternal(want) || isExternal(have))
        .map((p) => ({ path: p.path, expected: sortEndpoints(p.want), rules: sortEndpoints(p.have) })),
      expected: sortEndpoints(known),
      missing: sortEndpoints(missing),
      stale: sortEndpoints(stale),
      wrongShare: sortEndpoints(wrongShare),
      ...(want && !have && mode === 'iptables' && { noRules: /** @type {const} */ (true) }),
      ...(!want && { orphan: /** @type {const} */ (true) }),
    };
  });
  const checked = all.filter((s) => !s.orphan);
  return {
    services: all.filter((s) => s.missing.length + s.stale.length + s.wrongShare.length > 0 || s.noRules || s.orphan),
    checked: checked.length,
    endpointsExpected: checked.reduce((n, s) => n + s.expected.length, 0),
    missing: all.reduce((n, s) => n + s.missing.length, 0),
    stale: all.reduce((n, s) => n + s.stale.length, 0),
    wrongShare: all.reduce((n, s) => n + s.wrongShare.length, 0),
  };
}

/** A NodePort or LoadBalancer Service: clients from outside have a way in.
 * @param {ServicePort | undefined} svc */
function isExternal(svc) {
  return svc !== undefined && (svc.nodePort !== undefined || svc.loadBalancerIP !== undefined);
}

/** The endpoints of one path of a node's plan (none when the Service or the path is absent).
 * @param {ServicePort | undefined} svc @param {'internal' | 'external'} path @returns {string[]} */
function endpointsOn(svc, path) {
  if (!svc) return [];
  if (path === 'external' && !isExternal(svc)) return [];
  const local = path === 'internal' ? svc.internalLocal === true : svc.externalLocal;
  return (local ? svc.endpoints.filter((ep) => ep.local) : svc.endpoints).map(endpointKey);
}

/** By address, then port. @param {Iterable<string>} endpoints */
export function sortEndpoints(endpoints) {
  const order = (/** @type {string} */ ep) => {
    const [ip, port] = ep.split(':');
    return ip.split('.').map((part) => part.padStart(3, '0')).join('.') + `:${port.padStart(5, '0')}`;
  };
  return [...endpoints].sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
}
