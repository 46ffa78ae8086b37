// iptables' set match, `-m set [!] --match-set NAME src,dst…` (net/netfilter/xt_set.c), against
// the ipsets of the node's `ipset save` (ip_set_core.c ip_set_test and the set types' kadt).
//
// The flags give, dimension by dimension, which of the packet's addresses or ports the element's
// part is compared with. Fewer flags than the set has dimensions, or a set of the other family,
// never match (ip_set_test returns 0 before looking; `!` then matches). An element matches when
// every part does: an address within its prefix (a network, or a host, or hash:ip's netmask), a
// port of the same protocol. Among the elements of a set with networks, the most specific one
// decides (mtype_test_cidrs tries the set's prefix lengths longest first, the first dimension's
// outermost), and a `nomatch` one then says no, unless `--return-nomatch`, which turns both
// answers around (ip_set_test). A list:set matches when one of its members does, tried in order
// with the same flags.
//
// The SET target (`-j SET --add-set NAME FLAGS`, `--del-set`) changes the sets for the packets
// after it in the run, as ip_set_add and ip_set_del make the element from the packet: the same
// parts through the same flags, a network part of the set's most specific prefix length (the
// host's when the set has none: hash_net4_kadt), nothing for a packet the set cannot hold (the
// other family, fewer flags than dimensions, no port, outside a bitmap's range). A list:set adds
// to its first member that takes the element (one that has it already takes it only with
// `--exist`) and deletes from the first that had it. The run's sets live in its state
// (SimState.dynamicSets), a new copy of a set's groups at each change.

import type { IpSet, IpSetDimension, IpSetPart } from '../model/ipset.js';
import { IPSET_TYPES } from '../model/ipset.js';
import type { XtExtensionStmt } from '../model/ast.js';
import { familyBits, parseAddress, parseCidr, prefixMask } from './address.js';
import { L4_NUMBERS } from './packet.js';
import { NotModelled, type SimContext } from './sim-context.js';

/** The sets of a ruleset by name, with their elements grouped for lookups (made when first
 * asked for). */
export class IpsetIndex {
  private readonly byName: ReadonlyMap<string, IpSet>;
  private readonly indexed = new Map<string, IndexedSet>();

  constructor(ipsets: readonly IpSet[] | undefined) {
    this.byName = new Map((ipsets ?? []).map((s) => [s.name, s]));
  }

  set(name: string): IndexedSet | undefined {
    let known = this.indexed.get(name);
    if (!known) {
      const set = this.byName.get(name);
      if (!set) return undefined;
      known = indexSet(set);
      this.indexed.set(name, known);
    }
    return known;
  }
}

/** A set's elements grouped by the prefix lengths of their address parts (a hash:net set's
 * networks of one length are looked up by one key), most specific group first; an element's
 * value is its nomatch flag. */
interface IndexedSet {
  readonly set: IpSet;
  readonly dimensions: readonly IpSetDimension[];
  readonly groups: readonly Group[];
  /** A bitmap's `range`: the addresses or ports it can hold. */
  readonly range: { readonly low: bigint; readonly high: bigint } | undefined;
  /** `bitmask`: what an `ip` part keeps of an address, beside its prefix. */
  readonly ipMask: bigint | undefined;
}

interface Group {
  readonly prefixes: readonly number[];
  readonly elements: ReadonlyMap<string, boolean>;
}

function indexSet(set: IpSet): IndexedSet {
  const dimensions = IPSET_TYPES.get(set.type)!;
  // Read when the parser checked it: an address of the set's family.
  const ipMask = set.bitmask === undefined ? undefined : parseAddress(set.bitmask)!.n;
  const groups = new Map<string, { prefixes: number[]; elements: Map<string, boolean> }>();
  for (const element of set.elements) {
    const prefixes = element.parts.flatMap((p) => (p.kind === 'address' ? [p.prefix] : []));
    const id = prefixes.join('/');
    let group = groups.get(id);
    if (!group) {
      group = { prefixes, elements: new Map() };
      groups.set(id, group);
    }
    // The first of two equal elements is the set's (ipset restore refuses the second).
    const key = keyOf(element.parts.map((p, i) => valueOf(p, dimensions[i] === 'ip' ? ipMask : undefined)));
    if (!group.elements.has(key)) group.elements.set(key, element.nomatch);
  }
  return { set, dimensions, groups: ordered([...groups.values()]), range: rangeOf(set), ipMask };
}

/** Groups most specific first, by the first address part's prefix, then the next's. */
function ordered(groups: Group[]): Group[] {
  return groups.sort((a, b) => {
    for (let i = 0; i < a.prefixes.length; i++) if (a.prefixes[i] !== b.prefixes[i]) return b.prefixes[i]! - a.prefixes[i]!;
    return 0;
  });
}

/** A bitmap's `range FIRST-LAST` (addresses or ports) or `range NETWORK/PREFIX`. */
function rangeOf(set: IpSet): IndexedSet['range'] {
  if (!set.type.startsWith('bitmap:')) return undefined;
  const text = set.options[set.options.indexOf('range') + 1] ?? '';
  const [first, last] = text.split('-');
  const read = (t: string | undefined): bigint | undefined => (t === undefined ? undefined : /^\d+$/.test(t) ? BigInt(t) : parseAddress(t)?.n);
  if (last === undefined) {
    const cidr = parseCidr(text);
    if (!cidr) return undefined;
    const mask = prefixMask(32, cidr.prefix);
    return { low: cidr.n & mask, high: (cidr.n & mask) | (0xffffffffn ^ mask) };
  }
  const low = read(first);
  const high = read(last);
  return low === undefined || high === undefined ? undefined : { low, high };
}

function valueOf(part: IpSetPart, ipMask: bigint | undefined): string {
  switch (part.kind) {
    case 'address':
      // Read when the parser checked it: an address of the part's family.
      return (parseAddress(part.address)!.n & prefixMask(familyBits(part.family), part.prefix) & (ipMask ?? -1n)).toString(16);
    case 'port':
      return part.protocol < 0 ? String(part.port) : `${part.protocol}:${part.port}`;
    case 'name':
      return part.name;
    case 'mark':
      return String(part.value);
  }
}

function keyOf(values: readonly string[]): string {
  return values.join(',');
}

/** The set match's result for the packet, `!` applied. */
export function matchIpset(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  let returnNomatch = false;
  let matchSet: { readonly set: string; readonly directions: readonly ('src' | 'dst')[]; readonly negated: boolean } | undefined;
  for (const o of stmt.options) {
    if ((o.name === 'match-set' || o.name === 'set') && o.value.type === 'ipset') matchSet = { set: o.value.set, directions: o.value.directions, negated: o.negated };
    else if (o.name === 'return-nomatch') returnNomatch = true;
    // Whether the match counts the packet in the element's counters changes nothing it says.
    else if (o.name !== 'update-counters' && o.name !== 'update-subcounters') throw new NotModelled(`iptables match set --${o.name} (the counters of ipset elements)`);
  }
  if (!matchSet) throw new NotModelled('iptables match set without --match-set');
  const indexed = ctx.index.ipsets.set(matchSet.set);
  if (!indexed) throw new NotModelled(`ipset '${matchSet.set}' (no input creates it: give its \`ipset save\` output)`);
  return testSet(indexed, matchSet.directions, returnNomatch, ctx) !== matchSet.negated;
}

/** What ip_set_test, ip_set_add and ip_set_del check before the set's type looks: a flag for
 * each dimension, and the packet's family unless the set serves both. */
function fits(indexed: IndexedSet, directions: readonly ('src' | 'dst')[], ctx: SimContext): boolean {
  const family = indexed.set.family;
  return directions.length >= indexed.dimensions.length && (family === undefined || family === (ctx.family === 'ip' ? 'inet' : 'inet6'));
}

/** A list:set's member sets, in order. */
function membersOf(indexed: IndexedSet, ctx: SimContext): IndexedSet[] {
  return indexed.set.elements.flatMap((element) => {
    const member = ctx.index.ipsets.set((element.parts[0] as Extract<IpSetPart, { kind: 'name' }>).name);
    return member ? [member] : [];
  });
}

/** ip_set_test: whether the set holds the packet, seen through `directions`. */
function testSet(indexed: IndexedSet, directions: readonly ('src' | 'dst')[], returnNomatch: boolean, ctx: SimContext): boolean {
  if (!fits(indexed, directions, ctx)) return false;
  if (indexed.set.type === 'list:set') return membersOf(indexed, ctx).some((member) => testSet(member, directions, returnNomatch, ctx));
  const { dimensions } = indexed;
  const found = lookup(indexed, directions, ctx);
  if (found === undefined) return false;
  // found: the element's nomatch flag. --return-nomatch answers the other way round for the
  // types that have nomatch elements (those with networks).
  const hasNomatch = dimensions.includes('net');
  return returnNomatch && hasNomatch ? found : !found;
}

/** The nomatch flag of the element that decides for the packet; undefined when none matches. */
function lookup(indexed: IndexedSet, directions: readonly ('src' | 'dst')[], ctx: SimContext): boolean | undefined {
  const values = packetValues(indexed, directions, ctx);
  if (!values) return undefined;
  for (const group of liveGroups(indexed, ctx)) {
    const nomatch = group.elements.get(keyAt(indexed, values, group.prefixes, ctx));
    if (nomatch !== undefined) return nomatch;
  }
  return undefined;
}

/** The packet's parts for the set, through `directions`; undefined when the set cannot hold the
 * packet (no port part, an address 0 for hash:ip, outside a bitmap's range). */
function packetValues(indexed: IndexedSet, directions: readonly ('src' | 'dst')[], ctx: SimContext): (bigint | string)[] | undefined {
  const { set, dimensions, range } = indexed;
  const values: (bigint | string)[] = [];
  for (let i = 0; i < dimensions.length; i++) {
    const dimension = dimensions[i]!;
    const src = directions[i] === 'src';
    if (dimension === 'ip' || dimension === 'net') values.push((src ? ctx.pkt.src : ctx.pkt.dst).n);
    else if (dimension === 'port') {
      const port = portOf(ctx, src, set.type === 'bitmap:port');
      if (port === undefined) return undefined;
      values.push(port);
    } else throw new NotModelled(`ipset type ${set.type} (its ${dimension} part)`);
  }
  // hash:ip: an address that is 0 once masked is refused (hash_ip4_kadt, hash_ip6_kadt: -EINVAL).
  if (set.type === 'hash:ip') {
    const bits = familyBits(ctx.family);
    if (((values[0] as bigint) & prefixMask(bits, set.netmask ?? bits) & (indexed.ipMask ?? -1n)) === 0n) return undefined;
  }
  if (range) {
    const v = values[0]!;
    const n = typeof v === 'bigint' ? v : BigInt(v);
    if (n < range.low || n > range.high) return undefined;
  }
  return values;
}

/** The key of the packet's parts with the address parts cut to `prefixes`. */
function keyAt(indexed: IndexedSet, values: readonly (bigint | string)[], prefixes: readonly number[], ctx: SimContext): string {
  let a = 0;
  return keyOf(
    values.map((v, i) => {
      if (typeof v === 'string') return v;
      const mask = prefixMask(familyBits(ctx.family), prefixes[a++]!);
      return (v & mask & (indexed.dimensions[i] === 'ip' ? (indexed.ipMask ?? -1n) : -1n)).toString(16);
    }),
  );
}

/** The set's groups as the run left them. */
function liveGroups(indexed: IndexedSet, ctx: SimContext): readonly Group[] {
  return (ctx.dynamicSets.size === 0 ? undefined : (ctx.dynamicSets.get(indexed.set)?.[0] as readonly Group[] | undefined)) ?? indexed.groups;
}

/** `-j SET --add-set NAME FLAGS [--exist]`, `--del-set NAME FLAGS` (xt_set.c set_target_v3: add,
 * then delete; the rule goes on). */
export function runSetTarget(stmt: XtExtensionStmt, ctx: SimContext): void {
  const exist = stmt.options.some((o) => o.name === 'exist');
  const changes: { readonly add: boolean; readonly set: string; readonly directions: readonly ('src' | 'dst')[] }[] = [];
  for (const o of stmt.options) {
    if ((o.name === 'add-set' || o.name === 'del-set') && o.value.type === 'ipset') changes.push({ add: o.name === 'add-set', set: o.value.set, directions: o.value.directions });
    // A timeout changes nothing the run sees: it has no clock.
    else if (o.name !== 'exist' && o.name !== 'timeout') throw new NotModelled(`iptables target SET --${o.name} (the skbinfo of ipset elements)`);
  }
  // set_target_v1..v3: the add, then the delete, whatever order they were written in.
  for (const change of [...changes.filter((c) => c.add), ...changes.filter((c) => !c.add)]) {
    const indexed = ctx.index.ipsets.set(change.set);
    if (!indexed) throw new NotModelled(`ipset '${change.set}' (no input creates it: give its \`ipset save\` output)`);
    changeSet(indexed, change.add, change.directions, exist, ctx);
  }
}

/** ip_set_add or ip_set_del of the packet's element: whether it succeeded (an add of an element
 * the set has succeeds with `--exist` only; a delete of one it lacks fails). */
function changeSet(indexed: IndexedSet, add: boolean, directions: readonly ('src' | 'dst')[], exist: boolean, ctx: SimContext): boolean {
  if (!fits(indexed, directions, ctx)) return false;
  if (indexed.set.type === 'list:set') return membersOf(indexed, ctx).some((member) => changeSet(member, add, directions, exist, ctx));
  const { set, dimensions } = indexed;
  const values = packetValues(indexed, directions, ctx);
  if (!values) return false;
  const groups = liveGroups(indexed, ctx);
  const host = familyBits(ctx.family);
  // An address part's prefix: hash:ip's netmask, or a network part's most specific in the set.
  let a = 0;
  const prefixes = dimensions.flatMap((d) => {
    if (d !== 'ip' && d !== 'net') return [];
    const i = a++;
    if (d === 'ip') return [set.netmask ?? host];
    // A prefix length whose elements are all gone is no longer the set's (mtype_del_cidr).
    return [groups.reduce((most, g) => (g.elements.size > 0 ? Math.max(most, g.prefixes[i]!) : most), -1)].map((p) => (p < 0 ? host : p));
  });
  const key = keyAt(indexed, values, prefixes, ctx);
  const id = prefixes.join('/');
  const at = groups.findIndex((g) => g.prefixes.join('/') === id);
  const has = at >= 0 && groups[at]!.elements.has(key);
  if (!add && !has) return false;
  // An element the set has is added again only with `--exist`, which sets its flags anew: a
  // nomatch one matches from then on (mtype_add, overwrite_extensions).
  if (add && has && (!exist || groups[at]!.elements.get(key) === false)) return exist;
  // A hash set holds at most `maxelem` elements (65536 by default): mtype_add refuses one more
  // (IPSET_ERR_HASH_FULL, which the SET target ignores), or with `forceadd` evicts one at random.
  if (add && !has && set.type.startsWith('hash:') && groups.reduce((n, g) => n + g.elements.size, 0) >= maxElementsOf(set)) {
    if (set.options.includes('forceadd')) throw new NotModelled(`an add to the full ipset '${set.name}' with forceadd (it evicts an element at random)`);
    return false;
  }
  const elements = new Map(at >= 0 ? groups[at]!.elements : []);
  if (add) elements.set(key, false);
  else elements.delete(key);
  const changed = at >= 0 ? groups.map((g, i) => (i === at ? { prefixes, elements } : g)) : ordered([...groups, { prefixes, elements }]);
  ctx.dynamicSets.set(set, [changed]);
  return true;
}

function maxElementsOf(set: IpSet): number {
  const at = set.options.indexOf('maxelem');
  const n = at < 0 ? NaN : Number(set.options[at + 1]);
  return Number.isInteger(n) ? n : 65536;
}

/** The packet's port part as the set types read it (ip_set_getport.c): `protocol:port`, an ICMP
 * type and code as `type << 8 | code`, port 0 for a protocol without ports; bitmap:port reads
 * the port of TCP and UDP alone (bitmap_port ip_set_get_ip_port). */
function portOf(ctx: SimContext, src: boolean, bare: boolean): string | undefined {
  const p = ctx.pkt;
  const l4proto = p.l4proto;
  let port: number | string | undefined;
  if (l4proto === L4_NUMBERS.tcp || l4proto === L4_NUMBERS.udp || l4proto === L4_NUMBERS.sctp || l4proto === L4_NUMBERS.udplite) port = src ? p.sport : p.dport;
  else if (l4proto === L4_NUMBERS.icmp || l4proto === L4_NUMBERS.icmpv6) port = ((p.icmpType ?? 0) << 8) | (p.icmpCode ?? 0);
  else port = 0;
  if (typeof port === 'string') throw new NotModelled(`an ipset's port part after NAT picked a random port (${port})`);
  if (port === undefined) return undefined;
  if (bare) return l4proto === L4_NUMBERS.tcp || l4proto === L4_NUMBERS.udp ? String(port) : undefined;
  return `${l4proto}:${port}`;
}
