import type { Diagnostic } from '../model/diagnostic.js';

/** Renders a diagnostic the way nft reports syntax errors: `file:line:col: error: message`, then the
 * offending source line and a caret under the span. `sources` maps file names to their text. */
export function formatDiagnostic(
  diagnostic: Diagnostic,
  sources: ReadonlyMap<string, string>,
): string {
  const { span } = diagnostic;
  if (!span) return `${diagnostic.severity}: ${diagnostic.message}`;
  const head = `${span.file}:${span.line}:${span.column}: ${diagnostic.severity}: ${diagnostic.message}`;
  const excerpt = quoteSpan(span, sources);
  return excerpt === undefined ? head : `${head}\n${excerpt}`;
}

/** The source line of `span` and a caret under it (`^~~~`), or undefined when the file's text is
 * unknown. Shared by diagnostics and lint findings. */
export function quoteSpan(
  span: { readonly file: string; readonly start: number; readonly end: number; readonly column: number },
  sources: ReadonlyMap<string, string>,
): string | undefined {
  const text = sources.get(span.file);
  if (text === undefined) return undefined;
  const lineStart = span.start - (span.column - 1);
  let lineEnd = text.indexOf('\n', lineStart);
  if (lineEnd < 0) lineEnd = text.length;
  const line = text.slice(lineStart, lineEnd).replace(/\r$/, '');
  // Keep tabs in the padding so the caret lines up under tab-indented listings.
  const pad = line.slice(0, span.column - 1).replace(/[^\t]/g, ' ');
  const width = Math.max(1, Math.min(span.end, lineEnd) - span.start);
  return `${line}\n${pad}^${'~'.repeat(width - 1)}`;
}
