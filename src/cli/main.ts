import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { formatRuleset } from '../model/format-ruleset.js';
import { commentedOut, formatIpsetSave } from '../model/format-ipset-save.js';
import { isError } from '../model/diagnostic.js';
import { formatDiagnostic } from '../report/format-diagnostic.js';
import { loadInputs } from './read-inputs.js';
import { addLintCommand } from './lint-command.js';
import { addRunCommand } from './run-command.js';
import { addDiffCommand } from './diff-command.js';
import { addKubeDriftCommand } from './kube-drift-command.js';

/** Exit codes (DESIGN.md): 0 ok, 1 findings or failed expectations, 2 usage or input error. */
export const EXIT_OK = 0;
export const EXIT_INPUT = 2;

// The package's version, from package.json two levels up from src/cli and dist/cli alike.
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

const processIo: Io = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

/** Runs the command line and returns the exit code; the CLI holds no logic of its own. */
export async function main(argv: readonly string[], io: Io = processIo): Promise<number> {
  let exitCode = EXIT_OK;
  const program = new Command('nftsim')
    .description('Offline netfilter ruleset simulator and linter')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .showHelpAfterError();

  program
    .command('fmt')
    .description('print the canonical nft listing of what was parsed')
    .argument('<files...>', 'one node: nft listing or script, nft -j JSON, iptables-save dumps (- for stdin)')
    .option('-a, --handles', 'keep rule and object handles (# handle N)')
    .option('--json', 'print the parsed model as JSON instead of nft text')
    .addOption(
      new Option('--input-format <format>', 'input format').choices(['auto', 'nft', 'json', 'iptables', 'ipset']).default('auto'),
    )
    .action((files: string[], opts: { handles?: boolean; json?: boolean; inputFormat: 'auto' | 'nft' | 'json' | 'iptables' | 'ipset' }) => {
      const { ruleset, diagnostics, sources } = loadInputs(files, opts.inputFormat);
      for (const diagnostic of diagnostics) io.err(`${formatDiagnostic(diagnostic, sources)}\n`);
      if (diagnostics.some(isError)) {
        exitCode = EXIT_INPUT;
        return;
      }
      io.out(opts.json ? `${JSON.stringify(ruleset, null, 2)}\n` : `${formatRuleset(ruleset, { handles: opts.handles })}${commentedOut(formatIpsetSave(ruleset.ipsets ?? []))}`);
    });

  addRunCommand(program, io, (code) => (exitCode = code));
  addLintCommand(program, io, (code) => (exitCode = code));
  addDiffCommand(program, io, (code) => (exitCode = code));
  addKubeDriftCommand(program, io, (code) => (exitCode = code));

  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end through here with exit code 0.
      return error.exitCode === 0 ? EXIT_OK : EXIT_INPUT;
    }
    throw error;
  }
  return exitCode;
}
