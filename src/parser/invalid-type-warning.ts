import type { Span } from '../model/ast.js';
import type { Diagnostic } from '../model/diagnostic.js';

/** The note on a value nft 1.0.6 listed as `0x1f90 [invalid type]` (Literal.invalidType), which
 * both the text and the JSON listing carry: it is read, as the key's bits, but the listing
 * cannot be loaded back into nft as it is. */
export function invalidTypeWarning(bits: string, span: Span): Diagnostic {
  return {
    severity: 'warning',
    code: 'invalid-type',
    message: `read '${bits} [invalid type]' as the key's bits ${bits} (nft 1.0.6 lists some keys' values so; nft cannot read it back)`,
    span,
  };
}
