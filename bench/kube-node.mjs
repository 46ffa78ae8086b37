// @ts-check
// What the simulation benchmarks share: the built library, the node they simulate (kube-proxy's
// test conventions, ../shared/research/kube-proxy.md, pods on cni0) and the services a kube-proxy
// dump holds.

import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export const NODE_IP = '192.168.0.2';
export const CLIENT_IP = '203.0.113.2';

/** The built library from dist/, or from `dist` (`tsc -p tsconfig.build.json --outDir DIR`), so
 * that a change can be measured without rebuilding the shared dist/. Typed from its source
 * (dist/ may not exist when this is typechecked).
 * @param {string | undefined} dist
 * @returns {Promise<typeof import('../src/index.js')>} */
export function loadLibrary(dist) {
  return import(dist === undefined ? new URL('../dist/index.js', import.meta.url).href : pathToFileURL(resolve(dist, 'index.js')).href);
}

/** The node, resolved by the library: eth0 with NODE_IP, cni0 with the pod range, a default
 * route, forwarding on.
 * @param {typeof import('../src/index.js')} library */
export function resolveNodeHost(library) {
  const host = {
    interfaces: [
      { name: 'eth0', addresses: [`${NODE_IP}/24`] },
      { name: 'cni0', addresses: ['10.128.0.1/9'] },
    ],
    routes: [{ dst: 'default', via: '192.168.0.1', dev: 'eth0' }],
    forwarding: true,
  };
  const resolved = library.readSimulationInput({ host, packet: { iif: 'eth0', src: CLIENT_IP, dst: NODE_IP } });
  if (!resolved.host) throw new Error(`bad host: ${JSON.stringify(resolved.errors)}`);
  return resolved.host;
}

/** The ClusterIP:port of every service with endpoints and every NodePort, from the nat table of
 * an iptables dump (`-A KUBE-SERVICES -d IP/32 -p P … --dport N -j KUBE-SVC-…`).
 * @param {string} text @param {string} file (for the error) */
export function readTargets(text, file) {
  const nat = text.slice(text.indexOf('\n*nat'));
  /** @type {{ ip: string, protocol: string, port: number }[]} */
  const services = [];
  /** @type {{ protocol: string, port: number }[]} */
  const nodePorts = [];
  for (const m of nat.matchAll(/^-A KUBE-SERVICES -d ([\d.]+)\/32 -p (tcp|udp) .*--dport (\d+) -j KUBE-SVC-/gm)) {
    services.push({ ip: m[1], protocol: m[2], port: Number(m[3]) });
  }
  for (const m of nat.matchAll(/^-A KUBE-NODEPORTS -p (tcp|udp) .*--dport (\d+) -j KUBE-EXT-/gm)) {
    nodePorts.push({ protocol: m[1], port: Number(m[2]) });
  }
  if (services.length === 0) throw new Error(`no kube-proxy services found in ${file} (give the iptables dump)`);
  return { services, nodePorts };
}
