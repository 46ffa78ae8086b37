// Version ranges of component profiles (docs/components.md):
//   `0.30.1` one release; `0.30` the whole 0.30.x line; `0.31.1-0.39` inclusive (an upper bound
//   with two parts takes its whole line); `<=0.29`, `>=0.40` open-ended.
// A version asked for with two parts (`netbird@0.40`) means its first release (0.40.0).

export type Version = readonly [number, number, number];

export interface VersionRange {
  readonly text: string;
  readonly low?: Version;
  /** Inclusive. */
  readonly high?: Version;
}

const VERSION = /^v?(\d+)\.(\d+)(?:\.(\d+))?$/;
const LINE_END = 1_000_000;

/** `0.40` → 0.40.0 (or, as an upper bound, the last 0.40.x); undefined when not a version. */
export function parseVersion(text: string, asUpperBound = false): Version | undefined {
  const m = VERSION.exec(text.trim());
  if (!m) return undefined;
  const patch = m[3] !== undefined ? Number(m[3]) : asUpperBound ? LINE_END : 0;
  return [Number(m[1]), Number(m[2]), patch];
}

export function parseVersionRange(text: string): VersionRange | undefined {
  const t = text.trim();
  if (t.startsWith('<=')) {
    const high = parseVersion(t.slice(2), true);
    return high && { text: t, high };
  }
  if (t.startsWith('>=')) {
    const low = parseVersion(t.slice(2));
    return low && { text: t, low };
  }
  const dash = t.indexOf('-');
  if (dash > 0) {
    const low = parseVersion(t.slice(0, dash));
    const high = parseVersion(t.slice(dash + 1), true);
    return low && high && compareVersions(low, high) <= 0 ? { text: t, low, high } : undefined;
  }
  const low = parseVersion(t);
  const high = parseVersion(t, true);
  return low && high && { text: t, low, high };
}

export function compareVersions(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

export function isInRange(version: Version, range: VersionRange): boolean {
  return (range.low === undefined || compareVersions(version, range.low) >= 0) && (range.high === undefined || compareVersions(version, range.high) <= 0);
}

/** Two ranges share a version. */
export function rangesOverlap(a: VersionRange, b: VersionRange): boolean {
  const below = (x: VersionRange, y: VersionRange) => x.high !== undefined && y.low !== undefined && compareVersions(x.high, y.low) < 0;
  return !below(a, b) && !below(b, a);
}
