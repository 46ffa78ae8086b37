// Expressions of the model evaluated against the packet: header fields, meta, conntrack, fib,
// numgen, bitwise operations, and the relational tests of match statements (values, prefixes,
// ranges, flag lists, sets, maps, concatenations).

import type { Expr, Literal, NamedSet, Relational, Table } from '../model/ast.js';
import { datatypeOf, isBitmaskType } from '../model/datatypes.js';
import { familyBits, formatAddress, parseAddress, parseAddressBits, prefixMask, type Address } from './address.js';
import { chooseNexthop } from './choose-nexthop.js';
import { anycastInterfaceOf, isBroadcastAddress, isIpv6LinkLocal, isMulticastAddress, lookupRoute, primaryAddress, routeUsesDevice } from './host.js';
import { HOST_KEY } from './route-rules.js';
import { CT_STATE_BITS, invertTransport } from './conntrack-table.js';
import { hasPorts, L4_NUMBERS, type CtStateName } from './packet.js';
import { readPayloadField, readRawPayload } from './packet-bytes.js';
import { evaluateSpecialExpr } from './evaluate-special-expr.js';
import { lookupElement, lookupKey, MISSES } from './lookup-element.js';
import { passesElementStatements } from './dynset.js';
import { isAddrtypeMatch, matchAddrtype6 } from './match-addrtype.js';
import { hasConntrackEntry, inputDevice, isIptablesRule, skbLength, localInterfaceAt, NotModelled, RandomPick, stateBeforeConntrack, templateKey, type SimContext } from './sim-context.js';
import { memoByObject } from './memo-by-object.js';

/** A runtime value: an integer (addresses, ports, marks, flags), a string (interface names) or
 * the parts of a concatenation. `undefined` is the kernel's NFT_BREAK: the expression has no
 * value for this packet (a tcp field of a udp packet), so the rule does not match. */
export type RtValue = bigint | string | readonly RtValue[];

const CT_STATE_VALUES: Readonly<Record<CtStateName, bigint>> = {
  invalid: BigInt(CT_STATE_BITS.invalid),
  established: BigInt(CT_STATE_BITS.established),
  related: BigInt(CT_STATE_BITS.related),
  new: BigInt(CT_STATE_BITS.new),
  untracked: BigInt(CT_STATE_BITS.untracked),
};

function addressValue(a: Address): bigint {
  return a.n;
}

// Read on every evaluation, not cached per node: a WeakMap over the literals of a 150k-rule
// ruleset cost more (lookup and GC of its ephemerons) than parsing (address.ts parseIpv4).
export function literalValue(lit: Literal): RtValue {
  const v = lit.value;
  if (!v) {
    if (lit.dtype === 'ifname' || lit.dtype === 'string' || lit.dtype === 'iface_index') return lit.text;
    throw new NotModelled(`value '${lit.text}' of type ${lit.dtype ?? 'unknown'}`);
  }
  switch (v.type) {
    case 'integer':
      // A label's literal is the number of its bit (isBitmaskType).
      return lit.dtype === 'ct_label' ? 1n << BigInt(v.n) : BigInt(v.n);
    case 'bigint':
      return BigInt(`0x${v.hex}`);
    case 'ipv4':
    case 'ipv6': {
      const n = parseAddressBits(v.addr);
      if (n === undefined) throw new NotModelled(`address '${v.addr}'`);
      return n;
    }
    case 'ether':
      return BigInt(`0x${v.addr.replace(/:/g, '')}`);
    case 'string':
      return v.s;
    case 'boolean':
      return v.b ? 1n : 0n;
    default: {
      const exhaustive: never = v;
      return exhaustive;
    }
  }
}

/** literalValue, or undefined where it throws NotModelled: for work done ahead of the packets
 * (indexes, compiled rules), which leave such a literal to evaluation, where it throws again. */
export function constantOf(lit: Literal): RtValue | undefined {
  try {
    return literalValue(lit);
  } catch (error) {
    if (error instanceof NotModelled) return undefined;
    throw error;
  }
}

/** `meta skuid`/`skgid` of an iptables owner match without a socket: below every uid, so that
 * equality and ranges fail and their negations hold. */
const NO_OWNER = -1n;

// Transport protocols nft's payload expressions depend on by number (src/proto.c): a field of one
// of them does not match a packet of another (meta l4proto dependency).
const OTHER_TRANSPORTS: Readonly<Record<string, number>> = { igmp: 2, gre: 47, esp: 50, ah: 51, comp: 108 };

/** Header fields: the common ones straight from the packet state (the simulator's hot path),
 * the others from the packet's bytes (packet-bytes.ts). */
function payloadValue(expr: Extract<Expr, { kind: 'payload' }>, ctx: SimContext): RtValue | undefined {
  const { protocol, field } = expr;
  const p = ctx.pkt;
  const num = (n: number | string | undefined): bigint | undefined => {
    if (n === undefined) return undefined;
    if (typeof n === 'string') throw new RandomPick(`${protocol} ${field} after NAT picked a random port (${n})`);
    return BigInt(n);
  };
  switch (protocol) {
    case 'ip':
    case 'ip6': {
      if (ctx.family !== protocol) return undefined;
      switch (field) {
        case 'saddr':
          return addressValue(p.src);
        case 'daddr':
          return addressValue(p.dst);
        case 'protocol':
        case 'nexthdr':
          return BigInt(p.l4proto);
        case 'ttl':
        case 'hoplimit':
          return BigInt(p.ttl);
        case 'dscp':
          return BigInt(p.dscp);
        case 'version':
          return protocol === 'ip' ? 4n : 6n;
        default:
          return readPayloadField(expr, ctx);
      }
    }
    case 'tcp':
    case 'udp':
    case 'udplite':
    case 'sctp':
    case 'dccp':
    case 'th': {
      // nft adds the dependency `meta l4proto <protocol>` to a transport field (src/payload.c
      // payload_gen_dependency), none to `th`, which reads any transport header's first words.
      if (protocol === 'th' && !hasPorts(p.l4proto)) return readPayloadField(expr, ctx);
      if (protocol !== 'th' && p.l4proto !== L4_NUMBERS[protocol]) return undefined;
      if (field === 'sport') return num(p.sport);
      if (field === 'dport') return num(p.dport);
      if (protocol === 'tcp' && field === 'flags') return BigInt(p.tcpFlags);
      return readPayloadField(expr, ctx);
    }
    case 'icmp':
    case 'icmpv6': {
      if (p.l4proto !== L4_NUMBERS[protocol]) return undefined;
      if (field === 'type') return num(p.icmpType);
      if (field === 'code') return num(p.icmpCode);
      return readPayloadField(expr, ctx);
    }
    case 'ether':
      return readPayloadField(expr, ctx);
    // nftsim's packets carry no VLAN tag and are IP, not ARP: the dependency on the ethertype
    // (`ether type vlan`, `meta protocol arp`) fails.
    case 'vlan':
    case 'arp':
      return undefined;
    default:
      if (OTHER_TRANSPORTS[protocol] !== undefined && p.l4proto !== OTHER_TRANSPORTS[protocol]) return undefined;
      throw new NotModelled(`${protocol} ${field}`);
  }
}

function isLocal(ctx: SimContext, a: Address): boolean {
  return localInterfaceAt(ctx, a) !== undefined;
}

function metaValue(key: string, ctx: SimContext): RtValue | undefined {
  const p = ctx.pkt;
  switch (key) {
    case 'mark':
      return BigInt(p.mark);
    case 'iif':
      return inputDevice(ctx) ?? 0n;
    case 'oif':
      return ctx.oif ?? 0n;
    // No device is an empty name (nft_meta.c nft_meta_store_ifname).
    case 'iifname':
      return inputDevice(ctx) ?? '';
    case 'oifname':
      return ctx.oif ?? '';
    case 'l4proto':
      return BigInt(p.l4proto);
    case 'nfproto':
      return ctx.family === 'ip' ? 2n : 10n;
    case 'protocol':
      return ctx.family === 'ip' ? 0x0800n : 0x86ddn;
    case 'length':
      return BigInt(skbLength(ctx));
    case 'pkttype':
      return BigInt(p.pkttype);
    case 'iiftype':
    case 'oiftype': {
      // No device: NFT_BREAK (nft_meta_store_iftype). `iiftype` reads the device the packet is on
      // (nft_meta.c NFT_META_IFTYPE, pkt->skb->dev): the input interface, then from postrouting
      // on the output interface (ip_output sets skb->dev before the hook), none at output; Linux
      // 6.18 matches `meta iiftype ether` at postrouting for the node's own packet, whose iif is 0.
      // At egress skb->dev is the output interface too.
      const dev = key === 'oiftype' || ctx.hook === 'postrouting' || ctx.hook === 'egress' ? ctx.oif : ctx.iif;
      if (dev === undefined) return undefined;
      return dev === 'lo' ? 0x304n : 1n;
    }
    case 'skuid':
    case 'skgid': {
      const id = key === 'skuid' ? p.skuid : p.skgid;
      // Only a locally generated packet has a socket (nft_meta.c: no sk → NFT_BREAK). iptables'
      // owner match, which the lowering lists as these keys, is xt_owner in the kernel: without a
      // socket it matches when every test it makes is negated (`(match ^ invert) == 0`), so each
      // test gives its inversion, as a uid no test names does.
      if (ctx.iif !== undefined || id === undefined) return isIptablesRule(ctx) ? NO_OWNER : undefined;
      return BigInt(id);
    }
    case 'nftrace':
      return BigInt(p.nftrace ?? 0);
    case 'priority':
      return BigInt(p.priority ?? 0);
    // Interface groups: the default group 0 (no `ip link set group`); no device → NFT_BREAK.
    case 'iifgroup':
      return inputDevice(ctx) === undefined ? undefined : 0n;
    case 'oifgroup':
      return ctx.oif === undefined ? undefined : 0n;
    // No VRF in the host model: the slave interface index is 0 and its name empty
    // (nft_meta.c nft_meta_get_eval_sdif / _sdifname).
    case 'sdif':
      return 0n;
    case 'sdifname':
      return '';
    // No security labels and no IPsec in the host model (skb->secmark 0, no secpath).
    case 'secmark':
    case 'ipsec':
    case 'secpath':
      return 0n;
    case 'rtclassid':
      // dst->tclassid: no routing realms; no route before the routing decision → NFT_BREAK.
      return ctx.hook === 'prerouting' || ctx.hook === 'ingress' ? undefined : 0n;
    // Bridge port keys: nftsim's interfaces are not bridge ports (nft_meta.c: no bridge →
    // NFT_BREAK).
    case 'ibrname':
    case 'obrname':
    case 'ibrvproto':
    case 'ibrpvid':
    case 'ibriport':
    case 'obriport':
      return undefined;
    case 'cgroup':
      // A socket's cgroup: a packet to a non-local address has no socket (NFT_BREAK).
      if (ctx.iif !== undefined && !isLocal(ctx, p.dst)) return undefined;
      throw new NotModelled('meta cgroup (the socket\'s cgroup is not in the packet model)');
    case 'cpu':
      throw new NotModelled('meta cpu (the CPU that handles the packet is not known)');
    case 'time':
    case 'day':
    case 'hour':
      throw new NotModelled(`meta ${key} (the packet's time is not in the packet model)`);
    case 'iifkind':
    case 'oifkind':
      // No device: NFT_BREAK (nft_meta_get_eval_kind); a device's kind is not known.
      if ((key === 'iifkind' ? inputDevice(ctx) : ctx.oif) === undefined) return undefined;
      throw new NotModelled(`meta ${key} (interface kinds are not in the host model)`);
    default:
      throw new NotModelled(`meta ${key}`);
  }
}

/** RTN_* (include/uapi/linux/rtnetlink.h): unicast 1, local 2, broadcast 3, anycast 4,
 * multicast 5, unreachable 7. */
function addressTypeAt(ctx: SimContext, a: Address): number {
  if (ctx.typeFor !== a) {
    ctx.type = addressType(ctx, a);
    ctx.typeFor = a;
  }
  return ctx.type;
}

function addressType(ctx: SimContext, a: Address): number {
  if (isLocal(ctx, a)) return 2;
  if (isMulticastAddress(a)) return 5;
  if (a.family === 'ip') {
    // ipv4_is_zeronet (0.0.0.0) is RTN_BROADCAST too (__inet_dev_addr_type).
    if (a.n === 0n || isBroadcastAddress(ctx.host, a)) return 3;
    // Anything else is unicast, routed or not: nft_fib4_eval_type asks inet_dev_addr_type, which
    // looks in the local table only (fib_frontend.c __inet_dev_addr_type).
    return 1;
  }
  // IPv6 routes the address (nft_fib6.c __nft_fib6_eval_type): the local table's anycast route
  // is RTN_ANYCAST, no route RTN_UNREACHABLE.
  if (anycastInterfaceOf(ctx.host, a)) return 4;
  return lookupRoute(ctx.host, a, HOST_KEY) ? 1 : 7;
}

function ctValue(expr: Extract<Expr, { kind: 'ct' }>, ctx: SimContext): RtValue | undefined {
  const ct = ctx.ct;
  const tracked = hasConntrackEntry(ctx);
  if (expr.key === 'state') {
    // Before conntrack ran: invalid without an entry, new with a zone template (nft_ct.c
    // nft_ct_get_eval reads the ctinfo of whatever entry the packet has).
    if (!ctx.ctAttached) return CT_STATE_VALUES[stateBeforeConntrack(ctx)];
    return CT_STATE_VALUES[ct.state];
  }
  if (expr.key === 'helper') {
    // The helper of the connection's master, for an expected connection (nft_ct.c NFT_CT_HELPER
    // reads ct->master): nftsim models no expectations, so no connection it tracks has a master
    // (an ICMP error's is the connection it is about), and the rule breaks; iptables' helper
    // match gives its inversion without a master or a connection (xt_helper.c), as a comparison
    // with no name does. A packet the input calls related may be of an expected connection.
    if (tracked && ctx.conn.explicit && ct.state === 'related') throw new NotModelled("ct helper of a packet given as related: its connection's master is not known");
    return isIptablesRule(ctx) ? '' : undefined;
  }
  if (!tracked) {
    const value = templateKey(ctx, expr.key);
    return value === undefined ? undefined : BigInt(value);
  }
  const original = ct.original;
  switch (expr.key) {
    case 'mark':
      return BigInt(ct.mark);
    case 'status':
      return BigInt(ct.status | ctx.natDone);
    case 'direction':
      return BigInt(ct.direction);
    case 'zone':
      return BigInt(ct.zone);
    case 'l3proto':
      return ctx.family === 'ip' ? 2n : 10n;
    case 'protocol':
      // The entry's (nf_ct_protonum): a related ICMP error reads its connection's.
      return BigInt(ctx.conn.entry?.original.l4proto ?? ctx.pkt.l4proto);
    case 'saddr':
    case 'ip saddr':
    case 'ip6 saddr':
    case 'daddr':
    case 'ip daddr':
    case 'ip6 daddr':
    case 'proto-src':
    case 'proto-dst': {
      // NFT_CT_SRC_IP / _IP6: only for an entry of that family (nft_ct.c: l3num mismatch → NFT_BREAK).
      if (expr.family !== undefined && expr.family !== ctx.family) return undefined;
      // The reply tuple is the original one inverted, with the NAT mappings set up so far
      // (nf_nat_setup_info alters it when the mapping is made).
      const tuple = expr.dir === 'reply' ? (ct.reply ?? { src: original.dst, dst: original.src, ...invertTransport({ l4proto: ctx.pkt.l4proto, ...original }) }) : original;
      if (expr.key.endsWith('saddr')) return tuple.src.n;
      if (expr.key.endsWith('daddr')) return tuple.dst.n;
      const port = expr.key === 'proto-src' ? tuple.sport : tuple.dport;
      if (typeof port === 'string') throw new RandomPick(`ct ${expr.dir ?? ''} ${expr.key} after NAT picked a random port (${port})`);
      return port === undefined ? undefined : BigInt(port);
    }
    case 'label':
      // No labels unless `ct label set` added some (nft_ct.c: no labels extension → zeros).
      return ct.labels ?? 0n;
    case 'secmark':
      return 0n;
    case 'bytes':
    case 'packets':
    case 'avgpkt': {
      // nft_ct_get_init turns accounting on (nf_ct_set_acct) for these keys, and conntrack
      // counts each packet as it attaches the entry (CtEntry.packets): a packet that opens a
      // connection is 1 packet of its length in the original direction, nothing in reply.
      // Without a direction, both summed (nft_ct_get_eval_counter); avgpkt is bytes / packets.
      const entry = ctx.conn.entry;
      if (!entry && ct.state !== 'new') throw new NotModelled(`ct ${expr.key} of an ${ct.state} connection (counts of earlier packets)`);
      const count = (n: readonly [number, number]): number => (expr.dir === undefined ? n[0] + n[1] : n[expr.dir === 'reply' ? 1 : 0]);
      const packets = count(entry ? entry.packets : [1, 0]);
      const bytes = count(entry ? entry.bytes : [ctx.pkt.length, 0]);
      if (expr.key === 'packets') return BigInt(packets);
      if (expr.key === 'bytes') return BigInt(bytes);
      return packets === 0 ? 0n : BigInt(Math.floor(bytes / packets));
    }
    case 'expiration':
      throw new NotModelled('ct expiration (depends on the time since the entry was refreshed)');
    case 'id':
      throw new NotModelled('ct id (derived from the entry\'s address in kernel memory)');
    default:
      throw new NotModelled(`ct ${expr.key}`);
  }
}

const FIB_FLAGS = { saddr: 1, daddr: 2, iif: 4, oif: 8, mark: 16 } as const;

/** fib's flags as bits (FIB_FLAGS), as compiled rules keep them. */
export function fibFlagBits(flags: readonly string[]): number {
  let bits = 0;
  for (const flag of flags) bits |= (FIB_FLAGS as Readonly<Record<string, number>>)[flag] ?? 0;
  return bits;
}

/** `fib … type` (without `mark`): the RTN_* type of the looked-up address. */
export function fibTypeOf(flags: number, ctx: SimContext): number {
  const address = flags & FIB_FLAGS.saddr ? ctx.pkt.src : ctx.pkt.dst;
  if (flags & (FIB_FLAGS.iif | FIB_FLAGS.oif)) {
    const dev = flags & FIB_FLAGS.iif ? ctx.iif : ctx.oif;
    const local = localInterfaceAt(ctx, address);
    if (local) return local.name === dev || local.name === 'lo' ? 2 : 1;
  }
  return addressTypeAt(ctx, address);
}

function fibValue(expr: Extract<Expr, { kind: 'fib' }>, ctx: SimContext): RtValue | undefined {
  const flags = expr.flags;
  const address = flags.includes('saddr') ? ctx.pkt.src : ctx.pkt.dst;
  // nft_fib4.c / nft_fib6.c: the lookup comes from LOOPBACK_IFINDEX, from the other address, with
  // the packet's mark only under `mark` (which matters only to routing rules).
  const mark = flags.includes('mark') ? ctx.pkt.mark : 0;
  switch (expr.result) {
    case 'type':
      if (mark !== 0 && ctx.family === 'ip6' && ctx.host.rules?.ip6) throw new NotModelled('fib … mark type of IPv6 under routing rules');
      return BigInt(fibTypeOf(fibFlagBits(flags), ctx));
    case 'oif':
    case 'oifname': {
      const none = expr.result === 'oif' ? 0n : '';
      // At prerouting, ingress and input a packet that came in through lo gets lo itself
      // (nft_fib.h nft_fib_can_skip → nft_fib_is_loopback).
      if ((ctx.hook === 'prerouting' || ctx.hook === 'ingress' || ctx.hook === 'input') && ctx.iif === 'lo') return 'lo';
      // A local address has no output interface: the lookup gives RTN_LOCAL and the result stays
      // 0 (nft_fib4.c "Should not see RTN_LOCAL here", nft_fib6.c RTF_LOCAL).
      if (localInterfaceAt(ctx, address)) return none;
      if (isIpv6LinkLocal(address)) return linkLocalRouteDev(flags, ctx) ?? none;
      if (isMulticastAddress(address) && address.family === 'ip6') multicastBeyondLink(address);
      const route = lookupRoute(ctx.host, address, { mark, iif: 'lo', src: address === ctx.pkt.src ? ctx.pkt.dst : ctx.pkt.src });
      if (!route) return none;
      // On a multipath route IPv4's lookup selects no path: the result is the first nexthop's
      // device, and with `iif` the input interface when any nexthop goes through it (nft_fib4.c:
      // FIB_RES_DEV, fib_info_nh_uses_dev). IPv6's selects one by the packet's hash, as routing
      // does (nft_fib6.c: ip6_route_lookup, fib6_select_path), and `iif` counts when it is that
      // one's (kernel-checked on Linux 6.18).
      const chosen = ctx.family === 'ip6' && route.nexthops ? chooseNexthop(ctx, route).dev : undefined;
      if (flags.includes('iif')) return (chosen === undefined ? routeUsesDevice(route, ctx.iif) : chosen === ctx.iif) ? ctx.iif! : none;
      return chosen ?? route.dev;
    }
    default:
      throw new NotModelled(`fib ${expr.result}`);
  }
}

/** nft_fib6_flowi_init pins the lookup of a link-local address (fe80::/10, ff02::/16) to one
 * interface (RT6_LOOKUP_F_IFACE): the `iif` or `oif` the expression names, else the packet's
 * device (the input one until postrouting). An interface with IPv6 on has its fe80::/64 and
 * ff00::/8 routes (addrconf_add_dev), so the result is that interface; one the host description
 * gives no IPv6 address is taken to have IPv6 off (a real one lists its link-local address). */
function linkLocalRouteDev(flags: readonly string[], ctx: SimContext): string | undefined {
  const dev = flags.includes('iif') ? ctx.iif : flags.includes('oif') || ctx.hook === 'output' || ctx.hook === 'postrouting' ? ctx.oif : ctx.iif;
  return dev !== undefined && primaryAddress(ctx.host, dev, 'ip6') ? dev : undefined;
}

function multicastBeyondLink(address: Address): never {
  throw new NotModelled(`fib oif of ${formatAddress(address)}: the kernel picks among the ff00::/8 routes of every interface`);
}

/** The data of an anonymous map whose type only its user gives (`dnat to ip daddr map { 10.0.0.1
 * : 10.0.0.2 }`, `dnat ip addr . port to … map { … : 10.0.0.2 . 8080 }`) is left untyped by the
 * parser: read addresses and numbers by their spelling. */
export function readMapData(data: Expr, ctx: SimContext): RtValue | undefined {
  if (data.kind === 'literal' && !data.value) {
    const address = parseAddress(data.text);
    if (address) return address.n;
    if (/^\d+$/.test(data.text)) return BigInt(data.text);
  }
  if (data.kind === 'concat') {
    const parts: RtValue[] = [];
    for (const part of data.parts) {
      const value = readMapData(part, ctx);
      if (value === undefined) return undefined;
      parts.push(value);
    }
    return parts;
  }
  return evaluateExpr(data, ctx);
}

/** The data of the map element the packet's key finds, as written (a NAT reads an interval
 * there); undefined for NFT_BREAK. */
export function mapData(expr: Extract<Expr, { kind: 'map' }>, ctx: SimContext): Expr | undefined {
  if (expr.vmap) throw new NotModelled('verdict map used as a value');
  const key = evaluateExpr(expr.key, ctx);
  if (key === undefined) return undefined;
  const element = lookupElement(expr.map, key, expr.key, ctx);
  if (!element?.data || !passesElementStatements(element, expr.map, ctx)) return undefined;
  return element.data;
}

/** The value of `expr` for the packet, undefined for NFT_BREAK. */
export function evaluateExpr(expr: Expr, ctx: SimContext): RtValue | undefined {
  switch (expr.kind) {
    case 'literal':
      return literalValue(expr);
    case 'payload':
      if (expr.inner) throw new NotModelled(`${expr.inner} ${expr.protocol} ${expr.field}`);
      return payloadValue(expr, ctx);
    case 'meta':
      if (expr.key === 'random') throw new NotModelled('meta random outside a comparison nftsim can split into branches');
      return metaValue(expr.key, ctx);
    case 'ct':
      return ctValue(expr, ctx);
    case 'fib':
      return fibValue(expr, ctx);
    case 'numgen': {
      // `random`: each value equally likely. `inc` (and iptables' statistic --mode nth, lowered
      // to it): a counter every packet through the rule moves on (nft_ng_inc_eval), whose value
      // for this packet depends on how many came before, which a snapshot of the node does not
      // say: each value is a branch with its share of the packets, as for `random`.
      const pick = ctx.choose(new Array<number>(expr.mod).fill(1 / expr.mod));
      return BigInt(pick + (expr.offset ?? 0));
    }
    case 'binop': {
      const left = evaluateExpr(expr.left, ctx);
      const right = evaluateExpr(expr.right, ctx);
      if (left === undefined || right === undefined) return undefined;
      if (typeof left !== 'bigint' || typeof right !== 'bigint') throw new NotModelled(`operator ${expr.op} on non-integers`);
      const bits = BigInt(datatypeOf(expr.left)?.bits ?? 32);
      const width = (1n << bits) - 1n;
      const op = expr.op;
      switch (op) {
        case '&':
          return left & right;
        case '|':
          return (left | right) & width;
        case '^':
          return (left ^ right) & width;
        case '<<':
          return (left << right) & width;
        case '>>':
          return left >> right;
        default: {
          const exhaustive: never = op;
          return exhaustive;
        }
      }
    }
    case 'concat': {
      const parts: RtValue[] = [];
      for (const part of expr.parts) {
        const v = evaluateExpr(part, ctx);
        if (v === undefined) return undefined;
        parts.push(v);
      }
      return parts;
    }
    case 'map': {
      const data = mapData(expr, ctx);
      return data && readMapData(data, ctx);
    }
    case 'raw-payload':
      return readRawPayload(expr, ctx);
    case 'exthdr':
    case 'tcp-option':
    case 'ip-option':
    case 'sctp-chunk':
    case 'rt':
    case 'socket':
    case 'osf':
    case 'ipsec':
    case 'hash':
      return evaluateSpecialExpr(expr, ctx);
    case 'flag-list': {
      // As an operand (`tcp flags & (syn | rst | ack)`, `tcp flags syn / syn,rst,ack`, the
      // lowering of iptables' --tcp-flags): the bits together.
      let bits = 0n;
      for (const item of expr.items) {
        const value = evaluateExpr(item, ctx);
        if (typeof value !== 'bigint') throw new NotModelled('flag list of non-flags');
        bits |= value;
      }
      return bits;
    }
    case 'relational':
    case 'prefix':
    case 'range':
    case 'set':
    case 'set-ref':
    case 'wildcard':
    case 'verdict':
    case 'element':
      throw new NotModelled(`${expr.kind} as a value`);
    default: {
      const exhaustive: never = expr;
      return exhaustive;
    }
  }
}

/** `meta random OP k` or `meta random & (2^b - 1) OP k`, the form iptables-nft gives
 * `-m statistic --mode random --probability p` (xt_statistic translation): the probability that
 * it holds for a uniform 32-bit random word (nft_meta.c NFT_META_PRANDOM, get_random_u32). */
export function randomProbability(rel: Relational): number | undefined {
  let left = rel.left;
  let mask = 0xffffffffn;
  if (left.kind === 'binop' && left.op === '&' && left.right.kind === 'literal') {
    const m = literalValue(left.right);
    if (typeof m !== 'bigint') return undefined;
    mask = m;
    left = left.left;
  }
  if (left.kind !== 'meta' || left.key !== 'random' || rel.right.kind !== 'literal') return undefined;
  const bits = mask.toString(2).length;
  if (mask !== (1n << BigInt(bits)) - 1n) return undefined;
  const k = literalValue(rel.right);
  if (typeof k !== 'bigint') return undefined;
  const size = 1n << BigInt(bits);
  const clamp = (n: bigint): number => Number(n < 0n ? 0n : n > size ? size : n);
  const below = clamp(k); // values < k
  const atMost = clamp(k + 1n); // values <= k
  const total = Number(size);
  const counts: Record<Relational['op'], number> = {
    '<': below,
    '<=': atMost,
    '>': total - atMost,
    '>=': total - below,
    '==': atMost - below,
    implicit: atMost - below,
    '!=': total - (atMost - below),
  };
  return counts[rel.op] / total;
}

/** Whether the packet satisfies a match statement's relational expression. */
export function matchRelational(rel: Relational, ctx: SimContext): boolean {
  if (ctx.family === 'ip6' && isAddrtypeMatch(rel) && isIptablesRule(ctx)) return matchAddrtype6(rel, ctx);
  const p = randomProbability(rel);
  if (p !== undefined) {
    if (p <= 0 || p >= 1) return p >= 1;
    return ctx.choose([p, 1 - p]) === 0;
  }
  const right = rel.right;
  const negated = rel.op === '!=';
  const left = right.kind === 'set' || right.kind === 'set-ref' ? lookupKey(right, rel.left, ctx) : evaluateExpr(rel.left, ctx);
  if (left === MISSES) return negated;
  if (left === undefined) return false;
  switch (right.kind) {
    case 'set':
    case 'set-ref': {
      if (rel.op !== 'implicit' && rel.op !== '==' && rel.op !== '!=') throw new NotModelled(`operator ${rel.op} with a set`);
      // A lookup runs the stateful statements of the element it finds, unless inverted
      // (nft_lookup_eval: an inverted lookup that finds one breaks first).
      const element = lookupElement(right, left, rel.left, ctx);
      if (element === undefined) return negated;
      return !negated && passesElementStatements(element, right, ctx);
    }
    case 'flag-list': {
      let mask = 0n;
      for (const item of right.items) {
        const v = evaluateExpr(item, ctx);
        if (typeof v !== 'bigint') throw new NotModelled('flag list of non-flags');
        mask |= v;
      }
      if (typeof left !== 'bigint') return false;
      // Without an operator a comma list tests any of the bits (`ct state established,related`
      // is `ct state & (established|related) != 0`); with `==` or `!=` nft compares the whole
      // value (`ct state != new,related` is `cmp neq reg 0x0000000c`, nft --debug=netlink 1.0.6).
      if (rel.op === 'implicit') return (left & mask) !== 0n;
      return compare(left, mask, rel.op, right);
    }
    case 'prefix':
    case 'range':
      if (rel.op !== 'implicit' && rel.op !== '==' && rel.op !== '!=') throw new NotModelled(`operator ${rel.op} with a ${right.kind}`);
      return matchesKey(left, right, rel.left, ctx) !== negated;
    default: {
      // `fib … oif exists` / `missing` (NFTA_FIB_F_PRESENT): whether the lookup found an interface.
      if (rel.left.kind === 'fib' && right.kind === 'literal' && (right.text === 'exists' || right.text === 'missing')) {
        const present = left !== 0n && left !== '';
        return (present === (right.text === 'exists')) !== negated;
      }
      const value = evaluateExpr(right, ctx);
      if (value === undefined) return false;
      if (rel.op === 'implicit' && right.kind === 'literal' && right.dtype && isBitmaskType(right.dtype) && typeof left === 'bigint' && typeof value === 'bigint') {
        return (left & value) !== 0n;
      }
      return compare(left, value, rel.op, right);
    }
  }
}

function compare(left: RtValue, right: RtValue, op: Relational['op'], rightExpr: Expr): boolean {
  if (op === 'implicit' || op === '==') return isEqual(left, right, rightExpr);
  if (op === '!=') return !isEqual(left, right, rightExpr);
  if (typeof left !== 'bigint' || typeof right !== 'bigint') throw new NotModelled(`operator ${op} on non-integers`);
  switch (op) {
    case '<':
      return left < right;
    case '>':
      return left > right;
    case '<=':
      return left <= right;
    case '>=':
      return left >= right;
    default: {
      const exhaustive: never = op;
      return exhaustive;
    }
  }
}

export function isEqual(left: RtValue, right: RtValue, rightExpr?: Expr): boolean {
  if (typeof left === 'string' && typeof right === 'string') {
    // `iifname "eth*"` compares the name's prefix (nft turns a trailing * into a prefix match,
    // src/evaluate.c expr_evaluate_string); `\*` is a literal star.
    if (right.endsWith('*') && !right.endsWith('\\*') && rightExpr?.kind === 'literal') return left.startsWith(right.slice(0, -1));
    return left === right.replace(/\\\*$/, '*');
  }
  if (typeof left === 'bigint' && typeof right === 'bigint') return left === right;
  if (Array.isArray(left) && Array.isArray(right)) return left.length === right.length && left.every((v, i) => isEqual(v, right[i]!));
  // An interface index other than "none" (0) against a name: nftsim knows names, not indexes.
  if ((typeof left === 'string' && right !== 0n) || (typeof right === 'string' && left !== 0n)) {
    throw new NotModelled('interface index compared with an interface name');
  }
  return false;
}

/** Whether a value matches one set key: a value, prefix, range, concatenation of those, or `*`. */
export function matchesKey(value: RtValue, key: Expr, lhs: Expr | undefined, ctx: SimContext): boolean {
  switch (key.kind) {
    case 'wildcard':
      return true;
    case 'element':
      return matchesKey(value, key.key, lhs, ctx);
    case 'prefix': {
      if (typeof value !== 'bigint') return false;
      const base = evaluateExpr(key.expr, ctx);
      if (typeof base !== 'bigint') return false;
      const bits = prefixBits(key.expr, lhs);
      const mask = prefixMask(bits, key.length);
      return (value & mask) === (base & mask);
    }
    case 'range': {
      const low = evaluateExpr(key.low, ctx);
      const high = evaluateExpr(key.high, ctx);
      if (typeof value !== 'bigint' || typeof low !== 'bigint' || typeof high !== 'bigint') return false;
      return low <= value && value <= high;
    }
    case 'concat': {
      if (!Array.isArray(value)) return false;
      // No kernel element has other parts than its set's key: the input lost some (nft 1.0.6 -j
      // lists `{"concat": ["198.51.100.20"]}` for an address . port element).
      if (value.length !== key.parts.length) throw new NotModelled(`an element of ${key.parts.length} part(s) for a key of ${value.length}`);
      const lhsParts = lhs?.kind === 'concat' ? lhs.parts : undefined;
      return key.parts.every((part, i) => matchesKey(value[i]!, part, lhsParts?.[i], ctx));
    }
    default: {
      const v = evaluateExpr(key, ctx);
      return v !== undefined && isEqual(value, v, key);
    }
  }
}

export function prefixBits(base: Expr, lhs: Expr | undefined): number {
  if (base.kind === 'literal' && base.value?.type === 'ipv4') return familyBits('ip');
  if (base.kind === 'literal' && base.value?.type === 'ipv6') return familyBits('ip6');
  return (lhs && datatypeOf(lhs)?.bits) || 32;
}

/** The sets the table's `meter` statements make (nft lists them in the rule alone): dynamic,
 * of the meter's key and size. */
const metersOf = memoByObject((table: Table): ReadonlyMap<string, NamedSet> => {
  const meters = new Map<string, NamedSet>();
  for (const chain of table.chains) {
    for (const rule of chain.rules) {
      for (const stmt of rule.stmts) {
        if (stmt.kind !== 'set-op' || !stmt.meter || meters.has(stmt.set)) continue;
        const set: NamedSet = { kind: 'set', span: stmt.span, isMap: false, name: stmt.set, key: { kind: 'typeof', expr: stmt.element.key }, flags: ['dynamic'], stmts: [] };
        meters.set(stmt.set, stmt.meter.size === undefined ? set : { ...set, size: stmt.meter.size });
      }
    }
  }
  return meters;
});

/** The named set or map `name` of the table being evaluated (a meter's among them). */
export function namedSet(name: string, ctx: SimContext): NamedSet {
  const set = ctx.table.sets.find((s) => s.name === name) ?? metersOf(ctx.table).get(name);
  if (!set) throw new NotModelled(`set @${name} is not defined in table ${ctx.table.family} ${ctx.table.name}`);
  return set;
}
