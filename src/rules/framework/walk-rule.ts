// Visiting every expression of a rule, for rules that look for references (chains, sets) anywhere
// a statement can hold them: in matches, in map and verdict-map data, in set statements.

import type { Expr, Stmt } from '../../model/ast.js';

/** Calls `visit` on every expression in `stmt`, parents before children. */
export function forEachExpr(stmt: Stmt, visit: (expr: Expr) => void): void {
  const walk = (expr: Expr | undefined): void => {
    if (expr !== undefined) visitExpr(expr, visit);
  };
  switch (stmt.kind) {
    case 'match':
      return walk(stmt.expr);
    case 'vmap':
      walk(stmt.key);
      return walk(stmt.map);
    case 'meta-set':
    case 'ct-set':
      return walk(stmt.value);
    case 'payload-set':
      walk(stmt.target);
      return walk(stmt.value);
    case 'nat':
    case 'tproxy':
      walk(stmt.addr);
      return walk(stmt.port);
    case 'dup':
      walk(stmt.addr);
      return walk(stmt.device);
    case 'fwd':
      walk(stmt.addr);
      return walk(stmt.device);
    case 'queue':
      return walk(stmt.num);
    case 'set-op':
      return walk(stmt.element);
    case 'objref':
      return walk(stmt.name);
    case 'option-reset':
      return walk(stmt.target);
    case 'verdict':
    case 'counter':
    case 'log':
    case 'limit':
    case 'quota':
    case 'last':
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

/** Calls `visit` on `expr` and every expression inside it, parents before children. */
export function visitExpr(expr: Expr, visit: (expr: Expr) => void): void {
  visit(expr);
  forEachChild(expr, (child) => {
    if (child !== undefined) visitExpr(child, visit);
  });
}

function forEachChild(expr: Expr, walk: (expr: Expr | undefined) => void): void {
  switch (expr.kind) {
    case 'hash':
      return walk(expr.expr);
    case 'binop':
    case 'relational':
      walk(expr.left);
      return walk(expr.right);
    case 'prefix':
      return walk(expr.expr);
    case 'range':
      walk(expr.low);
      return walk(expr.high);
    case 'concat':
      return expr.parts.forEach(walk);
    case 'flag-list':
      return expr.items.forEach(walk);
    case 'set':
      return expr.elements.forEach(walk);
    case 'element':
      walk(expr.key);
      return walk(expr.data);
    case 'map':
      walk(expr.key);
      return walk(expr.map);
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
