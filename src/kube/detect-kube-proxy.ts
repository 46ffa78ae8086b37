// What of a node's ruleset kube-proxy wrote, and in which mode: the tables of its iptables mode
// (nat chain KUBE-SERVICES, written through iptables-nft) or of its nftables mode (table
// `kube-proxy`), per address family; its per-service rules by ServicePortName, to find those of
// Services that no longer exist; the chains that hold session affinity. When neither is there,
// what is (a kube-proxy replacement, IPVS), so that kube-drift can say why it cannot check.
// Rule shapes: kubernetes pkg/proxy/iptables/proxier.go and pkg/proxy/nftables/proxier.go
// (../shared/research/kube-proxy.md §1–3).

import type { Expr, Ruleset, Span, Stmt, Table } from '../model/ast.js';
import type { Loc } from '../sim/outcome.js';
import type { IpFamily, ServiceAccess, ServiceProtocol } from './cluster.js';

export type KubeProxyMode = 'iptables' | 'nftables' | 'none';

/** One address family kube-proxy has rules for, and the mode that wrote them. */
export interface KubeProxyFamily {
  readonly family: IpFamily;
  readonly mode: 'iptables' | 'nftables';
  /** The tables of this family kube-proxy writes: an error there can stop its syncs. */
  readonly tables: readonly Table[];
}

/** A destination kube-proxy's rules hold for a ServicePortName. */
export interface ServiceRule {
  /** `ns/svc:port`, or `ns/svc` for an unnamed port (ServicePortName.String()). */
  readonly servicePortName: string;
  readonly protocol: ServiceProtocol;
  readonly family: IpFamily;
  readonly access: ServiceAccess;
  /** Empty for a NodePort (every local address). */
  readonly address: string;
  readonly port: number;
  readonly at: Loc;
}

export interface KubeProxyRules {
  /** `nftables` when any family has the nftables-mode table, else `iptables` when any has the
   * iptables-mode chains, else `none`. */
  readonly mode: KubeProxyMode;
  readonly families: readonly KubeProxyFamily[];
  /** With mode `none`: why, in words (a kube-proxy replacement, IPVS, nothing found). */
  readonly absence?: string;
  /** The chains that send a returning client to its earlier endpoint: chain name → the
   * `family table` pairs holding it (by name first: every trace event is looked up). */
  readonly affinityChains: ReadonlyMap<string, ReadonlySet<string>>;
  readonly serviceRules: readonly ServiceRule[];
}

const FAMILIES: Readonly<Record<string, IpFamily>> = { ip: 'ipv4', ip6: 'ipv6' };
const PROTOCOLS: ReadonlySet<string> = new Set(['tcp', 'udp', 'sctp']);

// proxier.go (iptables): the tables kube-proxy restores (filter, nat) and where it keeps its
// canary and hint chains (mangle); a table iptables-nft cannot read fails the whole sync.
const IPTABLES_MODE_TABLES: ReadonlySet<string> = new Set(['filter', 'nat', 'mangle']);
// pkg/proxy/nftables/proxier.go: kubeProxyTable.
const NFTABLES_MODE_TABLE = 'kube-proxy';

// What kube-proxy's iptables comments say after the ServicePortName (proxier.go
// syncProxyRules: `"%s cluster IP"`, `"%s external IP"`, `"%s loadbalancer IP"`, `"%s has no
// endpoints"`, `"%s has no local endpoints"`).
const IPTABLES_COMMENT = /^(\S+) (cluster IP|external IP|loadbalancer IP|has no endpoints|has no local endpoints)$/;
const COMMENT_ACCESS: Readonly<Record<string, ServiceAccess>> = {
  'cluster IP': 'clusterIP',
  'external IP': 'externalIP',
  'loadbalancer IP': 'loadBalancer',
};
/** `ns/svc` or `ns/svc:port`. */
const SERVICE_PORT_NAME = /^[^/\s:]+\/[^/\s:]+(?::\S+)?$/;
// nftables proxier.go servicePortChainNameBase / servicePortEndpointChainNameBase:
// `<prefix>-<8 chars of base32 hash>-<ns>/<svc>/<protocol>/<port name>[__<ip>/<port>]`.
const NFT_SERVICE_CHAIN = /^[a-z]+-[A-Z2-7]{8}-([^/]+)\/([^/]+)\/([a-z]+)\/([^_]*)(?:__.*)?$/;

/** Finds kube-proxy's rules in a node's ruleset. */
export function detectKubeProxy(ruleset: Ruleset): KubeProxyRules {
  const families: KubeProxyFamily[] = [];
  const affinityChains = new Map<string, Set<string>>();
  const serviceRules: ServiceRule[] = [];
  let ipvs = false;
  for (const [nftFamily, family] of Object.entries(FAMILIES)) {
    const tables = ruleset.tables.filter((t) => t.family === nftFamily);
    const nftTable = tables.find((t) => t.name === NFTABLES_MODE_TABLE);
    const nat = tables.find((t) => t.name === 'nat');
    const hasServices = (t: Table | undefined) => t?.chains.some((c) => c.name === 'KUBE-SERVICES') === true;
    // IPVS mode also writes nat KUBE-SERVICES, but to mark and accept: IPVS balances.
    if (nat?.chains.some((c) => c.name === 'KUBE-LOAD-BALANCER' || c.name === 'KUBE-NODE-PORT')) ipvs = true;
    if (nftTable) {
      families.push({ family, mode: 'nftables', tables: [nftTable] });
      readNftablesMode(nftTable, family, affinityChains, serviceRules);
    } else if (!ipvs && (hasServices(nat) || hasServices(tables.find((t) => t.name === 'filter')))) {
      const own = tables.filter((t) => IPTABLES_MODE_TABLES.has(t.name));
      families.push({ family, mode: 'iptables', tables: own });
      readIptablesMode(own, family, affinityChains, serviceRules);
    }
  }
  const mode: KubeProxyMode = families.some((f) => f.mode === 'nftables') ? 'nftables' : families.length > 0 ? 'iptables' : 'none';
  return { mode, families, ...(mode === 'none' && { absence: absenceOf(ruleset, ipvs) }), affinityChains, serviceRules };
}

/** Why there is nothing to check: a kube-proxy replacement's tables, IPVS, or nothing. */
function absenceOf(ruleset: Ruleset, ipvs: boolean): string {
  const cilium = ruleset.tables.flatMap((t) => [t.name, ...t.chains.map((c) => c.name)]).find((name) => /^cilium[_-]/i.test(name));
  if (cilium !== undefined) {
    return `kube-proxy replacement (eBPF): Cilium's rules are here (${cilium}), its service handling is in BPF programs nftsim cannot see`;
  }
  if (ipvs) return 'kube-proxy in IPVS mode: the kernel\'s IPVS balances Services, which nftsim cannot see';
  return 'no kube-proxy rules found (neither nat chain KUBE-SERVICES of its iptables mode nor table kube-proxy of its nftables mode)';
}

function locOf(node: { readonly span: Span; readonly handle?: number }): Loc {
  return { file: node.span.file, line: node.span.line, column: node.span.column, ...(node.handle !== undefined && { handle: node.handle }) };
}

function literalText(expr: Expr): string | undefined {
  return expr.kind === 'literal' ? expr.text : undefined;
}

function portOf(expr: Expr): number | undefined {
  if (expr.kind !== 'literal') return undefined;
  const n = expr.value?.type === 'integer' ? Number(expr.value.n) : Number(expr.text);
  return Number.isInteger(n) ? n : undefined;
}

/** What an iptables-mode rule matches: its destination address, protocol and port. */
function destinationOf(stmts: readonly Stmt[]): { address?: string; protocol?: string; port?: number } {
  const out: { address?: string; protocol?: string; port?: number } = {};
  for (const stmt of stmts) {
    if (stmt.kind !== 'match' || (stmt.expr.op !== 'implicit' && stmt.expr.op !== '==')) continue;
    const { left, right } = stmt.expr;
    if (left.kind === 'payload' && left.field === 'daddr' && (left.protocol === 'ip' || left.protocol === 'ip6')) {
      const text = literalText(right);
      if (text !== undefined) out.address = text;
    } else if (left.kind === 'payload' && left.field === 'dport' && PROTOCOLS.has(left.protocol)) {
      out.protocol = left.protocol;
      const port = portOf(right);
      if (port !== undefined) out.port = port;
    } else if (left.kind === 'meta' && left.key === 'l4proto') {
      const text = literalText(right);
      if (text !== undefined && PROTOCOLS.has(text)) out.protocol = text;
    }
  }
  return out;
}

/** iptables mode: the ServicePortName is in the rules' comments; nat KUBE-SERVICES holds the
 * service IPs, nat KUBE-NODEPORTS the NodePorts, filter KUBE-SERVICES and
 * KUBE-EXTERNAL-SERVICES the rejects of Services without endpoints; `-m recent --rcheck` in a
 * service chain is session affinity. */
function readIptablesMode(tables: readonly Table[], family: IpFamily, affinityChains: Map<string, Set<string>>, serviceRules: ServiceRule[]): void {
  for (const table of tables) {
    for (const chain of table.chains) {
      const isServiceChain = chain.name === 'KUBE-SERVICES' || chain.name === 'KUBE-EXTERNAL-SERVICES' || (chain.name === 'KUBE-NODEPORTS' && table.name === 'nat');
      for (const rule of chain.rules) {
        if (rule.stmts.some((s) => s.kind === 'xt-extension' && s.name === 'recent' && s.options.some((o) => o.name === 'rcheck'))) {
          addChain(affinityChains, table, chain.name);
        }
        if (!isServiceChain || rule.comment === undefined) continue;
        const comment = chain.name === 'KUBE-NODEPORTS' ? /^(\S+)$/.exec(rule.comment) : IPTABLES_COMMENT.exec(rule.comment);
        if (!comment || !SERVICE_PORT_NAME.test(comment[1]!)) continue;
        const { address, protocol, port } = destinationOf(rule.stmts);
        if (protocol === undefined || port === undefined) continue;
        const access: ServiceAccess =
          address === undefined ? 'nodePort' : (COMMENT_ACCESS[comment[2] ?? ''] ?? (chain.name === 'KUBE-SERVICES' ? 'clusterIP' : 'externalIP'));
        serviceRules.push({ servicePortName: comment[1]!, protocol: protocol as ServiceProtocol, family, access, address: address ?? '', port, at: locOf(rule) });
      }
    }
  }
}

/** nftables mode: the service-ips and service-nodeports verdict maps send each destination to a
 * chain named after its ServicePortName; no-endpoint-services and no-endpoint-nodeports name it
 * in the element's comment; `ip saddr @affinity-…` in a service chain is session affinity. */
function readNftablesMode(table: Table, family: IpFamily, affinityChains: Map<string, Set<string>>, serviceRules: ServiceRule[]): void {
  const clusterIPs = new Set((table.sets.find((s) => s.name === 'cluster-ips')?.elements ?? []).flatMap((e) => literalText(e.key) ?? []));
  for (const set of table.sets) {
    const nodePorts = set.name === 'service-nodeports' || set.name === 'no-endpoint-nodeports';
    if (!nodePorts && set.name !== 'service-ips' && set.name !== 'no-endpoint-services') continue;
    for (const element of set.elements ?? []) {
      const parts = element.key.kind === 'concat' ? element.key.parts : [element.key];
      const [address, protocol, port] = nodePorts ? ['', literalText(parts[0]!), parts[1] && portOf(parts[1])] : [literalText(parts[0]!), parts[1] && literalText(parts[1]), parts[2] && portOf(parts[2])];
      if (address === undefined || protocol === undefined || !PROTOCOLS.has(protocol) || typeof port !== 'number') continue;
      const target = element.data?.kind === 'verdict' ? element.data.target : undefined;
      const fromChain = target === undefined ? undefined : NFT_SERVICE_CHAIN.exec(target);
      const name = fromChain ? `${fromChain[1]}/${fromChain[2]}${fromChain[4] ? `:${fromChain[4]}` : ''}` : element.comment;
      if (name === undefined || !SERVICE_PORT_NAME.test(name)) continue;
      const access: ServiceAccess = nodePorts ? 'nodePort' : clusterIPs.has(address) || target?.startsWith('service-') ? 'clusterIP' : 'externalIP';
      serviceRules.push({ servicePortName: name, protocol: protocol as ServiceProtocol, family, access, address, port, at: locOf(element) });
    }
  }
  for (const chain of table.chains) {
    if (chain.rules.some((r) => r.stmts.some((s) => s.kind === 'match' && s.expr.right.kind === 'set-ref' && s.expr.right.name.startsWith('affinity-')))) {
      addChain(affinityChains, table, chain.name);
    }
  }
}

function addChain(chains: Map<string, Set<string>>, table: Table, chain: string): void {
  const tables = chains.get(chain) ?? new Set<string>();
  tables.add(`${table.family} ${table.name}`);
  chains.set(chain, tables);
}
