// `nftsim diff BEFORE AFTER` and `nftsim diff --before SNAPSHOT --apply PROFILE@VERSION`: a thin
// layer over readSnapshot, applyProfile and diffSnapshots.

import { Command, Option } from 'commander';
import { applyProfile } from '../components/apply-profile.js';
import { isError, type Diagnostic } from '../model/diagnostic.js';
import { diffSnapshots, type DiffOptions } from '../diff/diff-snapshots.js';
import { formatDiffText } from '../diff/format-diff-text.js';
import { formatDiagnostic } from '../report/format-diagnostic.js';
import { isAtLeast, type Severity } from '../rules/framework/lint-rule.js';
import type { PacketInput } from '../sim/packet.js';
import { readScenario } from '../sim/scenario.js';
import { readSnapshot } from '../snapshot/read-snapshot.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { inputDiagnostics, readInputFile } from '../parser/read-input-file.js';

interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

interface DiffCommandOptions {
  readonly before?: string;
  readonly apply?: string;
  readonly set?: string[];
  readonly scenario?: string;
  readonly format: 'text' | 'json';
  readonly failOn: Severity;
  readonly probesReport?: boolean;
  readonly maxProbes?: string;
  readonly exhaustive?: boolean;
}

export function addDiffCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('diff')
    .description('which flows change fate between two snapshots of a node, new and resolved findings, structural changes')
    .argument('[before]', 'snapshot: a directory, or files joined with "," (nft listing, nft -j, iptables-save dumps, host.json / ip -j addr / ip -j route)')
    .argument('[after]', 'snapshot after the change')
    .option('--before <snapshot>', 'the BEFORE snapshot (with --apply)')
    .option('--apply <profile@version>', 'AFTER = BEFORE plus what this agent version installs (corpus/components)')
    .option('--set <name=value>', 'a profile parameter (wt0=100.64.1.1/16); repeatable', (v: string, acc: string[] = []) => [...acc, v])
    .option('--scenario <file>', 'also compare the packets of this scenario file (nftsim run\'s format)')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .addOption(new Option('--fail-on <level>', 'exit 1 when a changed flow, new finding or structural change is at least this severe').choices(['error', 'warning', 'info']).default('error'))
    .option('--probes-report', 'print how many probes were derived, and why')
    .option('--max-probes <n>', 'at most this many probes per reason (default 5000)')
    .option('--exhaustive', 'simulate every probe on both sides, also those that cannot meet a change (slower, the same result)')
    .action((before: string | undefined, after: string | undefined, opts: DiffCommandOptions) => {
      setExit(diffCommand(before, after, opts, io));
    });
}

function diffCommand(beforeArg: string | undefined, afterArg: string | undefined, opts: DiffCommandOptions, io: Io): number {
  const sources = new Map<string, string>();
  const diagnostics: Diagnostic[] = [];
  const report = (): boolean => {
    for (const d of diagnostics) io.err(`${formatDiagnostic(d, sources)}\n`);
    return diagnostics.some(isError);
  };
  const usage = (message: string): number => {
    diagnostics.push({ severity: 'error', code: 'usage', message });
    report();
    return 2;
  };
  const beforeSpec = opts.before ?? beforeArg;
  if (beforeSpec === undefined) return usage('give BEFORE AFTER, or --before SNAPSHOT --apply PROFILE@VERSION');
  // With --apply, the one snapshot is BEFORE (given as --before or as the argument), never both.
  const snapshotArgs = [opts.before, beforeArg, afterArg].filter((x) => x !== undefined).length;
  if (opts.apply !== undefined && snapshotArgs !== 1) return usage('--apply makes the AFTER side: give only the BEFORE snapshot');
  if (opts.apply === undefined && (opts.before !== undefined ? beforeArg : afterArg) === undefined) return usage('give the AFTER snapshot, or --apply PROFILE@VERSION');
  if (snapshotArgs > 2) return usage('--before is the BEFORE snapshot: give one AFTER snapshot after it');
  const maxProbes = opts.maxProbes === undefined ? undefined : Number(opts.maxProbes);
  if (maxProbes !== undefined && !(Number.isInteger(maxProbes) && maxProbes > 0)) return usage(`--max-probes expects a positive integer, got '${opts.maxProbes}'`);

  const read = (spec: string): Snapshot | undefined => {
    const result = readSnapshot(spec);
    for (const [file, text] of result.texts) sources.set(file, text);
    diagnostics.push(...result.diagnostics);
    return result.snapshot;
  };
  const before = read(beforeSpec);
  let after: Snapshot | undefined;
  if (opts.apply !== undefined) {
    const params: Record<string, string> = {};
    for (const pair of opts.set ?? []) {
      const eq = pair.indexOf('=');
      if (eq <= 0) return usage(`--set expects NAME=VALUE, got '${pair}'`);
      params[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
    if (before) {
      const applied = applyProfile(before, opts.apply, params);
      diagnostics.push(...applied.diagnostics);
      after = applied.snapshot;
    }
  } else after = read((opts.before !== undefined ? beforeArg : afterArg)!);
  const scenarioPackets = opts.scenario === undefined ? [] : readScenarioPackets(opts.scenario, sources, diagnostics);
  if (report() || !before || !after || !scenarioPackets) return 2;
  diagnostics.length = 0;

  for (const s of [before, after]) for (const source of s.sources) sources.set(source.file, source.text);
  const options: DiffOptions = { scenarioPackets, exhaustive: opts.exhaustive === true, ...(maxProbes !== undefined && { maxProbesPerReason: maxProbes }) };
  const { diff, diagnostics: parsed } = diffSnapshots(before, after, options);
  diagnostics.push(...parsed.filter((d) => d.severity !== 'info'));
  if (report() || !diff) return 2;

  if (opts.format === 'json') io.out(`${JSON.stringify(diff, null, 2)}\n`);
  else io.out(formatDiffText(diff, { probesReport: opts.probesReport === true }));
  const failing =
    diff.changedFlows.some((f) => isAtLeast(f.level, opts.failOn)) ||
    diff.findings.new.some((f) => isAtLeast(f.severity, opts.failOn)) ||
    diff.structural.some((s) => isAtLeast(s.level, opts.failOn));
  return failing ? 1 : 0;
}

/** The written packets of a scenario file (its replies are compared with every probe anyway). */
function readScenarioPackets(file: string, sources: Map<string, string>, diagnostics: Diagnostic[]): { name: string; packet: PacketInput }[] | undefined {
  const input = readInputFile(file, sources, diagnostics);
  if (!input) return undefined;
  const read = readScenario(input.value);
  if (!read.scenario) {
    diagnostics.push(...inputDiagnostics(read.errors, input));
    return undefined;
  }
  return read.scenario.flows.flatMap((flow) =>
    flow.cases.flatMap((c) => {
      const packet = c.packet as Record<string, unknown>;
      if (typeof packet !== 'object' || packet === null || 'reply' in packet) return [];
      return [{ name: flow.name === undefined ? c.name : `${flow.name} / ${c.name}`, packet: packet as unknown as PacketInput }];
    }),
  );
}
