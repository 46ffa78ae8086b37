import { detectFormat, type InputFormat } from './detect-format.js';
import { parseNft } from './nft/parse-nft.js';
import { parseNftJson } from './json/parse-nft-json.js';
import type { ParseOptions, ParseResult } from './parse-result.js';
import { parseIptablesSave } from './iptables/parse-iptables-save.js';
import { lowerIptables } from '../model/lower-iptables.js';

export interface ParseRulesetOptions extends ParseOptions {
  readonly format?: 'auto' | InputFormat;
}

/** Parses one input in any supported format into the model. Never throws on bad input. */
export function parseRuleset(text: string, options: ParseRulesetOptions = {}): ParseResult {
  const format = !options.format || options.format === 'auto' ? detectFormat(text) : options.format;
  switch (format) {
    case 'nft':
      return parseNft(text, options);
    case 'json':
      return parseNftJson(text, options);
    case 'iptables': {
      const parsed = parseIptablesSave(text, options);
      const lowered = lowerIptables(parsed.dump);
      return { ruleset: lowered.ruleset, diagnostics: [...parsed.diagnostics, ...lowered.diagnostics] };
    }
    default: {
      const exhaustive: never = format;
      return exhaustive;
    }
  }
}
