// `add @set`, `update @set` and `delete @set` (nft_dynset.c), and the stateful statements of set
// elements (limit, quota, counter), which the kernel runs for the packet whenever a dynset or a
// lookup finds the element (nft_set_elem_update_expr).
//
// A dynset finds the element of its key, or makes one (nft_dynset_new): unless the set is full
// (`size`, which the new element would exceed: the rule breaks), with the data the statement
// loaded and the statement's own stateful statements, or the set's when it has none (set-level
// statements are cloned into every element, static ones too). Then it runs the element's
// statements: a limit or quota they exceed breaks the rule. `delete` takes the element out, the
// set's own ones included, but its slot stays taken until the set's garbage collection runs,
// about a second later: taken for the rest of the packet, and an add of a later packet that only
// those slots keep out is not modelled, since a run has no clock. What the run changed lives in its state (lookup-element.ts
// DynamicSet), and each limit or quota of an element counts for that element alone.

import type { ElementExpr, Expr, KeyType, NamedSet, SetLiteral, SetOpStmt, SetRef, Stmt, Table } from '../model/ast.js';
import { memoByObject } from './memo-by-object.js';
import { keyTypeDatatype, typeWith } from '../model/datatypes.js';
import { evaluateExpr, namedSet, type RtValue } from './evaluate-expr.js';
import { NO_MATCH, type RuleResult } from './evaluate-stmt.js';
import { isLimitPassed, isQuotaPassed } from './limit-and-quota.js';
import { isCtCountPassed } from './conn-count.js';
import { dynamicSetOf, lookupElement, type DynamicSet } from './lookup-element.js';
import { NotModelled, type SimContext } from './sim-context.js';

const EMPTY: DynamicSet = { added: [], deleted: new Set(), dead: 0 };

export function evaluateSetOp(stmt: SetOpStmt, ctx: SimContext): RuleResult | undefined {
  const named = namedSet(stmt.set, ctx);
  const keyExpr = typedConstant(stmt.element.key, named.key);
  const key = evaluateExpr(keyExpr, ctx);
  if (key === undefined) return NO_MATCH;
  // The data is loaded into its register before the dynset runs.
  const data = stmt.element.data && dataOf(stmt.element.data, named, ctx);
  if (data === undefined && stmt.element.data) return NO_MATCH;
  const ref: SetRef = { kind: 'set-ref', span: stmt.span, name: stmt.set };
  const existing = lookupElement(ref, key, keyExpr, ctx);
  const dynamic = dynamicSetOf(named, ctx) ?? EMPTY;
  if (stmt.op === 'delete') {
    if (existing) {
      ctx.dynamicSets.set(named, [withoutElement(dynamic, existing)]);
      (ctx.deletedNow ??= new Map()).set(named, (ctx.deletedNow.get(named) ?? 0) + 1);
    }
    return undefined;
  }
  let element = existing;
  if (!element) {
    const live = (named.elements?.length ?? 0) - dynamic.deleted.size + dynamic.added.length;
    if (named.size !== undefined && live + (ctx.deletedNow?.get(named) ?? 0) >= named.size) return NO_MATCH;
    if (named.size !== undefined && live + dynamic.dead >= named.size) {
      throw new NotModelled(`adding to set ${named.name}, full until the kernel's garbage collection (about a second after a delete) frees the slots of deleted elements`);
    }
    element = { kind: 'element', span: stmt.span, key: keyExpr, ...(data && { data }), ...(stmt.element.stmts && { stmts: stmt.element.stmts }) };
    ctx.dynamicSets.set(named, [{ ...dynamic, added: [...dynamic.added, { key, element }] }]);
  }
  return passesElementStatements(element, named, ctx) ? undefined : NO_MATCH;
}

function withoutElement(dynamic: DynamicSet, element: ElementExpr): DynamicSet {
  const added = dynamic.added.filter((a) => a.element !== element);
  const dead = dynamic.dead + 1;
  if (added.length < dynamic.added.length) return { added, deleted: dynamic.deleted, dead };
  return { added, deleted: new Set([...dynamic.deleted, element]), dead };
}

/** A constant key or data of a dynset, typed as the set's key or the map's data, as nft types
 * it when it loads the rule; anything else as it is. */
function typedConstant(e: Expr, type: KeyType | undefined): Expr {
  const untyped = e.kind === 'literal' ? !e.value : e.kind === 'concat' && e.parts.some((p) => p.kind === 'literal' && !p.value);
  return untyped ? typeWith(e, keyTypeDatatype(type)) : e;
}

/** A map element's data as the dynset stored it: a constant as written (typedConstant), else the
 * value the packet gave it, as a literal; undefined when that breaks. */
function dataOf(data: Expr, named: NamedSet, ctx: SimContext): Expr | undefined {
  if (data.kind === 'literal') return typedConstant(data, named.data);
  if (data.kind === 'verdict') return data;
  const value = evaluateExpr(data, ctx);
  return value === undefined ? undefined : literalOf(value, data);
}

function literalOf(value: RtValue, at: Expr): Expr {
  if (Array.isArray(value)) return { kind: 'concat', span: at.span, parts: value.map((v) => literalOf(v, at)) };
  if (typeof value === 'string') return { kind: 'literal', span: at.span, text: value, value: { type: 'string', s: value } };
  return { kind: 'literal', span: at.span, text: String(value), value: { type: 'bigint', hex: (value as bigint).toString(16) } };
}

/** The set-level statements of a table's sets that have some, by name: most have none, and
 * every lookup that finds an element asks. */
const setStatementsOf = memoByObject((table: Table): ReadonlyMap<string, readonly Stmt[]> => new Map(table.sets.filter((s) => s.stmts.length > 0).map((s) => [s.name, s.stmts])));

/** Runs the stateful statements of an element a dynset or a lookup found in `set` (its own,
 * else the set's): false when a limit or quota of them breaks the rule. */
export function passesElementStatements(element: ElementExpr, set: NamedSet | SetLiteral | SetRef | undefined, ctx: SimContext): boolean {
  const own = element.stmts !== undefined && element.stmts.length > 0 ? element.stmts : undefined;
  const stmts = own ?? (set?.kind === 'set' && 'stmts' in set ? set.stmts : set?.kind === 'set-ref' ? setStatementsOf(ctx.table).get(set.name) : undefined);
  if (stmts === undefined || stmts.length === 0) return true;
  for (let i = 0; i < stmts.length; i++) {
    const stmt = stmts[i]!;
    switch (stmt.kind) {
      case 'limit':
        if (!isLimitPassed(stmt, ownerOf(element, i), ctx)) return false;
        break;
      case 'quota':
        if (!isQuotaPassed(stmt, ownerOf(element, i), ctx)) return false;
        break;
      case 'ct-count':
        if (!isCtCountPassed(stmt, ownerOf(element, i), ctx)) return false;
        break;
      case 'counter':
      case 'last':
        break;
      default:
        throw new NotModelled(`${stmt.kind} statement of a set element`);
    }
  }
  return true;
}

// One owner of limit and quota state per element and statement: the set's statements count for
// each element apart.
const OWNERS = new WeakMap<ElementExpr, { readonly span: Stmt['span'] }[]>();

function ownerOf(element: ElementExpr, i: number): { readonly span: Stmt['span'] } {
  let owners = OWNERS.get(element);
  if (!owners) {
    owners = [];
    OWNERS.set(element, owners);
  }
  return (owners[i] ??= { span: element.span });
}
