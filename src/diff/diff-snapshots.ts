// `nftsim diff BEFORE AFTER` (issue 6): which flows change fate between two snapshots of a node,
// which lint findings are new or resolved, and which structural changes deserve a look.

import type { Ruleset, Stmt } from '../model/ast.js';
import type { IpSet } from '../model/ipset.js';
import type { Diagnostic } from '../model/diagnostic.js';
import { isIptablesNftTable } from '../model/iptables-nft-chains.js';
import { parseRuleset } from '../parser/parse-ruleset.js';
import { componentOf, componentOfRule } from '../rules/facts/known-components.js';
import type { Finding, Severity } from '../rules/framework/lint-rule.js';
import { lintRuleset } from '../rules/framework/lint-ruleset.js';
import { readHost, type Host, type HostInput } from '../sim/host.js';
import type { Loc, Outcome } from '../sim/outcome.js';
import type { PacketInput } from '../sim/packet.js';
import type { HookIndex } from '../sim/pipeline.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { describeChange, isSameRun, isUntouched, runProbe, sideOf, type ChangeLevel, type ProbeRun, type Side, type TestedBits } from './compare-flows.js';
import { deriveProbes, probeKey, type Probe, type ProbeReport } from './derive-probes.js';
import { reachFilterOf } from './reach-changes.js';
import { indexRules, isSameChain, type RuleAt, type RuleIndex } from './rule-keys.js';
import { pushToList } from './push-to-list.js';

export interface DiffOptions {
  /** The user's probes (a scenario file's packets), compared beside the derived ones. */
  readonly scenarioPackets?: readonly { readonly name: string; readonly packet: PacketInput }[];
  readonly maxProbesPerReason?: number;
  /** Simulate every probe on both sides, without leaving out those that cannot meet a change
   * (reach-changes.ts) or that met none on the BEFORE side: slower, the same result; what the
   * pruning is checked against (test/diff/diff-pruning.test.ts). */
  readonly exhaustive?: boolean;
}

/** One side's outcomes, as `nftsim run --json` prints them, and its reply's. */
export interface FlowSide {
  readonly outcomes: readonly Outcome[];
  readonly reply?: readonly Outcome[];
}

export interface ChangedFlow {
  readonly probe: PacketInput;
  readonly class: string;
  readonly level: ChangeLevel;
  /** Where each side decided what changed. */
  readonly decidedBy: { readonly before?: Loc; readonly after?: Loc };
  readonly before: FlowSide;
  readonly after: FlowSide;
}

export interface StructuralChange {
  readonly kind: 'table-added' | 'table-removed' | 'base-chain-added' | 'base-chain-removed' | 'base-chain-changed' | 'rule-added' | 'rule-removed' | 'ipset-changed';
  readonly level: Severity;
  readonly message: string;
  readonly at?: Loc;
}

export interface DiffResult {
  readonly changedFlows: readonly ChangedFlow[];
  readonly findings: { readonly new: readonly Finding[]; readonly resolved: readonly Finding[] };
  readonly structural: readonly StructuralChange[];
  /** `unreached`: probes that cannot meet a change (not simulated); `reused`: simulated on the
   * BEFORE side only, having touched nothing that changed; `simulated`: on both sides. */
  readonly probes: ProbeReport & { readonly unreached: number; readonly simulated: number; readonly reused: number; readonly unfit: number };
}

/** Diffs two snapshots; bad input (parse errors) gives diagnostics and no diff. */
export function diffSnapshots(before: Snapshot, after: Snapshot, options: DiffOptions = {}): { diff?: DiffResult; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const parsed = [before, after].map((s) => {
    const result = parseRuleset(s.sources);
    diagnostics.push(...result.diagnostics);
    return result.ruleset;
  });
  const host = unionHost(before.host, after.host);
  const hostRead = readHost([{ value: host, path: ['host'] }]);
  for (const e of hostRead.errors) diagnostics.push({ severity: 'error', code: 'input', message: e.message });
  if (diagnostics.some((d) => d.severity === 'error')) return { diagnostics };
  return { diff: diffRulesets([before, after], parsed as [Ruleset, Ruleset], hostRead.host, options), diagnostics };
}

/** diffSnapshots on parsed rulesets and a resolved host. */
export function diffRulesets(snapshots: readonly [Snapshot, Snapshot], rulesets: readonly [Ruleset, Ruleset], host: Host, options: DiffOptions = {}): DiffResult {
  const first = indexRules(rulesets[0]);
  const indexes: [RuleIndex, RuleIndex] = [first, indexRules(rulesets[1], first)];
  const sides = [sideOf('before', rulesets[0], indexes[0]), sideOf('after', rulesets[1], indexes[1])] as const;
  const { chains: changedChains, hooks: changedHooks } = changedParts(indexes);
  const derived = deriveProbes(rulesets, host, { changedChains, ...(options.maxProbesPerReason !== undefined && { maxPerReason: options.maxProbesPerReason }) });
  const probes: Probe[] = [...derived.probes];
  const scenario = options.scenarioPackets ?? [];
  const known = new Set(probes.map((p) => probeKey(p.packet)));
  let scenarioKept = 0;
  for (const s of scenario) {
    if (known.has(probeKey(s.packet))) continue;
    known.add(probeKey(s.packet));
    probes.push({ packet: s.packet, reason: 'scenario', why: s.name });
    scenarioKept++;
  }
  const bits = testedBits(rulesets[0], indexes[1], changedChains);
  const mayReachChange = reachFilterOf(rulesets, changedChains, changedHooks);
  // Conntrack and the NAT hooks are switched on for a family by any rule of its tables, reachable
  // or not (pipeline.ts): where that differs, a change anywhere changes every packet's way.
  const pruned = !options.exhaustive && !switchesDiffer(sides[0].index, sides[1].index);
  const changedFlows: ChangedFlow[] = [];
  let unreached = 0;
  let simulated = 0;
  let reused = 0;
  let unfit = 0;
  for (const probe of probes) {
    // Not simulated at all: its way on both sides meets only identical rules (reach-changes.ts).
    if (pruned && !mayReachChange(probe.packet)) {
      unreached++;
      continue;
    }
    const b = runProbe(sides[0], host, probe.packet);
    let a: ProbeRun | undefined;
    if (b && pruned && isUntouched(b, changedChains, changedHooks)) {
      reused++;
      continue;
    }
    a = runProbe(sides[1], host, probe.packet);
    simulated++;
    if (!a || !b) {
      if (!a && !b) unfit++;
      continue;
    }
    if (isSameRun(b, a, bits, sides)) continue;
    const change = describeChange(b, a, bits, sides);
    changedFlows.push({
      probe: probe.packet,
      class: classTitle(change.what, probe.packet.iif, change.before, change.after, sides),
      level: change.level,
      decidedBy: { ...(change.before && { before: change.before }), ...(change.after && { after: change.after }) },
      before: flowSide(b),
      after: flowSide(a),
    });
  }
  const byReason = { ...derived.report.byReason, ...(scenario.length > 0 && { scenario: { derived: scenario.length, kept: scenarioKept } }) };
  return {
    changedFlows,
    findings: diffFindings(rulesets, snapshots, indexes),
    structural: diffStructure(rulesets, indexes, changedChains),
    probes: { count: probes.length, byReason, ingress: derived.report.ingress, unreached, simulated, reused, unfit },
  };
}

function flowSide(run: ProbeRun): FlowSide {
  return { outcomes: run.outcomes, ...(run.reply && { reply: run.reply }) };
}

/** The host both sides are simulated on: the interfaces and routes of both (the AFTER side's
 * first), since the diff is about the rules (an agent's interface exists on both sides). */
function unionHost(before: HostInput | undefined, after: HostInput | undefined): HostInput {
  const interfaces: unknown[] = [];
  const routes: unknown[] = [];
  const names = new Set<string>();
  const routeKeys = new Set<string>();
  for (const h of [after, before]) {
    for (const i of (h?.interfaces ?? []) as { name?: string; ifname?: string }[]) {
      const name = i.name ?? i.ifname ?? '';
      if (names.has(name)) continue;
      names.add(name);
      interfaces.push(i);
    }
    for (const r of (h?.routes ?? []) as unknown[]) {
      const key = JSON.stringify(r);
      if (routeKeys.has(key)) continue;
      routeKeys.add(key);
      routes.push(r);
    }
  }
  const forwarding = after?.forwarding ?? before?.forwarding;
  return { interfaces, routes, ...(forwarding !== undefined && { forwarding }) } as HostInput;
}

/** The mark and ct mark bits any rule of either side tests (`meta mark & 0x4000 == …`, an exact
 * `meta mark 0x1bd21` tests all 32): the final marks are compared on those only. Of the second
 * side, only the chains that differ are read: the others are the first side's. */
function testedBits(ruleset: Ruleset, other: RuleIndex, changed: ReadonlySet<string>): TestedBits {
  let mark = 0;
  let ctMark = 0;
  // Indexed loops: every statement of a large ruleset, and a for-of loop not yet optimised makes
  // an iterator result per step.
  const read = (stmts: readonly Stmt[]): void => {
    for (let s = 0; s < stmts.length; s++) {
      const stmt = stmts[s]!;
      if (stmt.kind !== 'match') continue;
      const left = stmt.expr.left;
      const target = left.kind === 'binop' && left.op === '&' ? left.left : left;
      const mask = left.kind === 'binop' && left.op === '&' && left.right.kind === 'literal' ? Number(left.right.text) >>> 0 : 0xffffffff;
      if (target.kind === 'meta' && target.key === 'mark') mark |= mask;
      else if (target.kind === 'ct' && target.key === 'mark') ctMark |= mask;
    }
  };
  for (const table of ruleset.tables) for (const chain of table.chains) for (let r = 0; r < chain.rules.length; r++) read(chain.rules[r]!.stmts);
  for (const key of changed) for (const { rule } of other.chains.get(key)?.rules ?? []) read(rule.stmts);
  return { mark: mark >>> 0, ctMark: ctMark >>> 0 };
}

/** Whether conntrack or the NAT hooks are on for a family on one side only. */
function switchesDiffer(before: HookIndex, after: HookIndex): boolean {
  return (['ip', 'ip6'] as const).some((f) => before.conntrack.has(f) !== after.conntrack.has(f) || before.nat.has(f) !== after.nat.has(f));
}

/** Chains that differ between the sides (rules, base spec, their table's sets, or exist on one
 * side), and the hooks whose base chains differ. */
function changedParts(indexes: readonly [RuleIndex, RuleIndex]): { chains: Set<string>; hooks: Set<string> } {
  const chains = new Set<string>();
  // forEach rather than for-of: tens of thousands of chains, and a for-of loop over a map not yet
  // optimised makes an entry and an iterator result per step.
  indexes[0].chains.forEach((c, key) => {
    const other = indexes[1].chains.get(key);
    if (!other || !isSameChain(c, other)) chains.add(key);
  });
  indexes[1].chains.forEach((_, key) => {
    if (!indexes[0].chains.has(key)) chains.add(key);
  });
  const hooks = new Set<string>();
  for (const key of chains) {
    for (const index of indexes) {
      const base = index.chains.get(key)?.chain.base;
      if (base) hooks.add(base.hook);
    }
  }
  return { chains, hooks };
}

function describeLoc(loc: Loc | undefined, side: Side): string {
  if (!loc) return 'routing';
  const at = side.rules.ruleAt(loc);
  const where = `${loc.file}:${loc.line}`;
  return at ? `${at.table.name} ${at.chain.name} rule at ${where}` : `policy at ${where}`;
}

function classTitle(what: string, iif: string | undefined, before: Loc | undefined, after: Loc | undefined, sides: readonly [Side, Side]): string {
  return `${what} from ${iif ?? 'local output'}, decided by ${describeLoc(before, sides[0])} (before) and ${describeLoc(after, sides[1])} (after)`;
}

// ---------------------------------------------------------------------------------------------
// Lint findings

/** Findings matched by rule, message and the text of the line they point at, so a finding whose
 * rule only moved is neither new nor resolved. */
function diffFindings(rulesets: readonly [Ruleset, Ruleset], snapshots: readonly [Snapshot, Snapshot], indexes: readonly [RuleIndex, RuleIndex]): DiffResult['findings'] {
  const [b, a] = rulesets.map((r, i) => keyed(lintRuleset(r).findings, snapshots[i]!, indexes[i]!));
  return { new: unmatched(a!, b!), resolved: unmatched(b!, a!) };
}

function keyed(findings: readonly Finding[], snapshot: Snapshot, rules: RuleIndex): { finding: Finding; key: string }[] {
  const texts = new Map<string, string>(snapshot.sources.map((s): [string, string] => [s.file, s.text]));
  // Made on the first finding: most diffs of large nodes have none.
  let byFile: Map<string, RuleAt[]> | undefined;
  const rulesOf = (file: string): RuleAt[] | undefined => {
    if (!byFile) {
      byFile = new Map();
      for (const c of rules.chains.values()) for (const at of c.rules) pushToList(byFile, at.rule.span.file, at);
    }
    return byFile.get(file);
  };
  const lines = new Map<string, string[] | undefined>();
  const lineOf = (file: string, line: number): string | undefined => {
    if (!lines.has(file)) lines.set(file, texts.get(file)?.split('\n'));
    return lines.get(file)?.[line - 1];
  };
  // What a finding points at: the rule holding its location (its text, whichever dialect printed
  // it; of an iptables rule lowered into several, the last one's), else the line's text.
  const whatAt = (file: string, offset: number, line: number): string => {
    const hit = rulesOf(file)?.find((r) => r.rule.span.start <= offset && offset < r.rule.span.end);
    return hit ? rules.ruleAt(hit.rule.span)!.key : (lineOf(file, line) ?? `${file}:${line}`).trim().replace(/\s+/g, ' ');
  };
  return findings.map((finding) => ({ finding, key: `${finding.rule}|${finding.messageId}|${finding.message}|${whatAt(finding.location.file, finding.location.charOffset, finding.location.line)}` }));
}

function unmatched(these: readonly { finding: Finding; key: string }[], those: readonly { finding: Finding; key: string }[]): Finding[] {
  const counts = new Map<string, number>();
  for (const { key } of those) counts.set(key, (counts.get(key) ?? 0) + 1);
  return these.flatMap(({ finding, key }) => {
    const n = counts.get(key) ?? 0;
    if (n > 0) {
      counts.set(key, n - 1);
      return [];
    }
    return [finding];
  });
}

// ---------------------------------------------------------------------------------------------
// Structure

/** Tables and base chains added, removed or changed, and rules added to (removed from) chains
 * whose owner is not who wrote them: the shared built-in chains of iptables-nft tables, or
 * another component's chains. */
function diffStructure(rulesets: readonly [Ruleset, Ruleset], indexes: readonly [RuleIndex, RuleIndex], changed: ReadonlySet<string>): StructuralChange[] {
  const out: StructuralChange[] = [];
  const tables = rulesets.map((r) => new Map(r.tables.map((t) => [`${t.family} ${t.name}`, t]))) as [Map<string, Ruleset['tables'][number]>, Map<string, Ruleset['tables'][number]>];
  const loc = (span: { file: string; line: number; column: number }): Loc => ({ file: span.file, line: span.line, column: span.column });
  for (const [side, other, kind] of [[tables[1], tables[0], 'table-added'], [tables[0], tables[1], 'table-removed']] as const) {
    for (const [key, table] of side) if (!other.has(key)) out.push({ kind, level: 'info', message: `table ${key} ${kind === 'table-added' ? 'added' : 'removed'}`, at: loc(table.span) });
  }
  const baseOf = (t: Ruleset['tables'][number]) => new Map(t.chains.filter((c) => c.base).map((c) => [c.name, c]));
  for (const [key, after] of tables[1]) {
    const before = tables[0].get(key);
    const ab = baseOf(after);
    const bb = before ? baseOf(before) : new Map<string, never>();
    for (const [name, chain] of ab) {
      const spec = (c: typeof chain) => `type ${c.base!.type} hook ${c.base!.hook} priority ${c.base!.priority.value ?? c.base!.priority.offset} policy ${c.base!.policy ?? 'accept'}`;
      const old = bb.get(name);
      if (!old) out.push({ kind: 'base-chain-added', level: 'info', message: `base chain ${key} ${name} added: ${spec(chain)}`, at: loc(chain.span) });
      else if (spec(old) !== spec(chain)) out.push({ kind: 'base-chain-changed', level: 'warning', message: `base chain ${key} ${name}: ${spec(old)} → ${spec(chain)}`, at: loc(chain.span) });
    }
    for (const [name, chain] of bb) if (!ab.has(name)) out.push({ kind: 'base-chain-removed', level: 'info', message: `base chain ${key} ${name} removed`, at: loc(chain.span) });
  }
  out.push(...foreignRules(indexes[1], indexes[0], 'rule-added', tables[0], changed), ...foreignRules(indexes[0], indexes[1], 'rule-removed', tables[1], changed));
  out.push(...ipsetChanges(rulesets));
  return out;
}

/** ipsets created, dropped, or whose elements changed (probes are not made from their elements:
 * a changed set says which flows to look at). */
function ipsetChanges(rulesets: readonly [Ruleset, Ruleset]): StructuralChange[] {
  const [before, after] = rulesets.map((r) => new Map((r.ipsets ?? []).map((s) => [s.name, s])));
  const text = (set: IpSet): Set<string> => new Set(set.elements.map((e) => `${e.text}${e.nomatch ? ' nomatch' : ''}`));
  const out: StructuralChange[] = [];
  for (const [name, set] of after!) {
    const old = before!.get(name);
    if (!old) {
      out.push({ kind: 'ipset-changed', level: 'info', message: `ipset ${name} (${set.type}) created with ${set.elements.length} elements` });
      continue;
    }
    const [was, is] = [text(old), text(set)];
    const added = [...is].filter((e) => !was.has(e));
    const removed = [...was].filter((e) => !is.has(e));
    if (added.length === 0 && removed.length === 0 && old.type === set.type) continue;
    const list = (items: readonly string[]) => `${items.slice(0, 5).join(', ')}${items.length > 5 ? `, … (${items.length})` : ''}`;
    const parts = [...(old.type !== set.type ? [`type ${old.type} → ${set.type}`] : []), ...(added.length > 0 ? [`added ${list(added)}`] : []), ...(removed.length > 0 ? [`removed ${list(removed)}`] : [])];
    out.push({ kind: 'ipset-changed', level: 'warning', message: `ipset ${name}: ${parts.join('; ')}` });
  }
  for (const [name, set] of before!) if (!after!.has(name)) out.push({ kind: 'ipset-changed', level: 'warning', message: `ipset ${name} (${set.type}) no longer created` });
  return out;
}

const NO_OWNERS = { tables: {}, chains: {}, marks: {} };

/** Rules of the `changed` chains of `own`'s side that the other side's same chain lacks (by key,
 * counting duplicates), in tables the other side has, written by someone other than the chain's
 * owner. A chain not among `changed` holds the same keys on both sides: none of its rules is
 * lacking. */
function foreignRules(own: RuleIndex, other: RuleIndex, kind: 'rule-added' | 'rule-removed', otherTables: ReadonlyMap<string, unknown>, changed: ReadonlySet<string>): StructuralChange[] {
  const out: StructuralChange[] = [];
  own.chains.forEach(({ table, chain, rules }, ck) => {
    if (!changed.has(ck) || !otherTables.has(`${table.family} ${table.name}`)) return;
    // Keys start with their chain's key: only the same chain's rules can match.
    const remaining = new Map<string, number>();
    for (const { key } of other.chains.get(ck)?.rules ?? []) remaining.set(key, (remaining.get(key) ?? 0) + 1);
    const owner = componentOf(NO_OWNERS, table.family, table.name, chain.name);
    for (const { rule, key } of rules) {
      const n = remaining.get(key) ?? 0;
      if (n > 0) {
        remaining.set(key, n - 1);
        continue;
      }
      // No mark bits are given, so the components present are never asked for.
      const writer = componentOfRule(NO_OWNERS, table, chain.name, rule, 0, () => new Set()) ?? (rule.origin?.format === 'iptables' ? undefined : 'a native nft rule');
      if (writer !== undefined && writer === owner) continue;
      const native = isIptablesNftTable(table.name) && rule.origin?.format !== 'iptables' ? ' (native nft in an iptables-nft table)' : '';
      const verb = kind === 'rule-added' ? 'now writes into' : 'no longer writes into';
      out.push({
        kind,
        level: native || owner !== undefined ? 'warning' : 'info',
        message: `${writer ?? 'an unattributed rule'} ${verb} ${table.family} ${table.name} ${chain.name}${owner ? ` (owned by ${owner})` : ''}${native}: ${key.slice(key.indexOf(': ') + 2)}`,
        at: { file: rule.span.file, line: rule.span.line, column: rule.span.column },
      });
    }
  });
  return out;
}
