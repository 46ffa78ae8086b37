import type { Ruleset } from '../model/ast.js';
import type { ChainId, EarlierChainLookup } from '../model/compose-rulesets.js';
import type { Diagnostic } from '../model/diagnostic.js';

/** What every parser returns: a model (possibly partial) and the problems found. Never throws on
 * bad input. */
export interface ParseResult {
  readonly ruleset: Ruleset;
  readonly diagnostics: readonly Diagnostic[];
  /** Chains this input continued from the inputs before it (ParseOptions.earlier): its chain of
   * that name holds the whole chain, earlier rules included. */
  readonly continued?: readonly ChainId[];
}

/** Options shared by the parsers. `readFile` resolves `include` (nft text) relative paths; absent,
 * an include is reported instead of followed. `earlier` gives the chains the inputs before this
 * one left (parseNode), which rule commands on chains this input does not declare continue. */
export interface ParseOptions {
  readonly file?: string;
  readonly readFile?: (path: string) => string | undefined;
  readonly earlier?: EarlierChainLookup;
}
