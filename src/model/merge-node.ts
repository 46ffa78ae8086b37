// One node from several captures: `nft list ruleset` (or `nft -j list ruleset`) beside the
// `iptables-save` / `ip6tables-save` dumps of the same node. The nft listing of a table
// iptables-nft manages is lossy (xt matches print as blanks or approximations) but it is the only
// place where rules other programs added natively to that table show; the dump is lossless but
// blind to those. So such a table is assembled from both, chain by chain and rule by rule; every
// other table composes in input order, as loading the files one after the other would.

import type { Expr, Family, Rule, RuleOrigin, Ruleset, Stmt, Table } from './ast.js';
import type { Diagnostic } from './diagnostic.js';
import type { IpSet } from './ipset.js';
import { composeTables, type ChainId } from './compose-rulesets.js';
import { formatExpr, formatStmt } from './format-ruleset.js';
import { iptablesNftChain, isIptablesNftTable } from './iptables-nft-chains.js';

export interface TableId {
  readonly family: Family;
  readonly name: string;
}

/** One parsed input of a node capture. */
export interface NodeInput {
  readonly file: string;
  readonly format: RuleOrigin['format'] | 'ipset';
  readonly ruleset: Ruleset;
  /** Tables an iptables-nft-save dump says it could not list (``# Table `filter' is
   * incompatible, use 'nft' tool.``): the nft listing is all there is of them. */
  readonly incompatibleTables?: readonly TableId[];
  /** Chains this input continued from the inputs before it (EarlierChainLookup): its chain holds
   * the whole chain and replaces the earlier one. */
  readonly continued?: readonly ChainId[];
}

export interface MergeNodeResult {
  readonly ruleset: Ruleset;
  /** One `merge` info per table saying how it was assembled (none for a single input). */
  readonly diagnostics: readonly Diagnostic[];
}

/**
 * The ruleset of a node captured as several files. A table iptables-nft manages that both an nft
 * listing and an iptables-save dump hold is aligned when the listing lists the dump's rules (one
 * capture of one state): a rule both hold is the dump's rule (lossless, keeping its iptables
 * origin, with the listing's handle), a rule only the listing holds is a native rule another
 * program added and stays at its place. Anything else composes in input order
 * (composeRulesets): rules a later file adds to a chain come after the chain's rules.
 */
export function mergeNode(inputs: readonly NodeInput[]): MergeNodeResult {
  const assemblies: Assembly[] = [];
  const byId = new Map<string, Assembly>();
  for (const input of inputs) {
    for (const table of input.ruleset.tables) {
      const id = tableId(table);
      const assembly = byId.get(id);
      if (assembly === undefined) {
        const created: Assembly = { id, table, files: [input.file], only: { input, table }, how: '' };
        assemblies.push(created);
        byId.set(id, created);
        continue;
      }
      assembly.files.push(input.file);
      const continued = new Set((input.continued ?? []).filter((c) => c.family === table.family && c.table === table.name).map((c) => c.chain));
      // An input that continues chains of the table is a later change, not another capture.
      const pair = assembly.only && continued.size === 0 ? alignablePair(assembly.only, { input, table }) : undefined;
      const aligned = pair && alignTables(pair.listing.table, pair.dump.table);
      if (pair && aligned?.sameState) {
        assembly.table = aligned.table;
        assembly.how = describeAlignment(aligned, pair.listing.input.file, pair.dump.input.file);
      } else {
        assembly.table = composeTables(assembly.table, table, continued);
        assembly.how = `composed in order from ${assembly.files.join(', ')}`;
        if (pair) {
          assembly.how += ` (${pair.listing.input.file} does not list the rules of ${pair.dump.input.file}: not one capture)`;
        }
      }
      assembly.only = undefined;
    }
  }
  const { ipsets, duplicates } = mergeIpsets(inputs);
  const tables = assemblies.map((a) => a.table);
  const ruleset: Ruleset = ipsets.length > 0 ? { kind: 'ruleset', tables, ipsets } : { kind: 'ruleset', tables };
  if (inputs.length < 2) return { ruleset, diagnostics: [] };
  const incompatible = new Map<string, string>();
  for (const input of inputs) {
    for (const t of input.incompatibleTables ?? []) incompatible.set(`${t.family} ${t.name}`, input.file);
  }
  const diagnostics = assemblies.map((a): Diagnostic => {
    let how = a.how;
    if (a.only !== undefined) {
      how = `from ${a.only.input.file}`;
      const dumpFile = incompatible.get(a.id);
      if (dumpFile !== undefined) how += ` alone: ${dumpFile} says iptables-nft-save could not list this table`;
    }
    return { severity: 'info', code: 'merge', message: `${a.id}: ${how}` };
  });
  return { ruleset, diagnostics: [...duplicates, ...diagnostics] };
}

/** The ipsets of all inputs; a name a later input creates again is an error, as `ipset
 * restore` of the second file would be (the set exists), and the first one stays. */
function mergeIpsets(inputs: readonly NodeInput[]): { ipsets: IpSet[]; duplicates: Diagnostic[] } {
  const ipsets: IpSet[] = [];
  const duplicates: Diagnostic[] = [];
  const names = new Set<string>();
  for (const input of inputs) {
    for (const set of input.ruleset.ipsets ?? []) {
      if (names.has(set.name)) duplicates.push({ severity: 'error', code: 'duplicate-ipset', message: `ipset ${set.name} is created by an earlier input too`, span: set.span });
      else {
        names.add(set.name);
        ipsets.push(set);
      }
    }
  }
  return { ipsets, duplicates };
}

interface Sourced {
  readonly input: NodeInput;
  readonly table: Table;
}

/** A table while the inputs are read. */
interface Assembly {
  readonly id: string;
  table: Table;
  /** The inputs it came from, in order. */
  readonly files: string[];
  /** The one input it came from, while that is all: a dump or a listing may still align with it. */
  only: Sourced | undefined;
  /** How it was assembled, once more than one input gave it. */
  how: string;
}

function tableId(table: TableId): string {
  return `${table.family} ${table.name}`;
}

/** An nft listing and an iptables dump of the same iptables-nft table, in either order. */
function alignablePair(a: Sourced, b: Sourced): { listing: Sourced; dump: Sourced } | undefined {
  const { family, name } = a.table;
  if ((family !== 'ip' && family !== 'ip6') || !isIptablesNftTable(name)) return undefined;
  const isDump = (s: Sourced) => s.input.format === 'iptables';
  if (isDump(a) === isDump(b)) return undefined;
  return isDump(a) ? { listing: b, dump: a } : { listing: a, dump: b };
}

// ---------------------------------------------------------------------------------------------
// Aligning a listing with a dump

interface TableAlignment {
  readonly table: Table;
  /** The listing lists the dump's chains and most of its rules: both are one capture. */
  readonly sameState: boolean;
  readonly dumpChains: number;
  readonly dumpRules: number;
  /** Rules found only through the loose key (the listing prints them approximately). */
  readonly loose: number;
  /** Chain name → 1-based positions in the merged chain. */
  readonly native: ReadonlyMap<string, readonly number[]>;
  readonly dumpOnly: ReadonlyMap<string, readonly number[]>;
  readonly listingOnlyChains: readonly string[];
}

function alignTables(listing: Table, dump: Table): TableAlignment {
  const dumpChains = new Map(dump.chains.map((c) => [c.name, c]));
  const native = new Map<string, readonly number[]>();
  const dumpOnly = new Map<string, readonly number[]>();
  const listingOnlyChains: string[] = [];
  let matched = 0;
  let loose = 0;
  const chains = listing.chains.map((chain) => {
    const fromDump = dumpChains.get(chain.name);
    if (fromDump === undefined) {
      listingOnlyChains.push(chain.name);
      return chain;
    }
    const aligned = alignChain(chain.rules, fromDump.rules, listing.family);
    matched += aligned.matched;
    loose += aligned.loose;
    if (aligned.native.length > 0) native.set(chain.name, aligned.native);
    if (aligned.dumpOnly.length > 0) dumpOnly.set(chain.name, aligned.dumpOnly);
    return { ...chain, rules: aligned.rules };
  });
  const dumpRules = dump.chains.reduce((n, c) => n + c.rules.length, 0);
  const listed = new Set(listing.chains.map((c) => c.name));
  // iptables-nft-save prints every built-in chain of a table, also those that do not exist in
  // the kernel (iptables/nft.c nft_xt_fake_builtin_chains): an empty one the listing lacks is no
  // sign of another capture.
  const isFake = (c: Table['chains'][number]) => c.rules.length === 0 && iptablesNftChain(dump.name, c.name) !== undefined;
  const sameState = dump.chains.every((c) => listed.has(c.name) || isFake(c)) && matched * 2 >= dumpRules;
  return {
    table: { ...listing, chains },
    sameState,
    dumpChains: dump.chains.length,
    dumpRules,
    loose,
    native,
    dumpOnly,
    listingOnlyChains,
  };
}

function describeAlignment(a: TableAlignment, listingFile: string, dumpFile: string): string {
  const parts = [`${plural(a.dumpChains, 'chain')} and ${plural(a.dumpRules, 'rule')} from ${dumpFile}, aligned with ${listingFile}`];
  const count = (positions: ReadonlyMap<string, readonly number[]>) => [...positions.values()].reduce((n, p) => n + p.length, 0);
  const where = (positions: ReadonlyMap<string, readonly number[]>) =>
    [...positions].map(([chain, at]) => `${chain}:${at.join(',')}`).join(' ');
  const nativeCount = count(a.native);
  parts.push(nativeCount === 0 ? 'no native rules' : `${plural(nativeCount, 'native rule')} kept from ${listingFile} at ${where(a.native)}`);
  if (a.listingOnlyChains.length > 0) parts.push(`chains only in ${listingFile}: ${a.listingOnlyChains.join(', ')}`);
  if (a.dumpOnly.size > 0) {
    parts.push(`${plural(count(a.dumpOnly), 'rule')} only in ${dumpFile} at ${where(a.dumpOnly)} (the captures differ)`);
  }
  if (a.loose > 0) parts.push(`${plural(a.loose, 'rule')} matched loosely (${listingFile} prints an xt match approximately)`);
  return parts.join('; ');
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

interface ChainAlignment {
  readonly rules: readonly Rule[];
  readonly matched: number;
  readonly loose: number;
  readonly native: readonly number[];
  readonly dumpOnly: readonly number[];
}

/** Merges one chain: rules both hold become the dump's rule (with the listing's handle), rules
 * only the listing holds stay where the listing has them, rules only the dump holds go just
 * before the next rule both hold. */
function alignChain(listing: readonly Rule[], dump: readonly Rule[], family: Family): ChainAlignment {
  const dumpOf = alignKeys(
    listing.map((r) => ruleKey(r, family, false)),
    dump.map((r) => ruleKey(r, family, false)),
  );
  // Second pass, between the rules the exact key paired: the key without what the listing
  // prints approximately.
  let loose = 0;
  for (let i = 0; i < listing.length; ) {
    if (dumpOf[i]! >= 0) {
      i++;
      continue;
    }
    let end = i;
    while (end < listing.length && dumpOf[end]! < 0) end++;
    const j0 = i > 0 ? dumpOf[i - 1]! + 1 : 0;
    const j1 = end < listing.length ? dumpOf[end]! : dump.length;
    if (j1 > j0) {
      const inGap = alignKeys(
        listing.slice(i, end).map((r) => ruleKey(r, family, true)),
        dump.slice(j0, j1).map((r) => ruleKey(r, family, true)),
      );
      inGap.forEach((j, k) => {
        if (j < 0) return;
        dumpOf[i + k] = j0 + j;
        loose++;
      });
    }
    i = end;
  }
  const rules: Rule[] = [];
  const native: number[] = [];
  const dumpOnly: number[] = [];
  let matched = 0;
  let next = 0;
  const takeDumpUpTo = (end: number) => {
    for (; next < end; next++) {
      rules.push(dump[next]!);
      dumpOnly.push(rules.length);
    }
  };
  listing.forEach((rule, i) => {
    const j = dumpOf[i]!;
    if (j < 0) {
      rules.push(rule);
      native.push(rules.length);
      return;
    }
    takeDumpUpTo(j);
    const fromDump = dump[j]!;
    rules.push(rule.handle === undefined ? fromDump : { ...fromDump, handle: rule.handle });
    matched++;
    next = j + 1;
  });
  takeDumpUpTo(dump.length);
  return { rules, matched, loose, native, dumpOnly };
}

// ---------------------------------------------------------------------------------------------
// Rule keys

// Where nft 1.0.6 lists an iptables-nft rule approximately, beside what the lowering gives
// (which keeps the xt match exactly, as an xt-extension): `-m conntrack --ctstate DNAT` and
// `! --ctstate …,DNAT` list as `ct status dnat` (negation and states lost; nft's xt decode of
// libxt_conntrack), `-m rpfilter` as `fib saddr . mark . iif oif 0`. The loose key leaves out
// matches on these keys. Seen in corpus/real/kube-proxy-5svc and calico-ipip.
function isApproximateInListing(stmt: Stmt): boolean {
  if (stmt.kind !== 'match') return false;
  const left = operandOf(stmt.expr.left);
  return (left.kind === 'ct' && left.key === 'status') || left.kind === 'fib';
}

/** The expression a relational tests, under a mask (`ct status & dnat`, `tcp flags & …`). */
function operandOf(expr: Expr): Expr {
  return expr.kind === 'binop' ? operandOf(expr.left) : expr;
}

/** The layer 4 protocol a match names (`meta l4proto tcp`, `ip protocol tcp`, `ip6 nexthdr
 * tcp`): iptables-nft lists `-p` as `meta l4proto`, the lowering may say `ip protocol`, and a
 * native listing leaves it out before `tcp dport`. */
function l4protoOf(stmt: Stmt): { readonly op: string; readonly value: string } | undefined {
  if (stmt.kind !== 'match') return undefined;
  const { left, right, op } = stmt.expr;
  const isL4proto =
    (left.kind === 'meta' && left.key === 'l4proto') ||
    (left.kind === 'payload' && ((left.protocol === 'ip' && left.field === 'protocol') || (left.protocol === 'ip6' && left.field === 'nexthdr')));
  if (!isL4proto || right.kind !== 'literal') return undefined;
  // By number when typed: nft names protocol 4 `ipencap`, iptables `ipip`.
  const value = right.value?.type === 'integer' ? String(right.value.n) : formatExpr(right);
  return { op: op === 'implicit' ? '==' : op, value };
}

// The protocol numbers of the payload protocols whose matches imply `meta l4proto` (nft's
// payload dependency, src/payload.c; numbers from /etc/protocols).
const L4_PROTOCOL_NUMBERS: Readonly<Record<string, string>> = {
  icmp: '1',
  igmp: '2',
  tcp: '6',
  udp: '17',
  dccp: '33',
  esp: '50',
  ah: '51',
  icmpv6: '58',
  sctp: '132',
  udplite: '136',
};

/**
 * What a rule does, as text to compare an nft listing's rule with a lowered iptables rule: the
 * statements as the printer prints them, without what the two print differently for the same
 * rule — xt placeholders and extensions, counters, the comment, and `meta l4proto` when a later
 * match implies it. `loose` also leaves out what the listing prints approximately.
 */
function ruleKey(rule: Rule, family: Family, loose: boolean): string {
  let key = '';
  let l4: { readonly op: string; readonly value: string }[] | undefined;
  for (const stmt of rule.stmts) {
    if (stmt.kind === 'xt' || stmt.kind === 'xt-extension' || stmt.kind === 'counter') continue;
    if (loose && isApproximateInListing(stmt)) continue;
    const proto = l4protoOf(stmt);
    if (proto !== undefined) (l4 ??= []).push(proto);
    else key += key === '' ? formatStmt(stmt, family) : ` ${formatStmt(stmt, family)}`;
  }
  if (l4 === undefined) return key;
  const implied = new Set<string>();
  for (const stmt of rule.stmts) {
    const left = stmt.kind === 'match' ? operandOf(stmt.expr.left) : undefined;
    const number = left?.kind === 'payload' ? L4_PROTOCOL_NUMBERS[left.protocol] : undefined;
    if (number !== undefined) implied.add(number);
  }
  const kept = l4.filter((p) => !(p.op === '==' && implied.has(p.value))).map((p) => `l4proto ${p.op} ${p.value}`);
  return [...kept, key].filter((part) => part !== '').join(' ');
}

// ---------------------------------------------------------------------------------------------
// Sequence alignment

// Above this many cells the LCS table gives way to a greedy in-order match (16 MB of table).
const MAX_LCS_CELLS = 4_000_000;

/**
 * For each key of `a`, the index of the key of `b` it pairs with (-1 for none): pairs are equal
 * keys, in order on both sides, as many as a longest common subsequence has. The common prefix
 * and suffix pair in one pass, so chains listed alike (the usual case, with thousands of
 * kube-proxy rules) cost O(n); the middle goes through the LCS table when small enough and a
 * greedy in-order match otherwise.
 */
export function alignKeys(a: readonly string[], b: readonly string[]): Int32Array {
  const pairs = new Int32Array(a.length).fill(-1);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) {
    pairs[start] = start;
    start++;
  }
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
    pairs[endA] = endB;
  }
  const n = endA - start;
  const m = endB - start;
  if (n === 0 || m === 0) return pairs;
  if ((n + 1) * (m + 1) <= MAX_LCS_CELLS) alignByTable(a, b, start, n, m, pairs);
  else alignGreedily(a, b, start, endA, endB, pairs);
  return pairs;
}

/** The LCS of a[start, start+n) and b[start, start+m) by the suffix-length table. */
function alignByTable(a: readonly string[], b: readonly string[], start: number, n: number, m: number, pairs: Int32Array): void {
  const width = m + 1;
  const length = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      length[i * width + j] =
        a[start + i] === b[start + j]
          ? length[(i + 1) * width + j + 1]! + 1
          : Math.max(length[(i + 1) * width + j]!, length[i * width + j + 1]!);
    }
  }
  for (let i = 0, j = 0; i < n && j < m; ) {
    if (a[start + i] === b[start + j]) {
      pairs[start + i] = start + j;
      i++;
      j++;
    } else if (length[(i + 1) * width + j]! >= length[i * width + j + 1]!) i++;
    else j++;
  }
}

/** Each key of a pairs with the first equal key of b after the last pair. */
function alignGreedily(a: readonly string[], b: readonly string[], start: number, endA: number, endB: number, pairs: Int32Array): void {
  const positions = new Map<string, number[]>();
  for (let j = start; j < endB; j++) {
    const list = positions.get(b[j]!);
    if (list) list.push(j);
    else positions.set(b[j]!, [j]);
  }
  const cursor = new Map<string, number>();
  let after = start;
  for (let i = start; i < endA; i++) {
    const list = positions.get(a[i]!);
    if (list === undefined) continue;
    let k = cursor.get(a[i]!) ?? 0;
    while (k < list.length && list[k]! < after) k++;
    cursor.set(a[i]!, k);
    if (k === list.length) continue;
    pairs[i] = list[k]!;
    after = list[k]! + 1;
  }
}
