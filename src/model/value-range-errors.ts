// Values too wide for what they are compared with or stored as: `tcp dport 99999`,
// `ip saddr 10.0.0.0/33`, `meta mark 0x1ffffffff`, an element `99999` of an inet_service set.
// nft refuses such a ruleset (its evaluation checks each constant against the type's width);
// nftsim read it, and the match could only ever miss, silently. A listing never has one: they
// come from hand-written what-if rulesets, whose author wants nft's answer.

import type { Diagnostic } from './diagnostic.js';
import type { Expr, Ruleset, Span } from './ast.js';
import { datatypeOf, keyTypeDatatype, type Datatype } from './datatypes.js';

/** An error for each constant of the ruleset's matches and set elements that does not fit the
 * width of its type. */
export function valueRangeErrors(ruleset: Ruleset): Diagnostic[] {
  const errors: Diagnostic[] = [];
  for (const table of ruleset.tables) {
    for (const set of table.sets) {
      const type = keyTypeDatatype(set.key);
      for (const element of set.elements ?? []) checkFits(element.key, type, errors);
    }
    for (const chain of table.chains) {
      for (const rule of chain.rules) {
        for (const stmt of rule.stmts) {
          if (stmt.kind === 'match' && stmt.expr.kind === 'relational') checkFits(stmt.expr.right, datatypeOf(stmt.expr.left), errors);
        }
      }
    }
  }
  return errors;
}

/** The widths of the types a set declaration names (datatypeNamed knows names only, `bits` 0):
 * those of integer values and addresses; any other has none checked. */
const NAMED_WIDTHS: Readonly<Record<string, number>> = {
  inet_service: 16, inet_proto: 8, mark: 32, ipv4_addr: 32, ipv6_addr: 128, ether_type: 16, dscp: 6, ecn: 2,
  icmp_type: 8, icmp_code: 8, icmpv6_type: 8, icmpv6_code: 8, ct_state: 32, ct_status: 32, pkt_type: 8, nf_proto: 8,
};

/** The width of a type, 0 where it is not known. */
function widthOf(type: Datatype): number {
  return type.bits || (NAMED_WIDTHS[type.name] ?? 0);
}

function checkFits(expr: Expr, type: Datatype | undefined, errors: Diagnostic[]): void {
  if (!type) return;
  switch (expr.kind) {
    case 'literal': {
      const bits = widthOf(type);
      const value = expr.value;
      if (type.parts || bits === 0 || !value) return;
      // Most constants are small integers: compared as numbers, without a bigint each.
      const tooBig = value.type === 'integer' ? bits < 53 && value.n >= 2 ** bits : value.type === 'bigint' && BigInt(`0x${value.hex}`) >> BigInt(bits) !== 0n;
      if (tooBig) tooWide(`value ${expr.text} exceeds the range 0-${maxOf(bits)} of its ${bits}-bit type ${type.name}`, expr.span, errors);
      return;
    }
    case 'prefix': {
      const bits = widthOf(type);
      if (bits > 0 && expr.length > bits) tooWide(`prefix length ${expr.length} is too long for the ${bits}-bit type ${type.name}`, expr.span, errors);
      return checkFits(expr.expr, type, errors);
    }
    case 'range':
      checkFits(expr.low, type, errors);
      return checkFits(expr.high, type, errors);
    case 'flag-list':
      for (const item of expr.items) checkFits(item, type, errors);
      return;
    case 'set':
      for (const element of expr.elements) checkFits(element.key, type, errors);
      return;
    case 'concat': {
      const parts = type.parts;
      if (!parts || parts.length !== expr.parts.length) return;
      expr.parts.forEach((part, i) => checkFits(part, parts[i], errors));
      return;
    }
    default:
      return;
  }
}

function maxOf(bits: number): string {
  return ((1n << BigInt(bits)) - 1n).toString();
}

function tooWide(message: string, span: Span, errors: Diagnostic[]): void {
  errors.push({ severity: 'error', code: 'value-range', message, span });
}
