import type { Ruleset } from '../model/ast.js';
import type { Diagnostic } from '../model/diagnostic.js';

/** What every parser returns: a model (possibly partial) and the problems found. Never throws on
 * bad input. */
export interface ParseResult {
  readonly ruleset: Ruleset;
  readonly diagnostics: readonly Diagnostic[];
}

/** Options shared by the parsers. `readFile` resolves `include` (nft text) relative paths; absent,
 * an include is reported instead of followed. */
export interface ParseOptions {
  readonly file?: string;
  readonly readFile?: (path: string) => string | undefined;
}
