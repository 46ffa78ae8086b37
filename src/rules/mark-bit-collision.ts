import type { Chain, Expr, Span, Stmt, Table } from '../model/ast.js';
import { familiesAt, NAT_HOOK_PRIORITY, PATH_HOOKS, type PathName } from '../sim/pipeline.js';
import { componentOf, meaningOf } from './facts/known-components.js';
import type { LintContext, LintRule } from './framework/lint-rule.js';

// The packet mark is one 32-bit word shared by every component on the node. A component that
// sets a bit in one hook and tests it in a later one (kube-proxy: OR 0x4000 in nat prerouting,
// test it in nat postrouting to masquerade) breaks when anything on the way clears the bit: a
// full-word `meta mark set V`, a masked clear (`mark and 0xffffbfff`) or an xor. This is the
// NodePort masquerade incident of ../shared/DESIGN.md. The order of hooks and chains is the
// simulator's (PATH_HOOKS, familiesAt, NAT_HOOK_PRIORITY in src/sim/pipeline.ts).
//
// Sound first: only updates whose effect on the bits is known statically are considered, only
// writer/test pairs of one component, and only clears strictly between them in hook and
// priority order (a tie in priority is priority-tie's business, not a collision).
export const markBitCollision: LintRule = {
  id: 'mark-bit-collision',
  meta: {
    description: "A rule that overwrites, clears or toggles a packet-mark bit another component sets in an earlier hook and tests in a later one.",
    severity: 'error',
    docs: 'docs/rules/mark-bit-collision.md',
    messages: {
      fullWord: "sets the whole packet mark to {{value}}, which clears {{owner}}'s {{what}} {{bits}} between where it is set and where it is tested (on the {{paths}} path)",
      clears: "{{verb}} {{owner}}'s {{what}} {{bits}} between where it is set and where it is tested (on the {{paths}} path)",
      exactCompare: "{{verb}} the packet mark {{owner}} set to {{value}}, making it {{after}}, before {{owner}} compares the whole mark with {{value}}: the compare fails (on the {{paths}} path)",
      set: '{{owner}} sets {{bits}} here',
      test: '{{owner}} tests {{bits}} here',
    },
  },
  check(context) {
    const ops = collectMarkOps(context);
    reportBrokenBits(context, ops);
    reportBrokenExactCompares(context, ops);
  },
};

/** A bit set by one component and tested by it later, destroyed by another in between. */
function reportBrokenBits(context: LintContext, ops: readonly MarkOp[]): void {
  const writers = ops.filter((o) => setBits(o.effect) !== 0);
  const tests = ops.filter((o) => o.test !== undefined);
  const reported = new Set<string>();
  for (const writer of writers) {
    for (const test of tests) {
      if (test.component !== writer.component) continue;
      const bits = setBits(writer.effect) & test.test!;
      if (bits === 0) continue;
      for (const clear of ops) {
        if (clear.component === writer.component || clear.effect === undefined) continue;
        const destroyed = destroyedBits(clear.effect, bits);
        if (destroyed === 0) continue;
        const paths = pathsBetween(writer, clear, test);
        if (paths.length === 0) continue;
        const key = `${clear.span.file}:${clear.span.start}:${writer.component}:${destroyed}`;
        if (reported.has(key)) continue;
        reported.add(key);
        const owner = writer.component;
        const hex = `0x${destroyed.toString(16)}`;
        const meaning = meaningOf(owner, destroyed);
        const what = meaning ? `${meaning} bit${isSingleBit(destroyed) ? '' : 's'}` : isSingleBit(destroyed) ? 'bit' : 'bits';
        const isFull = clear.effect.keep === 0;
        context.report({
          messageId: isFull ? 'fullWord' : 'clears',
          data: { value: `0x${clear.effect.xor.toString(16)}`, owner, what, bits: hex, paths: paths.join(' and '), verb: (clear.effect.keep & clear.effect.xor & destroyed) !== 0 ? 'toggles' : 'clears' },
          span: clear.span,
          related: [
            { messageId: 'set', data: { owner, bits: hex }, span: writer.span },
            { messageId: 'test', data: { owner, bits: hex }, span: test.span },
          ],
        });
      }
    }
  }
}

/** A whole word set by one component and compared exactly by it later (`meta mark 0x1bd21`),
 * changed in between by another: any bit ORed in, cleared or toggled breaks the compare (the
 * Netbird exact-match readers after kube-proxy's OR of 0x4000, netbird#6022). */
function reportBrokenExactCompares(context: LintContext, ops: readonly MarkOp[]): void {
  const reported = new Set<string>();
  for (const writer of ops) {
    if (writer.effect?.keep !== 0) continue;
    const value = writer.effect.xor;
    for (const test of ops) {
      if (test.exact !== value || test.component !== writer.component) continue;
      for (const change of ops) {
        if (change.component === writer.component || change.effect === undefined) continue;
        const after = ((value & change.effect.keep) ^ change.effect.xor) >>> 0;
        if (after === value) continue;
        const paths = pathsBetween(writer, change, test);
        const key = `${change.span.file}:${change.span.start}:${writer.component}`;
        if (paths.length === 0 || reported.has(key)) continue;
        reported.add(key);
        const owner = writer.component;
        const hex = (n: number): string => `0x${n.toString(16)}`;
        context.report({
          messageId: 'exactCompare',
          data: { verb: change.effect.keep === 0 ? 'overwrites' : 'changes', owner, value: hex(value), after: hex(after), paths: paths.join(' and ') },
          span: change.span,
          related: [
            { messageId: 'set', data: { owner, bits: hex(value) }, span: writer.span },
            { messageId: 'test', data: { owner, bits: hex(value) }, span: test.span },
          ],
        });
      }
    }
  }
}

/** A mark update as `new = (old & keep) ^ xor`, the form every nft and iptables mark write
 * takes (xt_MARK: `(mark & ~mask) ^ value`). */
interface MarkEffect {
  readonly keep: number;
  readonly xor: number;
}

interface Position {
  readonly path: PathName;
  readonly hook: number;
  /** Where the chain runs at its hook: nat chains in the NAT hook's slot, then by their own
   * priority among themselves. */
  readonly slot: readonly [number, number];
  readonly addressFamily: 'ip' | 'ip6';
}

interface MarkOp {
  readonly span: Span;
  /** The component that wrote the rule, or its `family table chain` when unknown. */
  readonly component: string;
  readonly effect?: MarkEffect;
  /** The bits a `meta mark & M == V` test looks at. */
  readonly test?: number;
  /** The value an exact `meta mark V` compare wants: all 32 bits. */
  readonly exact?: number;
  readonly positions: readonly Position[];
}

function collectMarkOps(context: LintContext): MarkOp[] {
  const ops: MarkOp[] = [];
  for (const { table, reachedFrom } of context.graph.tables) {
    for (const chain of table.chains) {
      const bases = reachedFrom.get(chain) ?? [];
      if (bases.length === 0) continue;
      let positions: Position[] | undefined;
      const component = componentOf(context.ownership, table.family, table.name, chain.name) ?? `${table.family} ${table.name} ${chain.name}`;
      for (const rule of chain.rules) {
        for (const stmt of rule.stmts) {
          const op = markOpOf(stmt);
          if (!op) continue;
          positions ??= bases.flatMap((base) => positionsOf(table, base));
          ops.push({ span: stmt.span, component, ...op, positions });
        }
      }
    }
  }
  return ops;
}

function markOpOf(stmt: Stmt): { effect?: MarkEffect; test?: number; exact?: number } | undefined {
  if (stmt.kind === 'meta-set' && stmt.key === 'mark') {
    const effect = effectOf(stmt.value);
    return effect ? { effect } : undefined;
  }
  if (stmt.kind === 'match') {
    const { left } = stmt.expr;
    if (left.kind === 'binop' && left.op === '&' && isMetaMark(left.left)) {
      const mask = numberOf(left.right);
      return mask === undefined ? undefined : { test: mask };
    }
    if (isMetaMark(left) && (stmt.expr.op === 'implicit' || stmt.expr.op === '==')) {
      const exact = numberOf(stmt.expr.right);
      return exact === undefined ? undefined : { exact };
    }
  }
  return undefined;
}

function isMetaMark(expr: Expr): boolean {
  return expr.kind === 'meta' && expr.key === 'mark';
}

function numberOf(expr: Expr): number | undefined {
  if (expr.kind !== 'literal') return undefined;
  if (expr.value?.type === 'integer') return expr.value.n >>> 0;
  return /^(0x[0-9a-f]+|\d+)$/i.test(expr.text) ? Number(expr.text) >>> 0 : undefined;
}

/** The effect of `meta mark set EXPR`, or undefined when it depends on anything but the old
 * mark and constants (`meta mark set ct mark`): then nothing sound can be said. */
function effectOf(expr: Expr): MarkEffect | undefined {
  if (isMetaMark(expr)) return { keep: 0xffffffff, xor: 0 };
  const n = numberOf(expr);
  if (n !== undefined) return { keep: 0, xor: n };
  if (expr.kind !== 'binop') return undefined;
  const inner = effectOf(expr.left);
  const m = numberOf(expr.right);
  if (!inner || m === undefined) return undefined;
  const op = expr.op;
  switch (op) {
    case '|':
      return { keep: (inner.keep & ~m) >>> 0, xor: (inner.xor | m) >>> 0 };
    case '&':
      return { keep: (inner.keep & m) >>> 0, xor: (inner.xor & m) >>> 0 };
    case '^':
      return { keep: inner.keep, xor: (inner.xor ^ m) >>> 0 };
    case '<<':
    case '>>':
      return undefined;
    default: {
      const exhaustive: never = op;
      return exhaustive;
    }
  }
}

/** Bits the update forces to 1. */
function setBits(effect: MarkEffect | undefined): number {
  return effect ? (~effect.keep & effect.xor) >>> 0 : 0;
}

/** Of `bits`, those the update clears (keep 0, xor 0) or toggles (keep 1, xor 1). */
function destroyedBits(effect: MarkEffect, bits: number): number {
  return (bits & ~(effect.keep ^ effect.xor)) >>> 0;
}

function isSingleBit(n: number): boolean {
  return (n & (n - 1)) === 0;
}

function positionsOf(table: Table, base: Chain): Position[] {
  const spec = base.base!;
  const nat = spec.type === 'nat' ? NAT_HOOK_PRIORITY[spec.hook] : undefined;
  const priority = spec.priority.value ?? spec.priority.offset;
  const slot: [number, number] = nat === undefined ? [priority, 0] : [nat, priority];
  const positions: Position[] = [];
  for (const addressFamily of ['ip', 'ip6'] as const) {
    if (!familiesAt(spec.hook, addressFamily).includes(table.family)) continue;
    for (const path of Object.keys(PATH_HOOKS) as PathName[]) {
      const hook = PATH_HOOKS[path].indexOf(spec.hook);
      if (hook >= 0) positions.push({ path, hook, slot, addressFamily });
    }
  }
  return positions;
}

/** -1, 0 or 1; 0 also for "no defined order" (the same slot). */
function compare(a: Position, b: Position): number {
  return Math.sign(a.hook - b.hook || a.slot[0] - b.slot[0] || a.slot[1] - b.slot[1]);
}

/** The paths on which some position of `clear` lies strictly between a position of `writer` and
 * a later position of `test`. */
function pathsBetween(writer: MarkOp, clear: MarkOp, test: MarkOp): PathName[] {
  const paths = new Set<PathName>();
  for (const c of clear.positions) {
    const same = (p: Position): boolean => p.path === c.path && p.addressFamily === c.addressFamily;
    if (writer.positions.some((w) => same(w) && compare(w, c) < 0) && test.positions.some((t) => same(t) && compare(c, t) < 0)) paths.add(c.path);
  }
  return [...paths];
}
