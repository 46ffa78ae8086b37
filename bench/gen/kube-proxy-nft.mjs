// @ts-check
// A kube-proxy-shaped nftables ruleset, the way `nft list ruleset` prints table `ip kube-proxy` on
// a node whose kube-proxy runs in nftables mode. Deterministic for a seed: the services are those
// of kube-proxy-dump.mjs (same plan, same addresses), written the nftables way.
//
// Rule shapes follow kubernetes pkg/proxy/nftables/proxier.go (1.31+ era: the *-pre-dnat filter
// chains, cluster-ips-check, mark-for-masquerade) and ../shared/research/kube-proxy.md §2:
// - dispatch through verdict maps keyed `ip daddr . meta l4proto . th dport` (service-ips,
//   no-endpoint-services, firewall-ips) and `meta l4proto . th dport` (service-nodeports,
//   no-endpoint-nodeports), NodePorts behind `fib daddr type local` (no --nodeport-addresses);
// - one `service-`, `external-`, `local-`, `firewall-` and `endpoint-` chain per service port or
//   endpoint, named `<prefix><8 chars of base32(sha256(name + protocol [+ endpoint]))>-ns/svc/proto/port`;
// - the endpoint choice `numgen random mod N vmap { 0 : goto endpoint-…, … }`;
// - masquerading by mark 0x4000: `mark-for-masquerade` sets it, `masquerading` tests, clears it
//   and masquerades fully-random.

import { pathToFileURL } from 'node:url';
import { kubeChainHash, planArgs, planServices } from './kube-proxy-dump.mjs';

const POD_CIDR = '10.0.0.0/8';
const SERVICE_CIDR = '172.30.0.0/16';
const MASQ_BIT = '0x00004000';

/**
 * @typedef {object} KubeProxyNftOptions
 * @property {number} services            service ports (one port per service)
 * @property {number} endpointsPerService endpoints of every service that has any
 * @property {number} seed                the same seed gives the same ruleset, byte for byte
 * @property {boolean} [nodePorts]        NodePort and LoadBalancer services (default true)
 * @property {number} [nodes]             place the pods on this many nodes (see planServices)
 */

/** @typedef {ReturnType<typeof planServices>[number]} ServicePort */

/** `ns/svc:port` → `ns/svc/tcp/port` (servicePortChainNameBase; an unnamed port is empty).
 * @param {ServicePort} svc */
function chainBase(svc) {
  const [nsName, port = ''] = svc.name.split(':');
  return `${kubeChainHash(svc.name + svc.protocol).slice(0, 8)}-${nsName}/${svc.protocol}/${port}`;
}

/** @param {ServicePort} svc @param {{ ip: string, port: number }} ep */
function endpointChain(svc, ep) {
  const [nsName, port = ''] = svc.name.split(':');
  const hash = kubeChainHash(`${svc.name}${svc.protocol}${ep.ip}:${ep.port}`).slice(0, 8);
  return `endpoint-${hash}-${nsName}/${svc.protocol}/${port}__${ep.ip}/${ep.port}`;
}

/**
 * @param {KubeProxyNftOptions} options
 * @returns {string}
 */
export function generateKubeProxyNft(options) {
  return formatKubeProxyNft(planServices({ ...options, sessionAffinity: false }));
}

/**
 * Table `ip kube-proxy` for these service ports (a plan, or one changed from a plan). ClientIP
 * affinity is not written (kube-proxy's nftables mode keeps it in per-endpoint sets).
 * @param {readonly ServicePort[]} services
 * @returns {string}
 */
export function formatKubeProxyNft(services) {
  /** @type {Map<string, string[]>} */
  const chains = new Map();
  /** @param {string} name @param {string[]} rules */
  const chain = (name, rules) => chains.set(name, rules);
  const elements = { clusterIPs: /** @type {string[]} */ ([]), serviceIPs: /** @type {string[]} */ ([]), nodePorts: /** @type {string[]} */ ([]),
    firewallIPs: /** @type {string[]} */ ([]), noEndpointServices: /** @type {string[]} */ ([]), noEndpointNodePorts: /** @type {string[]} */ ([]) };

  for (const svc of services) {
    const base = chainBase(svc);
    const p = svc.protocol;
    const key = (/** @type {string} */ ip) => `${ip} . ${p} . ${svc.port}`;
    elements.clusterIPs.push(svc.clusterIP);
    if (svc.endpoints.length === 0) {
      const comment = `comment "${svc.name}"`;
      elements.noEndpointServices.push(`${key(svc.clusterIP)} ${comment} : goto reject-chain`);
      if (svc.loadBalancerIP) elements.noEndpointServices.push(`${key(svc.loadBalancerIP)} ${comment} : goto reject-chain`);
      if (svc.nodePort !== undefined) elements.noEndpointNodePorts.push(`${p} . ${svc.nodePort} ${comment} : goto reject-chain`);
      continue;
    }
    const choice = (/** @type {{ ip: string, port: number }[]} */ eps) =>
      `numgen random mod ${eps.length} vmap { ${eps.map((ep, i) => `${i} : goto ${endpointChain(svc, ep)}`).join(', ')} }`;
    const local = svc.endpoints.filter((ep) => ep.local);
    const masquerade = `ip daddr ${svc.clusterIP} ${p} dport ${svc.port} ip saddr != ${POD_CIDR} jump mark-for-masquerade`;
    // internalTrafficPolicy: Local, as in kube-proxy-dump.mjs: the ClusterIP goes to the local- chain
    // (or is dropped without local endpoints), and service- exists only for external traffic.
    const internalLocal = svc.internalLocal === true;
    if (internalLocal && svc.externalLocal) throw new Error(`${svc.name}: internal and external traffic policy both Local is not generated`);
    const usesClusterChain = !internalLocal || (svc.nodePort !== undefined && !svc.externalLocal);
    if (usesClusterChain) chain(`service-${base}`, [...(internalLocal ? [] : [masquerade]), choice(svc.endpoints)]);
    if (!internalLocal) elements.serviceIPs.push(`${key(svc.clusterIP)} : goto service-${base}`);
    else if (local.length > 0) {
      chain(`local-${base}`, [masquerade, choice(local)]);
      elements.serviceIPs.push(`${key(svc.clusterIP)} : goto local-${base}`);
    } else elements.noEndpointServices.push(`${key(svc.clusterIP)} comment "${svc.name}" : drop`);
    for (const ep of usesClusterChain ? svc.endpoints : local) {
      chain(endpointChain(svc, ep), [`ip saddr ${ep.ip} jump mark-for-masquerade`, `meta l4proto ${p} dnat to ${ep.ip}:${ep.port}`]);
    }
    if (svc.nodePort === undefined) continue;
    if (svc.externalLocal) {
      chain(`external-${base}`, [
        `ip saddr ${POD_CIDR} goto service-${base}`,
        'fib saddr type local jump mark-for-masquerade',
        `fib saddr type local goto service-${base}`,
        local.length > 0 ? `goto local-${base}` : 'drop',
      ]);
      if (local.length > 0) chain(`local-${base}`, [choice(local)]);
    } else {
      chain(`external-${base}`, ['jump mark-for-masquerade', `goto service-${base}`]);
    }
    elements.nodePorts.push(`${p} . ${svc.nodePort} : goto external-${base}`);
    if (svc.loadBalancerIP) {
      elements.serviceIPs.push(`${key(svc.loadBalancerIP)} : goto external-${base}`);
      if (svc.sourceRanges.length > 0) {
        chain(`firewall-${base}`, [`ip saddr != { ${svc.sourceRanges.join(', ')} } drop`]);
        elements.firewallIPs.push(`${key(svc.loadBalancerIP)} : goto firewall-${base}`);
      }
    }
  }

  const lines = ['table ip kube-proxy {', '\tcomment "rules for kube-proxy"'];
  /** @param {string} kind @param {string} name @param {string} type @param {string} comment @param {string[]} items */
  const declare = (kind, name, type, comment, items) => {
    lines.push(`\t${kind} ${name} {`, `\t\ttype ${type}`, `\t\tcomment "${comment}"`);
    if (items.length > 0) lines.push(`\t\telements = { ${items.join(',\n\t\t\t     ')} }`);
    lines.push('\t}', '');
  };
  declare('set', 'cluster-ips', 'ipv4_addr', 'Active ClusterIPs', elements.clusterIPs);
  declare('map', 'firewall-ips', 'ipv4_addr . inet_proto . inet_service : verdict', 'destinations that are subject to LoadBalancerSourceRanges', elements.firewallIPs);
  declare('map', 'no-endpoint-nodeports', 'inet_proto . inet_service : verdict', 'vmap to drop or reject packets to service nodeports with no endpoints', elements.noEndpointNodePorts);
  declare('map', 'no-endpoint-services', 'ipv4_addr . inet_proto . inet_service : verdict', 'vmap to drop or reject packets to services with no endpoints', elements.noEndpointServices);
  declare('map', 'service-ips', 'ipv4_addr . inet_proto . inet_service : verdict', 'ClusterIP, ExternalIP and LoadBalancer IP traffic', elements.serviceIPs);
  declare('map', 'service-nodeports', 'inet_proto . inet_service : verdict', 'NodePort traffic', elements.nodePorts);

  /** @param {string} name @param {string} hook @param {string} priority @param {string[]} rules */
  const base = (name, hook, priority, rules) => {
    lines.push(`\tchain ${name} {`, `\t\ttype ${name.startsWith('nat-') ? 'nat' : 'filter'} hook ${hook} priority ${priority}; policy accept;`, ...rules.map((r) => `\t\t${r}`), '\t}', '');
  };
  base('filter-prerouting-pre-dnat', 'prerouting', 'dstnat - 10', ['ct state new jump firewall-check']);
  // nft names dstnat/srcnat only at prerouting/postrouting and lists the output ones as numbers.
  base('filter-output-pre-dnat', 'output', '-110', ['ct state new jump firewall-check']);
  base('filter-input', 'input', 'filter', ['ct state new jump nodeport-endpoints-check', 'ct state new jump service-endpoints-check']);
  base('filter-forward', 'forward', 'filter', ['ct state new jump service-endpoints-check', 'ct state new jump cluster-ips-check']);
  base('filter-output', 'output', 'filter', ['ct state new jump service-endpoints-check', 'ct state new jump cluster-ips-check']);
  base('nat-prerouting', 'prerouting', 'dstnat', ['jump services']);
  base('nat-output', 'output', '-100', ['jump services']);
  base('nat-postrouting', 'postrouting', 'srcnat', ['jump masquerading']);

  const nodePortMatch = 'fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport';
  const fixed = new Map([
    ['cluster-ips-check', [`ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"`, `ip daddr { ${SERVICE_CIDR} } drop comment "Drop traffic to unallocated ClusterIPs"`]],
    ['firewall-check', ['ip daddr . meta l4proto . th dport vmap @firewall-ips']],
    ['mark-for-masquerade', [`meta mark set meta mark | ${MASQ_BIT}`]],
    ['masquerading', [`meta mark & ${MASQ_BIT} == 0x00000000 return`, `meta mark set meta mark ^ ${MASQ_BIT}`, 'masquerade fully-random']],
    ['nodeport-endpoints-check', [`${nodePortMatch} vmap @no-endpoint-nodeports`]],
    ['reject-chain', ['reject']],
    ['service-endpoints-check', ['ip daddr . meta l4proto . th dport vmap @no-endpoint-services']],
    ['services', ['ip daddr . meta l4proto . th dport vmap @service-ips', `${nodePortMatch} vmap @service-nodeports`]],
  ]);
  // nft lists chains in the order they were added: kube-proxy adds the fixed ones first.
  for (const [name, rules] of [...fixed, ...[...chains].sort(([a], [b]) => a.localeCompare(b))]) {
    lines.push(`\tchain ${name} {`, ...rules.map((r) => `\t\t${r}`), '\t}', '');
  }
  lines.pop();
  lines.push('}', '');
  return lines.join('\n');
}

// `node bench/gen/kube-proxy-nft.mjs --services 5 --endpoints 3 --seed 1 [--no-node-ports]
// [--nodes 4]` writes a ruleset to stdout.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(generateKubeProxyNft(planArgs({}).options));
}
