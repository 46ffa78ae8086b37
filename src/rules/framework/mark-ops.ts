// Every read and write of the packet mark and the conntrack mark in a ruleset, with the component
// that wrote it and where on each packet path it runs. mark-bit-collision and masquerade-contract
// both reason about "this write happens between that set and that test"; they share this one
// model of mark operations, and the hook order is the simulator's (src/sim/pipeline.ts:
// PATH_HOOKS, buildHookIndex, chainsAt, isTied), not a second copy of it.

import type { Chain, Expr, Hook, Rule, Span, Stmt, XtExtensionStmt } from '../../model/ast.js';
import type { AddressFamily } from '../../sim/address.js';
import { buildHookIndex, chainsAt, isDeviceHook, isTied, PATH_HOOKS, type HookEntry, type HookIndex, type PathName } from '../../sim/pipeline.js';
import { componentOf, componentOfRule } from '../facts/known-components.js';
import type { LintContext } from './lint-rule.js';

/** `meta mark` (the skb mark, iptables MARK) or `ct mark` (the conntrack mark, CONNMARK). */
export type MarkSpace = 'meta' | 'ct';

/** A mark update as `new = (old & keep) ^ xor`, the form every nft and iptables mark write takes
 * (xt_MARK.c: `(mark & ~mask) ^ value`), except that the bits of `unknown` get a value not known
 * statically (a copy from the other mark: `meta mark set ct mark`, CONNMARK --restore-mark
 * --nfmask M). `keep` and `xor` are 0 on the unknown bits. */
export interface MarkEffect {
  readonly keep: number;
  readonly xor: number;
  readonly unknown: number;
}

/** Where a base chain runs on one packet path: the hook and its place in the kernel's order of
 * that hook's chains (chainsAt). */
export interface PathPosition {
  readonly path: PathName;
  readonly addressFamily: AddressFamily;
  readonly hook: Hook;
  /** The hook's place on the path (PATH_HOOKS). */
  readonly hookIndex: number;
  readonly entry: HookEntry;
  /** The chain's place among the hook's chains. */
  readonly index: number;
  /** For ingress and egress: the device the list is for. */
  readonly device?: string;
}

export interface MarkOp {
  /** The statement that reads or writes. */
  readonly span: Span;
  readonly rule: Rule;
  readonly chain: Chain;
  /** `family table chain`. */
  readonly where: string;
  /** The component that wrote the rule, or its `family table chain` when unknown. */
  readonly component: string;
  readonly space: MarkSpace;
  readonly effect?: MarkEffect;
  /** A bit test `mark & mask == value` (or `!=`, `-m mark [!] --mark V/M`). */
  readonly test?: { readonly mask: number; readonly value: number };
  /** The value an exact `meta mark V` compare wants: all 32 bits. */
  readonly exact?: number;
  /** The positions of the base chains the rule's chain is reached from, on every path. */
  readonly positions: readonly PathPosition[];
}

export interface MarkOps {
  readonly ops: readonly MarkOp[];
  /** The bits each component sets or tests, and those declared as owned in the configuration. */
  readonly usedBits: ReadonlyMap<string, Readonly<Record<MarkSpace, number>>>;
}

/** A path on which some operations run in a given order, and at which hooks. */
export interface Meeting {
  readonly path: PathName;
  readonly hooks: readonly Hook[];
}

const FULL = 0xffffffff;

/** One collection per lint run (the run's chain graph), shared by the rules that need it. */
const collected = new WeakMap<LintContext['graph'], MarkOps>();
const hookIndexes = new WeakMap<LintContext['graph'], HookIndex>();

/** The simulator's hook tables of the linted ruleset, built once per lint run (the run's chain
 * graph) for the rules that need them (priority-tie, the mark operations' positions). */
export function hookIndexOf(context: LintContext): HookIndex {
  let index = hookIndexes.get(context.graph);
  if (!index) {
    index = buildHookIndex(context.ruleset);
    hookIndexes.set(context.graph, index);
  }
  return index;
}

export function collectMarkOps(context: LintContext): MarkOps {
  let marks = collected.get(context.graph);
  if (!marks) {
    marks = collectUncached(context);
    collected.set(context.graph, marks);
  }
  return marks;
}

function collectUncached(context: LintContext): MarkOps {
  // Computed on first need: most chains of a large node (kube-proxy's per-service chains) touch
  // no mark at all.
  let positions: Map<Chain, PathPosition[]> | undefined;
  let present: Set<string> | undefined;
  const presentComponents = (): Set<string> => {
    if (present) return present;
    present = new Set<string>();
    for (const table of context.ruleset.tables) {
      for (const chain of table.chains) {
        const name = componentOf(context.ownership, table.family, table.name, chain.name);
        if (name !== undefined) present.add(name);
      }
    }
    return present;
  };
  const ops: MarkOp[] = [];
  // Indexed loops over every statement of the ruleset: a for-of loop not yet optimised makes an
  // iterator result per step.
  for (const { table, reachedFrom } of context.graph.tables) {
    for (const chain of table.chains) {
      const bases = reachedFrom.get(chain);
      if (bases === undefined || bases.length === 0) continue;
      let chainPositions: PathPosition[] | undefined;
      for (let r = 0; r < chain.rules.length; r++) {
        const rule = chain.rules[r]!;
        let found: { stmt: Stmt; op: OpFields }[] | undefined;
        for (let s = 0; s < rule.stmts.length; s++) {
          const stmt = rule.stmts[s]!;
          const op = markOpOf(stmt);
          if (op) (found ??= []).push({ stmt, op });
        }
        if (found === undefined) continue;
        positions ??= positionsOfBaseChains(context);
        chainPositions ??= bases.flatMap((base) => positions!.get(base) ?? []);
        const where = `${table.family} ${table.name} ${chain.name}`;
        const bits = found.reduce((acc, { op }) => (acc | touchedBits(op)) >>> 0, 0);
        const component = componentOfRule(context.ownership, table, chain.name, rule, bits, presentComponents) ?? where;
        for (const { stmt, op } of found) ops.push({ span: stmt.span, rule, chain, where, component, ...op, positions: chainPositions });
      }
    }
  }
  const usedBits = new Map<string, Record<MarkSpace, number>>();
  const use = (component: string, space: MarkSpace, bits: number): void => {
    const entry = usedBits.get(component) ?? { meta: 0, ct: 0 };
    entry[space] = (entry[space] | bits) >>> 0;
    usedBits.set(component, entry);
  };
  for (const op of ops) use(op.component, op.space, setBits(op.effect) | (op.test?.mask ?? 0));
  for (const [component, mask] of Object.entries(context.ownership.marks)) use(component, 'meta', mask);
  return { ops, usedBits };
}

function touchedBits(op: OpFields): number {
  return (writeMask(op.effect) | (op.test?.mask ?? 0) | (op.exact ?? 0)) >>> 0;
}

/** The base chains' positions on every path and address family, from the simulator's hook
 * tables. */
function positionsOfBaseChains(context: LintContext): Map<Chain, PathPosition[]> {
  const index = hookIndexOf(context);
  const devicesAt = (hook: 'ingress' | 'egress'): string[] => [...new Set((index.byHook.get(hook) ?? []).flatMap((r) => r.chain.base?.devices ?? []))];
  const positions = new Map<Chain, PathPosition[]>();
  for (const path of Object.keys(PATH_HOOKS) as PathName[]) {
    PATH_HOOKS[path].forEach((hook, hookIndex) => {
      for (const addressFamily of ['ip', 'ip6'] as const) {
        const lists: [string | undefined, readonly HookEntry[]][] =
          isDeviceHook(hook) ? devicesAt(hook).map((d) => [d, chainsAt(index, hook, addressFamily, d)]) : [[undefined, chainsAt(index, hook, addressFamily, undefined)]];
        for (const [device, entries] of lists) {
          entries.forEach((entry, i) => {
            const list = positions.get(entry.chain) ?? [];
            list.push({ path, addressFamily, hook, hookIndex, entry, index: i, ...(device !== undefined && { device }) });
            positions.set(entry.chain, list);
          });
        }
      }
    });
  }
  return positions;
}

type OpFields = Pick<MarkOp, 'space' | 'effect' | 'test' | 'exact'>;

function markOpOf(stmt: Stmt): OpFields | undefined {
  switch (stmt.kind) {
    case 'meta-set':
      return stmt.key === 'mark' ? { space: 'meta', effect: effectOf(stmt.value, 'meta') } : undefined;
    case 'ct-set':
      return stmt.key === 'mark' && stmt.dir === undefined ? { space: 'ct', effect: effectOf(stmt.value, 'ct') } : undefined;
    case 'xt-extension':
      return stmt.name === 'CONNMARK' && stmt.type === 'target' ? connmarkCopyOf(stmt) : undefined;
    case 'match': {
      const { left, right, op } = stmt.expr;
      if (left.kind === 'binop' && left.op === '&') {
        const space = markSpaceOf(left.left);
        if (space === undefined) return undefined;
        const mask = numberOf(left.right);
        const value = numberOf(right);
        return mask === undefined || value === undefined ? undefined : { space, test: { mask, value } };
      }
      const space = markSpaceOf(left);
      if (space !== undefined && (op === 'implicit' || op === '==')) {
        const exact = numberOf(right);
        return exact === undefined ? undefined : { space, exact };
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

/** CONNMARK --save-mark / --restore-mark with masks (xt_connmark.c: save `ct = (ct & ~ctmask) ^
 * (mark & nfmask)`, restore `mark = (mark & ~nfmask) ^ (ct & ctmask)`), which nft cannot spell
 * and the lowering keeps as an xt extension. The masks default to all ones; `--mask` sets both. */
function connmarkCopyOf(stmt: XtExtensionStmt): OpFields | undefined {
  const option = (name: string) => stmt.options.find((o) => o.name === name);
  const mask = (name: string): number => {
    const v = (option('mask') ?? option(name))?.value;
    return v?.type === 'number' ? v.n >>> 0 : FULL;
  };
  if (option('save-mark')) return { space: 'ct', effect: copyInto(mask('ctmask')) };
  if (option('restore-mark')) return { space: 'meta', effect: copyInto(mask('nfmask')) };
  return undefined;
}

function copyInto(mask: number): MarkEffect {
  return { keep: ~mask >>> 0, xor: 0, unknown: mask };
}

function markSpaceOf(expr: Expr): MarkSpace | undefined {
  if (expr.kind === 'meta' && expr.key === 'mark') return 'meta';
  if (expr.kind === 'ct' && expr.key === 'mark' && expr.dir === undefined) return 'ct';
  return undefined;
}

function numberOf(expr: Expr): number | undefined {
  if (expr.kind !== 'literal') return undefined;
  if (expr.value?.type === 'integer') return expr.value.n >>> 0;
  return /^(0x[0-9a-f]+|\d+)$/i.test(expr.text) ? Number(expr.text) >>> 0 : undefined;
}

/** The effect of `SPACE mark set EXPR`: constants and the old mark are known, anything else
 * (the other mark, a map lookup, a hash) is an unknown value on the bits it reaches. */
function effectOf(expr: Expr, space: MarkSpace): MarkEffect {
  if (markSpaceOf(expr) === space) return { keep: FULL, xor: 0, unknown: 0 };
  const n = numberOf(expr);
  if (n !== undefined) return { keep: 0, xor: n, unknown: 0 };
  const m = expr.kind === 'binop' ? numberOf(expr.right) : undefined;
  if (expr.kind !== 'binop' || m === undefined) return copyInto(FULL);
  const inner = effectOf(expr.left, space);
  const op = expr.op;
  switch (op) {
    case '|':
      return { keep: (inner.keep & ~m) >>> 0, xor: (inner.xor | m) >>> 0, unknown: (inner.unknown & ~m) >>> 0 };
    case '&':
      return { keep: (inner.keep & m) >>> 0, xor: (inner.xor & m) >>> 0, unknown: (inner.unknown & m) >>> 0 };
    case '^':
      return { keep: inner.keep, xor: (inner.xor ^ (m & ~inner.unknown)) >>> 0, unknown: inner.unknown };
    case '<<':
    case '>>':
      return copyInto(FULL);
    default: {
      const exhaustive: never = op;
      return exhaustive;
    }
  }
}

/** Bits the update forces to 1. */
export function setBits(effect: MarkEffect | undefined): number {
  return effect ? (~effect.keep & effect.xor) >>> 0 : 0;
}

/** Bits the update may change: forced, toggled or overwritten with an unknown value. */
export function writeMask(effect: MarkEffect | undefined): number {
  return effect ? (~effect.keep | effect.xor | effect.unknown) >>> 0 : 0;
}

/** Of `bits`, those the update certainly clears (keep 0, xor 0) or toggles (keep 1, xor 1). */
export function destroyedBits(effect: MarkEffect, bits: number): number {
  return (bits & ~(effect.keep ^ effect.xor) & ~effect.unknown) >>> 0;
}

/** Whether the update writes the whole word with a constant (`meta mark set 0x1bd20`). */
export function isFullWord(effect: MarkEffect | undefined): effect is MarkEffect & { readonly keep: 0 } {
  return effect !== undefined && effect.keep === 0 && effect.unknown === 0;
}

/** What a known update does to `value`. */
export function applyEffect(effect: MarkEffect, value: number): number {
  return ((value & effect.keep) ^ effect.xor) >>> 0;
}

export function isSingleBit(n: number): boolean {
  return (n & (n - 1)) === 0;
}

export function hex(n: number): string {
  return `0x${n.toString(16)}`;
}

/** -1, 0 or 1 for two positions on one path; 0 also for "no defined order": the same base chain
 * (rule order through jumps is not followed), or two chains whose order is their registration
 * order (priority-tie reports those). */
function comparePositions(a: PathPosition, b: PathPosition): number {
  if (a.hookIndex !== b.hookIndex) return Math.sign(a.hookIndex - b.hookIndex);
  if (a.device !== b.device || a.entry.chain === b.entry.chain || isTied(a.hook, a.entry, b.entry)) return 0;
  return Math.sign(a.index - b.index);
}

/** The paths on which `ops` can run in this order, each strictly after the one before, with the
 * hooks at which they do (repeated hooks once). */
export function meetingsInOrder(ops: readonly MarkOp[]): Meeting[] {
  const meetings = new Map<PathName, Hook[]>();
  const extend = (i: number, prev: PathPosition): Hook[] | undefined => {
    if (i === ops.length) return [];
    for (const p of ops[i]!.positions) {
      if (p.path !== prev.path || p.addressFamily !== prev.addressFamily || comparePositions(prev, p) >= 0) continue;
      const rest = extend(i + 1, p);
      if (rest) return [p.hook, ...rest];
    }
    return undefined;
  };
  for (const first of ops[0]?.positions ?? []) {
    if (meetings.has(first.path)) continue;
    const rest = extend(1, first);
    if (rest) meetings.set(first.path, [first.hook, ...rest].filter((h, i, all) => i === 0 || all[i - 1] !== h));
  }
  return [...meetings].map(([path, hooks]) => ({ path, hooks }));
}

/** `forward path: prerouting → postrouting; output path: output → postrouting`. */
export function describeMeetings(meetings: readonly Meeting[]): string {
  return meetings.map((m) => `${m.path} path: ${m.hooks.join(' → ')}`).join('; ');
}
