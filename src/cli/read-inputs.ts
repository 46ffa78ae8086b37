import { readFileSync } from 'node:fs';
import { composeRulesets } from '../model/compose-rulesets.js';
import type { Ruleset } from '../model/ast.js';
import type { Diagnostic } from '../model/diagnostic.js';
import { parseRuleset, type ParseRulesetOptions } from '../parser/parse-ruleset.js';

export interface LoadedInputs {
  readonly ruleset: Ruleset;
  readonly diagnostics: readonly Diagnostic[];
  /** Every text read, by file name, so diagnostics can quote their line. */
  readonly sources: ReadonlyMap<string, string>;
}

/** Reads and parses the files a command was given (`-` is stdin), composing them in order.
 * A file that cannot be read is an error diagnostic, not an exception. */
export function loadInputs(
  files: readonly string[],
  format: ParseRulesetOptions['format'] = 'auto',
): LoadedInputs {
  const sources = new Map<string, string>();
  const diagnostics: Diagnostic[] = [];
  const rulesets: Ruleset[] = [];
  const readFile = (path: string): string | undefined => {
    try {
      const text = readFileSync(path === '-' ? 0 : path, 'utf8');
      sources.set(path, text);
      return text;
    } catch {
      return undefined;
    }
  };
  for (const file of files) {
    const text = readFile(file);
    if (text === undefined) {
      diagnostics.push({ severity: 'error', code: 'read-error', message: `cannot read '${file}'` });
      continue;
    }
    const result = parseRuleset(text, { file, format, readFile });
    rulesets.push(result.ruleset);
    diagnostics.push(...result.diagnostics);
  }
  return { ruleset: composeRulesets(rulesets), diagnostics, sources };
}
