import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMap, parseDocument } from 'yaml';
import type { Family, Span } from '../model/ast.js';
import type { Diagnostic } from '../model/diagnostic.js';
import { parseVersion, parseVersionRange, isInRange, rangesOverlap, type Version, type VersionRange } from './version-range.js';
import { readTextFile } from '../parser/read-text-file.js';

// Component profiles: what an agent version installs into netfilter, as data (docs/components.md).
// One YAML file per component in corpus/components/ (or a directory the user names).

export type ParameterType = 'interface' | 'prefix' | 'cidr' | 'cidr-list' | 'port-list' | 'mark' | 'string';

export interface ParameterSpec {
  readonly name: string;
  readonly type: ParameterType;
  readonly description: string;
  /** The agent's own default; absent when the user must give a value. */
  readonly default?: string;
  /** An example value for error messages (`100.64.1.1/16`). */
  readonly example?: string;
}

/** How a component uses the packet or conntrack mark (vocabulary of marks.tsv). */
export interface MarkUse {
  readonly value: number;
  /** 0xffffffff for a full-word set or exact compare. */
  readonly mask: number;
  readonly kind: 'meta' | 'ct' | 'socket';
  /** `set-full`, `or-bit`, `match-exact`, `match-bit`, … */
  readonly op: string;
  readonly meaning: string;
  readonly where?: string;
}

/** A rule the component puts into a chain it does not own. */
export interface Insertion {
  /** `ip filter FORWARD`. */
  readonly family: Family;
  readonly table: string;
  readonly chain: string;
  /** `top`: the rules of one version's `top` insertions end up first, in the order listed. */
  readonly position: 'top' | 'append';
  /** The rule as an nft rule body (written natively) or an iptables rule spec (`-i wt0 -j
   * ACCEPT`, written with the iptables binary, i.e. iptables-nft). */
  readonly format: 'nft' | 'iptables';
  readonly rule: string;
  /** The agent writes it only when the chain exists (Netbird: "whenever a table named filter
   * exists"); otherwise the chain is created (iptables' built-in chains). */
  readonly onlyIfChainExists: boolean;
  /** A parameter that must be non-empty for the agent to write it (`routes`: Netbird appends its
   * FORWARD accepts on the first route). */
  readonly when?: string;
}

export interface ProfileVersion {
  readonly range: VersionRange;
  /** What this version's rules rest on: source file, tag, URL or research note. */
  readonly facts: readonly string[];
  readonly marks: readonly MarkUse[];
  /** Templates of the files it writes, in the order it writes them. */
  readonly files: readonly { readonly format: 'nft' | 'iptables'; readonly family?: 'ip' | 'ip6'; readonly text: string }[];
  readonly insertions: readonly Insertion[];
}

export interface ComponentProfile {
  readonly name: string;
  readonly description: string;
  /** Where the profile file is (for messages). */
  readonly file: string;
  /** How the rules were obtained (`reconstructed from the agent's source`, `captured`). */
  readonly provenance: string;
  readonly parameters: readonly ParameterSpec[];
  /** `--set wt0=100.64.1.1/16`: a name that is no parameter sets the `interface` parameter to it
   * and the `value` parameter to the value. */
  readonly shorthand?: { readonly interface: string; readonly value: string };
  /** Whole tables (`ip netbird`) and chains (`ip nat KUBE-MARK-MASQ`, `ip filter NETBIRD-*`) the
   * component owns: applying a version removes what the snapshot holds of them first. */
  readonly ownsTables: readonly string[];
  readonly ownsChains: readonly string[];
  /** For attribution (the linter) and for recognising its rules in shared chains on upgrade. */
  readonly chainPrefixes: readonly string[];
  readonly commentPrefixes: readonly string[];
  readonly versions: readonly ProfileVersion[];
}

/** Where the shipped profiles are: corpus/components beside src/ and dist/. */
export const SHIPPED_PROFILE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../corpus/components');

export interface ProfileOptions {
  /** Directories searched before the shipped profiles (a user's own components). */
  readonly dirs?: readonly string[];
}

function searchDirs(options: ProfileOptions): string[] {
  return [...(options.dirs ?? []), SHIPPED_PROFILE_DIR];
}

/** The profiles available, by name, each with its version ranges. */
export function listProfiles(options: ProfileOptions = {}): { profiles: ComponentProfile[]; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const byName = new Map<string, ComponentProfile>();
  for (const dir of searchDirs(options)) {
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir).sort()) {
      if (!/\.ya?ml$/.test(entry)) continue;
      const read = readProfileFile(path.join(dir, entry));
      diagnostics.push(...read.diagnostics);
      if (read.profile && !byName.has(read.profile.name)) byName.set(read.profile.name, read.profile);
    }
  }
  return { profiles: [...byName.values()], diagnostics };
}

/** `netbird@0.40` → the profile and the version entry covering 0.40.0. */
export function loadProfile(
  ref: string,
  options: ProfileOptions = {},
): { profile?: ComponentProfile; version?: ProfileVersion; diagnostics: Diagnostic[] } {
  const at = ref.lastIndexOf('@');
  const name = at < 0 ? ref : ref.slice(0, at);
  const versionText = at < 0 ? '' : ref.slice(at + 1);
  const { profiles, diagnostics } = listProfiles(options);
  const profile = profiles.find((p) => p.name === name);
  if (!profile) {
    const known = profiles.map((p) => p.name).join(', ') || 'none';
    return { diagnostics: [...diagnostics, error('unknown-profile', `no component profile named '${name}' (known: ${known}; profiles live in ${searchDirs(options).join(', ')})`)] };
  }
  const ranges = profile.versions.map((v) => v.range.text).join(', ');
  const version = parseVersion(versionText);
  if (!version) {
    return { profile, diagnostics: [...diagnostics, error('bad-version', `give a version: ${name}@<version> (e.g. ${name}@${exampleVersion(profile)}); ${profile.file} covers ${ranges}`)] };
  }
  const entry = profile.versions.find((v) => isInRange(version, v.range));
  if (!entry) {
    return { profile, diagnostics: [...diagnostics, error('unknown-version', `${name} ${versionText} is not covered by ${profile.file} (it covers ${ranges})`)] };
  }
  return { profile, version: entry, diagnostics };
}

function exampleVersion(profile: ComponentProfile): string {
  const last = profile.versions[profile.versions.length - 1];
  const v: Version | undefined = last?.range.low ?? last?.range.high;
  return v ? `${v[0]}.${v[1]}` : '1.0';
}

function error(code: string, message: string, span?: Span): Diagnostic {
  return span ? { severity: 'error', code, message, span } : { severity: 'error', code, message };
}

// ---------------------------------------------------------------------------------------------
// Reading a profile file

const PARAMETER_TYPES: ReadonlySet<string> = new Set<ParameterType>(['interface', 'prefix', 'cidr', 'cidr-list', 'port-list', 'mark', 'string']);
const FAMILIES: ReadonlySet<string> = new Set<Family>(['ip', 'ip6', 'inet', 'arp', 'bridge', 'netdev']);

/** Reads one profile; problems are errors pointing into the YAML file. */
export function readProfileFile(file: string): { profile?: ComponentProfile; diagnostics: Diagnostic[] } {
  return readProfile(readTextFile(file), file);
}

export function readProfile(text: string, file: string): { profile?: ComponentProfile; diagnostics: Diagnostic[] } {
  const doc = parseDocument(text, { intAsBigInt: false });
  const diagnostics: Diagnostic[] = doc.errors.map((e) => error('profile', `${file}: ${e.message}`, spanAt(file, text, e.pos[0])));
  if (diagnostics.length > 0) return { diagnostics };
  const spanOf = (keyPath: readonly (string | number)[]): Span | undefined => {
    const n = doc.getIn(keyPath, true) as { range?: [number, number, number] } | undefined;
    return n?.range ? spanAt(file, text, n.range[0]) : undefined;
  };
  const problem = (keyPath: readonly (string | number)[], message: string) => {
    diagnostics.push(error('profile', `${file}: ${keyPath.join('.')}: ${message}`, spanOf(keyPath) ?? spanAt(file, text, 0)));
  };
  if (!isMap(doc.contents)) {
    problem([], 'a profile is a mapping (name, parameters, owns, versions)');
    return { diagnostics };
  }
  const raw = doc.toJS() as Record<string, unknown>;
  const str = (v: unknown, keyPath: (string | number)[], required = true): string => {
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number') return String(v);
    if (required || v !== undefined) problem(keyPath, 'expected a string');
    return '';
  };
  const strList = (v: unknown, keyPath: (string | number)[]): string[] => {
    if (v === undefined) return [];
    if (!Array.isArray(v)) {
      problem(keyPath, 'expected a list');
      return [];
    }
    return v.map((x, i) => str(x, [...keyPath, i]));
  };
  const name = str(raw.name, ['name']);
  const parameters: ParameterSpec[] = [];
  const params = raw.parameters ?? {};
  if (typeof params !== 'object' || params === null || Array.isArray(params)) problem(['parameters'], 'expected a mapping of parameter names');
  else {
    for (const [pname, spec] of Object.entries(params as Record<string, unknown>)) {
      const s = (spec ?? {}) as Record<string, unknown>;
      const type = str(s.type, ['parameters', pname, 'type']);
      if (type !== '' && !PARAMETER_TYPES.has(type)) problem(['parameters', pname, 'type'], `unknown type '${type}' (one of ${[...PARAMETER_TYPES].join(', ')})`);
      parameters.push({
        name: pname,
        type: type as ParameterType,
        description: str(s.description, ['parameters', pname, 'description']),
        ...(s.default !== undefined ? { default: s.default === null ? '' : String(s.default) } : {}),
        ...(s.example !== undefined ? { example: String(s.example) } : {}),
      });
    }
  }
  const shorthandRaw = raw.shorthand as Record<string, unknown> | undefined;
  const shorthand = shorthandRaw ? { interface: str(shorthandRaw.interface, ['shorthand', 'interface']), value: str(shorthandRaw.value, ['shorthand', 'value']) } : undefined;
  for (const p of shorthand ? [shorthand.interface, shorthand.value] : []) {
    if (!parameters.some((q) => q.name === p)) problem(['shorthand'], `names no parameter '${p}'`);
  }
  const owns = (raw.owns ?? {}) as Record<string, unknown>;
  const ownsTables = strList(owns.tables, ['owns', 'tables']);
  const ownsChains = strList(owns.chains, ['owns', 'chains']);
  ownsTables.forEach((t, i) => {
    if (!isTableRef(t)) problem(['owns', 'tables', i], `'${t}' is not 'FAMILY TABLE'`);
  });
  ownsChains.forEach((c, i) => {
    if (parseChainRef(c) === undefined) problem(['owns', 'chains', i], `'${c}' is not 'FAMILY TABLE CHAIN'`);
  });
  const attribution = (raw.attribution ?? {}) as Record<string, unknown>;
  const versions: ProfileVersion[] = [];
  if (!Array.isArray(raw.versions) || raw.versions.length === 0) problem(['versions'], 'expected a list of versions');
  else {
    raw.versions.forEach((v: Record<string, unknown>, i: number) => {
      const at = ['versions', i];
      const rangeText = str(v.range, [...at, 'range']);
      const range = parseVersionRange(rangeText);
      if (!range) {
        problem([...at, 'range'], `'${rangeText}' is not a version range (0.30.1, 0.30, 0.31.1-0.39, <=0.29, >=0.40)`);
        return;
      }
      const clash = versions.find((w) => rangesOverlap(w.range, range));
      if (clash) problem([...at, 'range'], `${rangeText} overlaps ${clash.range.text}`);
      const files: ProfileVersion['files'][number][] = [];
      if (v.nft !== undefined) files.push({ format: 'nft', text: str(v.nft, [...at, 'nft']) });
      if (v.iptables !== undefined) files.push({ format: 'iptables', family: 'ip', text: str(v.iptables, [...at, 'iptables']) });
      if (v.ip6tables !== undefined) files.push({ format: 'iptables', family: 'ip6', text: str(v.ip6tables, [...at, 'ip6tables']) });
      const insertions: Insertion[] = [];
      const ins = v.insert ?? [];
      if (!Array.isArray(ins)) problem([...at, 'insert'], 'expected a list');
      else {
        ins.forEach((x: Record<string, unknown>, j: number) => {
          const where = [...at, 'insert', j];
          const ref = parseChainRef(str(x.chain, [...where, 'chain']));
          const position = x.position ?? 'append';
          if (position !== 'top' && position !== 'append') problem([...where, 'position'], `expected top or append`);
          const format = x.nft !== undefined ? 'nft' : x.iptables !== undefined ? 'iptables' : undefined;
          if (!ref) problem([...where, 'chain'], `expected 'FAMILY TABLE CHAIN' (ip filter FORWARD)`);
          if (!format) problem(where, 'give the rule as nft (a rule body) or iptables (a rule spec)');
          if (!ref || !format || (position !== 'top' && position !== 'append')) return;
          insertions.push({
            ...ref,
            position,
            format,
            rule: str(format === 'nft' ? x.nft : x.iptables, [...where, format]),
            onlyIfChainExists: x['if-chain-exists'] === true,
            ...(x.when !== undefined ? { when: str(x.when, [...where, 'when']) } : {}),
          });
        });
      }
      const marks: MarkUse[] = [];
      const ms = v.marks ?? [];
      if (!Array.isArray(ms)) problem([...at, 'marks'], 'expected a list');
      else {
        ms.forEach((m: Record<string, unknown>, j: number) => {
          const where = [...at, 'marks', j];
          const value = numberOf(m.value);
          const mask = m.mask === undefined ? 0xffffffff : numberOf(m.mask);
          const kind = m.kind ?? 'meta';
          if (value === undefined) problem([...where, 'value'], 'expected a number (0x1bd20)');
          if (mask === undefined) problem([...where, 'mask'], 'expected a number (0x4000)');
          if (kind !== 'meta' && kind !== 'ct' && kind !== 'socket') problem([...where, 'kind'], 'expected meta, ct or socket');
          if (value === undefined || mask === undefined || (kind !== 'meta' && kind !== 'ct' && kind !== 'socket')) return;
          marks.push({
            value,
            mask,
            kind,
            op: str(m.op, [...where, 'op']),
            meaning: str(m.meaning, [...where, 'meaning']),
            ...(m.where !== undefined ? { where: str(m.where, [...where, 'where']) } : {}),
          });
        });
      }
      const facts = strList(v.facts, [...at, 'facts']);
      if (facts.length === 0) problem([...at, 'facts'], 'say what this version rests on (source file and tag, URL, research note)');
      versions.push({ range, facts, marks, files, insertions });
    });
  }
  if (diagnostics.length > 0) return { diagnostics };
  return {
    profile: {
      name,
      description: str(raw.description, ['description']),
      file,
      provenance: str(raw.provenance, ['provenance']),
      parameters,
      ...(shorthand ? { shorthand } : {}),
      ownsTables,
      ownsChains,
      chainPrefixes: strList(attribution.chainPrefixes, ['attribution', 'chainPrefixes']),
      commentPrefixes: strList(attribution.commentPrefixes, ['attribution', 'commentPrefixes']),
      versions,
    },
    diagnostics,
  };
}

function numberOf(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff) return v;
  if (typeof v === 'string' && /^(0x[0-9a-f]+|\d+)$/i.test(v)) {
    const n = Number(v);
    return n <= 0xffffffff ? n : undefined;
  }
  return undefined;
}

function isTableRef(text: string): boolean {
  const parts = text.trim().split(/\s+/);
  return parts.length === 2 && FAMILIES.has(parts[0]!);
}

/** `ip filter FORWARD` → its parts (the chain may end in `*`: a prefix). */
export function parseChainRef(text: string): { family: Family; table: string; chain: string } | undefined {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 3 || !FAMILIES.has(parts[0]!)) return undefined;
  return { family: parts[0] as Family, table: parts[1]!, chain: parts[2]! };
}

function spanAt(file: string, text: string, offset: number): Span {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { file, start: offset, end: offset, line, column: offset - lineStart + 1 };
}
