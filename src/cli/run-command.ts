// `nftsim run PACKET RULESET...`: a thin layer over simulatePacket and the scenario checks.

import { Command } from 'commander';
import type { Rule, Ruleset } from '../model/ast.js';
import { isError, type Diagnostic } from '../model/diagnostic.js';
import { formatRule } from '../model/format-ruleset.js';
import { formatDiagnostic } from '../report/format-diagnostic.js';
import { readHost, type Host } from '../sim/host.js';
import type { Loc, Outcome, TraceEvent } from '../sim/outcome.js';
import type { FieldPath } from '../sim/read-fields.js';
import { isScenario, readScenario, runScenario, type CaseResult, type Scenario } from '../sim/scenario.js';
import { inputDiagnostics, readInputFile, type InputFile } from '../parser/read-input-file.js';
import { loadInputs } from './read-inputs.js';

interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

interface RunOptions {
  readonly json?: boolean;
  readonly host?: string[];
  readonly seed?: string;
  readonly trace?: boolean;
}

/** Adds `run` to the program; `setExit` receives the command's exit code. */
export function addRunCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('run')
    .description('simulate a packet (or a scenario file of packets) through a node\'s rulesets')
    .argument('<packet>', 'packet file ({ host, packet }) or scenario ({ host, packets: [...] } or { host, flows: [...] }), JSON or YAML; - for stdin')
    .argument('<rulesets...>', 'one node: nft listing, nft -j JSON, iptables-save dumps')
    .option('--json', 'print the outcomes as JSON')
    .option('--host <file>', 'host description (nftsim JSON with interfaces, routes and rules; or ip -j addr show, ip -j route show); repeatable', (v: string, acc: string[] = []) => [...acc, v])
    .option('--seed <n>', 'pick one branch of every random choice instead of listing them all')
    .option('--trace', 'for a scenario: print every packet\'s trace, not only the failing ones\'')
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
  const input = readInputFile(packetFile, sources, diagnostics);
  const hostFiles = (opts.host ?? []).map((f) => readInputFile(f, sources, diagnostics));
  const loaded = loadInputs(rulesetFiles);
  for (const [file, text] of loaded.sources) sources.set(file, text);
  diagnostics.push(...loaded.diagnostics);
  if (!input || hostFiles.includes(undefined) || diagnostics.some(isError)) return report();

  const isScenarioFile = isScenario(input.value);
  const read = isScenarioFile ? readScenario(input.value) : undefined;
  if (read && !read.scenario) {
    diagnostics.push(...inputDiagnostics(read.errors, input));
    return report();
  }
  const fileValue = input.value as Record<string, unknown>;
  if (!isScenarioFile && (typeof fileValue !== 'object' || fileValue === null || Array.isArray(fileValue) || !('packet' in fileValue))) {
    diagnostics.push({ severity: 'error', code: 'input', message: `${packetFile}: expected { "host": …, "packet": … } or a scenario { "host": …, "packets": [ … ] } / { "host": …, "flows": [ … ] }` });
    return report();
  }
  const extraKeys = isScenarioFile ? [] : Object.keys(fileValue).filter((k) => k !== 'host' && k !== 'packet');
  for (const key of extraKeys) diagnostics.push(...inputDiagnostics([{ path: [key], message: `${key}: unknown field (expected host, packet)` }], input));

  const hostParts = [
    ...(fileValue.host !== undefined ? [{ value: fileValue.host, path: ['host'], input }] : []),
    ...hostFiles.map((file) => ({ value: file!.value, path: [] as FieldPath, input: file! })),
  ];
  const host = readHostParts(hostParts, diagnostics);
  if (!host || diagnostics.some(isError)) return report();

  // One packet is a scenario of one flow of one packet without expectations.
  const scenario: Scenario = read?.scenario ?? { host: fileValue.host, flows: [{ cases: [{ name: packetFile, packet: fileValue.packet, packetPath: ['packet'] }] }] };
  const run = runScenario(loaded.ruleset, host, scenario, seed === undefined ? {} : { seed });
  diagnostics.push(...inputDiagnostics(run.errors, input));
  if (diagnostics.some(isError)) return report();
  report();

  if (opts.json) {
    const json = isScenarioFile
      ? { results: run.results.map((r) => ({ name: r.name, ...(r.flow !== undefined && { flow: r.flow }), pass: r.failures.length === 0, failures: r.failures, outcomes: r.outcomes })), ...(run.notes.length > 0 && { notes: run.notes }) }
      : { outcomes: run.results[0]!.outcomes };
    io.out(`${JSON.stringify(json, null, 2)}\n`);
  } else if (!isScenarioFile) io.out(formatOutcomes(run.results[0]!.outcomes, rulesByLoc(loaded.ruleset)));
  else io.out(formatScenarioRun(run.results, run.notes, rulesByLoc(loaded.ruleset), opts.trace === true));
  return run.results.some((r) => r.failures.length > 0) ? 1 : 0;
}

/** A PASS/FAIL line per packet (`flow / packet` in a flow) with the failures, the trace of each
 * failing packet (of every packet with `trace`), then the notes. */
function formatScenarioRun(results: readonly CaseResult[], notes: readonly string[], rules: ReturnType<typeof rulesByLoc>, trace: boolean): string {
  let text = '';
  for (const r of results) {
    const name = r.flow === undefined ? r.name : `${r.flow} / ${r.name}`;
    text += `${r.failures.length === 0 ? 'PASS' : 'FAIL'} ${name}\n${r.failures.map((f) => `  ${f}\n`).join('')}`;
    if (trace || r.failures.length > 0) text += formatOutcomes(r.outcomes, rules);
  }
  for (const note of notes) text += `note: ${note}\n`;
  return text;
}

function readHostParts(parts: readonly { value: unknown; path: FieldPath; input: InputFile }[], diagnostics: Diagnostic[]): Host | undefined {
  const { host, errors } = readHost(parts.length > 0 ? parts : [{ value: {}, path: ['host'] }]);
  for (const e of errors) {
    const owner = parts[e.part];
    diagnostics.push(...(owner ? inputDiagnostics([e], owner.input) : [{ severity: 'error' as const, code: 'input', message: e.message }]));
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
    const id = p.icmpId === undefined ? '' : ` id ${p.icmpId}`;
    text += `   ${p.protocol} ${endpoint(p.src, p.sport)} -> ${endpoint(p.dst, p.dport)}${id}  mark ${o.mark}  ct mark ${o.ctMark}\n`;
    for (const n of o.nat) {
      const rule = n.at ? where(n.at) : 'the kernel, no rule: the tuple was taken';
      const by = n.conntrack === undefined ? rule : `conntrack, ${n.conntrack} direction, set up by ${rule}`;
      text += `   ${n.type} to ${n.to}  (${by})\n`;
    }
    if (o.nat.length === 0) text += '   no NAT\n';
    if (o.decidedBy) text += `   decided by ${where(o.decidedBy)}\n`;
  }
  return text;
}
