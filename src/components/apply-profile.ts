import type { Chain, Rule, Ruleset, Span } from '../model/ast.js';
import type { Diagnostic } from '../model/diagnostic.js';
import { formatRule } from '../model/format-ruleset.js';
import { iptablesNftChain } from '../model/iptables-nft-chains.js';
import { mergeNode } from '../model/merge-node.js';
import { parseNftRuleBody } from '../parser/nft/parse-nft.js';
import { parseNode, parseRuleset, parseSources, type NodeSource } from '../parser/parse-ruleset.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { loadProfile, parseChainRef, type ComponentProfile, type ProfileOptions, type ProfileVersion } from './profile.js';
import { renderInsertion, renderVersion, resolveParameters, type ParameterValues } from './render-profile.js';

export { listProfiles, loadProfile } from './profile.js';

/**
 * The snapshot an agent version leaves (docs/components.md): the BEFORE snapshot without what the
 * component owns there (its tables and chains, and its rules in chains it shares, recognised by
 * comment, by jumping to its chains, or by the shape of a rule some version of it writes), plus
 * the files that version writes, in the order it writes them. `ref` is `name@version`
 * (`netbird@0.40`), `params` the `--set NAME=VALUE` pairs. Never throws on bad input.
 */
export function applyProfile(
  snapshot: Snapshot,
  ref: string,
  params: Readonly<Record<string, string>>,
  options: ProfileOptions = {},
): { snapshot?: Snapshot; diagnostics: Diagnostic[] } {
  const loaded = loadProfile(ref, options);
  const diagnostics = [...loaded.diagnostics];
  const { profile, version } = loaded;
  if (!profile || !version) return { diagnostics };
  const resolved = resolveParameters(profile, params);
  diagnostics.push(...resolved.diagnostics);
  const values = resolved.values;
  if (!values) return { diagnostics };

  const { parsed } = parseSources(snapshot.sources);
  const recognise = recogniserOf(profile, values);
  const removed: string[] = [];
  const sources = snapshot.sources.map((source, i): NodeSource => {
    const input = parsed[i]!;
    const ranges = ownedRanges(input.ruleset, source, recognise, removed);
    if (ranges.length === 0) return source;
    if (input.format === 'json') {
      diagnostics.push({ severity: 'warning', code: 'apply-json', message: `${source.file} (nft JSON) holds ${profile.name}'s earlier rules, which nftsim cannot take out of JSON: the result keeps them beside the new ones; give the text listing (nft list ruleset) instead` });
      return source;
    }
    return { ...source, text: blankRanges(source.text, ranges) };
  });
  if (removed.length > 0) {
    diagnostics.push({ severity: 'info', code: 'apply-replaced', message: `${ref}: took out what ${profile.name} had written before: ${removed.join('; ')}` });
  }

  // Insertions the agent makes only into chains that exist (Netbird: "whenever a table named
  // filter exists").
  const before = mergeNode(parseSources(sources).parsed).ruleset;
  const skip = new Set<number>();
  version.insertions.forEach((ins, i) => {
    if (ins.when !== undefined && values.get(ins.when)?.text === '') {
      skip.add(i);
      return;
    }
    if (!ins.onlyIfChainExists || chainIn(before, ins.family, ins.table, ins.chain)) return;
    skip.add(i);
    diagnostics.push({ severity: 'info', code: 'apply-skipped', message: `${ref}: the node has no ${ins.family} ${ins.table} ${ins.chain}, so ${profile.name} does not write '${ins.rule.trim()}' there` });
  });
  const rendered = renderVersion(profile, version, values, skip);
  diagnostics.push(...rendered.diagnostics);
  if (rendered.diagnostics.some((d) => d.severity === 'error')) return { diagnostics };
  const after: Snapshot = { ...snapshot, label: `${snapshot.label} + ${ref}`, sources: [...sources, ...rendered.sources] };
  // What the overlay does not parse is the profile's fault, not the user's: say which file.
  const check = parseNode(after.sources);
  const overlayFiles = new Set(rendered.sources.map((s) => s.file));
  for (const d of check.diagnostics) {
    if (d.severity === 'error' && d.span && overlayFiles.has(d.span.file)) {
      diagnostics.push({ ...d, code: 'profile', message: `${profile.file} (${version.range.text}) renders to input nftsim cannot load: ${d.message}` });
    }
  }
  return { snapshot: after, diagnostics };
}

function chainIn(ruleset: Ruleset, family: string, table: string, chain: string): Chain | undefined {
  return ruleset.tables.find((t) => t.family === family && t.name === table)?.chains.find((c) => c.name === chain);
}

// ---------------------------------------------------------------------------------------------
// Recognising what the component wrote

interface Recogniser {
  isOwnedTable(family: string, table: string): boolean;
  isOwnedChain(family: string, table: string, chain: string): boolean;
  /** A rule of the component in a chain it does not own. */
  isItsRule(family: string, table: string, chain: string, rule: Rule): boolean;
}

function matchesPattern(pattern: string, name: string): boolean {
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : pattern === name;
}

/** A rule as what it does: its statements without counters, xt placeholders and its comment
 * (an nft listing and an iptables dump of one rule then agree, as in merge-node's key). */
function shapeOf(rule: Rule): string {
  return formatRule({ ...rule, comment: undefined, stmts: rule.stmts.filter((s) => s.kind !== 'counter' && s.kind !== 'xt') });
}

function recogniserOf(profile: ComponentProfile, values: ParameterValues): Recogniser {
  const chainRefs = profile.ownsChains.map((c) => parseChainRef(c)!);
  const isOwnedTable = (family: string, table: string) => profile.ownsTables.includes(`${family} ${table}`);
  const isOwnedChain = (family: string, table: string, chain: string) =>
    isOwnedTable(family, table) || chainRefs.some((r) => r.family === family && r.table === table && matchesPattern(r.chain, chain));
  const shapes = new Set<string>();
  for (const version of profile.versions) for (const shape of shapesOf(profile, version, values, isOwnedChain)) shapes.add(shape);
  return {
    isOwnedTable,
    isOwnedChain,
    isItsRule(family, table, chain, rule) {
      if (rule.comment !== undefined && profile.commentPrefixes.some((p) => rule.comment!.startsWith(p))) return true;
      // In its own chains it keeps (kube-proxy's KUBE-SVC-*), a jump to KUBE-MARK-MASQ is service
      // content, not skeleton.
      const itsChain = profile.chainPrefixes.some((p) => chain.startsWith(p));
      const jumps = !itsChain && rule.stmts.some((s) => s.kind === 'verdict' && (s.verdict === 'jump' || s.verdict === 'goto') && s.target !== undefined && isOwnedChain(family, table, s.target));
      return jumps || shapes.has(`${family} ${table} ${shapeOf(rule)}`);
    },
  };
}

/** The rules a version writes into chains the component does not own, as `family table shape`. */
function shapesOf(profile: ComponentProfile, version: ProfileVersion, values: ParameterValues, isOwnedChain: Recogniser['isOwnedChain']): string[] {
  const shapes: string[] = [];
  for (const ins of version.insertions) {
    const { rule } = renderInsertion(ins, values, profile.file);
    let rules: readonly Rule[] = [];
    if (ins.format === 'nft') {
      const parsed = parseNftRuleBody(rule);
      rules = parsed.rule ? [parsed.rule] : [];
    } else {
      const declare = iptablesNftChain(ins.table, ins.chain) ? '' : `:${ins.chain} - [0:0]\n`;
      const parsed = parseRuleset(`*${ins.table}\n${declare}-A ${ins.chain} ${rule}\nCOMMIT\n`, { format: 'iptables', file: profile.file });
      rules = parsed.ruleset.tables.flatMap((t) => t.chains.flatMap((c) => c.rules));
    }
    for (const r of rules) shapes.push(`${ins.family} ${ins.table} ${shapeOf(r)}`);
  }
  const files = renderVersion(profile, version, values).sources.filter((s) => !s.file.includes('-insert.'));
  for (const table of parseNode(files).ruleset.tables) {
    for (const chain of table.chains) {
      if (isOwnedChain(table.family, table.name, chain.name)) continue;
      for (const r of chain.rules) shapes.push(`${table.family} ${table.name} ${shapeOf(r)}`);
    }
  }
  return shapes;
}

// ---------------------------------------------------------------------------------------------
// Taking it out of the text

interface Range {
  readonly start: number;
  readonly end: number;
}

/** The text ranges of `source` that hold what the component wrote: owned tables and chains (their
 * whole block in an nft listing; declaration and rules in a dump) and its rules elsewhere. */
function ownedRanges(ruleset: Ruleset, source: NodeSource, recognise: Recogniser, removed: string[]): Range[] {
  const ranges: Range[] = [];
  const mine = (span: Span) => span.file === source.file;
  const isDump = ruleset.tables.some((t) => t.chains.some((c) => c.rules.some((r) => r.origin?.format === 'iptables' && mine(r.span))));
  const where = (span: Span) => `${span.file}:${span.line}`;
  for (const table of ruleset.tables) {
    const { family, name } = table;
    if (recognise.isOwnedTable(family, name)) {
      if (mine(table.span)) {
        ranges.push({ start: table.span.start, end: blockEnd(source.text, table.span.start) });
        removed.push(`table ${family} ${name} (${where(table.span)})`);
      }
      continue;
    }
    for (const chain of table.chains) {
      if (recognise.isOwnedChain(family, name, chain.name)) {
        if (mine(chain.span)) {
          // A dump declares a chain on one line (`:NAME - [0:0]`) and lists its rules apart.
          ranges.push({ start: chain.span.start, end: isDump ? chain.span.end : blockEnd(source.text, chain.span.start) });
          if (isDump) for (const r of chain.rules) if (mine(r.span)) ranges.push(r.span);
          removed.push(`chain ${family} ${name} ${chain.name} (${where(chain.span)})`);
        }
        continue;
      }
      const its = chain.rules.filter((r) => mine(r.span) && recognise.isItsRule(family, name, chain.name, r));
      if (its.length === 0) continue;
      ranges.push(...its.map((r) => ruleRange(source.text, r.span)));
      removed.push(`${its.length} rule${its.length === 1 ? '' : 's'} in ${family} ${name} ${chain.name} (${its.map((r) => where(r.span)).join(', ')})`);
    }
  }
  return ranges;
}

// The command in front of a rule written as `add rule ip filter FORWARD …` (the rule's span
// starts at its first statement).
const RULE_COMMAND = /^\s*(?:add|insert|create)\s+rule\s[^#]*$/;

/** A rule's text, with the `add rule …` command in front of it when it has one. */
function ruleRange(text: string, span: Span): Range {
  const lineStart = text.lastIndexOf('\n', span.start - 1) + 1;
  return RULE_COMMAND.test(text.slice(lineStart, span.start)) ? { start: lineStart, end: span.end } : { start: span.start, end: span.end };
}

/** Where the `{ … }` block starting at or after `start` ends (after its `}`): braces counted
 * outside strings and comments. */
function blockEnd(text: string, start: number): number {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const close = text.indexOf('"', i + 1);
      i = close < 0 ? text.length : close;
    } else if (c === '#') {
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? text.length : nl;
    } else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i + 1;
  }
  return text.length;
}

/** `text` with the ranges replaced by spaces, newlines kept: every other rule keeps its line and
 * column, so locations on the AFTER side still point at the BEFORE files. */
function blankRanges(text: string, ranges: readonly Range[]): string {
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  let out = '';
  let at = 0;
  for (const r of sorted) {
    if (r.end <= at) continue;
    const start = Math.max(r.start, at);
    out += text.slice(at, start) + text.slice(start, r.end).replace(/[^\n]/g, ' ');
    at = r.end;
  }
  return out + text.slice(at);
}
