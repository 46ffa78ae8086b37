// `nftsim lint RULESET...`: a thin layer over lintRuleset and the findings formatters.

import { existsSync } from 'node:fs';
import { Command, Option } from 'commander';
import { isError, type Diagnostic } from '../model/diagnostic.js';
import { formatDiagnostic } from '../report/format-diagnostic.js';
import { formatFindingsJson } from '../report/format-findings-json.js';
import { formatFindingsSarif } from '../report/format-findings-sarif.js';
import { formatFindingsText } from '../report/format-findings-text.js';
import { IPTABLES_VERSION, readLintConfig, type LintConfig } from '../rules/framework/lint-config.js';
import { isAtLeast, type Severity } from '../rules/framework/lint-rule.js';
import { lintRuleset } from '../rules/framework/lint-ruleset.js';
import { LINT_RULES } from '../rules/framework/registry.js';
import { loadInputs } from './read-inputs.js';
import { readTextFile } from '../parser/read-text-file.js';

interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

interface LintCommandOptions {
  readonly format: 'text' | 'json' | 'sarif';
  readonly failOn: Severity;
  readonly config?: string;
  readonly iptablesVersion?: string;
}

/** The configuration file read when --config is not given, from the working directory. */
const DEFAULT_CONFIG = '.nftsimrc.json';

/** Adds `lint` to the program; `setExit` receives the command's exit code. */
export function addLintCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('lint')
    .description('lint a node\'s rulesets: mark-bit collisions, iptables-nft compatibility, hygiene')
    .argument('<rulesets...>', 'one node: nft listing, nft -j JSON, iptables-save dumps (- for stdin)')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json', 'sarif']).default('text'))
    .addOption(new Option('--fail-on <severity>', 'exit 1 when a finding is at least this severe').choices(['error', 'warning', 'info']).default('error'))
    .option('--config <file>', `configuration file (default: ${DEFAULT_CONFIG} when present)`)
    .option('--iptables-version <version>', 'the node\'s iptables-nft version (default 1.8.9)')
    .action((files: string[], opts: LintCommandOptions) => {
      setExit(lintCommand(files, opts, io));
    });
}

function lintCommand(files: readonly string[], opts: LintCommandOptions, io: Io): number {
  const sources = new Map<string, string>();
  const diagnostics: Diagnostic[] = [];
  const report = (): boolean => {
    for (const d of diagnostics) io.err(`${formatDiagnostic(d, sources)}\n`);
    return diagnostics.some(isError);
  };
  if (opts.iptablesVersion !== undefined && !IPTABLES_VERSION.test(opts.iptablesVersion)) {
    diagnostics.push({ severity: 'error', code: 'usage', message: `--iptables-version expects a version such as 1.8.9, got '${opts.iptablesVersion}'` });
  }
  const config = readConfig(opts.config, sources, diagnostics);
  const loaded = loadInputs(files);
  for (const [file, text] of loaded.sources) sources.set(file, text);
  diagnostics.push(...loaded.diagnostics);
  if (report()) return 2;

  const { findings } = lintRuleset(loaded.ruleset, { ...config, ...(opts.iptablesVersion !== undefined && { iptablesVersion: opts.iptablesVersion }) });
  switch (opts.format) {
    case 'text':
      io.out(formatFindingsText(findings, sources, { color: process.stdout.isTTY === true && !process.env.NO_COLOR }));
      break;
    case 'json':
      io.out(formatFindingsJson(findings));
      break;
    case 'sarif':
      io.out(formatFindingsSarif(findings, LINT_RULES));
      break;
    default: {
      const exhaustive: never = opts.format;
      return exhaustive;
    }
  }
  return findings.some((f) => isAtLeast(f.severity, opts.failOn)) ? 1 : 0;
}

function readConfig(file: string | undefined, sources: Map<string, string>, diagnostics: Diagnostic[]): LintConfig {
  const path = file ?? (existsSync(DEFAULT_CONFIG) ? DEFAULT_CONFIG : undefined);
  if (path === undefined) return {};
  let text: string;
  try {
    text = readTextFile(path);
  } catch {
    diagnostics.push({ severity: 'error', code: 'read-error', message: `cannot read '${path}'` });
    return {};
  }
  sources.set(path, text);
  const read = readLintConfig(text, path, LINT_RULES.map((r) => r.id));
  diagnostics.push(...read.diagnostics);
  return read.config;
}
