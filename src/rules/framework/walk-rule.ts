// Visiting every expression of a rule, for rules that look for references (chains, sets) anywhere
// a statement can hold them: in matches, in map and verdict-map data, in set statements.

import type { Expr, Stmt } from '../../model/ast.js';

/** Calls `visit` on every expression in `stmt`, parents before children. */
export function forEachExpr(stmt: Stmt, visit: (expr: Expr) => void): void {
  switch (stmt.kind) {
    case 'match':
      return visitExpr(stmt.expr, visit);
    case 'vmap':
      visitExpr(stmt.key, visit);
      return visitExpr(stmt.map, visit);
    case 'meta-set':
    case 'ct-set':
      return visitExpr(stmt.value, visit);
    case 'payload-set':
      visitExpr(stmt.target, visit);
      return visitExpr(stmt.value, visit);
    case 'nat':
    case 'tproxy':
      visitExpr(stmt.addr, visit);
      return visitExpr(stmt.port, visit);
    case 'dup':
      visitExpr(stmt.addr, visit);
      return visitExpr(stmt.device, visit);
    case 'fwd':
      visitExpr(stmt.addr, visit);
      return visitExpr(stmt.device, visit);
    case 'queue':
      return visitExpr(stmt.num, visit);
    case 'set-op':
      return visitExpr(stmt.element, visit);
    case 'objref':
      return visitExpr(stmt.name, visit);
    case 'option-reset':
      return visitExpr(stmt.target, visit);
    case 'verdict':
    case 'counter':
    case 'log':
    case 'limit':
    case 'quota':
    case 'last':
    case 'ct-count':
    case 'reject':
    case 'notrack':
    case 'synproxy':
    case 'flow-offload':
    case 'xt':
    case 'xt-extension':
    case 'unsupported':
      return;
    default: {
      const exhaustive: never = stmt;
      return exhaustive;
    }
  }
}

/** Calls `visit` on `expr` and every expression inside it, parents before children. Recursion
 * with `visit` passed along, not a closure per node: the linter walks every expression of a
 * 150,000-rule dump several times. */
export function visitExpr(expr: Expr | undefined, visit: (expr: Expr) => void): void {
  if (expr === undefined) return;
  visit(expr);
  switch (expr.kind) {
    case 'hash':
      return visitExpr(expr.expr, visit);
    case 'binop':
    case 'relational':
      visitExpr(expr.left, visit);
      return visitExpr(expr.right, visit);
    case 'prefix':
      return visitExpr(expr.expr, visit);
    case 'range':
      visitExpr(expr.low, visit);
      return visitExpr(expr.high, visit);
    case 'concat':
      for (const part of expr.parts) visitExpr(part, visit);
      return;
    case 'flag-list':
      for (const item of expr.items) visitExpr(item, visit);
      return;
    case 'set':
      for (const element of expr.elements) visitExpr(element, visit);
      return;
    case 'element':
      visitExpr(expr.key, visit);
      return visitExpr(expr.data, visit);
    case 'map':
      visitExpr(expr.key, visit);
      return visitExpr(expr.map, visit);
    case 'literal':
    case 'payload':
    case 'raw-payload':
    case 'exthdr':
    case 'tcp-option':
    case 'ip-option':
    case 'sctp-chunk':
    case 'meta':
    case 'ct':
    case 'fib':
    case 'rt':
    case 'socket':
    case 'osf':
    case 'ipsec':
    case 'numgen':
    case 'set-ref':
    case 'wildcard':
    case 'verdict':
      return;
    default: {
      const exhaustive: never = expr;
      return exhaustive;
    }
  }
}
