// Location-independent names for rules and chains, so that the two sides of a diff match rules by
// what they say, not by the line they sit on (a capture taken later moves every line).

import type { Chain, Family, Rule, Ruleset, Table } from '../model/ast.js';
import { formatRule } from '../model/format-ruleset.js';
import type { Loc } from '../sim/outcome.js';

export interface RuleAt {
  readonly rule: Rule;
  readonly table: Table;
  readonly chain: Chain;
  /** `ip filter FORWARD: iifname "wt0" accept` */
  readonly key: string;
}

export interface RuleIndex {
  /** By `file:line:column` of the rule (a trace event's `at`). */
  readonly byLoc: ReadonlyMap<string, RuleAt>;
  /** Each rule's key (the structural report looks rules up by identity, not by location). */
  readonly byRule: ReadonlyMap<Rule, string>;
  /** How many rules have each key. */
  readonly keys: ReadonlyMap<string, number>;
  /** Per chain (`family table chain`), a text that is equal when the chain is: its base spec and
   * its rules' keys in order, plus its table's sets. */
  readonly chains: ReadonlyMap<string, string>;
  /** A base chain's key by the `file:line:column` of its policy (a policy event's `at`). */
  readonly policies: ReadonlyMap<string, string>;
}

export function chainKey(family: Family, table: string, chain: string): string {
  return `${family} ${table} ${chain}`;
}

export function locKey(loc: { readonly file: string; readonly line: number; readonly column: number }): string {
  return `${loc.file}:${loc.line}:${loc.column}`;
}

// Statistics and handles are not what a rule says: counters differ between any two captures.
const COUNTER = /\bcounter packets \d+ bytes \d+/g;

export function ruleText(rule: Rule, family: Family): string {
  return formatRule(rule, {}, family).trim().replace(COUNTER, 'counter').replace(/\s+/g, ' ');
}

export function indexRules(ruleset: Ruleset): RuleIndex {
  const byLoc = new Map<string, RuleAt>();
  const byRule = new Map<Rule, string>();
  const keys = new Map<string, number>();
  const chains = new Map<string, string>();
  const policies = new Map<string, string>();
  for (const table of ruleset.tables) {
    const sets = table.sets.map((s) => `${s.name}{${(s.elements ?? []).length}:${(s.elements ?? []).map((e) => JSON.stringify(stripSpans(e))).join(',')}}`).join(';');
    for (const chain of table.chains) {
      const ck = chainKey(table.family, table.name, chain.name);
      policies.set(locKey(chain.span), `${ck} policy`);
      const ruleKeys: string[] = [];
      for (const rule of chain.rules) {
        const key = `${ck}: ${ruleText(rule, table.family)}`;
        ruleKeys.push(key);
        byLoc.set(locKey(rule.span), { rule, table, chain, key });
        byRule.set(rule, key);
        keys.set(key, (keys.get(key) ?? 0) + 1);
      }
      const base = chain.base ? `${chain.base.type} ${chain.base.hook} ${chain.base.priority.value ?? chain.base.priority.offset} ${chain.base.policy ?? 'accept'} ${chain.base.devices.join(',')}` : '';
      chains.set(ck, `${base}\n${ruleKeys.join('\n')}\n${sets}`);
    }
  }
  return { byLoc, byRule, keys, chains, policies };
}

function stripSpans(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripSpans);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => k !== 'span').map(([k, v]) => [k, stripSpans(v)]));
}

/** The key of what decided at `loc`: a rule's key, or the chain for a policy. */
export function deciderKey(index: RuleIndex, loc: Loc | undefined): string {
  if (!loc) return 'routing';
  const at = locKey(loc);
  return index.byLoc.get(at)?.key ?? index.policies.get(at) ?? at;
}
