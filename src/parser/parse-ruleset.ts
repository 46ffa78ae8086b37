import { detectFormat, type InputFormat } from './detect-format.js';
import { parseNft } from './nft/parse-nft.js';
import { parseNftJson } from './json/parse-nft-json.js';
import type { ParseOptions, ParseResult } from './parse-result.js';
import { readIptablesSave } from './iptables/parse-iptables-save.js';
import { parseIpsetSave } from './ipset/parse-ipset-save.js';
import { IptablesLowering } from '../model/lower-iptables.js';
import { mergeNode, type NodeInput, type TableId } from '../model/merge-node.js';
import type { Diagnostic } from '../model/diagnostic.js';
import { earlierChainsOf, type EarlierChainLookup } from '../model/compose-rulesets.js';
import { valueRangeErrors } from '../model/value-range-errors.js';
import { dynsetDataErrors } from '../model/dynset-data-errors.js';

export interface ParseRulesetOptions extends ParseOptions {
  readonly format?: 'auto' | InputFormat;
}

/** One file of a node capture for parseNode: its text, its name, and its format when known
 * (else the options' format, else detected from the text). */
export interface NodeSource {
  readonly text: string;
  readonly file: string;
  readonly format?: 'auto' | InputFormat;
}

export type ParseNodeOptions = Omit<ParseRulesetOptions, 'file'>;

/** Parses one input in any supported format into the model, or several as one node (parseNode).
 * Never throws on bad input. */
export function parseRuleset(text: string, options?: ParseRulesetOptions): ParseResult;
export function parseRuleset(inputs: readonly NodeSource[], options?: ParseNodeOptions): ParseResult;
export function parseRuleset(input: string | readonly NodeSource[], options: ParseRulesetOptions = {}): ParseResult {
  if (typeof input !== 'string') return parseNode(input, options);
  const text = input;
  const format = !options.format || options.format === 'auto' ? detectFormat(text) : options.format;
  switch (format) {
    case 'nft':
      return withLoadErrors(parseNft(text, options));
    case 'json':
      return withLoadErrors(parseNftJson(text, options));
    case 'iptables': {
      // Lowered while read: the parser's nodes of a large dump never pile up (IptablesDumpSink).
      const lowering = new IptablesLowering(options.earlier ? { earlier: options.earlier } : {});
      const parsed = readIptablesSave(text, lowering, { ...options, familyHint: familyHintOf(options.file) });
      const lowered = lowering.finish();
      const diagnostics = [...parsed, ...lowered.diagnostics];
      return lowered.continued ? { ruleset: lowered.ruleset, diagnostics, continued: lowered.continued } : { ruleset: lowered.ruleset, diagnostics };
    }
    case 'ipset': {
      const { ipsets, diagnostics } = parseIpsetSave(text, options.file);
      return { ruleset: { kind: 'ruleset', tables: [], ipsets }, diagnostics };
    }
    default: {
      const exhaustive: never = format;
      return exhaustive;
    }
  }
}

/** An nft listing or script with the errors nft or the kernel would give when loading it, which
 * no one statement shows: constants too wide for their type, a map's dynset without data.
 * (iptables-restore refuses what it would itself, and iptables input is read as it does.) */
function withLoadErrors(result: ParseResult): ParseResult {
  const errors = [...valueRangeErrors(result.ruleset), ...dynsetDataErrors(result.ruleset)];
  return errors.length === 0 ? result : { ...result, diagnostics: [...result.diagnostics, ...errors] };
}

/** Parses the files a node was captured as (`nft list ruleset`, `iptables-save`,
 * `ip6tables-save`, `nft -j list ruleset`, nft scripts) into one ruleset (mergeNode): tables
 * iptables-nft manages are assembled from the nft listing and the dump, the rest composes in
 * input order. A rule command on a chain an input does not declare (`add rule ip filter FORWARD
 * …`, `-I FORWARD 1 …`) continues the chain the inputs before it left (EarlierChainLookup).
 * Never throws on bad input. */
export function parseNode(inputs: readonly NodeSource[], options: ParseNodeOptions = {}): ParseResult {
  const { parsed, diagnostics } = parseSources(inputs, options);
  const merged = mergeNode(parsed);
  return { ruleset: merged.ruleset, diagnostics: [...diagnostics, ...merged.diagnostics] };
}

/** Each input of a node parsed on its own (in the context of the inputs before it, for rule
 * commands on their chains), before mergeNode assembles them: what each file itself holds. */
export function parseSources(inputs: readonly NodeSource[], options: ParseNodeOptions = {}): { parsed: NodeInput[]; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const parsed: NodeInput[] = [];
  for (const source of inputs) {
    const requested = source.format ?? options.format;
    const format = !requested || requested === 'auto' ? detectFormat(source.text) : requested;
    // Merged only when an input needs it: most inputs declare every chain they touch.
    let lookup: EarlierChainLookup | undefined;
    const before = parsed.slice();
    const earlier: EarlierChainLookup = (id) => (lookup ??= earlierChainsOf(mergeNode(before).ruleset))(id);
    const result = parseRuleset(source.text, { ...options, file: source.file, format, ...(before.length > 0 ? { earlier } : {}) });
    diagnostics.push(...result.diagnostics);
    const incompatibleTables = format === 'iptables' ? incompatibleTablesOf(result, source.text, source.file) : [];
    parsed.push({ file: source.file, format, ruleset: result.ruleset, incompatibleTables, ...(result.continued ? { continued: result.continued } : {}) });
  }
  return { parsed, diagnostics };
}

// The table name in iptables-nft-save's ``# Table `filter' is incompatible, use 'nft' tool.``
// (iptables/nft.c, 1.8.x), which the iptables parser reports spanning that comment.
const QUOTED_TABLE = /`([^']*)'/;

/** The tables an iptables dump says iptables-nft-save could not list, in the dump's family (the
 * family of its tables, else the file name's hint; unknown, and left out, without either). */
function incompatibleTablesOf(result: ParseResult, text: string, file: string): TableId[] {
  const hint = familyHintOf(file);
  const family = result.ruleset.tables[0]?.family ?? (hint === undefined ? undefined : hint === 'ipv6' ? 'ip6' : 'ip');
  if (family === undefined) return [];
  return result.diagnostics.flatMap((d) => {
    if (d.code !== 'iptables-nft-incompatible-table' || d.span === undefined) return [];
    const name = QUOTED_TABLE.exec(text.slice(d.span.start, d.span.end))?.[1];
    return name === undefined ? [] : [{ family, name }];
  });
}

/** What a dump's file name says of its family when its text does not: `ip6tables.save`,
 * `node.ip6t` are IPv6, `iptables.save`, `node.ipt` IPv4 (the names users give captures). */
function familyHintOf(file: string | undefined): 'ipv4' | 'ipv6' | undefined {
  const name = file?.split('/').pop() ?? '';
  if (/ip6tables|\.ip6t$/.test(name)) return 'ipv6';
  if (/iptables|\.ipt$/.test(name)) return 'ipv4';
  return undefined;
}
