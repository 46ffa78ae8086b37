// Expressions of the model evaluated against the packet: header fields, meta, conntrack, fib,
// numgen, bitwise operations, and the relational tests of match statements (values, prefixes,
// ranges, flag lists, sets, maps, concatenations).

import type { ElementExpr, Expr, Literal, NamedSet, Relational, SetLiteral, SetRef } from '../model/ast.js';
import { datatypeOf, isBitmaskType } from '../model/datatypes.js';
import { familyBits, parseAddress, prefixMask, type Address } from './address.js';
import { localInterfaceOf, lookupRoute } from './host.js';
import { hasPorts, L4_NUMBERS } from './packet.js';
import { NotModelled, type SimContext } from './sim-context.js';

/** A runtime value: an integer (addresses, ports, marks, flags), a string (interface names) or
 * the parts of a concatenation. `undefined` is the kernel's NFT_BREAK: the expression has no
 * value for this packet (a tcp field of a udp packet), so the rule does not match. */
export type RtValue = bigint | string | readonly RtValue[];

const CT_STATE_BITS = { invalid: 0x01n, established: 0x02n, related: 0x04n, new: 0x08n, untracked: 0x40n } as const;
// ct_status bits (include/uapi/linux/netfilter/nf_conntrack_common.h IPS_*).
const IPS_SRC_NAT = 0x10;
const IPS_DST_NAT = 0x20;
export const CT_STATUS = { snat: IPS_SRC_NAT, dnat: IPS_DST_NAT } as const;

function addressValue(a: Address): bigint {
  return a.n;
}

export function literalValue(lit: Literal): RtValue {
  const v = lit.value;
  if (!v) {
    if (lit.dtype === 'ifname' || lit.dtype === 'string' || lit.dtype === 'iface_index') return lit.text;
    throw new NotModelled(`value '${lit.text}' of type ${lit.dtype ?? 'unknown'}`);
  }
  switch (v.type) {
    case 'integer':
      return BigInt(v.n);
    case 'bigint':
      return BigInt(`0x${v.hex}`);
    case 'ipv4':
    case 'ipv6': {
      const a = parseAddress(v.addr);
      if (!a) throw new NotModelled(`address '${v.addr}'`);
      return a.n;
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

function payloadValue(protocol: string, field: string, ctx: SimContext): RtValue | undefined {
  const p = ctx.pkt;
  const num = (n: number | string | undefined): bigint | undefined => {
    if (n === undefined) return undefined;
    if (typeof n === 'string') throw new NotModelled(`${protocol} ${field} after NAT picked a random port (${n})`);
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
        case 'length':
          return BigInt(p.length);
        case 'version':
          return protocol === 'ip' ? 4n : 6n;
        case 'ecn':
          return 0n;
        default:
          throw new NotModelled(`${protocol} ${field}`);
      }
    }
    case 'tcp':
    case 'udp':
    case 'udplite':
    case 'sctp':
    case 'dccp':
    case 'th': {
      // nft adds the dependency `meta l4proto <protocol>` to a transport field (src/payload.c
      // payload_gen_dependency); `th` only needs a transport header with ports.
      if (protocol === 'th' ? !hasPorts(p.l4proto) : p.l4proto !== L4_NUMBERS[protocol]) return undefined;
      if (field === 'sport') return num(p.sport);
      if (field === 'dport') return num(p.dport);
      if (protocol === 'tcp' && field === 'flags') return BigInt(p.tcpFlags);
      throw new NotModelled(`${protocol} ${field}`);
    }
    case 'icmp':
    case 'icmpv6': {
      if (p.l4proto !== L4_NUMBERS[protocol]) return undefined;
      if (field === 'type') return num(p.icmpType);
      if (field === 'code') return num(p.icmpCode);
      throw new NotModelled(`${protocol} ${field}`);
    }
    default:
      throw new NotModelled(`${protocol} ${field}`);
  }
}

function isLocal(ctx: SimContext, a: Address): boolean {
  return localInterfaceOf(ctx.host, a) !== undefined;
}

function metaValue(key: string, ctx: SimContext): RtValue | undefined {
  const p = ctx.pkt;
  switch (key) {
    case 'mark':
      return BigInt(p.mark);
    case 'iif':
      return ctx.iif ?? 0n;
    case 'oif':
      return ctx.oif ?? 0n;
    // No device is an empty name (nft_meta.c nft_meta_store_ifname).
    case 'iifname':
      return ctx.iif ?? '';
    case 'oifname':
      return ctx.oif ?? '';
    case 'l4proto':
      return BigInt(p.l4proto);
    case 'nfproto':
      return ctx.family === 'ip' ? 2n : 10n;
    case 'protocol':
      return ctx.family === 'ip' ? 0x0800n : 0x86ddn;
    case 'length':
      return BigInt(p.length);
    case 'pkttype':
      return BigInt(packetType(ctx));
    case 'iiftype':
    case 'oiftype': {
      const dev = key === 'iiftype' ? ctx.iif : ctx.oif;
      if (dev === undefined) return 0n;
      return dev === 'lo' ? 0x304n : 1n;
    }
    case 'skuid':
    case 'skgid': {
      const id = key === 'skuid' ? p.skuid : p.skgid;
      // Only a locally generated packet has a socket (nft_meta.c: no sk → NFT_BREAK).
      if (ctx.iif !== undefined || id === undefined) return undefined;
      return BigInt(id);
    }
    case 'nftrace':
      return 0n;
    default:
      throw new NotModelled(`meta ${key}`);
  }
}

/** PACKET_HOST 0, BROADCAST 1, MULTICAST 2 (include/uapi/linux/if_packet.h). */
function packetType(ctx: SimContext): number {
  const type = addressType(ctx, ctx.pkt.dst);
  return type === 3 ? 1 : type === 5 ? 2 : 0;
}

/** RTN_* (include/uapi/linux/rtnetlink.h): unicast 1, local 2, broadcast 3, multicast 5,
 * unreachable 7. */
function addressType(ctx: SimContext, a: Address): number {
  if (isLocal(ctx, a)) return 2;
  if (a.family === 'ip') {
    if (a.n === 0xffffffffn) return 3;
    if (a.n >> 28n === 0xen) return 5;
    for (const iface of ctx.host.interfaces) {
      for (const c of iface.addresses) {
        if (c.family !== 'ip' || c.prefix >= 31) continue;
        const mask = prefixMask(32, c.prefix);
        if ((a.n & mask) === (c.n & mask) && (a.n | mask) === 0xffffffffn) return 3;
      }
    }
  } else if (a.n >> 120n === 0xffn) return 5;
  return lookupRoute(ctx.host, a) ? 1 : 7;
}

function ctValue(expr: Extract<Expr, { kind: 'ct' }>, ctx: SimContext): RtValue | undefined {
  const ct = ctx.ct;
  const tracked = ctx.ctAttached && ct.state !== 'invalid' && ct.state !== 'untracked';
  if (expr.key === 'state') {
    // Before conntrack ran there is no entry: state reads invalid (nft_ct.c nft_ct_get_eval).
    if (!ctx.ctAttached) return ct.state === 'untracked' ? CT_STATE_BITS.untracked : CT_STATE_BITS.invalid;
    return CT_STATE_BITS[ct.state];
  }
  if (!tracked) return undefined;
  const original = ct.original;
  switch (expr.key) {
    case 'mark':
      return BigInt(ct.mark);
    case 'status':
      return BigInt(ct.status);
    case 'direction':
      return BigInt(ct.direction);
    case 'zone':
      return BigInt(ct.zone);
    case 'l3proto':
      return ctx.family === 'ip' ? 2n : 10n;
    case 'protocol':
      return BigInt(ctx.pkt.l4proto);
    case 'saddr':
    case 'ip saddr':
    case 'daddr':
    case 'ip daddr':
    case 'proto-src':
    case 'proto-dst': {
      if (expr.dir === 'reply') throw new NotModelled(`ct reply ${expr.key}`);
      if (expr.key.endsWith('saddr')) return original.src.n;
      if (expr.key.endsWith('daddr')) return original.dst.n;
      const port = expr.key === 'proto-src' ? original.sport : original.dport;
      return port === undefined ? undefined : BigInt(port);
    }
    default:
      throw new NotModelled(`ct ${expr.key}`);
  }
}

function fibValue(expr: Extract<Expr, { kind: 'fib' }>, ctx: SimContext): RtValue | undefined {
  const flags = expr.flags;
  const address = flags.includes('saddr') ? ctx.pkt.src : ctx.pkt.dst;
  if (flags.includes('mark')) throw new NotModelled('fib with mark (policy routing)');
  switch (expr.result) {
    case 'type':
      if (flags.includes('iif') || flags.includes('oif')) {
        const dev = flags.includes('iif') ? ctx.iif : ctx.oif;
        const local = localInterfaceOf(ctx.host, address);
        if (local) return local.name === dev || local.name === 'lo' ? 2n : 1n;
      }
      return BigInt(addressType(ctx, address));
    case 'oif':
    case 'oifname': {
      const local = localInterfaceOf(ctx.host, address);
      const dev = local ? local.name : lookupRoute(ctx.host, address)?.dev;
      // `fib saddr . iif oif`: the result counts only when it is the input interface
      // (nft_fib4.c: NFTA_FIB_F_IIF compares with nft_in).
      if (dev === undefined || (flags.includes('iif') && dev !== ctx.iif && !local)) return expr.result === 'oif' ? 0n : '';
      return dev;
    }
    default:
      throw new NotModelled(`fib ${expr.result}`);
  }
}

/** The value of `expr` for the packet, undefined for NFT_BREAK. */
export function evaluateExpr(expr: Expr, ctx: SimContext): RtValue | undefined {
  switch (expr.kind) {
    case 'literal':
      return literalValue(expr);
    case 'payload':
      if (expr.inner) throw new NotModelled(`${expr.inner} ${expr.protocol} ${expr.field}`);
      return payloadValue(expr.protocol, expr.field, ctx);
    case 'meta':
      if (expr.key === 'random') throw new NotModelled('meta random outside a comparison nftsim can split into branches');
      return metaValue(expr.key, ctx);
    case 'ct':
      return ctValue(expr, ctx);
    case 'fib':
      return fibValue(expr, ctx);
    case 'numgen': {
      if (expr.mode !== 'random') throw new NotModelled('numgen inc (a counter shared by all packets)');
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
      if (expr.vmap) throw new NotModelled('verdict map used as a value');
      const key = evaluateExpr(expr.key, ctx);
      if (key === undefined) return undefined;
      const element = lookupElement(expr.map, key, expr.key, ctx);
      if (!element?.data) return undefined;
      return evaluateExpr(element.data, ctx);
    }
    case 'raw-payload':
    case 'exthdr':
    case 'tcp-option':
    case 'ip-option':
    case 'sctp-chunk':
    case 'rt':
    case 'socket':
    case 'osf':
    case 'ipsec':
    case 'hash':
      throw new NotModelled(`${expr.kind} expression`);
    case 'relational':
    case 'prefix':
    case 'range':
    case 'flag-list':
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
function randomProbability(rel: Relational): number | undefined {
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
  const p = randomProbability(rel);
  if (p !== undefined) {
    if (p <= 0 || p >= 1) return p >= 1;
    return ctx.choose([p, 1 - p]) === 0;
  }
  const left = evaluateExpr(rel.left, ctx);
  if (left === undefined) return false;
  const right = rel.right;
  const negated = rel.op === '!=';
  switch (right.kind) {
    case 'set':
    case 'set-ref': {
      if (rel.op !== 'implicit' && rel.op !== '==' && rel.op !== '!=') throw new NotModelled(`operator ${rel.op} with a set`);
      return (lookupElement(right, left, rel.left, ctx) !== undefined) !== negated;
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

function isEqual(left: RtValue, right: RtValue, rightExpr?: Expr): boolean {
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
function matchesKey(value: RtValue, key: Expr, lhs: Expr | undefined, ctx: SimContext): boolean {
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
      if (!Array.isArray(value) || value.length !== key.parts.length) return false;
      const lhsParts = lhs?.kind === 'concat' ? lhs.parts : undefined;
      return key.parts.every((part, i) => matchesKey(value[i]!, part, lhsParts?.[i], ctx));
    }
    default: {
      const v = evaluateExpr(key, ctx);
      return v !== undefined && isEqual(value, v, key);
    }
  }
}

function prefixBits(base: Expr, lhs: Expr | undefined): number {
  if (base.kind === 'literal' && base.value?.type === 'ipv4') return familyBits('ip');
  if (base.kind === 'literal' && base.value?.type === 'ipv6') return familyBits('ip6');
  return (lhs && datatypeOf(lhs)?.bits) || 32;
}

/** The named set or map `name` of the table being evaluated. */
export function namedSet(name: string, ctx: SimContext): NamedSet {
  const set = ctx.table.sets.find((s) => s.name === name);
  if (!set) throw new NotModelled(`set @${name} is not defined in table ${ctx.table.family} ${ctx.table.name}`);
  return set;
}

/** The first element of a set or map whose key matches `value` (elements of interval sets do not
 * overlap, so the first is the one), including elements added during the run. */
export function lookupElement(set: SetLiteral | SetRef, value: RtValue, lhs: Expr, ctx: SimContext): ElementExpr | undefined {
  if (set.kind === 'set') return set.elements.find((e) => matchesKey(value, e.key, lhs, ctx));
  const named = namedSet(set.name, ctx);
  const found = (named.elements ?? []).find((e) => matchesKey(value, e.key, lhs, ctx));
  if (found) return found;
  const added = ctx.dynamicSets.get(named) ?? [];
  return added.some((v) => isEqual(value, v as RtValue)) ? { kind: 'element', span: set.span, key: set } : undefined;
}
