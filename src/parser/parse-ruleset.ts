import { detectFormat, type InputFormat } from './detect-format.js';
import { parseNft } from './nft/parse-nft.js';
import { parseNftJson } from './json/parse-nft-json.js';
import type { ParseOptions, ParseResult } from './parse-result.js';

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
    case 'iptables':
      return {
        ruleset: { kind: 'ruleset', tables: [] },
        diagnostics: [
          {
            severity: 'error',
            code: 'unsupported-format',
            message: 'iptables-save input is not supported yet; give the nft listing of the node',
            span: { file: options.file ?? '<input>', start: 0, end: 0, line: 1, column: 1 },
          },
        ],
      };
    default: {
      const exhaustive: never = format;
      return exhaustive;
    }
  }
}
