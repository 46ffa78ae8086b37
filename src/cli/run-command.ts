// `nftsim run PACKET RULESET...`: a thin layer over simulatePacket and the scenario checks.

import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { findNodeAtLocation, parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';
import type { Rule, Ruleset, Span } from '../model/ast.js';
import { isError, type Diagnostic } from '../model/diagnostic.js';
import { formatRule } from '../model/format-ruleset.js';
import { formatDiagnostic } from '../report/format-diagnostic.js';
import { readHost, type Host } from '../sim/host.js';
import type { Loc, Outcome, TraceEvent } from '../sim/outcome.js';
import { readPacket } from '../sim/packet.js';
import type { FieldPath, InputError } from '../sim/read-fields.js';
import { checkExpectation, isScenario, readScenario } from '../sim/scenario.js';
import { simulateResolved } from '../sim/simulate-packet.js';
import { loadInputs } from './read-inputs.js';

interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

interface RunOptions {
  readonly json?: boolean;
  readonly host?: string[];
  readonly seed?: string;
}

/** A JSON input file: its value, and a way to turn a field path into a span of its text. */
interface JsonFile {
  readonly file: string;
  readonly value: unknown;
  readonly spanOf: (path: FieldPath) => Span | undefined;
}

function readJsonFile(file: string, sources: Map<string, string>, diagnostics: Diagnostic[]): JsonFile | undefined {
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch {
    diagnostics.push({ severity: 'error', code: 'read-error', message: `cannot read '${file}'` });
    return undefined;
  }
  sources.set(file, text);
  const errors: ParseError[] = [];
  const tree = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const spanAt = (offset: number, length: number): Span => {
    const before = text.slice(0, offset);
    const line = before.split('\n').length;
    return { file, start: offset, end: offset + length, line, column: offset - before.lastIndexOf('\n') };
  };
  if (errors.length > 0 || !tree) {
    for (const e of errors) diagnostics.push({ severity: 'error', code: 'json', message: `JSON: ${printParseErrorCode(e.error)}`, span: spanAt(e.offset, e.length) });
    if (!tree) diagnostics.push({ severity: 'error', code: 'json', message: `${file} is empty` });
    return undefined;
  }
  const spanOf = (path: FieldPath): Span | undefined => {
    // The deepest node the path reaches (an unknown field's key, a missing field's object).
    for (let n = path.length; n >= 0; n--) {
      const node: Node | undefined = findNodeAtLocation(tree, [...path.slice(0, n)]);
      if (!node) continue;
      const target = n === path.length && node.parent?.type === 'property' ? node.parent : node;
      return spanAt(target.offset, target.length);
    }
    return undefined;
  };
  return { file, value: JSON.parse(JSON.stringify(nodeValue(tree))), spanOf };
}

function nodeValue(node: Node): unknown {
  switch (node.type) {
    case 'object':
      return Object.fromEntries((node.children ?? []).map((p) => [p.children![0]!.value as string, p.children![1] ? nodeValue(p.children![1]) : undefined]));
    case 'array':
      return (node.children ?? []).map(nodeValue);
    default:
      return node.value;
  }
}

function inputDiagnostics(errors: readonly InputError[], json: JsonFile, base: FieldPath = []): Diagnostic[] {
  return errors.map((e) => {
    // Paths of packet-file fields start with `host`/`packet`; when those came from the
    // scenario's case, `base` places them.
    const path = e.path[0] === 'packet' ? [...base, ...e.path.slice(1)] : e.path;
    const span = json.spanOf(path);
    return { severity: 'error', code: 'input', message: e.message, ...(span && { span }) };
  });
}

/** Adds `run` to the program; `setExit` receives the command's exit code. */
export function addRunCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('run')
    .description('simulate a packet (or a scenario file of packets) through a node\'s rulesets')
    .argument('<packet>', 'packet JSON file ({ host, packet }) or scenario ({ host, packets: [...] }); - for stdin')
    .argument('<rulesets...>', 'one node: nft listing, nft -j JSON, iptables-save dumps')
    .option('--json', 'print the outcomes as JSON')
    .option('--host <file>', 'host description (nftsim JSON, ip -j addr show, ip -j route show); repeatable', (v: string, acc: string[] = []) => [...acc, v])
    .option('--seed <n>', 'pick one branch of every random choice instead of listing them all')
    .action((packetFile: string, rulesetFiles: string[], opts: RunOptions) => {
      setExit(runCommand(packetFile, rulesetFiles, opts, io));
    });
}

function runCommand(packetFile: string, rulesetFiles: readonly string[], opts: RunOptions, io: Io): number {
  const sources = new Map<string, string>();
  const diagnostics: Diagnostic[] = [];
  const report = (): number => {
    for (const d of diagnostics) io.err(`${formatDiagnostic(d, sources)}\n`);
    return diagnostics.some(isError) ? 2 : 0;
  };
  const seed = opts.seed === undefined ? undefined : Number(opts.seed);
  if (seed !== undefined && !Number.isInteger(seed)) {
    diagnostics.push({ severity: 'error', code: 'usage', message: `--seed expects an integer, got '${opts.seed}'` });
    return report();
  }
  const packetJson = readJsonFile(packetFile, sources, diagnostics);
  const hostFiles = (opts.host ?? []).map((f) => readJsonFile(f, sources, diagnostics));
  const loaded = loadInputs(rulesetFiles);
  for (const [file, text] of loaded.sources) sources.set(file, text);
  diagnostics.push(...loaded.diagnostics);
  if (!packetJson || hostFiles.includes(undefined) || diagnostics.some(isError)) return report();

  const scenario = isScenario(packetJson.value);
  const read = scenario ? readScenario(packetJson.value) : undefined;
  if (read && !read.scenario) {
    diagnostics.push(...inputDiagnostics(read.errors, packetJson));
    return report();
  }
  const fileValue = packetJson.value as Record<string, unknown>;
  if (!scenario && (typeof fileValue !== 'object' || fileValue === null || Array.isArray(fileValue) || !('packet' in fileValue))) {
    diagnostics.push({ severity: 'error', code: 'input', message: `${packetFile}: expected { "host": …, "packet": … } or a scenario { "host": …, "packets": [ … ] }` });
    return report();
  }
  const extraKeys = scenario ? [] : Object.keys(fileValue).filter((k) => k !== 'host' && k !== 'packet');
  for (const key of extraKeys) diagnostics.push(...inputDiagnostics([{ path: [key], message: `${key}: unknown field (expected host, packet)` }], packetJson));

  const hostParts = [
    ...(fileValue.host !== undefined ? [{ value: fileValue.host, path: ['host'], json: packetJson }] : []),
    ...hostFiles.map((json) => ({ value: json!.value, path: [] as FieldPath, json: json! })),
  ];
  const host = readHostParts(hostParts, diagnostics);
  if (!host || diagnostics.some(isError)) return report();

  const cases = read?.scenario?.cases ?? [{ name: packetFile, packet: fileValue.packet, packetPath: ['packet'] }];
  const results: { name: string; outcomes: Outcome[]; failures: string[] }[] = [];
  for (const c of cases) {
    const packet = readPacket(c.packet, host, ['packet']);
    if (!packet.packet) {
      diagnostics.push(...inputDiagnostics(packet.errors, packetJson, c.packetPath));
      continue;
    }
    const outcomes = simulateResolved(loaded.ruleset, host, packet.packet, seed === undefined ? {} : { seed });
    const expect = 'expect' in c ? c.expect : undefined;
    const failures = expect ? outcomes.flatMap((o, i) => checkExpectation(o, expect).map((f) => (outcomes.length > 1 ? `outcome ${i + 1}: ${f}` : f))) : [];
    results.push({ name: c.name, outcomes, failures });
  }
  if (diagnostics.some(isError)) return report();
  report();

  if (opts.json) {
    io.out(`${JSON.stringify(scenario ? { results: results.map((r) => ({ name: r.name, pass: r.failures.length === 0, failures: r.failures, outcomes: r.outcomes })) } : { outcomes: results[0]!.outcomes }, null, 2)}\n`);
  } else {
    const rules = rulesByLoc(loaded.ruleset);
    for (const r of results) {
      if (scenario) io.out(`${r.failures.length === 0 ? 'PASS' : 'FAIL'} ${r.name}\n${r.failures.map((f) => `  ${f}\n`).join('')}`);
      if (!scenario || r.failures.length > 0) io.out(formatOutcomes(r.outcomes, rules));
    }
  }
  return results.some((r) => r.failures.length > 0) ? 1 : 0;
}

function readHostParts(parts: readonly { value: unknown; path: FieldPath; json: JsonFile }[], diagnostics: Diagnostic[]): Host | undefined {
  const { host, errors } = readHost(parts.length > 0 ? parts : [{ value: {}, path: ['host'] }]);
  for (const e of errors) {
    const owner = parts.find((p) => p.path.every((s, i) => e.path[i] === s) && (p.path.length > 0 || parts.length === 1)) ?? parts[0];
    diagnostics.push(...(owner ? inputDiagnostics([e], owner.json) : [{ severity: 'error' as const, code: 'input', message: e.message }]));
  }
  return errors.length > 0 ? undefined : host;
}

function locKey(loc: { file: string; line: number; column: number }): string {
  return `${loc.file}:${loc.line}:${loc.column}`;
}

function rulesByLoc(ruleset: Ruleset): Map<string, { rule: Rule; family: Ruleset['tables'][number]['family'] }> {
  const map = new Map<string, { rule: Rule; family: Ruleset['tables'][number]['family'] }>();
  for (const table of ruleset.tables) {
    for (const chain of table.chains) for (const rule of chain.rules) map.set(locKey(rule.span), { rule, family: table.family });
  }
  return map;
}

function where(loc: Loc): string {
  return `${loc.file}:${loc.line}${loc.handle === undefined ? '' : ` handle ${loc.handle}`}`;
}

/** One line per event in `nft monitor trace`'s words, the location, the mark when it changed. */
function formatEvent(event: TraceEvent, previousMark: string, rules: ReturnType<typeof rulesByLoc>): string {
  const head = `${event.hook.padEnd(11)} ${event.family} ${event.table} ${event.chain}`;
  let body: string;
  switch (event.kind) {
    case 'rule': {
      const found = rules.get(locKey(event.at));
      body = `rule ${found ? formatRule(found.rule, {}, found.family).trim() : ''} (verdict ${event.verdict})`;
      break;
    }
    case 'policy':
      body = `policy ${event.verdict}`;
      break;
    case 'return':
      body = `verdict ${event.verdict}`;
      break;
    case 'unsupported':
      body = `UNSUPPORTED ${event.reason ?? ''}`;
      break;
    default: {
      const exhaustive: never = event.kind;
      return exhaustive;
    }
  }
  const mark = event.mark !== previousMark ? `  mark ${event.mark}` : '';
  const order = event.orderDependent ? '  [order-dependent: equal priority]' : '';
  return `${head} ${body}  (${where(event.at)})${mark}${order}\n`;
}

export function formatOutcomes(outcomes: readonly Outcome[], rules: ReturnType<typeof rulesByLoc>): string {
  let text = '';
  for (const [i, o] of outcomes.entries()) {
    if (outcomes.length > 1) text += `${i > 0 ? '\n' : ''}-- branch ${i + 1} of ${outcomes.length}, probability ${Number(o.probability.toFixed(4))}\n`;
    // Marks are shown where they change, starting from an unmarked packet.
    let mark = '0x00000000';
    for (const event of o.trace) {
      text += formatEvent(event, mark, rules);
      mark = event.mark;
    }
    const p = o.packet;
    const endpoint = (addr: string, port: number | string | undefined): string => (port === undefined ? addr : `${addr}:${port}`);
    text += `=> ${o.disposition} (${o.verdict})${o.iif ? ` iif ${o.iif}` : ''}${o.oif ? ` oif ${o.oif}` : ''}${o.reason ? `: ${o.reason}` : ''}${o.uncertain ? '  UNCERTAIN: see the unsupported events' : ''}\n`;
    text += `   ${p.protocol} ${endpoint(p.src, p.sport)} -> ${endpoint(p.dst, p.dport)}  mark ${o.mark}  ct mark ${o.ctMark}\n`;
    for (const n of o.nat) text += `   ${n.type} to ${n.to}  (${where(n.at)})\n`;
    if (o.nat.length === 0) text += '   no NAT\n';
    if (o.decidedBy) text += `   decided by ${where(o.decidedBy)}\n`;
  }
  return text;
}
