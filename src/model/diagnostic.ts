import type { Span } from './ast.js';

/** A problem found in user input. Stages return these instead of throwing (DESIGN.md).
 * `code` is a stable kebab-case id (`syntax`, `unsupported`, `undefined-variable`…). */
export interface Diagnostic {
  readonly severity: 'error' | 'warning' | 'info';
  readonly code: string;
  readonly message: string;
  readonly span?: Span;
}

export function isError(diagnostic: Diagnostic): boolean {
  return diagnostic.severity === 'error';
}
