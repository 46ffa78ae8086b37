// `nftsim kube-drift` (issue 7): does each node's ruleset serve the endpoints its Services should
// have? For every proxied Service port, the packets a client would send (a pod and the node to
// the ClusterIP, an outside client to each NodePort, LoadBalancer IP and external IP) run
// through the node's rules with kube-proxy's random endpoint choice expanded to every branch;
// the endpoints they are DNATed to, with their shares, are compared with what the
// EndpointSlices say (expectedEndpoints). Rules of Services that no longer exist, and lint
// findings that explain why kube-proxy could not sync, are reported beside.

import type { Ruleset, Span } from '../model/ast.js';
import { isError, type Diagnostic } from '../model/diagnostic.js';
import { parseRuleset } from '../parser/parse-ruleset.js';
import type { Finding, Severity } from '../rules/framework/lint-rule.js';
import { lintRuleset, type LintOptions } from '../rules/framework/lint-ruleset.js';
import { familyBits, formatAddress, parseCidr, prefixMask } from '../sim/address.js';
import type { Host } from '../sim/host.js';
import type { Disposition, Loc, NatEvent, Outcome, TraceEvent } from '../sim/outcome.js';
import { NAT_HOOK_PRIORITY } from '../sim/pipeline.js';
import { readPacket, type PacketInput } from '../sim/packet.js';
import { simulateResolved } from '../sim/simulate-packet.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { Cluster, ExpectedEndpoint, IpFamily, Service, ServiceAccess, ServiceClient, ServicePortSpec, ServiceProtocol } from './cluster.js';
import { indexCluster, type ClusterIndex } from './cluster-index.js';
import { detectKubeProxy, type KubeProxyFamily, type KubeProxyMode, type KubeProxyRules, type ServiceRule } from './detect-kube-proxy.js';
import { expectedEndpoints, isProxied, serviceAddresses } from './expected-endpoints.js';
import { probeHostOf, type FamilyClients, type ProbeHost } from './probe-host.js';
import { servicePortName } from './service-port-name.js';

export interface KubeDriftOptions {
  /** How far an endpoint's share may be from the expected one (default 0.001: iptables stores a
   * probability as round(p·2^31), nft's numgen is exact). */
  readonly tolerance?: number;
  /** The linter's options (iptables version, rule settings) for the findings that explain drift. */
  readonly lint?: LintOptions;
}

/** One node: its name and what was captured on it. */
export interface NodeSnapshot {
  readonly name: string;
  readonly snapshot: Snapshot;
}

export interface KubeDriftResult {
  readonly nodes: readonly NodeDrift[];
  /** Problems with the snapshots (parse errors, a bad host description); a node whose rules do
   * not parse is `unchecked`. */
  readonly diagnostics: readonly Diagnostic[];
}

/** `undecided`: no drift found, but some Service ports could not be decided (summary.undecided). */
export type NodeStatus = 'in-sync' | 'drift' | 'undecided' | 'unchecked';

export interface DriftSummary {
  /** Service ports checked (each address family counts once). */
  readonly services: number;
  /** Distinct endpoints the checked Service ports should have, summed. */
  readonly endpointsExpected: number;
  readonly missing: number;
  /** Endpoints the rules still DNAT to that no EndpointSlice has (orphans' included). */
  readonly stale: number;
  readonly wrongShare: number;
  /** Service ports kube-proxy has no rule for. */
  readonly noRules: number;
  /** Service ports with rules whose Service (or address) no longer exists. */
  readonly orphans: number;
  /** Service ports that differ in any way (these are the `services` listed). */
  readonly drifting: number;
  /** Service ports with no difference found but a probe nftsim could not decide: no DNAT, and a
   * rule it does not model on the way (their notes say which); listed in `undecided`. */
  readonly undecided: number;
}

/** A lint finding that can keep kube-proxy from syncing: an error in a table it writes (for
 * iptables mode, iptables-nft-incompatible among them). */
export interface ExplainingFinding {
  readonly rule: string;
  readonly messageId: string;
  readonly severity: Severity;
  readonly message: string;
  readonly family: IpFamily;
  readonly location: { readonly file: string; readonly line: number; readonly column: number };
}

/** Where a finding is, as a service's `explainedBy` lists it. */
export interface FindingRef {
  readonly rule: string;
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

export interface NodeDrift {
  readonly node: string;
  readonly verdict: string;
  readonly status: NodeStatus;
  readonly mode: KubeProxyMode;
  readonly families: readonly { readonly family: IpFamily; readonly mode: 'iptables' | 'nftables' }[];
  /** Where the host the probes ran on came from. */
  readonly host?: ProbeHost['source'];
  readonly summary: DriftSummary;
  /** The Service ports that drift; in-sync ones are only counted. */
  readonly services: readonly ServiceDrift[];
  /** The Service ports nftsim could not decide (no drift found in them; their notes say why). */
  readonly undecided: readonly ServiceDrift[];
  readonly explainedBy: readonly ExplainingFinding[];
  readonly notes: readonly string[];
}

export interface WrongShare {
  readonly endpoint: string;
  readonly share: number;
  readonly expected: number;
  readonly access: ServiceAccess;
  readonly client: ServiceClient;
}

export interface ServiceDrift {
  readonly namespace: string;
  readonly name: string;
  /** The Service port (for an orphan: the port its rules match). */
  readonly port: number;
  readonly protocol: ServiceProtocol;
  /** The port's name (empty for the unnamed port of a single-port Service). */
  readonly portName: string;
  readonly family: IpFamily;
  readonly missing: readonly string[];
  readonly stale: readonly string[];
  readonly wrongShare: readonly WrongShare[];
  readonly explainedBy: readonly FindingRef[];
  readonly endpointsExpected: number;
  /** kube-proxy has no rule for this Service port. */
  readonly noRules?: true;
  /** Rules for a Service port (or an address of it) that no longer exists. */
  readonly orphan?: true;
  /** No difference found, but a probe could not be decided (its note says why). */
  readonly undecided?: true;
  /** sessionAffinity in the spec and in the rules, when they differ. */
  readonly affinity?: { readonly spec: Service['sessionAffinity']; readonly rules: Service['sessionAffinity'] };
  /** Differences beside the endpoints (a missing reject, session affinity), and what could not
   * be told. */
  readonly notes: readonly string[];
  /** The Service in the cluster file; for an orphan, its first rule. */
  readonly at?: Loc;
  /** The probes that showed a difference. */
  readonly probes: readonly ProbeResult[];
}

export interface ObservedEndpoint {
  readonly endpoint: string;
  readonly share: number;
  /** The DNAT rule. */
  readonly at: Loc;
}

export interface ProbeResult {
  readonly access: ServiceAccess;
  readonly client: ServiceClient;
  readonly packet: { readonly iif?: string; readonly src: string; readonly dst: string; readonly protocol: ServiceProtocol; readonly dport: number };
  /** Why these endpoints, in Kubernetes' words (absent for an orphan). */
  readonly basis?: string;
  readonly expected: readonly ExpectedEndpoint[];
  /** With no endpoint expected: what kube-proxy should do instead. */
  readonly expectedNone?: 'reject' | 'drop';
  readonly observed: readonly ObservedEndpoint[];
  /** The share of packets no rule DNATed, and what became of them. */
  readonly unmapped?: { readonly share: number; readonly disposition: Disposition; readonly decidedBy?: Loc; readonly reason?: string };
  readonly missing: readonly string[];
  /** Observed endpoints this probe should not reach (stale, or of another traffic policy). */
  readonly unexpected: readonly string[];
  readonly wrongShare: readonly { readonly endpoint: string; readonly share: number; readonly expected: number }[];
  /** What the simulator could not model on the way. */
  readonly uncertain?: readonly string[];
}

const DEFAULT_TOLERANCE = 1e-3;
const FAMILY_NAMES: Readonly<Record<IpFamily, string>> = { ipv4: 'IPv4', ipv6: 'IPv6' };
const FAMILY_OF_NFT: Readonly<Record<string, IpFamily>> = { ip: 'ipv4', ip6: 'ipv6' };
// A client's source port: any unprivileged port; kube-proxy's rules do not look at it.
const CLIENT_PORT = 40000;
const MAX_NOTES = 8;
// The order serviceAddresses lists a Service port's ways in, for an orphan's probes.
const ACCESS_ORDER: readonly ServiceAccess[] = ['clusterIP', 'externalIP', 'loadBalancer', 'nodePort'];

/** Checks every node against the cluster. Never throws on bad input: a node whose rules do not
 * parse is `unchecked`, with the parser's diagnostics. */
export function kubeDrift(cluster: Cluster, nodes: readonly NodeSnapshot[], options: KubeDriftOptions = {}): KubeDriftResult {
  const index = indexCluster(cluster);
  const diagnostics: Diagnostic[] = [];
  const results = nodes.map((node) => checkNode(cluster, index, node, options, diagnostics));
  return { nodes: results, diagnostics };
}

const NO_SUMMARY: DriftSummary = { services: 0, endpointsExpected: 0, missing: 0, stale: 0, wrongShare: 0, noRules: 0, orphans: 0, drifting: 0, undecided: 0 };

function unchecked(node: string, why: string, mode: KubeProxyMode): NodeDrift {
  return { node, verdict: `${node}: not checked — ${why}`, status: 'unchecked', mode, families: [], summary: NO_SUMMARY, services: [], undecided: [], explainedBy: [], notes: [] };
}

function checkNode(cluster: Cluster, index: ClusterIndex, { name, snapshot }: NodeSnapshot, options: KubeDriftOptions, diagnostics: Diagnostic[]): NodeDrift {
  const parsed = parseRuleset(snapshot.sources);
  diagnostics.push(...parsed.diagnostics);
  if (parsed.diagnostics.some(isError)) return unchecked(name, 'its rules do not parse (see the errors above)', 'none');
  const ruleset = parsed.ruleset;
  const rules = detectKubeProxy(ruleset);
  if (rules.mode === 'none') return unchecked(name, rules.absence!, 'none');
  const families = rules.families.map((f) => f.family);
  const probeHost = probeHostOf(snapshot.host, index.node(name), name, families);
  for (const message of probeHost.errors) diagnostics.push({ severity: 'error', code: 'input', message: `${snapshot.label}: ${message}` });
  if (probeHost.errors.length > 0) return unchecked(name, 'its host description does not read (see the errors above)', rules.mode);

  const notes = [...probeHost.notes];
  const check = new NodeCheck(ruleset, probeHost.host, rules, options.tolerance ?? DEFAULT_TOLERANCE);
  const checked: ServiceCheck[] = [];
  const expectedKeys = new Set<string>();
  const skipped = new Map<IpFamily, number>();
  for (const service of cluster.services) {
    if (!isProxied(service)) continue;
    for (const port of service.ports) {
      for (const family of ['ipv4', 'ipv6'] as const) {
        const addresses = serviceAddresses(service, port, family);
        if (addresses.length === 0) continue;
        const spn = servicePortName(service, port);
        for (const a of addresses) expectedKeys.add(ruleKey(spn, port.protocol, family, a.address, a.port));
        const clients = probeHost.clients[family];
        if (!clients) {
          skipped.set(family, (skipped.get(family) ?? 0) + 1);
          continue;
        }
        checked.push(check.servicePort(index, name, service, port, family, addresses, clients));
      }
    }
  }
  for (const [family, count] of skipped) notes.push(`${FAMILY_NAMES[family]}: no kube-proxy rules on this node; ${count} ${FAMILY_NAMES[family]} service port${count === 1 ? '' : 's'} not checked`);
  const orphans = check.orphans(rules.serviceRules.filter((r) => !expectedKeys.has(ruleKey(r.servicePortName, r.protocol, r.family, r.address, r.port))), probeHost);
  notes.push(...check.uncertainNotes());

  const summary = summarize(checked, orphans);
  // The linter runs only for a node that drifts: its findings say why (a tenth of the time of a
  // large node).
  const explaining = summary.drifting > 0 ? explainingFindings(lintRuleset(ruleset, options.lint ?? {}).findings, rules.families) : new Map<IpFamily, ExplainingFinding[]>();
  const entry = (s: ServiceCheck): ServiceDrift => ({ ...s.drift, explainedBy: (explaining.get(s.drift.family) ?? []).map(refOf) });
  const services = [...checked, ...orphans].filter((s) => s.drifting).map(entry);
  const undecided = checked.filter((s) => s.undecided).map(entry);
  const explainedBy = [...new Set(services.map((s) => s.family))].flatMap((f) => explaining.get(f) ?? []);
  return {
    node: name,
    verdict: verdictOf(name, summary, checked, orphans, explainedBy),
    status: summary.drifting > 0 ? 'drift' : summary.undecided > 0 ? 'undecided' : 'in-sync',
    mode: rules.mode,
    families: rules.families.map((f) => ({ family: f.family, mode: f.mode })),
    host: probeHost.source,
    summary,
    services,
    undecided,
    explainedBy,
    notes,
  };
}

function ruleKey(spn: string, protocol: ServiceProtocol, family: IpFamily, address: string, port: number): string {
  return `${spn}|${protocol}|${family}|${address}|${port}`;
}

/** A checked Service port: its drift entry (explainedBy filled in later), whether it drifts. */
interface ServiceCheck {
  readonly drift: Omit<ServiceDrift, 'explainedBy'>;
  readonly drifting: boolean;
  /** How many distinct endpoints are missing, stale, wrongly shared (for the verdict). */
  readonly counts: { readonly missing: number; readonly stale: number; readonly wrongShare: number };
  /** A probe that showed a difference met, before its DNAT rule, a rule nftsim does not model. */
  readonly uncertain: boolean;
  /** No difference, but a probe could not tell (see `undecided` in DriftSummary). */
  readonly undecided: boolean;
}

/** One probe's packet and what is expected of it. */
interface Probe {
  readonly access: ServiceAccess;
  readonly client: ServiceClient;
  readonly input: PacketInput;
  readonly protocol: ServiceProtocol;
  readonly dport: number;
  readonly expected: readonly ExpectedEndpoint[];
  readonly basis?: string;
  readonly expectedNone?: 'reject' | 'drop';
}

/** What the rules did with a probe's packet, every random branch counted. */
interface Observation {
  /** The packet's source (the node's own address for a node client, chosen by routing). */
  readonly src: string;
  readonly endpoints: Map<string, ObservedEndpoint>;
  readonly unmapped?: ProbeResult['unmapped'];
  readonly affinity: boolean;
  /** What the simulator could not model before the DNAT rule (or, without one, on the way), and
   * where. */
  readonly uncertain: readonly { readonly reason: string; readonly at: readonly string[] }[];
  /** No DNAT, and something not modelled ran where kube-proxy's DNAT would have been. */
  readonly hidesDnat: boolean;
  /** Something not modelled ran before a DNAT rule: it may have changed the choice. */
  readonly choiceUnsure: boolean;
}

/** The simulation side of one node: its parsed rules, host and kube-proxy's rules. */
class NodeCheck {
  private readonly ruleNames: ReadonlySet<string>;
  /** What the simulator could not model, by reason: the probes that met it and where. */
  private readonly uncertain = new Map<string, { probes: number; at: Set<string> }>();

  constructor(
    private readonly ruleset: Ruleset,
    private readonly host: Host,
    private readonly rules: KubeProxyRules,
    private readonly tolerance: number,
  ) {
    this.ruleNames = new Set(rules.serviceRules.map((r) => `${r.servicePortName}|${r.protocol}|${r.family}`));
  }

  servicePort(index: ClusterIndex, node: string, service: Service, port: ServicePortSpec, family: IpFamily, addresses: ReturnType<typeof serviceAddresses>, clients: FamilyClients): ServiceCheck {
    const probes: Probe[] = [];
    for (const a of addresses) {
      const targets = a.access === 'nodePort' ? clients.nodeAddresses : [a.address];
      const kinds: readonly ServiceClient[] = a.access === 'clusterIP' ? ['pod', 'node'] : ['external'];
      for (const client of kinds) {
        const expectation = expectedEndpoints(index, service, port, { node, access: a.access, client, family });
        // LoadBalancerSourceRanges filter who may reach a LoadBalancer IP: a client inside the
        // first allowed range measures the endpoints rather than the firewall.
        const src = client === 'external' && a.access === 'loadBalancer' ? sourceInRanges(service.loadBalancerSourceRanges, family) : undefined;
        for (const dst of targets) {
          probes.push({
            access: a.access,
            client,
            input: packetOf(client, clients, dst, a.port, port.protocol, src),
            protocol: port.protocol,
            dport: a.port,
            expected: expectation.endpoints,
            basis: expectation.basis,
            ...(expectation.endpoints.length === 0 && expectation.none && { expectedNone: expectation.none }),
          });
        }
      }
    }
    const spn = servicePortName(service, port);
    const hasRules = this.ruleNames.has(`${spn}|${port.protocol}|${family}`);
    return this.compare(probes, {
      namespace: service.namespace,
      name: service.name,
      port: port.port,
      protocol: port.protocol,
      portName: port.name,
      family,
      at: service.at,
      affinity: service.sessionAffinity,
      hasRules,
    });
  }

  /** Rules of Service ports the cluster does not have: each destination probed, every endpoint
   * it still reaches stale. */
  orphans(stray: readonly ServiceRule[], probeHost: ProbeHost): ServiceCheck[] {
    const groups = new Map<string, ServiceRule[]>();
    for (const r of stray) {
      const key = `${r.servicePortName}|${r.protocol}|${r.family}`;
      const list = groups.get(key);
      if (list) list.push(r);
      else groups.set(key, [r]);
    }
    const out: ServiceCheck[] = [];
    for (const list of groups.values()) {
      const first = list[0]!;
      const clients = probeHost.clients[first.family];
      if (!clients) continue;
      const probes: Probe[] = [];
      const seen = new Set<string>();
      for (const r of list) {
        const client: ServiceClient = r.access === 'clusterIP' ? 'pod' : 'external';
        for (const dst of r.access === 'nodePort' ? clients.nodeAddresses : [r.address]) {
          const key = `${dst}|${r.port}`;
          if (seen.has(key)) continue;
          seen.add(key);
          probes.push({ access: r.access, client, input: packetOf(client, clients, dst, r.port, r.protocol, undefined), protocol: r.protocol, dport: r.port, expected: [] });
        }
      }
      probes.sort((a, b) => ACCESS_ORDER.indexOf(a.access) - ACCESS_ORDER.indexOf(b.access));
      const [nsName, portName = ''] = splitServicePortName(first.servicePortName);
      const [namespace, name] = nsName.split('/') as [string, string];
      const servicePort = list.find((r) => r.access !== 'nodePort') ?? first;
      out.push(this.compare(probes, { namespace, name, port: servicePort.port, protocol: first.protocol, portName, family: first.family, at: first.at, orphan: true, hasRules: true }));
    }
    return out;
  }

  uncertainNotes(): string[] {
    return [...this.uncertain]
      .sort((a, b) => b[1].probes - a[1].probes)
      .slice(0, MAX_NOTES)
      .map(([reason, { probes, at }]) => {
        const places = [...at];
        const where = `${places.slice(0, 3).join(', ')}${places.length > 3 ? ` and ${places.length - 3} more` : ''}`;
        return `${probes} probe${probes === 1 ? '' : 's'} met what nftsim does not model: ${reason} (${where})`;
      });
  }

  private observe(probe: Probe): Observation | string {
    const read = readPacket(probe.input, this.host);
    if (!read.packet) return read.errors.map((e) => e.message).join('; ');
    const maxOutcomes = Math.max(4096, 4 * probe.expected.length);
    const outcomes = simulateResolved(this.ruleset, this.host, read.packet, { maxOutcomes });
    const endpoints = new Map<string, ObservedEndpoint>();
    const unmapped = new Map<Disposition, { share: number; decidedBy?: Loc; reason?: string }>();
    let affinity = false;
    let hidesDnat = false;
    let choiceUnsure = false;
    const uncertain = new Map<string, Set<string>>();
    for (const o of outcomes) {
      // A DNAT a rule set up for this packet (only a source gets mapped without a rule).
      const dnat = o.nat.find((n): n is NatEvent & { at: Loc } => n.type === 'dnat' && n.conntrack === undefined && n.at !== undefined);
      if (dnat) {
        const seen = endpoints.get(dnat.to);
        endpoints.set(dnat.to, { endpoint: dnat.to, share: (seen?.share ?? 0) + o.probability, at: seen?.at ?? dnat.at });
        affinity ||= this.passesAffinity(o);
      } else {
        const seen = unmapped.get(o.disposition);
        unmapped.set(o.disposition, { share: (seen?.share ?? 0) + o.probability, ...(o.decidedBy && { decidedBy: seen?.decidedBy ?? o.decidedBy }), ...(o.reason !== undefined && { reason: o.reason }) });
      }
      if (!o.uncertain) continue;
      // What nftsim could not model after the DNAT rule cannot have changed its choice; without
      // a DNAT, what it could not model up to the NAT hook may have hidden one (the rest may
      // have hidden a reject or a drop).
      const decided = dnat ? o.trace.findIndex((e) => e.kind === 'rule' && isSameLoc(e.at, dnat.at)) : -1;
      for (const e of decided < 0 ? o.trace : o.trace.slice(0, decided)) {
        if (e.kind !== 'unsupported' || e.reason === undefined) continue;
        if (dnat) choiceUnsure = true;
        else if (isBeforeDnat(e)) hidesDnat = true;
        const at = uncertain.get(e.reason) ?? new Set<string>();
        at.add(`${e.at.file}:${e.at.line}`);
        uncertain.set(e.reason, at);
      }
    }
    // The simulator stops listing branches at maxOutcomes: the shares then do not add up.
    if (outcomes.length >= maxOutcomes) uncertain.set(`more than ${maxOutcomes} random branches: the shares listed are incomplete`, new Set([`${probe.input.dst}:${probe.dport}`]));
    for (const [reason, at] of uncertain) {
      const seen = this.uncertain.get(reason) ?? { probes: 0, at: new Set<string>() };
      seen.probes++;
      for (const place of at) seen.at.add(place);
      this.uncertain.set(reason, seen);
    }
    const worst = [...unmapped].sort((a, b) => b[1].share - a[1].share)[0];
    return { src: formatAddress(read.packet.src), endpoints, ...(worst && { unmapped: { disposition: worst[0], ...worst[1] } }), affinity, uncertain: [...uncertain].map(([reason, at]) => ({ reason, at: [...at] })), hidesDnat, choiceUnsure };
  }

  /** The packet met a service chain that holds session affinity (the rules' ClientIP). */
  private passesAffinity(o: Outcome): boolean {
    const chains = this.rules.affinityChains;
    if (chains.size === 0) return false;
    return o.trace.some((e) => chains.get(e.chain)?.has(`${e.family} ${e.table}`) === true);
  }

  /** The endpoints both sides have whose shares differ, each side's shares taken relative to
   * what the two have in common: a missing or stale endpoint changes every other share, which is
   * not a wrong share of its own. `expected` is the share the endpoint should have beside the
   * others observed. */
  private wrongShares(expected: ReadonlyMap<string, number>, observed: ReadonlyMap<string, ObservedEndpoint>): ProbeResult['wrongShare'] {
    const common = [...observed.values()].filter((o) => expected.has(o.endpoint));
    const expectedSum = common.reduce((n, o) => n + expected.get(o.endpoint)!, 0);
    const observedSum = common.reduce((n, o) => n + o.share, 0);
    if (expectedSum === 0) return [];
    return common.flatMap((o) => {
      const share = (expected.get(o.endpoint)! / expectedSum) * observedSum;
      return Math.abs(share - o.share) > this.tolerance ? [{ endpoint: o.endpoint, share: o.share, expected: share }] : [];
    });
  }

  private compare(
    probes: readonly Probe[],
    service: { namespace: string; name: string; port: number; protocol: ServiceProtocol; portName: string; family: IpFamily; at: Loc; affinity?: Service['sessionAffinity']; orphan?: true; hasRules: boolean },
  ): ServiceCheck {
    const known = new Set(probes.flatMap((p) => p.expected.map((e) => e.endpoint)));
    const missing = new Set<string>();
    const stale = new Set<string>();
    const wrongShare: WrongShare[] = [];
    const notes: string[] = [];
    const shown: ProbeResult[] = [];
    let dnatSeen = false;
    let endedSeen = false;
    let undecided = false;
    // A probe without DNAT met something not modelled after the NAT hook (a reject, say).
    let unsureFate = false;
    let unsureChoice = false;
    let affinitySeen = false;
    // Differences beside the endpoints: a missing reject, session affinity.
    let otherDrift = false;
    for (const probe of probes) {
      const seen = this.observe(probe);
      if (typeof seen === 'string') {
        notes.push(`${probe.client} → ${probe.access} ${probe.input.dst}:${probe.dport}: not probed: ${seen}`);
        continue;
      }
      const probeName = `${probe.client} → ${probe.access} ${probe.input.dst}:${probe.dport}`;
      if (seen.hidesDnat) {
        // No DNAT, and a rule before where kube-proxy's would be is not modelled (an xt match an
        // nft listing prints as a blank): whether the node serves the Service is unknown.
        undecided = true;
        notes.push(`${probeName}: undecided (not modelled on its way: ${placesOf(seen.uncertain)})`);
        continue;
      }
      const expected = new Map(probe.expected.map((e) => [e.endpoint, e.share]));
      const result = {
        missing: probe.expected.filter((e) => e.share > 0 && !seen.endpoints.has(e.endpoint)).map((e) => e.endpoint),
        unexpected: [...seen.endpoints.keys()].filter((e) => !expected.has(e)),
        wrongShare: this.wrongShares(expected, seen.endpoints),
      };
      dnatSeen ||= seen.endpoints.size > 0;
      endedSeen ||= seen.unmapped?.disposition === 'dropped' || seen.unmapped?.disposition === 'rejected';
      unsureFate ||= seen.endpoints.size === 0 && seen.uncertain.length > 0;
      affinitySeen ||= seen.affinity;
      for (const e of result.missing) missing.add(e);
      for (const e of result.unexpected) {
        // An endpoint of the Service that this access should not reach (traffic policy Local)
        // has a wrong share; one the slices do not have at all is stale.
        if (known.has(e)) wrongShare.push({ endpoint: e, share: seen.endpoints.get(e)!.share, expected: 0, access: probe.access, client: probe.client });
        else stale.add(e);
      }
      for (const w of result.wrongShare) wrongShare.push({ ...w, access: probe.access, client: probe.client });
      // No endpoint, and kube-proxy's reject or drop missing: the packet goes on untouched. When
      // nftsim could not model a rule on the way, that rule may have been the reject.
      const fateLost = probe.expectedNone !== undefined && seen.endpoints.size === 0 && seen.unmapped !== undefined && seen.unmapped.disposition !== 'dropped' && seen.unmapped.disposition !== 'rejected';
      if (fateLost && seen.uncertain.length > 0) {
        // A rule nftsim does not model may have been the reject.
        undecided = true;
        notes.push(`${probeName}: undecided whether kube-proxy ${probe.expectedNone === 'reject' ? 'rejects' : 'drops'} it (not modelled on its way: ${placesOf(seen.uncertain)})`);
      } else if (fateLost) {
        otherDrift = true;
        notes.push(`${probeName}: no endpoints, kube-proxy should ${probe.expectedNone} it, but it is ${seen.unmapped!.disposition}`);
      }
      const differs = result.missing.length > 0 || result.unexpected.length > 0 || result.wrongShare.length > 0;
      unsureChoice ||= differs && seen.choiceUnsure;
      if (differs || fateLost) {
        shown.push({
          access: probe.access,
          client: probe.client,
          packet: { ...(probe.input.iif !== undefined && { iif: probe.input.iif }), src: seen.src, dst: probe.input.dst, protocol: probe.protocol, dport: probe.dport },
          ...(probe.basis !== undefined && { basis: probe.basis }),
          expected: probe.expected,
          ...(probe.expectedNone && { expectedNone: probe.expectedNone }),
          observed: [...seen.endpoints.values()].sort((a, b) => (a.endpoint < b.endpoint ? -1 : 1)),
          ...(seen.unmapped && { unmapped: seen.unmapped }),
          ...result,
          ...(seen.uncertain.length > 0 && { uncertain: seen.uncertain.map((u) => `${u.reason} (${u.at.join(', ')})`) }),
        });
      }
    }
    const rulesAffinity: Service['sessionAffinity'] = affinitySeen ? 'ClientIP' : 'None';
    const affinityDiffers = service.affinity !== undefined && dnatSeen && rulesAffinity !== service.affinity;
    otherDrift ||= affinityDiffers;
    if (affinityDiffers) notes.push(`sessionAffinity is ${service.affinity} but the rules have ${rulesAffinity === 'None' ? 'none' : 'ClientIP affinity'}`);
    // No rule names the Service port (an nft listing of iptables-nft's tables loses the comments
    // that name it) and every packet went on untouched, certainly.
    const noRules = !service.hasRules && !dnatSeen && !endedSeen && !undecided && !unsureFate;
    const drifting = service.orphan === true || noRules || missing.size > 0 || stale.size > 0 || wrongShare.length > 0 || otherDrift;
    const drift: Omit<ServiceDrift, 'explainedBy'> = {
      namespace: service.namespace,
      name: service.name,
      port: service.port,
      protocol: service.protocol,
      portName: service.portName,
      family: service.family,
      missing: [...missing].sort(),
      stale: [...stale].sort(),
      wrongShare,
      endpointsExpected: known.size,
      ...(noRules && { noRules: true as const }),
      ...(service.orphan && { orphan: true as const }),
      ...(undecided && !drifting && { undecided: true as const }),
      ...(affinityDiffers && { affinity: { spec: service.affinity!, rules: rulesAffinity } }),
      notes,
      at: service.at,
      probes: shown,
    };
    return {
      drift,
      drifting,
      counts: { missing: missing.size, stale: stale.size, wrongShare: new Set(wrongShare.map((w) => w.endpoint)).size },
      uncertain: unsureChoice,
      undecided: drift.undecided === true,
    };
  }
}

/** The event ran at or before the NAT hook where kube-proxy's DNAT runs (NF_IP_PRI_NAT_DST at
 * prerouting and output: pipeline.ts NAT_HOOK_PRIORITY). */
function isBeforeDnat(e: TraceEvent): boolean {
  if (e.hook === 'ingress') return true;
  const nat = e.hook === 'prerouting' || e.hook === 'output' ? NAT_HOOK_PRIORITY[e.hook] : undefined;
  return nat !== undefined && e.priority <= nat;
}

function isSameLoc(a: Loc, b: Loc): boolean {
  return a.line === b.line && a.column === b.column && a.file === b.file;
}

/** `FILE:LINE and N more`. */
function placesOf(uncertain: Observation['uncertain']): string {
  const places = uncertain.flatMap((u) => u.at);
  return `${places[0]}${places.length > 1 ? ` and ${places.length - 1} more` : ''}`;
}

/** `ns/svc:port` → [`ns/svc`, `port`]. */
function splitServicePortName(spn: string): [string, string?] {
  const colon = spn.indexOf(':');
  return colon < 0 ? [spn] : [spn.slice(0, colon), spn.slice(colon + 1)];
}

function packetOf(client: ServiceClient, clients: FamilyClients, dst: string, dport: number, protocol: ServiceProtocol, externalSrc: string | undefined): PacketInput {
  const common = { dst, protocol, sport: CLIENT_PORT, dport };
  switch (client) {
    case 'pod':
      return { ...common, iif: clients.podIif, src: clients.podSrc };
    case 'node':
      return common;
    case 'external':
      return { ...common, iif: clients.externalIif, src: externalSrc ?? clients.externalSrc };
    default: {
      const exhaustive: never = client;
      return exhaustive;
    }
  }
}

/** A client address inside the first allowed range of the family (the address after the
 * range's network address, or the address itself for a host range), or undefined without ranges
 * of the family. */
function sourceInRanges(ranges: readonly string[], family: IpFamily): string | undefined {
  const af = family === 'ipv4' ? 'ip' : 'ip6';
  for (const range of ranges) {
    const cidr = parseCidr(range);
    if (cidr?.family !== af) continue;
    const bits = familyBits(af);
    const network = cidr.n & prefixMask(bits, cidr.prefix);
    return formatAddress({ family: af, n: cidr.prefix >= bits - 1 ? cidr.n : network + 1n });
  }
  return undefined;
}

/** The error findings in the tables kube-proxy writes, by family: a table iptables-nft cannot
 * read (or a broken chain of kube-proxy's own table) makes its syncs fail, and the node keeps
 * the rules of the last sync that worked. */
function explainingFindings(findings: readonly Finding[], families: readonly KubeProxyFamily[]): Map<IpFamily, ExplainingFinding[]> {
  const out = new Map<IpFamily, ExplainingFinding[]>();
  const errors = findings.filter((f) => f.severity === 'error');
  if (errors.length === 0) return out;
  const where = new SpanIndex(families.flatMap((f) => f.tables.flatMap((t) => [t, ...t.chains, ...t.chains.flatMap((c) => c.rules)].map((n) => ({ span: n.span, family: FAMILY_OF_NFT[t.family]! })))));
  for (const f of errors) {
    const family = where.familyAt(f.location.file, f.location.charOffset);
    if (family === undefined) continue;
    const list = out.get(family) ?? [];
    list.push({ rule: f.rule, messageId: f.messageId, severity: f.severity, message: f.message, family, location: { file: f.location.file, line: f.location.line, column: f.location.column } });
    out.set(family, list);
  }
  return out;
}

function refOf(f: ExplainingFinding): FindingRef {
  return { rule: f.rule, ...f.location };
}

/** Which family's kube-proxy table holds an offset of a file: tables, chains and rules nest, so
 * the innermost span holding it is among those starting at or before it. */
class SpanIndex {
  private readonly byFile = new Map<string, { start: number; end: number; family: IpFamily }[]>();

  constructor(nodes: readonly { span: Span; family: IpFamily }[]) {
    for (const { span, family } of nodes) {
      const list = this.byFile.get(span.file) ?? [];
      list.push({ start: span.start, end: span.end, family });
      this.byFile.set(span.file, list);
    }
    for (const list of this.byFile.values()) list.sort((a, b) => a.start - b.start);
  }

  familyAt(file: string, offset: number): IpFamily | undefined {
    const list = this.byFile.get(file);
    if (!list) return undefined;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid]!.start <= offset) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo - 1; i >= 0; i--) if (list[i]!.end > offset) return list[i]!.family;
    return undefined;
  }
}

function summarize(checked: readonly ServiceCheck[], orphans: readonly ServiceCheck[]): DriftSummary {
  const sum = (list: readonly ServiceCheck[], f: (s: ServiceCheck) => number): number => list.reduce((n, s) => n + f(s), 0);
  const all = [...checked, ...orphans];
  return {
    services: checked.length,
    endpointsExpected: sum(checked, (s) => s.drift.endpointsExpected),
    missing: sum(all, (s) => s.counts.missing),
    stale: sum(all, (s) => s.counts.stale),
    wrongShare: sum(all, (s) => s.counts.wrongShare),
    noRules: checked.filter((s) => s.drift.noRules).length,
    orphans: orphans.length,
    drifting: all.filter((s) => s.drifting).length,
    undecided: all.filter((s) => s.undecided).length,
  };
}

function plural(n: number, word: string, words = `${word}s`): string {
  return `${n} ${n === 1 ? word : words}`;
}

/** `node-3: 35 of 87 endpoints missing across 12 services; …; kube-proxy has probably not
 * synced — see iptables-nft-incompatible finding at FILE:LINE`. */
function verdictOf(node: string, summary: DriftSummary, checked: readonly ServiceCheck[], orphans: readonly ServiceCheck[], explainedBy: readonly ExplainingFinding[]): string {
  const undecided = `${summary.undecided} of ${plural(summary.services, 'service')} undecided: nftsim does not model a rule on their way (see notes)`;
  if (summary.drifting === 0) {
    return summary.undecided > 0 ? `${node}: no drift found, but ${undecided}` : `${node}: in sync (${plural(summary.endpointsExpected, 'endpoint')} across ${plural(summary.services, 'service')})`;
  }
  const all = [...checked, ...orphans];
  const across = (f: (s: ServiceCheck) => boolean): string => plural(all.filter(f).length, 'service');
  const parts: string[] = [];
  if (summary.missing > 0) parts.push(`${summary.missing} of ${plural(summary.endpointsExpected, 'endpoint')} missing across ${across((s) => s.counts.missing > 0)}`);
  if (summary.stale > 0) parts.push(`${plural(summary.stale, 'stale endpoint')} across ${across((s) => s.counts.stale > 0)}`);
  if (summary.wrongShare > 0) parts.push(`${plural(summary.wrongShare, 'endpoint')} with a wrong share across ${across((s) => s.counts.wrongShare > 0)}`);
  if (summary.noRules > 0) parts.push(`${plural(summary.noRules, 'service')} without rules`);
  if (summary.orphans > 0) parts.push(`rules for ${plural(summary.orphans, 'service')} that no longer exist${summary.orphans === 1 ? 's' : ''}`);
  const other = all.filter((s) => s.drifting && s.counts.missing + s.counts.stale + s.counts.wrongShare === 0 && !s.drift.noRules && !s.drift.orphan).length;
  if (other > 0) parts.push(`${plural(other, 'other service')} differing (see notes)`);
  const unsure = all.filter((s) => s.drifting && s.uncertain).length;
  if (unsure > 0) parts.push(`${unsure} of these services met rules nftsim does not model (see notes)`);
  if (summary.undecided > 0) parts.push(undecided);
  const first = explainedBy[0];
  const why = first ? `; kube-proxy has probably not synced — see ${first.rule} finding at ${first.location.file}:${first.location.line}${explainedBy.length > 1 ? ` (and ${explainedBy.length - 1} more)` : ''}` : '';
  return `${node}: ${parts.join('; ')}${why}`;
}
