// The host a packet meets: its interfaces with their addresses, its routes and routing rules,
// whether it forwards. Given in nftsim's own shape or as captured on the node with
// `ip -j addr show`, `ip -j route show` and `ip -j rule show` (what a user can collect without
// understanding the simulator).

import { familyBits, formatAddress, parseAddress, parseCidr, prefixMask, type Address, type AddressFamily, type Cidr } from './address.js';
import { memoByObject } from './memo-by-object.js';
import { PrefixTable } from './prefix-table.js';
import { FieldReader, type FieldPath, type InputError } from './read-fields.js';
import { DEFAULT_RULES, isRuleMatching, LOCAL_TABLE, MAIN_TABLE, PLAIN_KEY, readRules, tableId, type HostRule, type RouteKey } from './route-rules.js';

/** nftsim's host shape (the `host` of a packet file). */
export interface HostInput {
  readonly interfaces?: readonly HostInterfaceInput[] | readonly IpAddrEntry[];
  readonly routes?: readonly HostRouteInput[] | readonly IpRouteEntry[];
  /** The routing rules, as `ip -j rule show` prints them (IPv4) and `ip -6 -j rule show` (IPv6);
   * absent: the kernel's default rules of the family (route-rules.ts DEFAULT_RULES). */
  readonly rules?: readonly IpRuleEntry[];
  readonly rules6?: readonly IpRuleEntry[];
  readonly forwarding?: boolean;
}

/** One entry of `ip -j rule show` (route-rules.ts reads it; `not` is printed as null). */
export interface IpRuleEntry {
  readonly priority: number;
  readonly not?: null | boolean;
  readonly src?: string;
  readonly srclen?: number;
  readonly dst?: string;
  readonly dstlen?: number;
  readonly fwmark?: string | number;
  readonly fwmask?: string | number;
  readonly iif?: string;
  readonly oif?: string;
  readonly table?: string | number;
  readonly action?: string;
  readonly suppress_prefixlen?: number;
}

export interface HostInterfaceInput {
  readonly name: string;
  /** `192.0.2.10/24`; the first address of a family is the interface's primary one. */
  readonly addresses?: readonly string[];
}

export interface HostRouteInput {
  /** `default` or a prefix. */
  readonly dst: string;
  readonly via?: string;
  /** The output interface, which a unicast route needs (unless it gives `nexthops`). */
  readonly dev?: string;
  /** A multipath route's nexthops, instead of `via` and `dev`: `weight` 1 when absent. */
  readonly nexthops?: readonly { readonly via?: string; readonly dev: string; readonly weight?: number }[];
  /** The routing table (`main` when absent): a number or a name. */
  readonly table?: string | number;
  /** `unicast` (the default), or `throw`, `unreachable`, `blackhole`, `prohibit`. */
  readonly type?: RouteType;
}

/** What a route found does: unicast sends the packet on; throw ends the lookup in its table (the
 * next rule goes on); the others drop it. */
export type RouteType = 'unicast' | 'throw' | 'unreachable' | 'blackhole' | 'prohibit';
const ROUTE_TYPES: readonly string[] = ['unicast', 'throw', 'unreachable', 'blackhole', 'prohibit'];

/** One entry of `ip -j addr show` (only the fields nftsim reads). */
export interface IpAddrEntry {
  readonly ifname: string;
  readonly addr_info?: readonly { readonly family?: string; readonly local?: string; readonly prefixlen?: number }[];
}

/** One entry of `ip -j route show`. */
export interface IpRouteEntry {
  readonly dst: string;
  readonly gateway?: string;
  readonly dev?: string;
  readonly type?: string;
  readonly table?: string | number;
}

export interface HostInterface {
  readonly name: string;
  readonly addresses: readonly Cidr[];
}

export interface HostRoute {
  readonly dst: Cidr;
  readonly via?: Address;
  /** The output interface; '' for a route of another type than unicast, which sends nowhere. */
  readonly dev: string;
  readonly table: string;
  readonly type: RouteType;
  /** A multipath route's nexthops (two or more); `via` and `dev` are the first one's, which is
   * what a lookup without path selection gives (fib_table_lookup sets the first nexthop: nft's
   * `fib daddr oif`). Routing picks one by a hash of the packet (choose-nexthop.ts). */
  readonly nexthops?: readonly RouteNexthop[];
}

export interface RouteNexthop {
  readonly via?: Address;
  readonly dev: string;
  /** Its share of the hash space against the other nexthops' (fib_rebalance). */
  readonly weight: number;
}

/** Whether the route sends through `dev`, by any of its nexthops (fib_info_nh_uses_dev: nft's
 * `fib saddr . iif oif`, iptables' rpfilter). */
export function routeUsesDevice(route: HostRoute, dev: string | undefined): boolean {
  if (route.dev === dev) return true;
  return route.nexthops !== undefined && route.nexthops.some((nexthop) => nexthop.dev === dev);
}

/** The resolved host: `lo` always present (127.0.0.1/8, ::1/128), connected routes of every
 * interface address added as the kernel adds them (fib_add_ifaddr / addrconf_prefix_route). */
export interface Host {
  readonly interfaces: readonly HostInterface[];
  readonly routes: readonly HostRoute[];
  /** The routing rules of each family given; absent: the kernel's default rules. */
  readonly rules?: Readonly<Partial<Record<AddressFamily, readonly HostRule[]>>>;
  readonly forwarding: boolean;
}

const LOOPBACK: HostInterface = {
  name: 'lo',
  addresses: [parseCidr('127.0.0.1/8')!, parseCidr('::1/128')!],
};

/** An error of readHost: `part` is the index of the part whose field `path` names. */
export interface HostError extends InputError {
  readonly part: number;
}

/** Where an interface or a route of the merged host was given: for the checks across parts. */
interface Given<T> {
  readonly item: T;
  readonly part: number;
  readonly path: FieldPath;
}

/** Reads a host description; errors name the part and the field. `value` may be nftsim's object,
 * or an array from `ip -j addr show` (entries with `ifname`) or `ip -j route show` (entries with
 * `dst`), or several such parts (the CLI's repeated --host) which are merged. */
export function readHost(parts: readonly { readonly value: unknown; readonly path: FieldPath }[]): { host: Host; errors: HostError[] } {
  const read = new HostReader();
  for (const [part, { value, path }] of parts.entries()) read.part(part, value, path);
  return read.finish();
}

/** The parts of one host description as they are read, and their errors, each with its part. */
class HostReader {
  private readonly reader = new FieldReader();
  private readonly errors: HostError[] = [];
  private readonly interfaces: Given<HostInterface>[] = [];
  private readonly routes: (ReadRoute & { readonly part: number })[] = [];
  private readonly rules: Partial<Record<AddressFamily, HostRule[]>> = {};
  private forwarding = true;
  private current = 0;

  part(part: number, value: unknown, path: FieldPath): void {
    this.current = part;
    if (Array.isArray(value)) this.ipJson(value, path);
    else this.object(value, path);
    this.takeErrors(part);
  }

  finish(): { host: Host; errors: HostError[] } {
    const seen = new Set<string>();
    for (const { item, part, path } of this.interfaces) {
      if (seen.has(item.name)) this.fail(part, path, `interface '${item.name}' given twice`);
      seen.add(item.name);
    }
    const own = this.interfaces.map((i) => i.item);
    const all = seen.has('lo') ? own : [LOOPBACK, ...own];
    for (const { route, devPaths, part } of this.routes) {
      if (route.type !== 'unicast') continue;
      for (const [i, { dev }] of (route.nexthops ?? [route]).entries()) {
        if (!all.some((iface) => iface.name === dev)) this.fail(part, devPaths[i]!, `route to ${formatCidr(route.dst)} uses unknown interface '${dev}'`);
      }
    }
    const connected = all.flatMap((iface) =>
      iface.addresses.map((a): HostRoute => ({ dst: { family: a.family, n: a.n & prefixMask(familyBits(a.family), a.prefix), prefix: a.prefix }, dev: iface.name, table: MAIN_TABLE, type: 'unicast' })),
    );
    const rules = this.rules;
    const host: Host = { interfaces: all, routes: [...connected, ...this.routes.map((r) => r.route)], ...((rules.ip || rules.ip6) && { rules }), forwarding: this.forwarding };
    return { host, errors: this.errors };
  }

  private fail(part: number, path: FieldPath, message: string): void {
    this.reader.fail(path, message);
    this.takeErrors(part);
  }

  private takeErrors(part: number): void {
    for (const e of this.reader.errors.splice(0)) this.errors.push({ ...e, part });
  }

  private object(value: unknown, path: FieldPath): void {
    const reader = this.reader;
    const record = reader.object(value, path, ['interfaces', 'routes', 'rules', 'rules6', 'forwarding']);
    if (!record) return;
    if (record.rules !== undefined) this.rules.ip = readRules(reader, record.rules, [...path, 'rules'], 'ip');
    if (record.rules6 !== undefined) this.rules.ip6 = readRules(reader, record.rules6, [...path, 'rules6'], 'ip6');
    if (record.forwarding !== undefined) this.forwarding = reader.boolean(record.forwarding, [...path, 'forwarding']) ?? this.forwarding;
    if (record.interfaces !== undefined) {
      for (const [i, item] of (reader.array(record.interfaces, [...path, 'interfaces']) ?? []).entries()) {
        const at = [...path, 'interfaces', i];
        if (isRecord(item) && 'ifname' in item) this.ipJsonEntry(item, at);
        else {
          const iface = readInterface(reader, item, at);
          if (iface) this.interfaces.push({ item: iface, part: this.current, path: [...at, 'name'] });
        }
      }
    }
    if (record.routes !== undefined) {
      for (const [i, item] of (reader.array(record.routes, [...path, 'routes']) ?? []).entries()) {
        const read = readRoute(reader, item, [...path, 'routes', i]);
        if (read) this.routes.push({ ...read, part: this.current });
      }
    }
  }

  /** `ip -j addr show` / `ip -j route show` output; fields iproute2 adds that nftsim does not
   * need are skipped, since the text is the tool's, not the user's. */
  private ipJson(entries: readonly unknown[], path: FieldPath): void {
    for (const [i, entry] of entries.entries()) this.ipJsonEntry(entry, [...path, i]);
  }

  /** One entry of `ip -j addr show` or `ip -j route show`. */
  private ipJsonEntry(entry: unknown, at: FieldPath): void {
    const reader = this.reader;
    if (!isRecord(entry)) {
      reader.fail(at, 'expected an object of `ip -j addr show` or `ip -j route show`');
      return;
    }
    if (typeof entry.ifname === 'string') {
      const info = Array.isArray(entry.addr_info) ? entry.addr_info : [];
      const addresses: Cidr[] = [];
      for (const [j, a] of info.entries()) {
        const cidr = isRecord(a) && typeof a.local === 'string' ? (parseCidr(`${a.local}/${String(a.prefixlen ?? '')}`) ?? parseCidr(a.local)) : undefined;
        if (cidr) addresses.push(cidr);
        else reader.fail([...at, 'addr_info', j], 'expected `local` and `prefixlen` of an address');
      }
      this.interfaces.push({ item: { name: entry.ifname, addresses }, part: this.current, path: [...at, 'ifname'] });
    } else if (typeof entry.dst === 'string') {
      const read = readIpJsonRoute(reader, entry, at);
      if (read) this.routes.push({ ...read, part: this.current });
    } else if (typeof entry.priority === 'number') {
      reader.fail(at, '`ip -j rule show` output goes in the host\'s `rules` (`ip -6 -j rule show`: `rules6`): its entries do not say their family');
    } else reader.fail(at, 'expected `ifname` (ip -j addr show) or `dst` (ip -j route show)');
  }
}

/** The routes of an `ip -j route show` output as entries of nftsim's host `routes`, for a
 * snapshot that merges the parts of a host into one (read-snapshot.ts). Entries readHost refuses
 * (it reports them where they are) and the kernel's own routes are left out. */
export function ipJsonRoutesAsInput(entries: readonly unknown[]): unknown[] {
  const reader = new FieldReader();
  return entries.flatMap((entry, i): unknown[] => {
    const route = isRecord(entry) && typeof entry.dst === 'string' ? readIpJsonRoute(reader, entry, [i])?.route : undefined;
    if (!route) return [];
    const dst = route.dst.prefix === 0 ? 'default' : formatCidr(route.dst);
    const common = { dst, family: route.dst.family, table: route.table, type: route.type };
    if (route.nexthops) return [{ ...common, nexthops: route.nexthops.map((nexthop) => ({ dev: nexthop.dev, weight: nexthop.weight, ...(nexthop.via && { via: formatAddress(nexthop.via) }) })) }];
    return [{ ...common, dev: route.dev, ...(route.via && { via: formatAddress(route.via) }) }];
  });
}

/** The family of an `ip -j route show` entry: its gateway's, its destination prefix's, else
 * IPv6 where iproute2 prints `pref` (the kernel gives every IPv6 route a router preference,
 * RTA_PREF) and IPv4 where it does not: `default dev wg0` is IPv4's. */
function routeFamilyOf(entry: Record<string, unknown>): AddressFamily {
  const gateway = typeof entry.gateway === 'string' ? parseAddress(entry.gateway) : undefined;
  if (gateway) return gateway.family;
  const dst = typeof entry.dst === 'string' && entry.dst !== 'default' ? parseCidr(entry.dst.includes('/') ? entry.dst : `${entry.dst}/${entry.dst.includes(':') ? 128 : 32}`) : undefined;
  return dst?.family ?? (entry.pref !== undefined ? 'ip6' : 'ip');
}

/** A route of `ip -j route show`. Local, broadcast and multicast routes (`ip -j route show table
 * all`) are the kernel's own and follow from the addresses: skipped. */
function readIpJsonRoute(reader: FieldReader, entry: Record<string, unknown>, at: FieldPath): ReadRoute | undefined {
  const type = entry.type ?? 'unicast';
  if (typeof type !== 'string' || !ROUTE_TYPES.includes(type)) return undefined;
  const multipath = Array.isArray(entry.nexthops);
  if (type === 'unicast' && typeof entry.dev !== 'string' && !multipath) return reader.fail(at, 'expected `dev`, the interface the route sends through');
  // `via inet6` (RFC 5549): iproute2 prints the gateway as `via`, not `gateway`.
  const viaInet6 = multipath ? (entry.nexthops as unknown[]).findIndex((nexthop) => isRecord(nexthop) && isRecord(nexthop.via)) : isRecord(entry.via) ? 0 : -1;
  if (viaInet6 >= 0) return reader.fail(multipath ? [...at, 'nexthops', viaInet6, 'via'] : [...at, 'via'], 'a route through a gateway of the other family (`via inet6`) is not modelled');
  const given: GivenNexthop[] = [];
  if (multipath) {
    const items = entry.nexthops as unknown[];
    if (items.length === 0) return reader.fail([...at, 'nexthops'], 'expected at least one nexthop');
    for (const [i, item] of items.entries()) {
      if (!isRecord(item)) return reader.fail([...at, 'nexthops', i], 'expected a nexthop');
      // The kernel never selects a dead nexthop (its link is down: fib_rebalance gives it no share).
      if (Array.isArray(item.flags) && item.flags.includes('dead')) continue;
      // iproute2 prints a nexthop's flags and, for IPv6, its own fields: not the user's to fix.
      const path = [...at, 'nexthops', i];
      const nexthop = readNexthop(reader, { dev: item.dev, gateway: item.gateway, weight: item.weight }, path, ['dev', 'gateway', 'weight'], 'gateway');
      if (!nexthop) return undefined;
      given.push({ nexthop, viaPath: [...path, 'gateway'], devPath: [...path, 'dev'] });
    }
    // Every nexthop dead: the lookup passes the route over (fib_table_lookup, RTNH_F_DEAD).
    if (given.length === 0) return undefined;
  } else {
    const via = typeof entry.gateway === 'string' ? parseAddress(entry.gateway) : undefined;
    if (typeof entry.gateway === 'string' && !via) return reader.fail([...at, 'gateway'], `'${entry.gateway}' is not an address`);
    given.push(plainNexthop(typeof entry.dev === 'string' ? entry.dev : '', via, at, 'gateway'));
  }
  const dstText = entry.dst as string;
  const dst = readRouteDst(dstText, gatewayFamily(given) ?? routeFamilyOf(entry));
  if (!dst) return reader.fail([...at, 'dst'], `'${dstText}' is not 'default' or a prefix`);
  const table = tableId(typeof entry.table === 'string' || typeof entry.table === 'number' ? entry.table : 'main');
  return routeOf(reader, dst, given, table, type as RouteType);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function readInterface(reader: FieldReader, value: unknown, path: FieldPath): HostInterface | undefined {
  const record = reader.object(value, path, ['name', 'addresses']);
  if (!record) return undefined;
  const name = reader.string(record.name, [...path, 'name']);
  const addresses: Cidr[] = [];
  if (record.addresses !== undefined) {
    for (const [i, text] of (reader.array(record.addresses, [...path, 'addresses']) ?? []).entries()) {
      const s = reader.string(text, [...path, 'addresses', i]);
      if (s === undefined) continue;
      const cidr = parseCidr(s);
      if (cidr) addresses.push(cidr);
      else reader.fail([...path, 'addresses', i], `'${s}' is not an address with prefix (192.0.2.10/24, 2001:db8::1/64)`);
    }
  }
  return name === undefined ? undefined : { name, addresses };
}

function readRoute(reader: FieldReader, value: unknown, path: FieldPath): ReadRoute | undefined {
  const record = reader.object(value, path, ['dst', 'via', 'dev', 'nexthops', 'family', 'table', 'type']);
  if (!record) return undefined;
  const dstText = reader.string(record.dst, [...path, 'dst']);
  const type = record.type === undefined ? 'unicast' : reader.string(record.type, [...path, 'type']);
  if (type !== undefined && !ROUTE_TYPES.includes(type)) return reader.fail([...path, 'type'], `expected one of ${ROUTE_TYPES.join(', ')}`);
  const family = record.family === undefined ? undefined : reader.string(record.family, [...path, 'family']);
  if (family !== undefined && family !== 'ip' && family !== 'ip6') reader.fail([...path, 'family'], "expected 'ip' or 'ip6'");
  const table = record.table === undefined ? MAIN_TABLE : typeof record.table === 'number' ? String(record.table) : reader.string(record.table, [...path, 'table']);
  let given: GivenNexthop[] | undefined;
  if (record.nexthops !== undefined) {
    if (record.dev !== undefined || record.via !== undefined) return reader.fail([...path, 'nexthops'], 'give `nexthops` or `dev` and `via`, not both');
    if (type !== 'unicast') return reader.fail([...path, 'nexthops'], `a ${type ?? ''} route has no nexthops`);
    const items = reader.array(record.nexthops, [...path, 'nexthops']);
    if (!items) return undefined;
    if (items.length === 0) return reader.fail([...path, 'nexthops'], 'expected at least one nexthop');
    given = [];
    for (const [i, item] of items.entries()) {
      const at = [...path, 'nexthops', i];
      const nexthop = readNexthop(reader, item, at, ['via', 'dev', 'weight'], 'via');
      if (!nexthop) return undefined;
      given.push({ nexthop, viaPath: [...at, 'via'], devPath: [...at, 'dev'] });
    }
  } else {
    // A route of another type sends nowhere: it needs no interface.
    const dev = record.dev === undefined && type !== 'unicast' ? '' : reader.string(record.dev, [...path, 'dev']);
    const via = record.via === undefined ? undefined : reader.string(record.via, [...path, 'via']);
    const viaAddress = via === undefined ? undefined : parseAddress(via);
    if (via !== undefined && !viaAddress) return reader.fail([...path, 'via'], `'${via}' is not an address`);
    if (dev !== undefined) given = [plainNexthop(dev, viaAddress, path, 'via')];
  }
  if (dstText === undefined || given === undefined || type === undefined || table === undefined) return undefined;
  const dst = readRouteDst(dstText, (family as AddressFamily | undefined) ?? gatewayFamily(given) ?? 'ip');
  if (!dst) return reader.fail([...path, 'dst'], `'${dstText}' is not 'default' or a prefix`);
  if (family !== undefined && family !== dst.family) return reader.fail([...path, 'family'], `'${dstText}' is an ${familyName(dst.family)} prefix`);
  return routeOf(reader, dst, given, tableId(table), type as RouteType);
}

function familyName(family: AddressFamily): string {
  return family === 'ip' ? 'IPv4' : 'IPv6';
}

/** A route as read, with where each of its nexthops' devices was given (HostReader.finish checks
 * them against the interfaces of every part). */
interface ReadRoute {
  readonly route: HostRoute;
  readonly devPaths: readonly FieldPath[];
}

/** A nexthop as read, with where its gateway and device were given. */
interface GivenNexthop {
  readonly nexthop: RouteNexthop;
  readonly viaPath: FieldPath;
  readonly devPath: FieldPath;
}

/** The one nexthop of a route given with `dev` and a gateway (`via`, ip -j's `gateway`) at `path`. */
function plainNexthop(dev: string, via: Address | undefined, path: FieldPath, viaField: 'via' | 'gateway'): GivenNexthop {
  return { nexthop: via ? { dev, via, weight: 1 } : { dev, weight: 1 }, viaPath: [...path, viaField], devPath: [...path, 'dev'] };
}

/** The family of the first gateway the nexthops name. */
function gatewayFamily(given: readonly GivenNexthop[]): AddressFamily | undefined {
  return given.find((g) => g.nexthop.via)?.nexthop.via?.family;
}

/** A nexthop of nftsim's `nexthops` (`via`) or of ip -j's (`gateway`). */
function readNexthop(reader: FieldReader, value: unknown, path: FieldPath, known: readonly string[], gatewayField: 'via' | 'gateway'): RouteNexthop | undefined {
  const record = reader.object(value, path, known);
  if (!record) return undefined;
  const dev = reader.string(record.dev, [...path, 'dev']);
  const gateway = record[gatewayField] === undefined ? undefined : reader.string(record[gatewayField], [...path, gatewayField]);
  // rtnh_hops is a byte: weights 1 to 256.
  const weight = record.weight ?? 1;
  if (typeof weight !== 'number' || !Number.isInteger(weight) || weight < 1 || weight > 256) return reader.fail([...path, 'weight'], 'expected a weight from 1 to 256');
  const via = gateway === undefined ? undefined : parseAddress(gateway);
  if (gateway !== undefined && !via) return reader.fail([...path, gatewayField], `'${gateway}' is not an address`);
  if (dev === undefined) return undefined;
  return via ? { via, dev, weight } : { dev, weight };
}

/** The route through the nexthops (one: a plain route), checked as the kernel checks them. */
function routeOf(reader: FieldReader, dst: Cidr, given: readonly GivenNexthop[], table: string, type: RouteType): ReadRoute | undefined {
  for (const [i, { nexthop, viaPath, devPath }] of given.entries()) {
    // An IPv4 route through an IPv6 gateway (`via inet6`, RFC 5549) has a nexthop rt_nexthop
    // does not give; an IPv6 one through an IPv4 gateway the kernel refuses.
    if (nexthop.via && nexthop.via.family !== dst.family) return reader.fail(viaPath, `an ${familyName(dst.family)} route through an ${familyName(nexthop.via.family)} gateway is not modelled`);
    if (given.length === 1 || dst.family !== 'ip6') continue;
    // ip6_route_multipath_add: "Device only routes can not be added for IPv6 using the multipath
    // API", and a nexthop given twice is EEXIST.
    if (!nexthop.via) return reader.fail(devPath, 'an IPv6 multipath route needs a gateway on every nexthop (the kernel refuses one without)');
    if (given.slice(0, i).some((g) => g.nexthop.dev === nexthop.dev && g.nexthop.via?.n === nexthop.via!.n)) return reader.fail(viaPath, 'nexthop given twice (the kernel refuses it in an IPv6 route)');
  }
  const nexthops = given.map((g) => g.nexthop);
  const [first] = nexthops;
  const plain = { dst, dev: first!.dev, table, type, ...(first!.via && { via: first!.via }) };
  return { route: nexthops.length > 1 ? { ...plain, nexthops } : plain, devPaths: given.map((g) => g.devPath) };
}

function readRouteDst(text: string, family: AddressFamily): Cidr | undefined {
  if (text === 'default') return { family, n: 0n, prefix: 0 };
  return parseCidr(text);
}

export function formatCidr(cidr: Cidr): string {
  return `${formatAddress(cidr)}/${cidr.prefix}`;
}

/** A host's addresses and routes as prefix tables, made once per host: which interface owns an
 * address (its local routes), and the route of a table for it. */
interface HostTables {
  readonly owners: Readonly<Record<AddressFamily, PrefixTable<HostInterface>>>;
  /** A forwarding host's IPv6 subnet-router anycast addresses (subnetRouterAnycast), by owner. */
  readonly anycast: PrefixTable<HostInterface>;
  /** By routing table, then family. */
  readonly routes: ReadonlyMap<string, Readonly<Record<AddressFamily, PrefixTable<HostRoute>>>>;
}

const tablesOf = memoByObject(buildTables);

function buildTables(host: Host): HostTables {
  const owners = { ip: new PrefixTable<HostInterface>('ip'), ip6: new PrefixTable<HostInterface>('ip6') };
  const anycast = new PrefixTable<HostInterface>('ip6');
  for (const iface of host.interfaces) {
    for (const a of iface.addresses) {
      owners[a.family].add(a.n, familyBits(a.family), iface);
      const subnetRouter = host.forwarding ? subnetRouterAnycast(a) : undefined;
      if (subnetRouter !== undefined) anycast.add(subnetRouter, 128, iface);
      // The kernel's local route for 127.0.0.1/8 covers the whole prefix (fib_add_ifaddr adds
      // a local route for the prefix of a loopback address).
      if (iface.name === 'lo') owners[a.family].add(a.n, a.prefix, iface);
    }
  }
  const routes = new Map<string, Record<AddressFamily, PrefixTable<HostRoute>>>();
  for (const route of host.routes) {
    let table = routes.get(route.table);
    if (!table) {
      table = { ip: new PrefixTable('ip'), ip6: new PrefixTable('ip6') };
      routes.set(route.table, table);
    }
    table[route.dst.family].add(route.dst.n, route.dst.prefix, route);
  }
  return { owners, anycast, routes };
}

/** The interface owning `address` as a local address (127/8 and ::1 are lo's): the most specific
 * of the local routes, as the kernel's local table answers. */
export function localInterfaceOf(host: Host, address: Address): HostInterface | undefined {
  return tablesOf(host).owners[address.family].lookup(address.n);
}

/** The interface whose IPv6 subnet-router anycast address `address` is, on a forwarding host: a
 * local route of type anycast, which delivers to input (ip6_rt_init_dst). */
export function anycastInterfaceOf(host: Host, address: Address): HostInterface | undefined {
  return address.family === 'ip6' ? tablesOf(host).anycast.lookup(address.n) : undefined;
}

/** The subnet-router anycast address a forwarding host joins for its address `c`: the prefix of
 * an IPv6 address shorter than /127, unless that is :: (addrconf_join_anycast). */
function subnetRouterAnycast(c: Cidr): bigint | undefined {
  if (c.family !== 'ip6' || c.prefix >= 127) return undefined;
  const anycast = c.n & prefixMask(128, c.prefix);
  return anycast === 0n ? undefined : anycast;
}

/** Whether the host's local table has a broadcast route for the IPv4 address: the limited
 * broadcast, or the broadcast address of one of its subnets (fib_add_ifaddr adds one for every
 * address with a prefix shorter than /31). */
export function isBroadcastAddress(host: Host, address: Address): boolean {
  if (!mayBeBroadcast(address)) return false;
  if (address.n === LIMITED_BROADCAST) return true;
  // Loops, not some() and find() with a closure: the routing decision asks for most packets.
  for (const iface of host.interfaces) if (isSubnetBroadcast(iface.addresses, address)) return true;
  return false;
}

/** PACKET_HOST, PACKET_BROADCAST, PACKET_MULTICAST (include/uapi/linux/if_packet.h). */
export const PACKET_TYPE = { host: 0, broadcast: 1, multicast: 2 } as const;

/** The link-layer type (skb->pkt_type) of a frame carrying a packet to `address` into interface
 * `ifname`, as a sender on its link addresses it: a multicast address goes to a multicast MAC,
 * the limited broadcast and the broadcast address of one of the interface's subnets to the
 * broadcast MAC, anything else (a broadcast address of another subnet too, which is routed to
 * the node) to the interface's own MAC. */
export function linkPacketType(host: Host, ifname: string, address: Address): number {
  // Through lo every frame is the host's (eth_type_trans with lo's zero MAC).
  if (ifname === 'lo') return PACKET_TYPE.host;
  if (isMulticastAddress(address)) return PACKET_TYPE.multicast;
  if (!mayBeBroadcast(address)) return PACKET_TYPE.host;
  if (address.n === LIMITED_BROADCAST) return PACKET_TYPE.broadcast;
  return isSubnetBroadcast(addressesOf(host, ifname), address) ? PACKET_TYPE.broadcast : PACKET_TYPE.host;
}

/** 255.255.255.255 (ipv4_is_lbcast). */
export const LIMITED_BROADCAST = 0xffffffffn;

/** 224.0.0.0/4, ff00::/8. */
export function isMulticastAddress(address: Address): boolean {
  return address.family === 'ip' ? Number(address.n) >>> 28 === 0xe : address.n >= IPV6_MULTICAST;
}

const IPV6_MULTICAST = 0xff000000000000000000000000000000n;

/** An IPv6 address of link-local scope: fe80::/10, or a multicast group of scope 2 (ff02::/16,
 * ff12::/16, …), which routing looks up on one interface only (ipv6_addr_type). */
export function isIpv6LinkLocal(address: Address): boolean {
  return address.family === 'ip6' && ipv6Scope(address.n) === 'link';
}

const IPV4_ALL_HOSTS = 0xe0000001n;
const IPV6_ALL_NODES = 0xff020000000000000000000000000001n;
const IPV6_ALL_ROUTERS = 0xff020000000000000000000000000002n;
/** ff02::1:ff00:0/104, followed by the low 24 bits of the address a solicited-node group is for. */
const IPV6_SOLICITED_NODE = 0xff0200000000000000000001ff000000n;

/** Whether interface `ifname` is in the multicast group: the groups the kernel joins on every
 * interface by itself, since the host description lists no memberships. IPv4 all hosts
 * (224.0.0.1, ip_mc_up); IPv6 all nodes (ff02::1), the solicited-node group of each of the
 * interface's addresses (addrconf_join_solict), and on a router link-local all routers
 * (ff02::2; ipv6_add_dev joins only it on an interface made while forwarding is on, ff05::2 too
 * only when forwarding is switched on later) and the solicited-node group of each subnet-router
 * anycast address, the prefix of an address shorter than /127 (addrconf_join_anycast). Checked
 * on Linux 6.18 with `ip maddr` on a veth. */
export function joinsGroup(host: Host, ifname: string, group: Address): boolean {
  if (group.family === 'ip') return group.n === IPV4_ALL_HOSTS;
  if (group.n === IPV6_ALL_NODES) return true;
  if (host.forwarding && group.n === IPV6_ALL_ROUTERS) return true;
  if (group.n >> 24n !== IPV6_SOLICITED_NODE >> 24n) return false;
  const low = group.n & 0xffffffn;
  return addressesOf(host, ifname).some((c) => {
    if (c.family !== 'ip6') return false;
    const anycast = host.forwarding ? subnetRouterAnycast(c) : undefined;
    return (c.n & 0xffffffn) === low || (anycast !== undefined && (anycast & 0xffffffn) === low);
  });
}

/** An IPv4 broadcast address ends in two set bits at least: most addresses are told apart by that
 * alone (the routing decision asks for every packet that is not for a local address). */
function mayBeBroadcast(address: Address): boolean {
  return address.family === 'ip' && (Number(address.n) & 3) === 3;
}

/** Whether the address is the broadcast address of one of these subnets. */
function isSubnetBroadcast(addresses: readonly Cidr[], address: Address): boolean {
  for (const c of addresses) {
    if (c.family !== 'ip' || c.prefix >= 31) continue;
    const mask = prefixMask(32, c.prefix);
    if ((address.n & mask) === (c.n & mask) && (address.n | mask) === LIMITED_BROADCAST) return true;
  }
  return false;
}

/** The unicast route of a non-local address under the host's routing rules (the kernel's
 * default ones without them), for what `key` says of the packet; undefined when there is none or
 * the lookup ends in a route or rule that drops. */
export function lookupRoute(host: Host, address: Address, key: RouteKey = PLAIN_KEY): HostRoute | undefined {
  const rules = host.rules?.[address.family];
  // fib_rules_lookup: the first rule that matches and gives a route; the local table (local
  // addresses) was consulted before, by the caller. The default rules match every packet.
  for (const rule of rules ?? DEFAULT_RULES[address.family]) {
    if (rule.table === LOCAL_TABLE || (rules && !isRuleMatching(rule, address, key))) continue;
    if (rule.action !== 'lookup') return undefined;
    const route = tableRoute(host, rule.table, address);
    if (!route || route.type === 'throw') continue;
    // A route that drops ends the lookup with its error; only a route found is suppressed.
    if (route.type !== 'unicast') return undefined;
    if (rule.suppressPrefixlen !== undefined && route.dst.prefix <= rule.suppressPrefixlen) continue;
    return route;
  }
  return undefined;
}

/** The longest prefix of `table` holding `address` (fib_table_lookup). */
function tableRoute(host: Host, table: string, address: Address): HostRoute | undefined {
  return tablesOf(host).routes.get(table)?.[address.family].lookup(address.n);
}

/** The interface's primary address of `family` (the first listed), as masquerade picks it
 * (inet_select_addr / ipv6_dev_get_saddr): the host's own object, the same for every call. */
export function primaryAddress(host: Host, ifname: string, family: AddressFamily): Cidr | undefined {
  return addressesOf(host, ifname).find((c) => c.family === family);
}

/** The addresses of interface `ifname`, none for an interface the host does not have. */
export function addressesOf(host: Host, ifname: string): readonly Cidr[] {
  for (const iface of host.interfaces) if (iface.name === ifname) return iface.addresses;
  return NO_ADDRESSES;
}

const NO_ADDRESSES: readonly Cidr[] = [];

/** The address `redirect` sends a received IPv6 packet to (nf_nat_redirect_ipv6): the first of
 * the input interface's addresses of the destination's scope; undefined when it has none (the
 * kernel drops the packet). */
export function ipv6RedirectAddress(host: Host, ifname: string, dst: Address): Cidr | undefined {
  const scope = ipv6Scope(dst.n);
  return addressesOf(host, ifname).find((c) => c.family === 'ip6' && ipv6Scope(c.n) === scope);
}

/** ipv6_addr_scope: loopback (::1, and multicast of scope 1), link-local (fe80::/10, multicast of
 * scope 2), site-local (fec0::/10, multicast of scope 5), else global: ipv6_addr_scope2type gives
 * other multicast scopes no bit of IPV6_ADDR_SCOPE_MASK. */
export function ipv6Scope(n: bigint): 'loopback' | 'link' | 'site' | 'global' {
  if (n === IPV6_LOOPBACK) return 'loopback';
  if (n >= IPV6_MULTICAST) {
    const scope = ipv6MulticastScope(n);
    return scope === 1 ? 'loopback' : scope === 2 ? 'link' : scope === 5 ? 'site' : 'global';
  }
  const top = Number(n >> 112n);
  if ((top & 0xffc0) === 0xfe80) return 'link';
  if ((top & 0xffc0) === 0xfec0) return 'site';
  return 'global';
}

/** ::1. */
export const IPV6_LOOPBACK = 1n;

/** The scope field of an IPv6 multicast address (IPV6_ADDR_MC_SCOPE: ff02:: is 2). */
export function ipv6MulticastScope(n: bigint): number {
  return Number(n >> 112n) & 0xf;
}
