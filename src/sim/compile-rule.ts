// Rules compiled into numbers, as packets first meet them (evaluate-chain.ts, with indexes on):
// each statement becomes one instruction in the code arena of the whole ruleset (Int32Arrays,
// which the garbage collector does not scan), and runCompiledRule runs them. A kube-proxy ruleset
// has hundreds of thousands of rules, most of them met by a few packets only, and cold in memory
// when they are: what a compiled rule keeps must be small and must not be objects (a closure per
// statement added more garbage collection than it saved), and compiling reads all that a packet
// will need of a rule (its location, the plan of its NAT, the target of its jump), so that running
// it reads the rule no more: by the time a packet first matches it or takes its jump, the rule is
// cold in memory again.
//
// Compiled: matches of an integer field of at most 32 bits (header fields, meta and ct keys, fib
// types, with `&`/`|`/`^` and constants) against constants, prefixes, ranges, flag lists and
// sets; verdicts; `meta mark set`; the random tests (`meta random`, iptables' statistic); the
// state test of iptables' conntrack match; verdict maps on such fields; NAT statements (what
// they read of the statement planned once, evaluate-stmt.ts planNat). A statement with no effect
// on the packet's way (counter, log, an iptables comment) has no instruction. Every other
// statement is an EVAL instruction: the interpreter (evaluate-stmt.ts) evaluates it, as it
// evaluates every statement with indexes off, the reference
// test/sim/compile-rule.test.ts checks the compiled rules against. An instruction does what the
// interpreter does for its statement, in its order: it breaks where evaluateExpr does, and throws
// NotModelled where it would.

import type { Expr, MatchStmt, Relational, Rule, SetLiteral, SetRef, Stmt, XtExtensionStmt } from '../model/ast.js';
import { isBitmaskType } from '../model/datatypes.js';
import { prefixMask } from './address.js';
import { constantOf, prefixBits, randomProbability } from './evaluate-expr.js';
import {
  evaluateStmt,
  isTest,
  NO_MATCH,
  PLAIN_RESULTS,
  planNat,
  reportNotModelled,
  resultOf,
  setUpNat,
  verdictResult,
  XT_CT_STATE_BITS,
  xtCtStateOf,
  type NatPlan,
  type RuleResult,
} from './evaluate-stmt.js';
import { isAddrtypeMatch } from './match-addrtype.js';
import { findAddedTo, findResolved, missesWhateverThePick, positionOf, resolveLookup, type ResolvedLookup } from './lookup-element.js';
import { passesElementStatements } from './dynset.js';
import { applyOp, fieldRefOf, isU32, OP, readField, u32ExprOf, type U32Expr } from './packet-field.js';
import type { Loc, TraceEvent } from './outcome.js';
import { currentRule, locOf, NotModelled, RandomPick, type SimContext } from './sim-context.js';

/** The code of every compiled rule of one ruleset, appended as rules are compiled. A rule's code
 * opens with the number of its location in `locs`, so that its trace events share one Loc and
 * read nothing else of the rule, then what its last trace event was made for (HEADER).
 *
 * The code is written into chunks that never move, each rule's inside one chunk, and a rule's
 * offset says which (chunkOf, atOf). A single buffer grown by doubling copied all the code at each
 * growth, into pages the system had to fault in anew: at 10,000 kube-proxy services its growth to
 * 32 MB faulted in 9,800 pages during the bench's third pass, and at 50,000 its 64 MB set off a
 * major garbage collection in the second. */
export interface CodeArena {
  readonly chunks: Int32Array[];
  /** How much of the last chunk is written. */
  used: number;
  /** The locations of the compiled rules, by their header's number. */
  readonly locs: Loc[];
  /** For the rule of location number n: at 2n its last trace event, at 2n + 1 the result it was
   * made for (knownRuleEvent; evaluate-chain.ts shares the event with the next packet that makes
   * the same one). Side by side, so that finding it takes one read of this array. */
  readonly events: (TraceEvent | RuleResult | undefined)[];
  /** The results of JUMP instructions, by their operand, resolved when a packet first takes the
   * jump (one per verb and target chain: ChainIndex.jump and .goto). Resolving at compile time
   * made the target's index and result for every jump compiled, taken or not: a kube-proxy
   * service chain's random branches are compiled by the packets that pass them, and one takes
   * one of them. */
  readonly jumps: (RuleResult | undefined)[];
  /** The jump and goto statements of JUMP instructions, by their operand: what jumpAt resolves,
   * kept at compile time so that the first packet to take a jump does not read the rule again
   * (it is cold in memory by then: a tenth of a first pass went to reading rules again). */
  readonly jumpStmts: VerdictStmt[];
  /** The sets of LOOKUP and VMAP instructions, by their slot, resolved when first needed. */
  readonly sets: (ResolvedLookup | undefined)[];
  /** The plans of NAT instructions, by their operand, planned at compile time. */
  readonly nats: NatPlan[];
  /** The branch weights of CHOOSE instructions, by their operand: [p, 1 - p], one per
   * probability (`byProbability`), which a chooser only reads. */
  readonly weights: (readonly number[])[];
  readonly byProbability: Map<number, number>;
}

export function createCodeArena(): CodeArena {
  return { chunks: [new Int32Array(FIRST_CHUNK)], used: 0, locs: [], events: [], jumps: [], jumpStmts: [], sets: [], nats: [], weights: [], byProbability: new Map() };
}

// A rule's offset is its chunk's number above AT_BITS, its place in the chunk below. Offsets are
// kept as offset + 1 in an Int32Array (HookIndex.compiled): chunk numbers stay below MAX_CHUNKS.
const AT_BITS = 22;
const AT_MASK = (1 << AT_BITS) - 1;
const MAX_CHUNKS = (1 << (31 - AT_BITS)) - 1;
// Chunks grow from a small first one (most rulesets are small) to LARGEST_CHUNK numbers.
const FIRST_CHUNK = 4096;
const LARGEST_CHUNK = 1 << 18;

/** The chunk holding the code at `offset`; the code starts at atOf(offset) in it. */
function chunkOf(arena: CodeArena, offset: number): Int32Array {
  return arena.chunks[offset >>> AT_BITS]!;
}

function atOf(offset: number): number {
  return offset & AT_MASK;
}

/** Writes `code` into the arena; its offset, or -1 when it fits no chunk (more code than a
 * chunk holds in one rule, or more than MAX_CHUNKS chunks in all). */
function append(arena: CodeArena, code: readonly number[]): number {
  const chunks = arena.chunks;
  let chunk = chunks[chunks.length - 1]!;
  if (arena.used + code.length > chunk.length) {
    const size = Math.max(Math.min(chunk.length * 2, LARGEST_CHUNK), code.length);
    if (size > AT_MASK + 1 || chunks.length >= MAX_CHUNKS) return -1;
    chunk = new Int32Array(size);
    chunks.push(chunk);
    arena.used = 0;
  }
  const at = arena.used;
  for (let i = 0; i < code.length; i++) chunk[at + i] = code[i]!;
  arena.used += code.length;
  return ((chunks.length - 1) << AT_BITS) | at;
}

/** [location number, the mark its last trace event was made for (as an int32), the number of
 * that event's base chain entry (HookEntry.id; -1: none yet)]: before a rule's instructions. */
const HEADER = 3;

/** The number of the location in `locs` of the rule compiled at `start`: one object per rule,
 * made with its code (its span is in memory then, cold when the rule first matches), shared by
 * its events (a Loc is never changed once made). */
export function compiledLocId(arena: CodeArena, start: number): number {
  return chunkOf(arena, start)[atOf(start)]!;
}

/** The last trace event of the compiled rule at `start` (location number `id`) when it was made
 * for this mark, base chain entry and result: the entry settles the hook, family, table,
 * priority and order, the result (never changed once made) the verdict, and the rule the chain
 * and location, so the event is the same one. Found from the rule's header and one slot pair,
 * without reading the event, which is cold in memory when the packets meet many rules. */
export function knownRuleEvent(arena: CodeArena, start: number, id: number, mark: number, entryId: number, result: RuleResult): TraceEvent | undefined {
  const buf = chunkOf(arena, start);
  const at = atOf(start);
  if (buf[at + 1] !== (mark | 0) || buf[at + 2] !== entryId || arena.events[2 * id + 1] !== result) return undefined;
  return arena.events[2 * id] as TraceEvent;
}

/** Keeps `event` as the rule's last one, for knownRuleEvent. */
export function keepRuleEvent(arena: CodeArena, start: number, id: number, mark: number, entryId: number, result: RuleResult, event: TraceEvent): void {
  const buf = chunkOf(arena, start);
  const at = atOf(start);
  buf[at + 1] = mark;
  buf[at + 2] = entryId;
  arena.events[2 * id] = event;
  arena.events[2 * id + 1] = result;
}

function compiledLoc(arena: CodeArena, start: number): Loc {
  return arena.locs[compiledLocId(arena, start)]!;
}

// Instructions: the opcode, the statement's position in its rule (stmtAt: what the instruction
// reads of its statement when a packet first reaches it, and what runCompiledRule reports when it
// is not modelled), then the operands. Unsigned 32-bit operands (field arguments, constants) are
// kept as int32 and read back with `>>> 0`; the bit operations take them either way. A
// kube-proxy rule's code is 40 numbers or fewer, in 160 bytes: a third of what it took as
// doubles, and fewer cache lines for a packet to read.
const END = 0;
/** [TEST, k, field, arg, arg2, cmp, x, y]: a field compared. */
const TEST = 1;
/** [CHOOSE, k, w]: matches in a random branch of probability p, its weights [p, 1 - p] in the
 * arena's `weights` at w. */
const CHOOSE = 2;
/** [NEVER, k]: a random test that never holds. */
const NEVER = 3;
/** [CT_STATES, k, names, negated]: iptables' `-m conntrack --ctstate` (names: XT_CT_STATE_BITS). */
const CT_STATES = 4;
/** [RESULT, k, code]: a verdict without a target (RESULT_CODES). */
const RESULT = 5;
/** [JUMP, k, id]: a jump or goto, its result in the arena's `jumps`. */
const JUMP = 6;
/** [MARK_SET, k, field, arg, arg2, op1, c1, op2, c2, continues]: `meta mark set` (continues: as
 * iptables' MARK target, the rule goes on when the value breaks). */
const MARK_SET = 7;
/** [EVAL, k]: the interpreter evaluates the statement. */
const EVAL = 8;
/** [LOOKUP, k, negated, set, concat, n, (field, arg, arg2) × n]: `key @set` on fields (concat:
 * 1 for a concatenation of the n, 0 for one field); set: the arena's `sets` slot. */
const LOOKUP = 9;
/** [VMAP, k, set, concat, n, (field, arg, arg2) × n]: `key vmap …` on fields. */
const VMAP = 10;
/** [NAT, k, plan]: a NAT statement, its plan in the arena's `nats`. */
const NAT = 11;
/** [TEST_OPS, k, field, arg, arg2, op1, c1, op2, c2, cmp, x, y]: a field with its operations
 * (U32Expr) compared. */
const TEST_OPS = 12;

/** Comparisons of TEST and TEST_OPS: the value v against x (and y). */
const CMP = { eq: 1, ne: 2, lt: 3, gt: 4, le: 5, ge: 6, anyBit: 7, maskEq: 8, maskNe: 9, in: 10, notIn: 11 } as const;

const RESULT_CODES = ['continue', 'accept', 'drop', 'reject', 'queue', 'return'] as const;

function lengthOf(buf: Int32Array, pc: number): number {
  switch (buf[pc]) {
    case TEST:
      return 8;
    case TEST_OPS:
      return 12;
    case CHOOSE:
      return 3;
    case CT_STATES:
      return 4;
    case RESULT:
    case JUMP:
    case NAT:
      return 3;
    case MARK_SET:
      return 10;
    case LOOKUP:
      return 6 + 3 * buf[pc + 5]!;
    case VMAP:
      return 5 + 3 * buf[pc + 4]!;
    default:
      return 2;
  }
}

/** Compiles `rule` into the arena; its code's offset, -1 when the code fits no chunk (the rule
 * is interpreted then). */
export function compileRule(rule: Rule, arena: CodeArena): number {
  const out: number[] = [arena.locs.length, 0, -1];
  const stmts = rule.stmts;
  for (let i = 0; i < stmts.length; i++) {
    const stmt = stmts[i]!;
    const before = out.length;
    const compiled = stmt.kind === 'verdict' ? compileVerdict(stmt, i, arena, out) : compileStmt(stmt, i, rule, arena, out);
    if (!compiled) {
      out.length = before;
      out.push(EVAL, i);
    }
  }
  out.push(END);
  const start = append(arena, out);
  if (start >= 0) {
    arena.locs.push(locOf(rule));
    arena.events.push(undefined, undefined);
  }
  return start;
}

function isOwnerKey(expr: Expr): boolean {
  return expr.kind === 'meta' && (expr.key === 'skuid' || expr.key === 'skgid');
}

function pushU32(out: number[], e: U32Expr): void {
  const [first, second] = e.ops;
  out.push(e.ref.field, e.ref.arg, e.ref.arg2, first?.op ?? 0, first?.value ?? 0, second?.op ?? 0, second?.value ?? 0);
}

/** Appends a statement's instruction to `out`: nothing for no effect (evaluateStmt returns
 * undefined without reading anything); false to leave the statement to the interpreter. */
function compileStmt(stmt: Stmt, k: number, rule: Rule, arena: CodeArena, out: number[]): boolean {
  switch (stmt.kind) {
    case 'match':
      // iptables' addrtype of an IPv6 packet is not fib's type (match-addrtype.ts), and its owner
      // match without a socket gives an inversion where nft's keys break (evaluate-expr.ts).
      if (rule.origin?.format === 'iptables' && (isAddrtypeMatch(stmt.expr) || isOwnerKey(stmt.expr.left))) return false;
      return compileMatch(stmt.expr, k, arena, out);
    case 'reject':
      out.push(RESULT, k, RESULT_CODES.indexOf('reject'));
      return true;
    case 'queue':
      out.push(RESULT, k, RESULT_CODES.indexOf('queue'));
      return true;
    case 'counter':
    case 'log':
    case 'last':
    case 'flow-offload':
    case 'dup':
      return true;
    case 'meta-set': {
      if (stmt.key !== 'mark') return false;
      const value = u32ExprOf(stmt.value);
      if (!value) return false;
      out.push(MARK_SET, k);
      pushU32(out, value);
      out.push(rule.origin?.format === 'iptables' ? 1 : 0);
      return true;
    }
    case 'vmap':
      out.push(VMAP, k, arena.sets.length, stmt.key.kind === 'concat' ? 1 : 0, 0);
      if (!pushKey(stmt.key, out, out.length - 1)) return false;
      arena.sets.push(undefined);
      return true;
    case 'xt-extension':
      return compileXtMatch(stmt, k, arena, out);
    case 'nat':
      out.push(NAT, k, arena.nats.length);
      arena.nats.push(planNat(stmt));
      return true;
    default:
      return false;
  }
}

/** A verdict: one without a target is its result; a jump or goto is resolved when a packet
 * first takes it (jumpAt). */
type VerdictStmt = Extract<Stmt, { kind: 'verdict' }>;

function compileVerdict(stmt: VerdictStmt, k: number, arena: CodeArena, out: number[]): boolean {
  const name = stmt.verdict;
  if (name === 'jump' || name === 'goto') {
    if (stmt.target === undefined) return false;
    out.push(JUMP, k, arena.jumps.length);
    arena.jumps.push(undefined);
    arena.jumpStmts.push(stmt);
    return true;
  }
  // A name the interpreter does not know (a model built by hand) stays with it: it throws.
  const code = RESULT_CODES.indexOf(name);
  if (code < 0) return false;
  out.push(RESULT, k, code);
  return true;
}

/** Appends a set key read from fields (one field, or a concatenation of them: field, arg, arg2
 * each), and its number of parts at `countAt`. */
function pushKey(expr: Expr, out: number[], countAt: number): boolean {
  const parts = expr.kind === 'concat' ? expr.parts : [expr];
  for (const part of parts) {
    const ref = fieldRefOf(part);
    if (!ref) return false;
    out.push(ref.field, ref.arg, ref.arg2);
  }
  out[countAt] = parts.length;
  return true;
}

/** An integer constant of a flag list, a prefix base or a range end. */
function integerConstant(expr: Expr): bigint | undefined {
  if (expr.kind !== 'literal') return undefined;
  const value = constantOf(expr);
  return typeof value === 'bigint' ? value : undefined;
}

const ORDER: Readonly<Record<Relational['op'], number>> = { implicit: CMP.eq, '==': CMP.eq, '!=': CMP.ne, '<': CMP.lt, '>': CMP.gt, '<=': CMP.le, '>=': CMP.ge };

/** matchRelational's cases for a u32 left side, as TEST's [cmp, x, y]; undefined for the
 * interpreter. `mask`: the left side is the field `& mask` (folded into equality tests). */
function comparisonOf(rel: Relational, mask: number | undefined): readonly [number, number, number] | undefined {
  const right = rel.right;
  const op = rel.op;
  const isMembership = op === 'implicit' || op === '==' || op === '!=';
  let cmp: number;
  let x: number;
  switch (right.kind) {
    case 'literal': {
      // `fib … oif exists` stays with the interpreter.
      if (right.text === 'exists' || right.text === 'missing') return undefined;
      const value = constantOf(right);
      if (typeof value !== 'bigint' || !isU32(value)) return undefined;
      x = Number(value);
      cmp = op === 'implicit' && right.dtype !== undefined && isBitmaskType(right.dtype) ? CMP.anyBit : ORDER[op];
      break;
    }
    case 'flag-list': {
      let bits = 0n;
      for (const item of right.items) {
        const v = integerConstant(item);
        if (v === undefined) return undefined;
        bits |= v;
      }
      if (!isU32(bits)) return undefined;
      x = Number(bits);
      cmp = op === 'implicit' ? CMP.anyBit : ORDER[op];
      break;
    }
    case 'prefix': {
      if (!isMembership || mask !== undefined) return undefined;
      const base = integerConstant(right.expr);
      if (base === undefined) return undefined;
      const prefix = prefixMask(prefixBits(right.expr, rel.left), right.length);
      if (!isU32(prefix)) return undefined;
      return [op === '!=' ? CMP.maskNe : CMP.maskEq, Number(prefix), Number(base & prefix)];
    }
    case 'range': {
      if (!isMembership || mask !== undefined) return undefined;
      const low = integerConstant(right.low);
      const high = integerConstant(right.high);
      if (low === undefined || high === undefined || low < 0n || high < 0n) return undefined;
      const cmpIn = op === '!=' ? CMP.notIn : CMP.in;
      // A bound beyond 2^32 holds no u32 value past it: the same test.
      if (low > 0xffffffffn) return [cmpIn, 1, 0];
      return [cmpIn, Number(low), isU32(high) ? Number(high) : 0xffffffff];
    }
    default:
      return undefined;
  }
  if (mask === undefined) return [cmp, x, 0];
  // (field & mask) == x never holds when x has bits outside the mask. Then y is -1, read back as
  // 0xffffffff, which no `field & mask` is: the mask has a bit clear.
  if (cmp === CMP.eq) return [CMP.maskEq, mask, (x & mask) >>> 0 === x ? x : -1];
  if (cmp === CMP.ne) return [CMP.maskNe, mask, (x & mask) >>> 0 === x ? x : -1];
  if (cmp === CMP.anyBit) return [CMP.anyBit, (mask & x) >>> 0, 0];
  return undefined;
}

function compileMatch(rel: Relational, k: number, arena: CodeArena, out: number[]): boolean {
  let p: number | undefined;
  try {
    p = randomProbability(rel);
  } catch (error) {
    if (error instanceof NotModelled) return false;
    throw error;
  }
  if (p !== undefined) {
    pushChoice(p, k, arena, out);
    return true;
  }
  const right = rel.right;
  if (right.kind === 'set' || right.kind === 'set-ref') {
    if (rel.op !== 'implicit' && rel.op !== '==' && rel.op !== '!=') return false;
    out.push(LOOKUP, k, rel.op === '!=' ? 1 : 0, arena.sets.length, rel.left.kind === 'concat' ? 1 : 0, 0);
    if (!pushKey(rel.left, out, out.length - 1)) return false;
    arena.sets.push(undefined);
    return true;
  }
  const left = u32ExprOf(rel.left);
  if (!left) return false;
  // `meta mark & 0x4000 == 0x4000`: the mask folds into a test of equality.
  const only = left.ops.length === 1 ? left.ops[0]! : undefined;
  const folded = only?.op === OP.and ? comparisonOf(rel, only.value) : undefined;
  const comparison = folded ?? comparisonOf(rel, undefined);
  if (!comparison) return false;
  if (folded || left.ops.length === 0) out.push(TEST, k, left.ref.field, left.ref.arg, left.ref.arg2);
  else {
    out.push(TEST_OPS, k);
    pushU32(out, left);
  }
  out.push(comparison[0], comparison[1], comparison[2]);
  return true;
}

/** A random test of probability p: never, or a branch (always: no instruction). */
function pushChoice(p: number, k: number, arena: CodeArena, out: number[]): void {
  if (p <= 0) out.push(NEVER, k);
  else if (p < 1) {
    let w = arena.byProbability.get(p);
    if (w === undefined) {
      w = arena.weights.push([p, 1 - p]) - 1;
      arena.byProbability.set(p, w);
    }
    out.push(CHOOSE, k, w);
  }
}

/** iptables' statistic, comment and conntrack state matches (evaluate-stmt.ts
 * evaluateXtExtension, matchXt); the other xt statements are interpreted. */
function compileXtMatch(stmt: XtExtensionStmt, k: number, arena: CodeArena, out: number[]): boolean {
  if (stmt.type !== 'match') return false;
  const option = (name: string) => stmt.options.find((o) => o.name === name);
  if (stmt.name === 'statistic') {
    const mode = option('mode')?.value;
    const probability = option('probability');
    if (mode?.type !== 'string' || mode.s !== 'random' || probability?.value.type !== 'probability') return false;
    pushChoice(probability.negated ? 1 - probability.value.p : probability.value.p, k, arena, out);
    return true;
  }
  if (stmt.name === 'comment') return true;
  if ((stmt.name !== 'conntrack' && stmt.name !== 'state') || stmt.options.length !== 1) return false;
  const o = stmt.options[0]!;
  if ((o.name !== 'ctstate' && o.name !== 'state') || o.value.type !== 'names') return false;
  let names = 0;
  for (const name of o.value.names) names |= XT_CT_STATE_BITS[name] ?? 0;
  out.push(CT_STATES, k, names, o.negated ? 1 : 0);
  return true;
}

function compare(cmp: number, v: number, x: number, y: number): boolean {
  switch (cmp) {
    case CMP.eq:
      return v === x;
    case CMP.ne:
      return v !== x;
    case CMP.lt:
      return v < x;
    case CMP.gt:
      return v > x;
    case CMP.le:
      return v <= x;
    case CMP.ge:
      return v >= x;
    case CMP.anyBit:
      return (v & x) !== 0;
    case CMP.maskEq:
      return ((v & x) >>> 0) === y;
    case CMP.maskNe:
      return ((v & x) >>> 0) !== y;
    case CMP.in:
      return x <= v && v <= y;
    case CMP.notIn:
      return v < x || v > y;
    default:
      throw new Error(`unknown comparison ${cmp}`);
  }
}

/** A TEST_OPS's or MARK_SET's value: the field, then its operations; -1 for NFT_BREAK. */
function u32At(buf: Int32Array, at: number, ctx: SimContext): number {
  let v = readField(ctx, buf[at]!, buf[at + 1]! >>> 0, buf[at + 2]! >>> 0);
  if (v < 0) return -1;
  const op1 = buf[at + 3]!;
  if (op1 !== 0) {
    v = applyOp(op1, v, buf[at + 4]!);
    const op2 = buf[at + 5]!;
    if (op2 !== 0) v = applyOp(op2, v, buf[at + 6]!);
  }
  return v;
}

/** A set key from fields: a number, or the parts of a concatenation; undefined for NFT_BREAK. */
function keyAt(buf: Int32Array, at: number, n: number, concat: boolean, ctx: SimContext): number | number[] | undefined {
  if (!concat) {
    const v = readField(ctx, buf[at]!, buf[at + 1]! >>> 0, buf[at + 2]! >>> 0);
    return v < 0 ? undefined : v;
  }
  const parts: number[] = [];
  for (let i = 0; i < n; i++) {
    const v = readField(ctx, buf[at + 3 * i]!, buf[at + 3 * i + 1]! >>> 0, buf[at + 3 * i + 2]! >>> 0);
    if (v < 0) return undefined;
    parts.push(v);
  }
  return parts;
}

/** The set of the LOOKUP or VMAP of statement k, resolved in slot `slot` when first needed (and
 * again in another table, which a rule is never evaluated in). */
function lookupAt(arena: CodeArena, slot: number, k: number, ctx: SimContext): ResolvedLookup {
  const known = arena.sets[slot];
  if (known && known.table === ctx.table) return known;
  const stmt = stmtAt(ctx, k);
  const resolved = stmt.kind === 'vmap' ? resolveLookup(stmt.map, stmt.key, ctx) : resolveLookup((stmt as MatchStmt).expr.right as SetLiteral | SetRef, (stmt as MatchStmt).expr.left, ctx);
  arena.sets[slot] = resolved;
  return resolved;
}

/** The result of the JUMP in slot `slot`: the target's one result for the verb, or, for a chain
 * the table does not have, one without an index, which evaluate-chain.ts reports at every run
 * (verdictResult). */
function jumpAt(arena: CodeArena, slot: number, ctx: SimContext): RuleResult {
  const stmt = arena.jumpStmts[slot]!;
  return (arena.jumps[slot] = verdictResult(stmt.verdict, stmt.target, ctx));
}

/** A verdict map element's data as the rule's result. */
function verdictOfData(data: Expr, ctx: SimContext): RuleResult {
  if (data.kind !== 'verdict') throw new NotModelled('verdict map element without a verdict');
  return verdictResult(data.verdict, data.target, ctx);
}

/** The statement at position k of the rule being run: read only where a packet first reaches an
 * instruction that needs it (the rule is cold in memory) and for the interpreted ones. */
function stmtAt(ctx: SimContext, k: number): Stmt {
  return currentRule(ctx)!.stmts[k]!;
}

/** missesWhateverThePick for the lookup or verdict map of statement k. */
function missesWhateverThePickAt(ctx: SimContext, k: number): boolean {
  const stmt = stmtAt(ctx, k);
  if (stmt.kind === 'vmap') return missesWhateverThePick(stmt.map, stmt.key, ctx);
  const rel = (stmt as MatchStmt).expr;
  return missesWhateverThePick(rel.right as SetLiteral | SetRef, rel.left, ctx);
}

/** Runs a compiled rule (the code at `start`), as evaluateRule runs its statements. */
export function runCompiledRule(arena: CodeArena, start: number, ctx: SimContext): RuleResult {
  const buf = chunkOf(arena, start);
  let pc = atOf(start) + HEADER;
  for (;;) {
    try {
      for (;;) {
        switch (buf[pc]) {
          case END:
            return PLAIN_RESULTS.continue;
          case TEST: {
            const v = readField(ctx, buf[pc + 2]!, buf[pc + 3]! >>> 0, buf[pc + 4]! >>> 0);
            if (v < 0 || !compare(buf[pc + 5]!, v, buf[pc + 6]! >>> 0, buf[pc + 7]! >>> 0)) return NO_MATCH;
            pc += 8;
            break;
          }
          case TEST_OPS: {
            const v = u32At(buf, pc + 2, ctx);
            if (v < 0 || !compare(buf[pc + 9]!, v, buf[pc + 10]! >>> 0, buf[pc + 11]! >>> 0)) return NO_MATCH;
            pc += 12;
            break;
          }
          case CHOOSE:
            if (ctx.choose(arena.weights[buf[pc + 2]!]!) !== 0) return NO_MATCH;
            pc += 3;
            break;
          case NEVER:
            return NO_MATCH;
          case CT_STATES:
            if (((xtCtStateOf(ctx) & buf[pc + 2]!) !== 0) === (buf[pc + 3] === 1)) return NO_MATCH;
            pc += 4;
            break;
          case RESULT:
            return PLAIN_RESULTS[RESULT_CODES[buf[pc + 2]!]!];
          case JUMP:
            return arena.jumps[buf[pc + 2]!] ?? jumpAt(arena, buf[pc + 2]!, ctx);
          case NAT: {
            const verdict = setUpNat(arena.nats[buf[pc + 2]!]!, ctx, compiledLoc(arena, start));
            return verdict ? resultOf(verdict) : NO_MATCH;
          }
          case MARK_SET: {
            const v = u32At(buf, pc + 2, ctx);
            if (v < 0) {
              if (buf[pc + 9] !== 1) return NO_MATCH;
            } else ctx.pkt.mark = v;
            pc += 10;
            break;
          }
          case LOOKUP: {
            const n = buf[pc + 5]!;
            const key = keyAt(buf, pc + 6, n, buf[pc + 4] === 1, ctx);
            if (key === undefined) return NO_MATCH;
            const resolved = lookupAt(arena, buf[pc + 3]!, buf[pc + 1]!, ctx);
            const found = findResolved(resolved, key, ctx);
            const negated = buf[pc + 2] === 1;
            if ((found !== undefined) === negated) return NO_MATCH;
            // The found element's stateful statements run for a lookup that is not inverted.
            if (found && !passesElementStatements(found, resolved.named, ctx)) return NO_MATCH;
            pc += 6 + 3 * n;
            break;
          }
          case VMAP: {
            const key = keyAt(buf, pc + 5, buf[pc + 4]!, buf[pc + 3] === 1, ctx);
            if (key === undefined) return NO_MATCH;
            const resolved = lookupAt(arena, buf[pc + 2]!, buf[pc + 1]!, ctx);
            const elements = resolved.elements;
            const position = positionOf(resolved, key, ctx);
            if (position >= elements.length) {
              // An element added during the run: its verdict, resolved for this packet.
              const added = findAddedTo(resolved, key, ctx);
              if (!added?.data || !passesElementStatements(added, resolved.named, ctx)) return NO_MATCH;
              return verdictOfData(added.data, ctx);
            }
            if (!passesElementStatements(elements[position]!, resolved.named, ctx)) return NO_MATCH;
            // The elements' results, their target chains resolved, as packets meet them.
            const results = (resolved.results ??= new Array<RuleResult | undefined>(elements.length));
            let result = results[position];
            if (result === undefined) {
              const data = elements[position]!.data;
              if (!data) return NO_MATCH;
              result = results[position] = verdictOfData(data, ctx);
            }
            return result;
          }
          default: {
            // EVAL
            const result = evaluateStmt(stmtAt(ctx, buf[pc + 1]!), ctx);
            if (result) return result;
            pc += 2;
          }
        }
      }
    } catch (error) {
      if (!(error instanceof NotModelled)) throw error;
      // A set key NAT's random pick leaves unknown may still miss every element (as the
      // interpreter tells, lookup-element.ts lookupKey).
      const op = buf[pc];
      if (error instanceof RandomPick && (op === LOOKUP || op === VMAP) && missesWhateverThePickAt(ctx, buf[pc + 1]!)) {
        if (op === VMAP || buf[pc + 2] !== 1) return NO_MATCH;
        pc += lengthOf(buf, pc);
        continue;
      }
      const test = isTest(stmtAt(ctx, buf[pc + 1]!));
      reportNotModelled(ctx, error, test);
      if (test) return NO_MATCH;
      pc += lengthOf(buf, pc);
    }
  }
}
