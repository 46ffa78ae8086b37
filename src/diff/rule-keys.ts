// Location-independent names for rules and chains, so that the two sides of a diff match rules by
// what they say, not by the line they sit on (a capture taken later moves every line).

import { createHash } from 'node:crypto';
import type { Chain, Family, Rule, Ruleset, Span, Table } from '../model/ast.js';
import { formatRule } from '../model/format-ruleset.js';
import type { Loc } from '../sim/outcome.js';

export interface RuleAt {
  readonly rule: Rule;
  readonly table: Table;
  readonly chain: Chain;
  /** `ip filter FORWARD: iifname "wt0" accept` */
  readonly key: string;
}

/** One chain of a ruleset, indexed. */
export interface IndexedChain {
  readonly table: Table;
  readonly chain: Chain;
  /** Its rules in order, with their keys. */
  readonly rules: readonly RuleAt[];
  /** Its base spec (type, hook, priority, policy, devices), empty for a regular chain. */
  readonly base: string;
  /** A digest of what its rules may refer to by name in its table: the sets and maps with their
   * declarations and elements, and the stateful objects (kube-proxy's nftables mode has sets of
   * megabytes: compared once per chain, their text would be); and the ipsets its iptables rules
   * name. */
  readonly named: string;
}

/** Whether two chains are the same: base spec, rules' keys in order, and their tables' sets and
 * stateful objects. */
export function isSameChain(a: IndexedChain, b: IndexedChain): boolean {
  return a.base === b.base && a.named === b.named && a.rules.length === b.rules.length && a.rules.every((r, i) => r.key === b.rules[i]!.key);
}

/** A ruleset's rules by key and place. Only the per-chain part is made up front: a diff looks up
 * a handful of places (trace events of the probes it simulates), so the maps by place and by key
 * are made on the first lookup. */
export interface RuleIndex {
  /** Per chain (`family table chain`), in ruleset order; compared with isSameChain. */
  readonly chains: ReadonlyMap<string, IndexedChain>;
  /** The rule at `file:line:column` (a trace event's `at`); of an iptables rule lowered into
   * several, the last. */
  ruleAt(loc: Loc): RuleAt | undefined;
  /** A base chain's key (`family table chain policy`) by the place of its policy (a policy
   * event's `at`). */
  policyAt(loc: Loc): string | undefined;
  /** Whether some rule has this key. */
  hasKey(key: string): boolean;
}

export function chainKey(family: Family, table: string, chain: string): string {
  return `${family} ${table} ${chain}`;
}

export function locKey(loc: { readonly file: string; readonly line: number; readonly column: number }): string {
  return `${loc.file}:${loc.line}:${loc.column}`;
}

// Statistics and handles are not what a rule says: counters differ between any two captures.
const COUNTER = /\bcounter packets \d+ bytes \d+/g;

// Whitespace the printer does not make between two words: a run of it, or any but a space.
const UNEVEN_SPACE = /\s\s|[^\S ]/;

export function ruleText(rule: Rule, family: Family): string {
  const text = formatRule(rule, {}, family).trim().replace(COUNTER, 'counter');
  // Collapsing makes a new string each time; most printed rules have nothing to collapse.
  return UNEVEN_SPACE.test(text) ? text.replace(/\s+/g, ' ') : text;
}

/** Indexes `ruleset`; given the index of the other side of a diff, a rule equal to the one at
 * its place there (the same tree, places left out) takes that one's key rather than being
 * printed again: the printer's output depends on nothing else. */
export function indexRules(ruleset: Ruleset, other?: RuleIndex): RuleIndex {
  const chains = new Map<string, IndexedChain>();
  const ipsets = ipsetDigestsOf(ruleset);
  for (const table of ruleset.tables) {
    const tableNamed = namedDigest(table);
    for (const chain of table.chains) {
      const named = ipsets.size === 0 ? tableNamed : `${tableNamed}${namedIpsets(chain, ipsets)}`;
      const ck = chainKey(table.family, table.name, chain.name);
      const base = chain.base ? `${chain.base.type} ${chain.base.hook} ${chain.base.priority.value ?? chain.base.priority.offset} ${chain.base.policy ?? 'accept'} ${chain.base.devices.join(',')}` : '';
      const twins = other?.chains.get(ck)?.rules;
      const rules = chain.rules.map((rule, i): RuleAt => {
        const twin = twins?.[i];
        if (twin && isSameTree(twin.rule, rule)) return { rule, table, chain, key: twin.key };
        // Joined, not concatenated: `${ck}: ${text}` would keep the printer's pieces alive (a
        // rope of ~700 bytes per rule, 100 MB on a 150,000-rule dump); join copies into a flat
        // string.
        return { rule, table, chain, key: [ck, ruleText(rule, table.family)].join(': ') };
      });
      chains.set(ck, { table, chain, rules, base, named });
    }
  }
  let rulePlaces: PlaceIndex<RuleAt> | undefined;
  let policyPlaces: PlaceIndex<IndexedChain> | undefined;
  let keys: Set<string> | undefined;
  return {
    chains,
    ruleAt: (loc) => (rulePlaces ??= placeIndexOf([...chains.values()].flatMap((c) => c.rules), (at) => at.rule.span)).at(loc),
    policyAt: (loc) => {
      const c = (policyPlaces ??= placeIndexOf([...chains.values()], (at) => at.chain.span)).at(loc);
      return c && `${chainKey(c.table.family, c.table.name, c.chain.name)} policy`;
    },
    hasKey: (key) => (keys ??= new Set([...chains.values()].flatMap((c) => c.rules.map((at) => at.key)))).has(key),
  };
}

/** Values by the place (`file`, `line`, `column`) of their span; of several at one place, the
 * last given. */
interface PlaceIndex<T> {
  at(loc: Loc): T | undefined;
}

/** By file and line, the one value a line mostly holds (a listing or a dump has a rule per line);
 * the others of a line by `file:line:column`. No string is made per rule of a large ruleset for a
 * handful of lookups. */
function placeIndexOf<T>(items: readonly T[], spanOf: (item: T) => Span): PlaceIndex<T> {
  const byLine = new Map<string, (T | undefined)[]>();
  const others = new Map<string, T>();
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const span = spanOf(item);
    let lines = byLine.get(span.file);
    if (!lines) byLine.set(span.file, (lines = []));
    const first = lines[span.line];
    if (first === undefined || spanOf(first).column === span.column) lines[span.line] = item;
    else others.set(locKey(span), item);
  }
  return {
    at: (loc) => {
      const first = byLine.get(loc.file)?.[loc.line];
      return first !== undefined && spanOf(first).column === loc.column ? first : others.get(locKey(loc));
    },
  };
}

/** Whether two model trees are equal, their spans left out. */
function isSameTree(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!isSameTree(a[i], b[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let keys = 0;
  for (const key in x) {
    if (key === 'span') continue;
    if (!(key in y) || !isSameTree(x[key], y[key])) return false;
    keys++;
  }
  for (const key in y) if (key !== 'span') keys--;
  return keys === 0;
}

/** By ipset name, a digest of the set and of the sets a list:set holds: its declaration and its
 * elements in any order (ipset save lists a hash in its own order, which two captures of the
 * same set need not share). */
function ipsetDigestsOf(ruleset: Ruleset): ReadonlyMap<string, string> {
  const sets = new Map((ruleset.ipsets ?? []).map((s) => [s.name, s]));
  const own = new Map<string, string>();
  for (const [name, set] of sets) {
    const hash = createHash('sha1');
    hash.update(`${set.type} ${set.family ?? ''} ${set.netmask ?? ''} ${set.bitmask ?? ''};`);
    for (const e of set.elements.map((e) => `${e.text}${e.nomatch ? ' nomatch' : ''}`).sort()) hash.update(`${e},`);
    own.set(name, hash.digest('base64'));
  }
  const digests = new Map<string, string>();
  for (const [name, set] of sets) {
    const members = set.type === 'list:set' ? set.elements.map((e) => own.get(e.text) ?? '') : [];
    digests.set(name, [own.get(name), ...members].join('+'));
  }
  return digests;
}

/** The digests of the ipsets a chain's iptables rules name (`--match-set`, SET's sets). */
function namedIpsets(chain: Chain, digests: ReadonlyMap<string, string>): string {
  const names = new Set<string>();
  for (const rule of chain.rules) {
    for (const stmt of rule.stmts) {
      if (stmt.kind === 'xt-extension') for (const o of stmt.options) if (o.value.type === 'ipset') names.add(o.value.set);
    }
  }
  return [...names].map((n) => `|${n}:${digests.get(n) ?? ''}`).join('');
}

/** A digest of a table's sets (declaration and elements) and stateful objects, places left out. */
function namedDigest(table: Table): string {
  const hash = createHash('sha1');
  for (const s of table.sets) {
    hash.update(`${JSON.stringify(stripPlaces({ ...s, elements: undefined }))}{${(s.elements ?? []).length}:`);
    for (const [i, e] of (s.elements ?? []).entries()) hash.update(`${i > 0 ? ',' : ''}${JSON.stringify(stripPlaces(e))}`);
    hash.update('};');
  }
  for (const o of table.objects) hash.update(`${JSON.stringify(stripPlaces(o))};`);
  return hash.digest('base64');
}

/** A value without its places in the input: spans, and the handles `nft -a` numbers objects with. */
function stripPlaces(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripPlaces);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => k !== 'span' && k !== 'handle').map(([k, v]) => [k, stripPlaces(v)]));
}

/** The key of what decided at `loc`: a rule's key, or the chain for a policy. */
export function deciderKey(index: RuleIndex, loc: Loc | undefined): string {
  if (!loc) return 'routing';
  return index.ruleAt(loc)?.key ?? index.policyAt(loc) ?? locKey(loc);
}
