// The packet's fields as compiled rules read them (compile-rule.ts, and the chain indexes'
// probes): an integer field of at most 32 bits is named by a number (a field code and its
// arguments), read as a JS number, with -1 for NFT_BREAK. evaluateExpr (evaluate-expr.ts) is the
// reference: for every expression fieldRefOf accepts, readField gives the same integer (or breaks,
// or throws the same NotModelled) where evaluateExpr does, and applyOp the same for the operations
// on it; test/sim/compile-rule.test.ts compares the two.

import type { Expr } from '../model/ast.js';
import { datatypeOf } from '../model/datatypes.js';
import { CT_STATE_BITS } from './conntrack-table.js';
import { constantOf, fibFlagBits, fibTypeOf } from './evaluate-expr.js';
import { readHeaderField } from './packet-bytes.js';
import { hasPorts, L4_NUMBERS } from './packet.js';
import { ctMarkOf, hasConntrackEntry, RandomPick, skbLength, stateBeforeConntrack, templateKey, type SimContext } from './sim-context.js';

/** Field codes. Arguments: a protocol number for transport and ICMP fields (0: any with ports,
 * nft's `th`), the address family (4 or 6) for IP header fields, fib's flags (fibFlagBits),
 * numgen's modulus and offset. */
const FIELD = {
  saddr4: 1,
  daddr4: 2,
  ipProtocol: 3,
  ipTtl: 4,
  ipDscp: 5,
  sport: 6,
  dport: 7,
  tcpFlags: 8,
  icmpType: 9,
  icmpCode: 10,
  mark: 11,
  l4proto: 12,
  length: 13,
  nfproto: 14,
  protocol: 15,
  pkttype: 16,
  skuid: 17,
  skgid: 18,
  nftrace: 19,
  priority: 20,
  ctState: 21,
  ctMark: 22,
  ctStatus: 23,
  ctDirection: 24,
  ctZone: 25,
  fibType: 26,
  numgen: 27,
  constant: 28,
} as const;

/** A field and its arguments. */
export interface FieldRef {
  readonly field: number;
  readonly arg: number;
  readonly arg2: number;
}

/** A transport port as payloadValue reads it: a range NAT left is not a number. */
function portOf(n: number | string | undefined, protocol: number, field: string): number {
  if (n === undefined) return -1;
  if (typeof n === 'string') throw new RandomPick(`${PORT_PROTOCOL_NAMES[protocol] ?? 'th'} ${field} after NAT picked a random port (${n})`);
  return n;
}

const PORT_PROTOCOL_NAMES: Readonly<Record<number, string>> = { 6: 'tcp', 17: 'udp', 33: 'dccp', 132: 'sctp', 136: 'udplite' };

function isOtherTransport(l4proto: number, protocol: number): boolean {
  return protocol === 0 ? !hasPorts(l4proto) : l4proto !== protocol;
}

/** A port field of another protocol's packet: -1 (the dependency fails), but for `th` the
 * transport header's word there (`th` has no dependency, packet-bytes.ts). */
function transportWord(ctx: SimContext, protocol: number, field: 'sport' | 'dport'): number {
  if (protocol !== 0) return -1;
  const word = readHeaderField('th', field, ctx);
  return word === undefined ? -1 : Number(word);
}

// The IPv4 addresses as numbers, converted once per address object (a packet's addresses are
// replaced, never changed, so the object says whether the number is still the right one).
let lastAddress: object | undefined;
let lastNumber = 0;

function addressNumber(address: { readonly n: bigint }): number {
  if (address !== lastAddress) {
    lastAddress = address;
    lastNumber = Number(address.n);
  }
  return lastNumber;
}

// numgen's branch weights, one array per modulus (a chooser only reads them).
const weightsByModulus = new Map<number, readonly number[]>();

function uniformWeights(mod: number): readonly number[] {
  let weights = weightsByModulus.get(mod);
  if (!weights) {
    weights = new Array<number>(mod).fill(1 / mod);
    if (weightsByModulus.size < 256) weightsByModulus.set(mod, weights);
  }
  return weights;
}

/** The field's value for the packet: an integer below 2^32, -1 for NFT_BREAK. */
export function readField(ctx: SimContext, field: number, arg: number, arg2: number): number {
  const p = ctx.pkt;
  switch (field) {
    case FIELD.saddr4:
      return ctx.family !== 'ip' ? -1 : addressNumber(p.src);
    case FIELD.daddr4:
      return ctx.family !== 'ip' ? -1 : addressNumber(p.dst);
    case FIELD.ipProtocol:
      return (arg === 4 ? ctx.family !== 'ip' : ctx.family !== 'ip6') ? -1 : p.l4proto;
    case FIELD.ipTtl:
      return (arg === 4 ? ctx.family !== 'ip' : ctx.family !== 'ip6') ? -1 : p.ttl;
    case FIELD.ipDscp:
      return (arg === 4 ? ctx.family !== 'ip' : ctx.family !== 'ip6') ? -1 : p.dscp;
    case FIELD.sport:
      return isOtherTransport(p.l4proto, arg) ? transportWord(ctx, arg, 'sport') : portOf(p.sport, arg, 'sport');
    case FIELD.dport:
      return isOtherTransport(p.l4proto, arg) ? transportWord(ctx, arg, 'dport') : portOf(p.dport, arg, 'dport');
    case FIELD.tcpFlags:
      return p.l4proto !== 6 ? -1 : p.tcpFlags;
    case FIELD.icmpType:
      return p.l4proto !== arg || p.icmpType === undefined ? -1 : p.icmpType;
    case FIELD.icmpCode:
      return p.l4proto !== arg || p.icmpCode === undefined ? -1 : p.icmpCode;
    case FIELD.mark:
      return p.mark;
    case FIELD.l4proto:
      return p.l4proto;
    case FIELD.length:
      return skbLength(ctx);
    case FIELD.nfproto:
      return ctx.family === 'ip' ? 2 : 10;
    case FIELD.protocol:
      return ctx.family === 'ip' ? 0x0800 : 0x86dd;
    case FIELD.pkttype:
      return p.pkttype;
    case FIELD.skuid:
      return ctx.iif !== undefined || p.skuid === undefined ? -1 : p.skuid;
    case FIELD.skgid:
      return ctx.iif !== undefined || p.skgid === undefined ? -1 : p.skgid;
    case FIELD.nftrace:
      return p.nftrace ?? 0;
    case FIELD.priority:
      return p.priority ?? 0;
    case FIELD.ctState:
      return CT_STATE_BITS[ctx.ctAttached ? ctx.ct.state : stateBeforeConntrack(ctx)];
    case FIELD.ctMark:
      return ctMarkOf(ctx) ?? -1;
    case FIELD.ctStatus:
      return hasConntrackEntry(ctx) ? ctx.ct.status | ctx.natDone : (templateKey(ctx, 'status') ?? -1);
    case FIELD.ctDirection:
      return hasConntrackEntry(ctx) ? ctx.ct.direction : (templateKey(ctx, 'direction') ?? -1);
    case FIELD.ctZone:
      return hasConntrackEntry(ctx) ? ctx.ct.zone : (templateKey(ctx, 'zone') ?? -1);
    case FIELD.fibType:
      return fibTypeOf(arg, ctx);
    case FIELD.numgen:
      return ctx.choose(uniformWeights(arg)) + arg2;
    case FIELD.constant:
      return arg;
    default:
      throw new Error(`unknown field code ${field}`);
  }
}

const U32_LIMIT = 0x100000000n;

export function isU32(n: bigint): boolean {
  return n >= 0n && n < U32_LIMIT;
}

const field = (code: number, arg = 0, arg2 = 0): FieldRef => ({ field: code, arg, arg2 });

/** The field an expression reads, when it is one readField reads as evaluateExpr would. */
export function fieldRefOf(expr: Expr): FieldRef | undefined {
  switch (expr.kind) {
    case 'literal': {
      const value = constantOf(expr);
      return typeof value === 'bigint' && isU32(value) ? field(FIELD.constant, Number(value)) : undefined;
    }
    case 'payload':
      return expr.inner ? undefined : payloadField(expr.protocol, expr.field);
    case 'meta':
      return META_FIELDS[expr.key] === undefined ? undefined : field(META_FIELDS[expr.key]!);
    case 'ct':
      return CT_FIELDS[expr.key] === undefined ? undefined : field(CT_FIELDS[expr.key]!);
    case 'fib':
      return expr.result === 'type' && !expr.flags.includes('mark') ? field(FIELD.fibType, fibFlagBits(expr.flags)) : undefined;
    case 'numgen':
      // A value from 0 + offset to mod - 1 + offset, below 2^32 (`mod 0` is left to the interpreter).
      return expr.mod >= 1 && (expr.offset ?? 0) >= 0 && (expr.offset ?? 0) + expr.mod <= 0xffffffff
        ? field(FIELD.numgen, expr.mod, expr.offset ?? 0)
        : undefined;
    default:
      return undefined;
  }
}

const META_FIELDS: Readonly<Record<string, number>> = {
  mark: FIELD.mark,
  l4proto: FIELD.l4proto,
  length: FIELD.length,
  nfproto: FIELD.nfproto,
  protocol: FIELD.protocol,
  pkttype: FIELD.pkttype,
  skuid: FIELD.skuid,
  skgid: FIELD.skgid,
  nftrace: FIELD.nftrace,
  priority: FIELD.priority,
};

const CT_FIELDS: Readonly<Record<string, number>> = {
  state: FIELD.ctState,
  mark: FIELD.ctMark,
  status: FIELD.ctStatus,
  direction: FIELD.ctDirection,
  zone: FIELD.ctZone,
};

function payloadField(protocol: string, name: string): FieldRef | undefined {
  switch (protocol) {
    case 'ip':
    case 'ip6': {
      const family = protocol === 'ip' ? 4 : 6;
      if (name === 'saddr' || name === 'daddr') return protocol === 'ip' ? field(name === 'saddr' ? FIELD.saddr4 : FIELD.daddr4) : undefined;
      if (name === 'protocol' || name === 'nexthdr') return field(FIELD.ipProtocol, family);
      if (name === 'ttl' || name === 'hoplimit') return field(FIELD.ipTtl, family);
      if (name === 'dscp') return field(FIELD.ipDscp, family);
      return undefined;
    }
    case 'tcp':
    case 'udp':
    case 'udplite':
    case 'sctp':
    case 'dccp':
    case 'th': {
      const number = protocol === 'th' ? 0 : L4_NUMBERS[protocol]!;
      if (name === 'sport') return field(FIELD.sport, number);
      if (name === 'dport') return field(FIELD.dport, number);
      if (protocol === 'tcp' && name === 'flags') return field(FIELD.tcpFlags);
      return undefined;
    }
    case 'icmp':
    case 'icmpv6':
      if (name === 'type') return field(FIELD.icmpType, L4_NUMBERS[protocol]);
      if (name === 'code') return field(FIELD.icmpCode, L4_NUMBERS[protocol]);
      return undefined;
    default:
      return undefined;
  }
}

/** Operations on a field's value: evaluateExpr's binop with a constant right operand, for the
 * widths where the result stays a plain u32 operation (`&` always; `|` and `^` of 32-bit types,
 * whose cut to the width changes nothing). */
export const OP = { none: 0, and: 1, or: 2, xor: 3 } as const;

/** A field, then up to two operations with constants: `meta mark`, `meta mark & 0x4000`,
 * iptables' `--set-xmark` (`mark & ~M ^ V`). */
export interface U32Expr {
  readonly ref: FieldRef;
  readonly ops: readonly { readonly op: number; readonly value: number }[];
}

const MAX_OPS = 2;

export function u32ExprOf(expr: Expr): U32Expr | undefined {
  if (expr.kind !== 'binop') {
    const ref = fieldRefOf(expr);
    return ref && { ref, ops: [] };
  }
  if (expr.right.kind !== 'literal' || expr.op === '<<' || expr.op === '>>') return undefined;
  const right = constantOf(expr.right);
  if (typeof right !== 'bigint' || !isU32(right)) return undefined;
  if (expr.op !== '&' && (datatypeOf(expr.left)?.bits ?? 32) < 32) return undefined;
  const left = u32ExprOf(expr.left);
  if (!left || left.ops.length >= MAX_OPS) return undefined;
  return { ref: left.ref, ops: [...left.ops, { op: expr.op === '&' ? OP.and : expr.op === '|' ? OP.or : OP.xor, value: Number(right) }] };
}

/** Applies one operation: the value is below 2^32, and so is the result; the operand is a
 * 32-bit constant, unsigned or (as compiled code keeps it) its int32 form. */
export function applyOp(op: number, value: number, operand: number): number {
  switch (op) {
    case OP.and:
      return (value & operand) >>> 0;
    case OP.or:
      return (value | operand) >>> 0;
    case OP.xor:
      return (value ^ operand) >>> 0;
    default:
      return value;
  }
}
