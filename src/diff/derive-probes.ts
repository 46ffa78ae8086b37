// The packets `nftsim diff` compares, derived from both rulesets and the host (issue 6, Probes).
//
// Bounded, not a cross product: every rule contributes the destinations it matches (its own
// addresses, ports and protocols, else those of the rules that jump to its chain: a KUBE-SEP
// chain's hairpin source meets its service's ClusterIP and NodePort), each value's boundaries and
// one value outside, one field varied at a time; sources are the rule's own when it matches on
// them, else one representative per ingress class. Ingress classes are the interfaces some rule
// names plus one interface no rule names (they are alike to the rules), and the local output
// path. Each reason is capped (evenly sampled) and the report says how many were derived and how
// many were kept; probes derived from a rule of a chain that differs between the sides are
// never sampled out (they are the ones most likely to change).

import type { Chain, Expr, Rule, Ruleset, Stmt, Table } from '../model/ast.js';
import { familyBits, formatAddress, parseAddress, parseCidr, prefixMask, type Address, type AddressFamily } from '../sim/address.js';
import { lookupRoute, type Host } from '../sim/host.js';
import type { PacketInput } from '../sim/packet.js';

export type ProbeReason = 'rule-match' | 'outside-value' | 'source-class' | 'interface-class' | 'mark' | 'scenario';

export const PROBE_REASONS: Readonly<Record<ProbeReason, string>> = {
  'rule-match': 'a destination (address, protocol, port) a rule matches, from each ingress class',
  'outside-value': 'a boundary of a matched prefix, range or set, and one value just outside it',
  'source-class': 'a source address a rule matches (its boundaries and one outside), from the interface it routes through',
  'interface-class': 'every ingress class to a local address and to a routed one, and the local output path',
  mark: 'a locally generated packet carrying a mark value a rule tests',
  scenario: 'a packet of the user\'s scenario file',
};

export interface Probe {
  readonly packet: PacketInput;
  readonly reason: ProbeReason;
  /** What it came from: `tcp dport 30080 (kube-proxy.ipt:20)`. */
  readonly why: string;
}

export interface ProbeReport {
  readonly count: number;
  /** Per reason: how many distinct probes it derived and how many were kept (the cap); `pinned`:
   * how many of those kept came from changed chains, kept whatever the cap. */
  readonly byReason: Readonly<Record<string, { readonly derived: number; readonly kept: number; readonly pinned?: number }>>;
  /** The ingress classes: interfaces named by rules, the representative of the others, `local`. */
  readonly ingress: readonly string[];
}

export interface DeriveProbesOptions {
  /** At most this many probes per reason (default 5000), sampled evenly; probes of changed
   * chains are kept beyond it. */
  readonly maxPerReason?: number;
  /** Chains (`family table chain`) that differ between the sides. */
  readonly changedChains?: ReadonlySet<string>;
}

/** An address interval a rule matches (a single address, a prefix, a range). */
interface AddrInterval {
  readonly family: AddressFamily;
  readonly lo: bigint;
  readonly hi: bigint;
}

/** A destination a rule matches: addresses (or the host's own: `local`), protocol, ports. */
interface Dest {
  readonly addrs: readonly AddrInterval[];
  readonly local: boolean;
  readonly protos: readonly number[];
  readonly ports: readonly [number, number][];
}

interface Facts {
  readonly iif: string[];
  readonly saddr: AddrInterval[];
  readonly marks: number[];
  readonly dest: Dest;
  /** Destinations of concatenated set keys (`ip daddr . meta l4proto . th dport @service-ips`),
   * with the chain an element jumps to, if any. */
  readonly tuples: { dest: Dest; target?: string }[];
  readonly jumps: string[];
}

/** A destination of probes: address (and its text), protocol, port; `outside` when a value lies
 * just outside what a rule matches. */
interface Target {
  readonly dst: Address;
  readonly dstText: string;
  /** Equal for destinations equal in address, protocol and port: with a candidate's `head`, its
   * identity (a number, not a string, since most candidates are only looked up and dropped). */
  readonly keyId: number;
  readonly protocol: number;
  readonly dport?: number;
  readonly outside: boolean;
}

/** A rule that derives probes: what it matches, the destinations it gets probes for. */
interface RuleSource {
  readonly facts: Facts;
  readonly dests: readonly Dest[];
  readonly table: Table;
  readonly chain: Chain;
  readonly rule: Rule;
  readonly pinned: boolean;
}

/** A derived probe before sampling: its fields, and its why (made from its rule once it is kept). */
interface Candidate {
  readonly iif: string | undefined;
  readonly src: string | undefined;
  readonly t: Target;
  readonly mark: number | undefined;
  /** Input interface, source and mark, as one string shared by the candidates that have them. */
  readonly head: string;
  readonly pinned: boolean;
  readonly from: RuleSource | undefined;
  readonly why: (c: Candidate) => string;
}

export const PROTOCOLS: Readonly<Record<string, number>> = { icmp: 1, tcp: 6, udp: 17, icmpv6: 58, sctp: 132 };
const PORT_PROTOCOLS = new Set(['tcp', 'udp', 'sctp', 'th', 'udplite', 'dccp']);
const EPHEMERAL_SPORT = 40000;
/** A destination port no rule is assumed to name, for probes without a port of their own. */
const UNNAMED_PORT = 40001;
/** Contexts kept per chain (the nearest rules that jump to it with a destination). */
const MAX_CONTEXTS = 4;

/** Every probe for the two sides' rulesets on `host`, and the report of why. */
export function deriveProbes(rulesets: readonly Ruleset[], host: Host, options: DeriveProbesOptions = {}): { probes: Probe[]; report: ProbeReport } {
  const cap = options.maxPerReason ?? 5000;
  const named = new Set<string>();
  const changed = options.changedChains ?? new Set<string>();
  // Most candidates are sampled out (a 10,000-service node derives ~350,000 for 15,000 kept), so a
  // candidate is only its fields, found by its head and destination id in first-derived order; its
  // packet and why are made once it is kept.
  const candidates = new Map<ProbeReason, { order: Candidate[]; at: Map<string, Map<number, number>> }>();
  const add = (reason: ProbeReason, c: Candidate): void => {
    let bucket = candidates.get(reason);
    if (!bucket) candidates.set(reason, (bucket = { order: [], at: new Map() }));
    let byTarget = bucket.at.get(c.head);
    if (!byTarget) bucket.at.set(c.head, (byTarget = new Map()));
    const i = byTarget.get(c.t.keyId);
    if (i === undefined) {
      byTarget.set(c.t.keyId, bucket.order.length);
      bucket.order.push(c);
    } else if (c.pinned && !bucket.order[i]!.pinned) bucket.order[i] = c;
  };
  // The head of a probe from `iif`'s representative source (or sent locally).
  const heads = new Map<string | undefined, string>();
  const headOf = (iif: string | undefined): string => {
    let head = heads.get(iif);
    if (head === undefined) heads.set(iif, (head = packetHead(iif, iif === undefined ? undefined : sourceOf(iif), undefined)));
    return head;
  };
  const tailIds = new Map<string, number>();

  const perRule: RuleSource[] = [];
  const tested = new Set<number>();
  let written = 0;
  for (const ruleset of rulesets) {
    for (const table of ruleset.tables) {
      if (table.family === 'arp' || table.family === 'bridge') continue;
      const facts = new Map<Rule, Facts>();
      for (const chain of table.chains) for (const rule of chain.rules) facts.set(rule, factsOf(rule, table));
      const contexts = contextsOf(table, facts);
      for (const chain of table.chains) {
        const pinned = changed.has(`${table.family} ${table.name} ${chain.name}`);
        for (const rule of chain.rules) {
          const f = facts.get(rule)!;
          for (const name of f.iif) named.add(name);
          for (const m of f.marks) tested.add(m);
          written |= writtenMarkBits(rule);
          const own = hasDest(f.dest) ? [f.dest] : [];
          const dests = [...own, ...f.tuples.map((t) => t.dest), ...(own.length === 0 && f.tuples.length === 0 ? (contexts.get(chain) ?? []) : [])];
          perRule.push({ facts: f, dests, table, chain, rule, pinned });
        }
      }
    }
  }

  const ifaces = host.interfaces.filter((i) => i.name !== 'lo');
  const namedPresent = ifaces.filter((i) => named.has(i.name)).map((i) => i.name);
  const unnamed = ifaces.find((i) => !named.has(i.name))?.name;
  const ingress = [...namedPresent, ...(unnamed === undefined ? [] : [unnamed])];
  const local = localRepresentative(host);
  const remote = remoteRepresentative(host);
  const sources = new Map<string, string>();
  const sourceOf = (iif: string): string => {
    let src = sources.get(iif);
    if (src === undefined) sources.set(iif, (src = sourceRepresentative(host, iif)));
    return src;
  };
  const target = (dst: Address, protocol: number, dport: number | undefined, outside: boolean): Target => {
    const dstText = formatAddress(dst);
    const tail = keyTailOf(dstText, protocol, dport);
    let keyId = tailIds.get(tail);
    if (keyId === undefined) tailIds.set(tail, (keyId = tailIds.size));
    return { dst, dstText, keyId, protocol, ...(dport !== undefined && { dport }), outside };
  };

  // The rules of a chain share its contexts: their destinations are worked out once.
  const destTargets = new Map<Dest, Target[]>();
  const destsOf = (dest: Dest): Target[] => {
    const known = destTargets.get(dest);
    if (known) return known;
    const protos = dest.protos.length > 0 ? dest.protos : [PROTOCOLS.tcp!];
    const addrs = dest.addrs.length > 0 ? variantsOf(dest.addrs) : dest.local && local ? [{ value: local.n, family: local.family, outside: false }] : [];
    if (addrs.length === 0 && local && dest.ports.length > 0) addrs.push({ value: local.n, family: local.family, outside: false });
    const ports = dest.ports.length > 0 ? portVariantsOf(dest.ports) : [{ value: UNNAMED_PORT, outside: false }];
    const out: Target[] = [];
    for (const protocol of protos) {
      const withPorts = protocol !== PROTOCOLS.icmp && protocol !== PROTOCOLS.icmpv6;
      const main = ports[0]!;
      // One field varied at a time: every address with the first port, every port with the first address.
      for (const a of addrs) out.push(target({ family: a.family, n: a.value }, protocol, withPorts ? main.value : undefined, a.outside));
      if (withPorts && addrs[0]) for (const p of ports.slice(1)) out.push(target({ family: addrs[0].family, n: addrs[0].value }, protocol, p.value, p.outside));
    }
    destTargets.set(dest, out);
    return out;
  };
  const localTarget = local && target(local, PROTOCOLS.tcp!, UNNAMED_PORT, false);
  const sourceWhy = (c: Candidate): string => `source ${c.src!} matched at ${whereOf(c.from!)}`;
  const destWhy = (c: Candidate): string => `${describe(c.t)} matched at ${whereOf(c.from!)}${c.iif === undefined ? ', sent locally' : ''}`;

  for (const from of perRule) {
    const { facts, dests, pinned } = from;
    const targets = dests.flatMap(destsOf);
    if (facts.saddr.length > 0) {
      for (const s of variantsOf(facts.saddr)) {
        const src: Address = { family: s.family, n: s.value };
        // A packet arriving with one of the host's own addresses as source is dropped by the
        // kernel before any hook past prerouting (a martian source, fib_validate_source).
        if (host.interfaces.some((i) => i.addresses.some((a) => a.family === src.family && a.n === src.n))) continue;
        const via = lookupRoute(host, src)?.dev;
        const iifs = facts.iif.length > 0 ? facts.iif.filter((i) => namedPresent.includes(i)) : via !== undefined && via !== 'lo' ? [via] : [];
        const to = targets.length > 0 ? targets.filter((t) => t.dst.family === src.family) : localTarget && localTarget.dst.family === src.family ? [localTarget] : [];
        const srcText = formatAddress(src);
        const srcHeads = iifs.map((iif) => packetHead(iif, srcText, undefined));
        for (const t of to.slice(0, MAX_CONTEXTS)) iifs.forEach((iif, i) => add('source-class', { iif, src: srcText, t, mark: undefined, head: srcHeads[i]!, pinned, from, why: sourceWhy }));
      }
      continue;
    }
    if (targets.length === 0) continue;
    const iifs = facts.iif.length > 0 ? facts.iif.filter((i) => namedPresent.includes(i)) : [...ingress, undefined];
    for (const t of targets) {
      for (const iif of iifs) {
        add(t.outside ? 'outside-value' : 'rule-match', { iif, src: iif === undefined ? undefined : sourceOf(iif), t, mark: undefined, head: headOf(iif), pinned, from, why: destWhy });
      }
    }
  }
  for (const iif of [...ingress, undefined]) {
    for (const dst of [local, remote]) {
      if (!dst || (iif === undefined && dst === local)) continue;
      const why = `${iif === undefined ? 'local output' : `ingress ${iif}`} to ${formatAddress(dst)}`;
      add('interface-class', { iif, src: iif === undefined ? undefined : sourceOf(iif), t: target(dst, PROTOCOLS.tcp!, UNNAMED_PORT, false), mark: undefined, head: headOf(iif), pinned: false, from: undefined, why: () => why });
    }
  }
  // A mark gets onto a packet by a rule that writes it (or a socket, which a ruleset does not
  // show): a tested value no rule of either side can write is on no packet of this node, and a
  // packet forced to carry it would show changes no flow of the node has (Netbird 0.31's
  // masquerade on 0x1bd11, on a peer with no routes, where nothing sets 0x1bd11).
  if (remote) {
    for (const mark of [...tested].filter((m) => m !== 0 && (written & m) >>> 0 === m).sort((a, b) => a - b)) {
      const why = `mark 0x${mark.toString(16)} tested by a rule, sent locally`;
      add('mark', { iif: undefined, src: undefined, t: target(remote, PROTOCOLS.tcp!, UNNAMED_PORT, false), mark, head: packetHead(undefined, undefined, mark), pinned: false, from: undefined, why: () => why });
    }
  }

  const probes: Probe[] = [];
  const byReason: Record<string, { derived: number; kept: number; pinned?: number }> = {};
  const seen = new Map<string, Set<number>>();
  for (const [reason, bucket] of candidates) {
    const pinned: Candidate[] = [];
    const rest: Candidate[] = [];
    for (const c of bucket.order) if (!seen.get(c.head)?.has(c.t.keyId)) (c.pinned ? pinned : rest).push(c);
    const kept = [...pinned, ...sampleEvenly(rest, Math.max(0, cap - pinned.length))];
    for (const c of kept) {
      let ids = seen.get(c.head);
      if (!ids) seen.set(c.head, (ids = new Set()));
      ids.add(c.t.keyId);
      probes.push({ packet: packetOf(c), reason, why: c.why(c) });
    }
    byReason[reason] = { derived: pinned.length + rest.length, kept: kept.length, ...(pinned.length > 0 && { pinned: pinned.length }) };
  }
  return { probes, report: { count: probes.length, byReason, ingress: [...ingress, 'local'] } };
}

export function probeKey(packet: PacketInput): string {
  return `${packetHead(packet.iif, packet.src, packet.mark)}${keyTailOf(packet.dst, packet.protocol ?? 'tcp', packet.dport)}`;
}

// A probe's key in two parts, so that a destination's part is made once for all its probes.
function packetHead(iif: string | undefined, src: string | undefined, mark: number | string | undefined): string {
  return `${iif ?? '-'}|${src ?? '-'}|${mark ?? ''}|`;
}

function keyTailOf(dst: string, protocol: number | string, dport: number | undefined): string {
  return `${dst}|${protocol}|${dport ?? ''}`;
}

function whereOf(r: RuleSource): string {
  return `${r.table.family} ${r.table.name} ${r.chain.name} (${r.rule.span.file}:${r.rule.span.line})`;
}

function packetOf(c: Candidate): PacketInput {
  return {
    ...(c.iif !== undefined && { iif: c.iif }),
    ...(c.src !== undefined && { src: c.src }),
    dst: c.t.dstText,
    protocol: c.t.protocol,
    ...(c.t.dport !== undefined && { sport: EPHEMERAL_SPORT, dport: c.t.dport }),
    ...(c.mark !== undefined && { mark: c.mark }),
  };
}

function sampleEvenly<T>(items: readonly T[], cap: number): T[] {
  if (items.length <= cap) return [...items];
  const step = items.length / cap;
  return Array.from({ length: cap }, (_, i) => items[Math.floor(i * step)]!);
}

function describe(t: Target): string {
  const name = Object.entries(PROTOCOLS).find(([, n]) => n === t.protocol)?.[0] ?? String(t.protocol);
  return `${name} ${t.dstText}${t.dport === undefined ? '' : `:${t.dport}`}`;
}

function hasDest(dest: Dest): boolean {
  return dest.addrs.length > 0 || dest.local || dest.ports.length > 0;
}

/** The first address of an interface other than lo: where NodePorts and local services answer. */
function localRepresentative(host: Host): Address | undefined {
  for (const iface of host.interfaces) {
    if (iface.name === 'lo') continue;
    const a = iface.addresses.find((c) => c.family === 'ip') ?? iface.addresses[0];
    if (a) return { family: a.family, n: a.n };
  }
  return undefined;
}

/** A routed (not local) destination: the first non-connected route's first host, else an
 * address of TEST-NET-2 when a default route exists. */
function remoteRepresentative(host: Host): Address | undefined {
  const routed = host.routes.find((r) => r.dev !== 'lo' && !host.interfaces.some((i) => i.addresses.some((a) => a.family === r.dst.family && a.prefix === r.dst.prefix && (a.n & prefixMask(familyBits(a.family), a.prefix)) === r.dst.n)));
  if (!routed) return undefined;
  if (routed.dst.prefix === 0) return parseAddress('198.51.100.9');
  const bits = familyBits(routed.dst.family);
  return { family: routed.dst.family, n: routed.dst.n + (routed.dst.prefix >= bits - 1 ? 0n : 1n) };
}

/** A peer behind `iif`: a host of its connected network other than its own address, else a
 * TEST-NET-3 address (the world behind a default route). */
function sourceRepresentative(host: Host, iif: string): string {
  const a = host.interfaces.find((i) => i.name === iif)?.addresses.find((c) => c.family === 'ip');
  if (a && a.prefix < 31) {
    const net = a.n & prefixMask(32, a.prefix);
    const candidate = net + 2n === a.n ? net + 3n : net + 2n;
    return formatAddress({ family: 'ip', n: candidate });
  }
  return '203.0.113.7';
}

/** An interval's first and last value, and one just outside (after its end, else before). Of an
 * IPv4 prefix of 4 addresses or more, its first and last host: its network and broadcast address
 * are no unicast destination (the kernel delivers a packet to the broadcast address of a
 * connected network locally and drops one to its network address, ip_route_input_slow). */
function variantsOf(intervals: readonly AddrInterval[]): { value: bigint; family: AddressFamily; outside: boolean }[] {
  const out: { value: bigint; family: AddressFamily; outside: boolean }[] = [];
  for (const iv of intervals) {
    const size = iv.hi - iv.lo + 1n;
    const hosts = iv.family === 'ip' && size >= 4n && (size & (size - 1n)) === 0n && iv.lo % size === 0n;
    const [lo, hi] = hosts ? [iv.lo + 1n, iv.hi - 1n] : [iv.lo, iv.hi];
    out.push({ value: lo, family: iv.family, outside: false });
    if (hi !== lo) out.push({ value: hi, family: iv.family, outside: false });
  }
  // One outside value per interval set: after the highest end, else before the lowest start.
  const first = intervals[0];
  if (first) {
    const max = (1n << BigInt(familyBits(first.family))) - 1n;
    const same = intervals.filter((i) => i.family === first.family);
    const hi = same.reduce((m, i) => (i.hi > m ? i.hi : m), first.hi);
    const lo = same.reduce((m, i) => (i.lo < m ? i.lo : m), first.lo);
    const outside = hi < max ? hi + 1n : lo > 0n ? lo - 1n : undefined;
    if (outside !== undefined && !same.some((i) => i.lo <= outside && outside <= i.hi)) out.push({ value: outside, family: first.family, outside: true });
  }
  return out;
}

function portVariantsOf(ranges: readonly [number, number][]): { value: number; outside: boolean }[] {
  const out: { value: number; outside: boolean }[] = [];
  for (const [lo, hi] of ranges) {
    out.push({ value: lo, outside: false });
    if (hi !== lo) out.push({ value: hi, outside: false });
  }
  const hi = Math.max(...ranges.map((r) => r[1]));
  const lo = Math.min(...ranges.map((r) => r[0]));
  const outside = hi < 65535 ? hi + 1 : lo > 1 ? lo - 1 : undefined;
  if (outside !== undefined && !ranges.some(([a, b]) => a <= outside && outside <= b)) out.push({ value: outside, outside: true });
  return out;
}

// ---------------------------------------------------------------------------------------------
// What one rule matches on

/** The mark bits a rule can turn on: those of the constants it sets, ORs or XORs into `meta mark`
 * or `ct mark` (an AND only clears; `mark set ct mark` copies what was written elsewhere). */
function writtenMarkBits(rule: Rule): number {
  let bits = 0;
  for (const stmt of rule.stmts) {
    if ((stmt.kind === 'meta-set' || stmt.kind === 'ct-set') && stmt.key === 'mark') bits |= producedBits(stmt.value);
  }
  return bits >>> 0;
}

function producedBits(expr: Expr): number {
  if (expr.kind === 'literal') return integerOf(expr)[0] ?? 0;
  if (expr.kind !== 'binop') return 0;
  if (expr.op === '|' || expr.op === '^') return producedBits(expr.left) | producedBits(expr.right);
  if (expr.op === '&') return producedBits(expr.left) & (integerOf(expr.right)[0] ?? 0xffffffff);
  return 0;
}

function emptyFacts(): Facts {
  return { iif: [], saddr: [], marks: [], dest: { addrs: [], local: false, protos: [], ports: [] }, tuples: [], jumps: [] };
}

function factsOf(rule: Rule, table: Table): Facts {
  const facts = emptyFacts();
  const dest = { addrs: [] as AddrInterval[], local: false, protos: [] as number[], ports: [] as [number, number][] };
  for (const stmt of rule.stmts) readStmt(stmt, table, facts, dest);
  return { ...facts, dest };
}

function readStmt(stmt: Stmt, table: Table, facts: Facts, dest: { addrs: AddrInterval[]; local: boolean; protos: number[]; ports: [number, number][] }): void {
  switch (stmt.kind) {
    case 'match': {
      const { left, right } = stmt.expr;
      readMatch(left, right, table, facts, dest);
      return;
    }
    case 'vmap':
      readLookup(stmt.key, stmt.map, table, facts);
      return;
    case 'verdict':
      if ((stmt.verdict === 'jump' || stmt.verdict === 'goto') && stmt.target !== undefined) facts.jumps.push(stmt.target);
      return;
    default:
      return;
  }
}

function readMatch(left: Expr, right: Expr, table: Table, facts: Facts, dest: { addrs: AddrInterval[]; local: boolean; protos: number[]; ports: [number, number][] }): void {
  if (right.kind === 'set-ref' || (right.kind === 'set' && left.kind === 'concat')) {
    if (left.kind === 'concat') return readLookup(left, right, table, facts);
  }
  const values = valuesOf(right, table);
  switch (left.kind) {
    case 'payload': {
      if ((left.protocol === 'ip' || left.protocol === 'ip6') && (left.field === 'saddr' || left.field === 'daddr')) {
        const intervals = values.flatMap(addressInterval);
        (left.field === 'saddr' ? facts.saddr : dest.addrs).push(...intervals);
      } else if (PORT_PROTOCOLS.has(left.protocol) && left.field === 'dport') {
        dest.ports.push(...values.flatMap(portInterval));
        const proto = PROTOCOLS[left.protocol];
        if (proto !== undefined && !dest.protos.includes(proto)) dest.protos.push(proto);
      } else if ((left.protocol === 'ip' && left.field === 'protocol') || (left.protocol === 'ip6' && left.field === 'nexthdr')) {
        dest.protos.push(...values.flatMap(protocolNumber));
      }
      return;
    }
    case 'meta':
      if (left.key === 'iifname' || left.key === 'iif') facts.iif.push(...values.flatMap((v) => (v.kind === 'literal' && !v.text.endsWith('*') ? [v.text] : [])));
      else if (left.key === 'l4proto' || left.key === 'protocol') {
        if (left.key === 'l4proto') for (const p of values.flatMap(protocolNumber)) if (!dest.protos.includes(p)) dest.protos.push(p);
      } else if (left.key === 'mark') facts.marks.push(...values.flatMap(integerOf));
      return;
    case 'binop':
      // `meta mark & 0x20 == 0x20`: the value with the bits.
      if (left.left.kind === 'meta' && left.left.key === 'mark') facts.marks.push(...values.flatMap(integerOf));
      return;
    case 'fib':
      if (left.flags.includes('daddr') && left.result === 'type' && values.some((v) => v.kind === 'literal' && v.text === 'local')) dest.local = true;
      return;
    default:
      return;
  }
}

/** A concatenated key looked up in a set or (verdict) map: each element is a destination of its
 * own, and its verdict's chain has that destination as context. */
function readLookup(key: Expr, map: Expr, table: Table, facts: Facts): void {
  if (key.kind !== 'concat') {
    // A single key (`tcp dport vmap { 22 : accept }`): handled as values by the caller's match.
    return;
  }
  const elements = map.kind === 'set' ? map.elements : map.kind === 'set-ref' ? (table.sets.find((s) => s.name === map.name)?.elements ?? []) : [];
  for (const element of elements) {
    if (element.key.kind !== 'concat') continue;
    const dest = { addrs: [] as AddrInterval[], local: false, protos: [] as number[], ports: [] as [number, number][] };
    for (const [i, part] of key.parts.entries()) {
      const value = element.key.parts[i];
      if (!value) continue;
      if (part.kind === 'payload' && (part.field === 'daddr')) dest.addrs.push(...addressInterval(value));
      else if (part.kind === 'payload' && part.field === 'dport') dest.ports.push(...portInterval(value));
      else if (part.kind === 'meta' && part.key === 'l4proto') dest.protos.push(...protocolNumber(value));
    }
    const data = element.data;
    const target = data?.kind === 'verdict' && (data.verdict === 'jump' || data.verdict === 'goto') ? data.target : undefined;
    if (hasDest(dest)) facts.tuples.push({ dest, ...(target !== undefined && { target }) });
  }
}

/** The values a relational's right side lists: itself, a set literal's or a named set's
 * element keys. */
export function valuesOf(right: Expr, table: Table): Expr[] {
  if (right.kind === 'set') return right.elements.map((e) => e.key);
  if (right.kind === 'set-ref') return (table.sets.find((s) => s.name === right.name)?.elements ?? []).map((e) => e.key);
  if (right.kind === 'flag-list') return [...right.items];
  return [right];
}

export function addressInterval(expr: Expr): AddrInterval[] {
  if (expr.kind === 'literal') {
    const a = parseAddress(expr.text);
    return a ? [{ family: a.family, lo: a.n, hi: a.n }] : [];
  }
  if (expr.kind === 'prefix' && expr.expr.kind === 'literal') {
    const c = parseCidr(`${expr.expr.text}/${expr.length}`);
    if (!c) return [];
    const bits = familyBits(c.family);
    const lo = c.n & prefixMask(bits, c.prefix);
    return [{ family: c.family, lo, hi: lo | (((1n << BigInt(bits)) - 1n) ^ prefixMask(bits, c.prefix)) }];
  }
  if (expr.kind === 'range' && expr.low.kind === 'literal' && expr.high.kind === 'literal') {
    const lo = parseAddress(expr.low.text);
    const hi = parseAddress(expr.high.text);
    return lo && hi && lo.family === hi.family ? [{ family: lo.family, lo: lo.n, hi: hi.n }] : [];
  }
  return [];
}

export function portInterval(expr: Expr): [number, number][] {
  const n = (e: Expr): number | undefined => (e.kind === 'literal' && /^\d+$/.test(e.text) ? Number(e.text) : e.kind === 'literal' && e.value?.type === 'integer' ? e.value.n : undefined);
  if (expr.kind === 'range') {
    const lo = n(expr.low);
    const hi = n(expr.high);
    return lo !== undefined && hi !== undefined ? [[lo, hi]] : [];
  }
  const v = n(expr);
  return v !== undefined && v <= 65535 ? [[v, v]] : [];
}

export function protocolNumber(expr: Expr): number[] {
  if (expr.kind !== 'literal') return [];
  const named = PROTOCOLS[expr.text];
  if (named !== undefined) return [named];
  return /^\d+$/.test(expr.text) ? [Number(expr.text)] : [];
}

function integerOf(expr: Expr): number[] {
  if (expr.kind !== 'literal') return [];
  const v = Number(expr.text);
  return Number.isInteger(v) && v >= 0 && v <= 0xffffffff ? [v >>> 0] : [];
}

/** Per chain, the destinations of the rules that jump to it (their own, or, when they match no
 * destination, their chain's contexts in turn), nearest first, at most MAX_CONTEXTS. */
function contextsOf(table: Table, facts: ReadonlyMap<Rule, Facts>): Map<Chain, Dest[]> {
  const parents = new Map<string, { chain: Chain; facts: Facts; via?: Dest }[]>();
  for (const chain of table.chains) {
    for (const rule of chain.rules) {
      const f = facts.get(rule)!;
      for (const target of f.jumps) push(parents, target, { chain, facts: f });
      for (const t of f.tuples) if (t.target !== undefined) push(parents, t.target, { chain, facts: f, via: t.dest });
    }
  }
  const memo = new Map<Chain, Dest[]>();
  const resolve = (chain: Chain, visiting: Set<Chain>): Dest[] => {
    const known = memo.get(chain);
    if (known) return known;
    if (visiting.has(chain)) return [];
    visiting.add(chain);
    const out: Dest[] = [];
    for (const p of parents.get(chain.name) ?? []) {
      if (out.length >= MAX_CONTEXTS) break;
      if (p.via) out.push(p.via);
      else if (hasDest(p.facts.dest)) out.push(p.facts.dest);
      else out.push(...resolve(p.chain, visiting).slice(0, MAX_CONTEXTS - out.length));
    }
    visiting.delete(chain);
    memo.set(chain, out);
    return out;
  };
  for (const chain of table.chains) resolve(chain, new Set());
  return memo;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
