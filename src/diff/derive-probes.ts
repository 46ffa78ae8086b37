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

import type { Chain, Expr, Rule, Ruleset, Stmt, Table, XtExtensionStmt } from '../model/ast.js';
import { IPSET_TYPES, type IpSet } from '../model/ipset.js';
import { familyBits, formatAddress, parseAddress, parseCidr, prefixMask, type Address, type AddressFamily } from '../sim/address.js';
import { lookupRoute, primaryAddress, type Host } from '../sim/host.js';
import type { PacketInput } from '../sim/packet.js';
import { chainKey } from './rule-keys.js';
import { pushToList } from './push-to-list.js';

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
  /** Chains (`family table chain`) that differ between the sides. Given with two rulesets, every
   * other chain is taken to be the same on both (its rules' text and its table's sets, as
   * changedParts compares them), and the second side's copy of it is not read again. */
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
  readonly iif: readonly string[];
  readonly saddr: readonly AddrInterval[];
  readonly marks: readonly number[];
  readonly dest: Dest;
  /** Destinations of concatenated set keys (`ip daddr . meta l4proto . th dport @service-ips`),
   * with the chain an element jumps to, if any. */
  readonly tuples: readonly { readonly dest: Dest; readonly target?: string }[];
  readonly jumps: readonly string[];
  /** The destinations of the rule itself: `dest` when it has one, then the tuples'. */
  readonly ownDests: readonly Dest[];
}

/** Facts and a destination while a rule is read; a list is made when its first value comes (most
 * rules have few of them). */
interface FactsDraft {
  iif?: string[];
  saddr?: AddrInterval[];
  marks?: number[];
  tuples?: { dest: Dest; target?: string }[];
  jumps?: string[];
  addrs?: AddrInterval[];
  local: boolean;
  protos?: number[];
  ports?: [number, number][];
}

/** A destination of probes: address, protocol, port; `outside` when a value lies just outside
 * what a rule matches. */
interface Target {
  readonly dst: Address;
  /** Equal for destinations equal in address, protocol and port: with a candidate's head id, its
   * identity (numbers, not a string, since most candidates are only looked up and dropped). */
  readonly keyId: number;
  readonly protocol: number;
  readonly dport?: number;
  readonly outside: boolean;
}

/** A table's facts and contexts, by the position of its chains. */
interface TableFacts {
  /** Chain names in order. */
  readonly names: readonly string[];
  /** Chain positions by name. */
  readonly at: ReadonlyMap<string, number>;
  readonly facts: readonly (readonly Facts[])[];
  readonly contexts: readonly (readonly Dest[])[];
}

/** Where a rule that derives probes is. */
interface RuleSource {
  readonly table: Table;
  readonly chain: Chain;
  readonly rule: Rule;
}

/** A derived probe, made once it is kept: its fields and what it came from, for its why. */
interface Candidate {
  readonly iif: string | undefined;
  readonly src: string | undefined;
  readonly t: Target;
  readonly mark: number | undefined;
  readonly from: RuleSource | undefined;
}

/** Where a probe comes from: its input interface (none when sent locally), its source and mark;
 * `headId` is equal for equal heads. */
interface Head {
  readonly iif: string | undefined;
  /** Printed once the head's probe is kept: most heads are a source address of one rule. */
  readonly src: Address | undefined;
  readonly mark: number | undefined;
  readonly headId: number;
}

/** The candidates of one reason in first-derived order, and where each is. A large node derives
 * hundreds of thousands, most sampled out: each is a few numbers in columns (its head's id, its
 * destination's id, the index of the rule it came from or -1, the index of its why, pinned),
 * made into a Candidate only once kept. */
class Bucket {
  size = 0;
  heads = new Int32Array(1024);
  targets = new Int32Array(1024);
  sources = new Int32Array(1024);
  whys = new Int32Array(1024);
  pinned = new Uint8Array(1024);
  private readonly at = new PairIndex();

  /** Adds a candidate unless one equal to it is there; a pinned one replaces an unpinned one. */
  add(headId: number, keyId: number, source: number, why: number, pinned: boolean): void {
    let i = this.at.get(headId, keyId);
    if (i < 0) {
      if (this.size === this.heads.length) this.grow();
      i = this.size++;
      this.at.set(headId, keyId, i);
    } else if (!pinned || this.pinned[i] === 1) return;
    this.heads[i] = headId;
    this.targets[i] = keyId;
    this.sources[i] = source;
    this.whys[i] = why;
    this.pinned[i] = pinned ? 1 : 0;
  }

  private grow(): void {
    const grown = <T extends Int32Array | Uint8Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(a.length * 2);
      b.set(a);
      return b;
    };
    this.heads = grown(this.heads);
    this.targets = grown(this.targets);
    this.sources = grown(this.sources);
    this.whys = grown(this.whys);
    this.pinned = grown(this.pinned);
  }
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
  // candidate is only its fields, found by its head's and its destination's ids in first-derived
  // order, and made only when new; its packet and why are made once it is kept.
  const candidates = new Map<ProbeReason, Bucket>();
  const bucketOf = (reason: ProbeReason): Bucket => {
    let bucket = candidates.get(reason);
    if (!bucket) candidates.set(reason, (bucket = new Bucket()));
    return bucket;
  };
  // Heads by input interface and source address (or none), and by mark for the marked ones: one
  // id per distinct head, found without making a string per candidate.
  const heads: Head[] = [];
  const headsByIif = new Map<string | undefined, Map<bigint | undefined, Head>>();
  const markHeads = new Map<number, Head>();
  const newHead = (iif: string | undefined, src: Address | undefined, mark: number | undefined): Head => {
    const head = { iif, src, mark, headId: heads.length };
    heads.push(head);
    return head;
  };
  const headOf = (iif: string | undefined, src: Address | undefined): Head => {
    let bySource = headsByIif.get(iif);
    if (!bySource) headsByIif.set(iif, (bySource = new Map()));
    const key = src && addressKey(src);
    let head = bySource.get(key);
    if (!head) bySource.set(key, (head = newHead(iif, src, undefined)));
    return head;
  };
  const markHeadOf = (mark: number): Head => {
    let head = markHeads.get(mark);
    if (!head) markHeads.set(mark, (head = newHead(undefined, undefined, mark)));
    return head;
  };
  // Whys by index: a candidate keeps the index.
  const whys: ((c: Candidate) => string)[] = [];
  const whyIndex = (why: (c: Candidate) => string): number => whys.push(why) - 1;
  // A destination by its id (any with that id: they differ at most in `outside`, which is in the
  // reason, not in the probe).
  const targetsById: Target[] = [];
  // Destination ids by address, then protocol and port.
  const targetIds = new Map<bigint, Map<number, number>>();

  // The rules that derive probes, as columns (one entry per rule of a large node): what each
  // matches, the destinations it gets probes for, the rule and its chain (an index into `chains`).
  const ruleFacts: Facts[] = [];
  const ruleDests: (readonly Dest[])[] = [];
  const ruleOf: Rule[] = [];
  const ruleChain: number[] = [];
  const chains: { readonly table: Table; readonly chain: Chain; readonly pinned: boolean }[] = [];
  const tested = new Set<number>();
  let written = 0;
  // Given two sides and the chains that differ between them, a chain of the second side not among
  // those is the first side's (the same rules, the same sets): its rules' facts are its twin's,
  // and when its contexts are too, its rules derive only probes its twin's derived first (which
  // keep the twin's why), so they are skipped. Only the changed part of the second side is read.
  // The first side's tables by `family name` (null for a name that two tables have).
  const twins = rulesets.length === 2 && options.changedChains ? new Map<string, TableFacts | null>() : undefined;
  // Indexed loops here and below: these run once per chain and rule of both sides, and a for-of
  // loop that is not yet optimised makes an iterator and a result object per step.
  for (let side = 0; side < rulesets.length; side++) {
    const tables = rulesets[side]!.tables;
    const ipsets = new Map((rulesets[side]!.ipsets ?? []).map((s) => [s.name, s]));
    for (let t = 0; t < tables.length; t++) {
      const table = tables[t]!;
      if (table.family === 'arp' || table.family === 'bridge') continue;
      // The changed chains' names in this table: a chain's key is the table's prefix and its name.
      const prefix = chainKey(table.family, table.name, '');
      const changedHere = new Set([...changed].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length)));
      const tableKey = `${table.family} ${table.name}`;
      const first = side === 1 ? twins?.get(tableKey) : undefined;
      const list = table.chains;
      // The first side's table itself, chain for chain in the same order: nothing new here.
      if (first && changedHere.size === 0 && first.names.length === list.length && list.every((c, i) => c.name === first.names[i])) continue;
      const facts: (readonly Facts[])[] = [];
      // Per chain, its twin's position in the first side's table, or -1.
      const twinAt: number[] = [];
      for (let c = 0; c < list.length; c++) {
        const chain = list[c]!;
        const at = first && !changedHere.has(chain.name) ? first.at.get(chain.name) : undefined;
        const twin = at !== undefined && first!.facts[at]!.length === chain.rules.length ? at : -1;
        twinAt.push(twin);
        facts.push(twin >= 0 ? first!.facts[twin]! : chain.rules.map((rule) => factsOf(rule, table, ipsets)));
      }
      const contexts = contextsOf(table, facts);
      if (side === 0 && twins) twins.set(tableKey, twins.has(tableKey) ? null : { names: list.map((c) => c.name), at: new Map(list.map((c, i) => [c.name, i])), facts, contexts });
      for (let c = 0; c < list.length; c++) {
        const chain = list[c]!;
        const chainFacts = facts[c]!;
        const chainContexts = contexts[c]!;
        if (twinAt[c]! >= 0 && isSameList(first!.contexts[twinAt[c]!]!, chainContexts)) continue;
        const at = chains.push({ table, chain, pinned: changedHere.has(chain.name) }) - 1;
        for (let r = 0; r < chain.rules.length; r++) {
          const rule = chain.rules[r]!;
          const f = chainFacts[r]!;
          for (let k = 0; k < f.iif.length; k++) named.add(f.iif[k]!);
          for (let k = 0; k < f.marks.length; k++) tested.add(f.marks[k]!);
          written |= writtenMarkBits(rule);
          const dests = f.ownDests.length > 0 ? f.ownDests : chainContexts;
          // A rule with neither a source nor a destination derives nothing (below).
          if (f.saddr.length === 0 && dests.length === 0) continue;
          ruleFacts.push(f);
          ruleDests.push(dests);
          ruleOf.push(rule);
          ruleChain.push(at);
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
  const ownAddresses = new Map<AddressFamily, Set<bigint>>();
  for (const a of host.interfaces.flatMap((i) => i.addresses)) (ownAddresses.get(a.family) ?? ownAddresses.set(a.family, new Set()).get(a.family)!).add(a.n);
  const sources = new Map<string, Address>();
  const sourceOf = (iif: string): Address => {
    let src = sources.get(iif);
    if (src === undefined) sources.set(iif, (src = sourceRepresentative(host, iif)));
    return src;
  };
  // A probe from `iif`'s representative source (or sent locally).
  const originOf = (iif: string | undefined): Head => headOf(iif, iif === undefined ? undefined : sourceOf(iif));
  const everyOrigin = [...ingress, undefined].map(originOf);
  // `[iif]`, one list per interface for the sources routed through it.
  const onlyIifs = new Map<string, readonly string[]>();
  const onlyIif = (iif: string): readonly string[] => onlyIifs.get(iif) ?? onlyIifs.set(iif, [iif]).get(iif)!;
  const target = (dst: Address, protocol: number, dport: number | undefined, outside: boolean): Target => {
    const addr = addressKey(dst);
    let byPort = targetIds.get(addr);
    if (!byPort) targetIds.set(addr, (byPort = new Map()));
    const port = protocol * 65537 + (dport ?? 65536);
    const known = byPort.get(port);
    const keyId = known ?? targetsById.length;
    const t = { dst, keyId, protocol, ...(dport !== undefined && { dport }), outside };
    if (known === undefined) {
      byPort.set(port, keyId);
      targetsById.push(t);
    }
    return t;
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
  const sourceWhy = whyIndex((c) => `source ${c.src!} matched at ${whereOf(c.from!)}`);
  const destWhy = whyIndex((c) => `${describe(c.t)} matched at ${whereOf(c.from!)}${c.iif === undefined ? ', sent locally' : ''}`);

  ruleFacts.forEach((facts, from) => {
    const dests = ruleDests[from]!;
    const { pinned } = chains[ruleChain[from]!]!;
    if (facts.saddr.length > 0) {
      // The first destinations of a family its sources are sent to (the host's own address when
      // the rule has none), made once per family; the interfaces the rule names.
      const anyTarget = dests.some((d) => destsOf(d).length > 0);
      let toIp: readonly Target[] | undefined;
      let toIp6: readonly Target[] | undefined;
      const toOf = (family: AddressFamily): readonly Target[] => {
        if (!anyTarget) return localTarget && localTarget.dst.family === family ? [localTarget] : NONE;
        const to: Target[] = [];
        for (let d = 0; d < dests.length && to.length < MAX_CONTEXTS; d++) for (const t of destsOf(dests[d]!)) if (t.dst.family === family && to.length < MAX_CONTEXTS) to.push(t);
        return to;
      };
      const ruleIifs = facts.iif.length > 0 ? facts.iif.filter((i) => namedPresent.includes(i)) : undefined;
      for (const s of variantsOf(facts.saddr)) {
        // A packet arriving with one of the host's own addresses as source is dropped by the
        // kernel before any hook past prerouting (a martian source, fib_validate_source).
        if (ownAddresses.get(s.family)?.has(s.value)) continue;
        const src: Address = { family: s.family, n: s.value };
        const via = ruleIifs ? undefined : lookupRoute(host, src)?.dev;
        const iifs = ruleIifs ?? (via !== undefined && via !== 'lo' ? onlyIif(via) : NONE);
        if (iifs.length === 0) continue;
        const to = src.family === 'ip' ? (toIp ??= toOf('ip')) : (toIp6 ??= toOf('ip6'));
        if (to.length === 0) continue;
        const bucket = bucketOf('source-class');
        for (let t = 0; t < to.length; t++) for (let i = 0; i < iifs.length; i++) bucket.add(headOf(iifs[i]!, src).headId, to[t]!.keyId, from, sourceWhy, pinned);
      }
      return;
    }
    const origins = facts.iif.length > 0 ? facts.iif.filter((i) => namedPresent.includes(i)).map(originOf) : everyOrigin;
    if (origins.length === 0) return;
    for (const dest of dests) {
      for (const t of destsOf(dest)) {
        const bucket = bucketOf(t.outside ? 'outside-value' : 'rule-match');
        for (const o of origins) bucket.add(o.headId, t.keyId, from, destWhy, pinned);
      }
    }
  });
  for (const iif of [...ingress, undefined]) {
    for (const dst of [local, remote]) {
      if (!dst || (iif === undefined && dst === local)) continue;
      const why = `${iif === undefined ? 'local output' : `ingress ${iif}`} to ${formatAddress(dst)}`;
      bucketOf('interface-class').add(originOf(iif).headId, target(dst, PROTOCOLS.tcp!, UNNAMED_PORT, false).keyId, -1, whyIndex(() => why), false);
    }
  }
  // A mark gets onto a packet by a rule that writes it (or a socket, which a ruleset does not
  // show): a tested value no rule of either side can write is on no packet of this node, and a
  // packet forced to carry it would show changes no flow of the node has (Netbird 0.31's
  // masquerade on 0x1bd11, on a peer with no routes, where nothing sets 0x1bd11).
  if (remote) {
    for (const mark of [...tested].filter((m) => m !== 0 && (written & m) >>> 0 === m).sort((a, b) => a - b)) {
      const why = `mark 0x${mark.toString(16)} tested by a rule, sent locally`;
      bucketOf('mark').add(markHeadOf(mark).headId, target(remote, PROTOCOLS.tcp!, UNNAMED_PORT, false).keyId, -1, whyIndex(() => why), false);
    }
  }

  const probes: Probe[] = [];
  const byReason: Record<string, { derived: number; kept: number; pinned?: number }> = {};
  const seen = new PairIndex();
  for (const [reason, bucket] of candidates) {
    const pinned: number[] = [];
    const rest: number[] = [];
    for (let i = 0; i < bucket.size; i++) if (seen.get(bucket.heads[i]!, bucket.targets[i]!) < 0) (bucket.pinned[i] === 1 ? pinned : rest).push(i);
    const kept = [...pinned, ...sampleEvenly(rest, Math.max(0, cap - pinned.length))];
    for (const i of kept) {
      const head = heads[bucket.heads[i]!]!;
      const source = bucket.sources[i]!;
      const c: Candidate = { iif: head.iif, src: head.src && formatAddress(head.src), t: targetsById[bucket.targets[i]!]!, mark: head.mark, from: source < 0 ? undefined : { ...chains[ruleChain[source]!]!, rule: ruleOf[source]! } };
      seen.set(head.headId, c.t.keyId, 0);
      probes.push({ packet: packetOf(c), reason, why: whys[bucket.whys[i]!]!(c) });
    }
    byReason[reason] = { derived: pinned.length + rest.length, kept: kept.length, ...(pinned.length > 0 && { pinned: pinned.length }) };
  }
  return { probes, report: { count: probes.length, byReason, ingress: [...ingress, 'local'] } };
}

export function probeKey(packet: PacketInput): string {
  return `${packet.iif ?? '-'}|${packet.src ?? '-'}|${packet.mark ?? ''}|${packet.dst}|${packet.protocol ?? 'tcp'}|${packet.dport ?? ''}`;
}

/** An address as one number, distinct across families (an IPv6 address may equal an IPv4 one in
 * value). */
function addressKey(a: Address): bigint {
  return a.family === 'ip' ? a.n : a.n | IP6_KEY;
}

const IP6_KEY = 1n << 128n;

function whereOf(r: RuleSource): string {
  return `${r.table.family} ${r.table.name} ${r.chain.name} (${r.rule.span.file}:${r.rule.span.line})`;
}

function packetOf(c: Candidate): PacketInput {
  return {
    ...(c.iif !== undefined && { iif: c.iif }),
    ...(c.src !== undefined && { src: c.src }),
    dst: formatAddress(c.t.dst),
    protocol: c.t.protocol,
    ...(c.t.dport !== undefined && { sport: EPHEMERAL_SPORT, dport: c.t.dport }),
    ...(c.mark !== undefined && { mark: c.mark }),
  };
}

/** Values (non-negative) by a pair of ids (non-negative): open addressing over typed arrays. A
 * large node derives hundreds of thousands of candidates, most looked up once and dropped; a Map
 * per head, or keyed by one number made of both, costs a Map or a boxed number per candidate. */
class PairIndex {
  private firsts = new Int32Array(1024).fill(-1);
  private seconds = new Int32Array(1024);
  private values = new Int32Array(1024);
  private size = 0;

  /** The value of the pair, or -1. */
  get(first: number, second: number): number {
    const at = this.slotOf(first, second);
    return this.firsts[at] === -1 ? -1 : this.values[at]!;
  }

  set(first: number, second: number, value: number): void {
    let at = this.slotOf(first, second);
    if (this.firsts[at] === -1) {
      if (2 * (this.size + 1) > this.firsts.length) {
        this.grow();
        at = this.slotOf(first, second);
      }
      this.firsts[at] = first;
      this.seconds[at] = second;
      this.size++;
    }
    this.values[at] = value;
  }

  /** The pair's slot, or the free slot where it goes. */
  private slotOf(first: number, second: number): number {
    const mask = this.firsts.length - 1;
    let hash = Math.imul(first, 0x9e3779b1) ^ second;
    hash = Math.imul(hash ^ (hash >>> 16), 0x45d9f3b);
    let at = (hash ^ (hash >>> 16)) & mask;
    while (this.firsts[at] !== -1 && (this.firsts[at] !== first || this.seconds[at] !== second)) at = (at + 1) & mask;
    return at;
  }

  private grow(): void {
    const { firsts, seconds, values } = this;
    this.firsts = new Int32Array(firsts.length * 2).fill(-1);
    this.seconds = new Int32Array(firsts.length * 2);
    this.values = new Int32Array(firsts.length * 2);
    for (let i = 0; i < firsts.length; i++) {
      if (firsts[i] === -1) continue;
      const at = this.slotOf(firsts[i]!, seconds[i]!);
      this.firsts[at] = firsts[i]!;
      this.seconds[at] = seconds[i]!;
      this.values[at] = values[i]!;
    }
  }
}

function sampleEvenly<T>(items: readonly T[], cap: number): T[] {
  if (items.length <= cap) return [...items];
  const step = items.length / cap;
  return Array.from({ length: cap }, (_, i) => items[Math.floor(i * step)]!);
}

function describe(t: Target): string {
  const name = Object.entries(PROTOCOLS).find(([, n]) => n === t.protocol)?.[0] ?? String(t.protocol);
  return `${name} ${formatAddress(t.dst)}${t.dport === undefined ? '' : `:${t.dport}`}`;
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
function sourceRepresentative(host: Host, iif: string): Address {
  const a = primaryAddress(host, iif, 'ip');
  if (a && a.prefix < 31) {
    const net = a.n & prefixMask(32, a.prefix);
    return { family: 'ip', n: net + 2n === a.n ? net + 3n : net + 2n };
  }
  return parseAddress('203.0.113.7')!;
}

/** An interval's first and last value, and one just outside (after its end, else before). Of an
 * IPv4 prefix of 4 addresses or more, its first and last host: its network and broadcast address
 * are no unicast destination (the kernel delivers a packet to the broadcast address of a
 * connected network locally and drops one to its network address, ip_route_input_slow). */
function variantsOf(intervals: readonly AddrInterval[]): { value: bigint; family: AddressFamily; outside: boolean }[] {
  const out: { value: bigint; family: AddressFamily; outside: boolean }[] = [];
  for (const iv of intervals) {
    let lo = iv.lo;
    let hi = iv.hi;
    if (iv.family === 'ip' && hi !== lo) {
      const size = hi - lo + 1n;
      if (size >= 4n && (size & (size - 1n)) === 0n && lo % size === 0n) {
        lo += 1n;
        hi -= 1n;
      }
    }
    out.push({ value: lo, family: iv.family, outside: false });
    if (hi !== lo) out.push({ value: hi, family: iv.family, outside: false });
  }
  // One outside value per interval set: after the highest end, else before the lowest start.
  const first = intervals[0];
  if (first) {
    const max = first.family === 'ip' ? MAX_IP : MAX_IP6;
    let hi = first.hi;
    let lo = first.lo;
    for (const i of intervals) {
      if (i.family !== first.family) continue;
      if (i.hi > hi) hi = i.hi;
      if (i.lo < lo) lo = i.lo;
    }
    const outside = hi < max ? hi + 1n : lo > 0n ? lo - 1n : undefined;
    if (outside !== undefined && !intervals.some((i) => i.family === first.family && i.lo <= outside && outside <= i.hi)) out.push({ value: outside, family: first.family, outside: true });
  }
  return out;
}

const MAX_IP = (1n << 32n) - 1n;
const MAX_IP6 = (1n << 128n) - 1n;

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

// Facts live as long as the derivation, one per rule of both sides: the empty lists, most of them,
// are shared.
const NONE: readonly never[] = [];
const NO_DEST: Dest = { addrs: NONE, local: false, protos: NONE, ports: NONE };
const NO_FACTS: Facts = { iif: NONE, saddr: NONE, marks: NONE, dest: NO_DEST, tuples: NONE, jumps: NONE, ownDests: NONE };

function factsOf(rule: Rule, table: Table, ipsets: ReadonlyMap<string, IpSet>): Facts {
  const draft: FactsDraft = { local: false };
  for (let i = 0; i < rule.stmts.length; i++) readStmt(rule.stmts[i]!, table, ipsets, draft);
  // The protocols alone are no destination: a rule's destination counts only when it has
  // addresses, ports or `local` (hasDest).
  const own: Dest = draft.local || draft.addrs || draft.ports ? { addrs: draft.addrs ?? NONE, local: draft.local, protos: draft.protos ?? NONE, ports: draft.ports ?? NONE } : NO_DEST;
  const { iif, saddr, marks, tuples, jumps } = draft;
  if (own === NO_DEST && !iif && !saddr && !marks && !tuples && !jumps) return NO_FACTS;
  const ownDests = own !== NO_DEST || tuples ? [...(own !== NO_DEST ? [own] : []), ...(tuples ?? NONE).map((t) => t.dest)] : NONE;
  return { iif: iif ?? NONE, saddr: saddr ?? NONE, marks: marks ?? NONE, dest: own, tuples: tuples ?? NONE, jumps: jumps ?? NONE, ownDests };
}

function readStmt(stmt: Stmt, table: Table, ipsets: ReadonlyMap<string, IpSet>, draft: FactsDraft): void {
  switch (stmt.kind) {
    case 'xt-extension':
      if (stmt.type === 'match' && stmt.name === 'set') readIpsetMatch(stmt, ipsets, draft);
      return;
    case 'match': {
      const { left, right } = stmt.expr;
      readMatch(left, right, table, draft);
      return;
    }
    case 'vmap':
      readLookup(stmt.key, stmt.map, table, draft);
      return;
    case 'verdict':
      if ((stmt.verdict === 'jump' || stmt.verdict === 'goto') && stmt.target !== undefined) (draft.jumps ??= []).push(stmt.target);
      return;
    default:
      return;
  }
}

function readMatch(left: Expr, right: Expr, table: Table, draft: FactsDraft): void {
  if (right.kind === 'set-ref' || (right.kind === 'set' && left.kind === 'concat')) {
    if (left.kind === 'concat') return readLookup(left, right, table, draft);
  }
  const values = valuesOf(right, table);
  switch (left.kind) {
    case 'payload': {
      if ((left.protocol === 'ip' || left.protocol === 'ip6') && (left.field === 'saddr' || left.field === 'daddr')) {
        for (const v of values) {
          const intervals = addressInterval(v);
          if (intervals.length > 0) (left.field === 'saddr' ? (draft.saddr ??= []) : (draft.addrs ??= [])).push(...intervals);
        }
      } else if (PORT_PROTOCOLS.has(left.protocol) && left.field === 'dport') {
        for (const v of values) {
          const ranges = portInterval(v);
          if (ranges.length > 0) (draft.ports ??= []).push(...ranges);
        }
        const proto = PROTOCOLS[left.protocol];
        if (proto !== undefined && !draft.protos?.includes(proto)) (draft.protos ??= []).push(proto);
      } else if ((left.protocol === 'ip' && left.field === 'protocol') || (left.protocol === 'ip6' && left.field === 'nexthdr')) {
        for (const v of values) for (const p of protocolNumber(v)) (draft.protos ??= []).push(p);
      }
      return;
    }
    case 'meta':
      if (left.key === 'iifname' || left.key === 'iif') {
        for (const v of values) if (v.kind === 'literal' && !v.text.endsWith('*')) (draft.iif ??= []).push(v.text);
      } else if (left.key === 'l4proto') {
        for (const v of values) for (const p of protocolNumber(v)) if (!draft.protos?.includes(p)) (draft.protos ??= []).push(p);
      } else if (left.key === 'mark') for (const v of values) for (const m of integerOf(v)) (draft.marks ??= []).push(m);
      return;
    case 'binop':
      // `meta mark & 0x20 == 0x20`: the value with the bits.
      if (left.left.kind === 'meta' && left.left.key === 'mark') for (const v of values) for (const m of integerOf(v)) (draft.marks ??= []).push(m);
      return;
    case 'fib':
      if (left.flags.includes('daddr') && left.result === 'type' && values.some((v) => v.kind === 'literal' && v.text === 'local')) draft.local = true;
      return;
    default:
      return;
  }
}

/** A concatenated key looked up in a set or (verdict) map: each element is a destination of its
 * own, and its verdict's chain has that destination as context. */
function readLookup(key: Expr, map: Expr, table: Table, draft: FactsDraft): void {
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
    if (hasDest(dest)) (draft.tuples ??= []).push({ dest, ...(target !== undefined && { target }) });
  }
}

/** iptables' `-m set --match-set NAME FLAGS`: each element of the set is a destination of its own
 * (its destination address and port parts, by the flags), and its source address parts are
 * sources. */
function readIpsetMatch(stmt: XtExtensionStmt, ipsets: ReadonlyMap<string, IpSet>, draft: FactsDraft): void {
  for (const o of stmt.options) {
    if (o.value.type !== 'ipset') continue;
    const set = ipsets.get(o.value.set);
    const dimensions = set && IPSET_TYPES.get(set.type);
    if (!set || !dimensions) continue;
    const directions = o.value.directions;
    for (const element of set.elements) {
      const dest = { addrs: [] as AddrInterval[], local: false, protos: [] as number[], ports: [] as [number, number][] };
      element.parts.forEach((part, i) => {
        const src = directions[i] === 'src';
        if (part.kind === 'address') {
          const interval = addressInterval({ kind: 'prefix', span: stmt.span, expr: { kind: 'literal', span: stmt.span, text: part.address }, length: part.prefix });
          if (src) (draft.saddr ??= []).push(...interval);
          else dest.addrs.push(...interval);
        } else if (part.kind === 'port' && !src && part.protocol !== 1 && part.protocol !== 58) {
          dest.ports.push([part.port, part.port]);
          if (part.protocol >= 0) dest.protos.push(part.protocol);
        }
      });
      if (hasDest(dest)) (draft.tuples ??= []).push({ dest });
    }
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
function contextsOf(table: Table, facts: readonly (readonly Facts[])[]): Dest[][] {
  const chains = table.chains;
  // Per chain name, what jumps to it: a destination (the jumping rule's own, or its verdict map
  // element's), or the position of the jumping rule's chain, whose contexts are then the jump's.
  const parents = new Map<string, (Dest | number)[]>();
  for (let c = 0; c < chains.length; c++) {
    const chainFacts = facts[c]!;
    for (let r = 0; r < chainFacts.length; r++) {
      const f = chainFacts[r]!;
      for (let k = 0; k < f.jumps.length; k++) pushToList(parents, f.jumps[k]!, hasDest(f.dest) ? f.dest : c);
      for (let k = 0; k < f.tuples.length; k++) {
        const t = f.tuples[k]!;
        if (t.target !== undefined) pushToList(parents, t.target, t.dest);
      }
    }
  }
  // Contexts by chain position; null while being resolved, to stop at a loop.
  const memo: (Dest[] | null | undefined)[] = new Array<undefined>(chains.length).fill(undefined);
  const resolve = (c: number): Dest[] => {
    const known = memo[c];
    if (known) return known;
    if (known === null) return [];
    memo[c] = null;
    const out: Dest[] = [];
    const list = parents.get(chains[c]!.name) ?? NONE;
    for (let k = 0; k < list.length && out.length < MAX_CONTEXTS; k++) {
      const p = list[k]!;
      if (typeof p !== 'number') out.push(p);
      else {
        const inherited = resolve(p);
        for (let d = 0; d < inherited.length && out.length < MAX_CONTEXTS; d++) out.push(inherited[d]!);
      }
    }
    memo[c] = out;
    return out;
  };
  for (let c = 0; c < chains.length; c++) resolve(c);
  return memo as Dest[][];
}

function isSameList<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
