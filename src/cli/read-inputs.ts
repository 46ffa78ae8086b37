import type { Ruleset } from '../model/ast.js';
import type { Diagnostic } from '../model/diagnostic.js';
import { parseNode, type NodeSource, type ParseRulesetOptions } from '../parser/parse-ruleset.js';
import { readTextFile } from '../parser/read-text-file.js';

export interface LoadedInputs {
  readonly ruleset: Ruleset;
  readonly diagnostics: readonly Diagnostic[];
  /** Every text read, by file name, so diagnostics can quote their line. */
  readonly sources: ReadonlyMap<string, string>;
}

/** Reads and parses the files a command was given (`-` is stdin) as one node (parseNode): an nft
 * listing and the iptables-save dumps of the same node merge, other files compose in order.
 * A file that cannot be read is an error diagnostic, not an exception. */
export function loadInputs(
  files: readonly string[],
  format: ParseRulesetOptions['format'] = 'auto',
): LoadedInputs {
  const sources = new Map<string, string>();
  const diagnostics: Diagnostic[] = [];
  const readFile = (path: string): string | undefined => {
    try {
      const text = readTextFile(path);
      sources.set(path, text);
      return text;
    } catch {
      return undefined;
    }
  };
  const inputs: NodeSource[] = [];
  for (const file of files) {
    const text = readFile(file);
    if (text === undefined) diagnostics.push({ severity: 'error', code: 'read-error', message: `cannot read '${file}'` });
    else inputs.push({ text, file });
  }
  const result = parseNode(inputs, { format, readFile });
  return { ruleset: result.ruleset, diagnostics: [...diagnostics, ...result.diagnostics], sources };
}
