// A node snapshot for `nftsim diff`: what a platform team captures from a node before and after
// an upgrade. A directory, or a `,`-joined list of files, holding the nft listing (text or
// `nft -j`), the iptables-save dumps, and optionally the host: nftsim's host shape
// (`host.json`/`host.yaml`) or `ip -j addr show` / `ip -j route show` output. Files are told
// apart by content, as `nftsim run` and `nftsim lint` tell rulesets apart.

import { readdirSync, statSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import type { Diagnostic } from '../model/diagnostic.js';
import type { NodeSource } from '../parser/parse-ruleset.js';
import type { HostInput } from '../sim/host.js';
import { ipJsonRoutesAsInput, readHost } from '../sim/host.js';
import type { FieldPath } from '../sim/read-fields.js';
import { inputDiagnostics, readInputFile, type InputFile } from '../parser/read-input-file.js';
import type { Snapshot } from './snapshot.js';
import { readTextFile } from '../parser/read-text-file.js';

export type { Snapshot } from './snapshot.js';


// What a directory may hold beside the captures without being one: notes, scripts, expected
// results. Only in a directory: a file named on the command line is always read.
const NOT_A_CAPTURE = new Set(['.md', '.txt', '.sh', '.mjs', '.js', '.ts']);
const HOST_KEYS = new Set(['interfaces', 'routes', 'rules', 'rules6', 'forwarding']);

/** Reads a snapshot; unreadable or unrecognised inputs give error diagnostics (file:line:col
 * where the file says), never an exception. `texts` holds every file read, by name, so that
 * diagnostics can quote their line. */
export function readSnapshot(spec: string): { snapshot?: Snapshot; diagnostics: Diagnostic[]; texts: ReadonlyMap<string, string> } {
  const diagnostics: Diagnostic[] = [];
  const texts = new Map<string, string>();
  const listed = listFiles(spec, diagnostics);
  if (!listed) return { diagnostics, texts };
  const sources: NodeSource[] = [];
  const hostParts: { value: unknown; path: FieldPath; input: InputFile }[] = [];
  for (const file of listed.files) {
    let text: string;
    try {
      text = readTextFile(file);
    } catch {
      diagnostics.push({ severity: 'error', code: 'read-error', message: `cannot read '${file}'` });
      continue;
    }
    texts.set(file, text);
    if (listed.directory && NOT_A_CAPTURE.has(extname(file))) continue;
    if (!isStructured(file, text)) {
      sources.push({ text, file });
      continue;
    }
    const input = readInputFile(file, texts, diagnostics);
    if (!input) continue;
    const kind = kindOf(input.value);
    if (kind === 'ruleset') sources.push({ text, file, format: 'json' });
    else if (kind === 'host') hostParts.push({ value: input.value, path: [], input });
    else if (!listed.directory) {
      diagnostics.push({ severity: 'error', code: 'snapshot', message: `${file}: neither a ruleset (nft -j) nor a host (nftsim host, ip -j addr show, ip -j route show)` });
    }
  }
  if (sources.length === 0 && diagnostics.length === 0) {
    diagnostics.push({ severity: 'error', code: 'snapshot', message: `${spec}: no ruleset found (nft listing, nft -j JSON or iptables-save dump)` });
  }
  const host = hostParts.length === 0 ? undefined : mergeHostParts(hostParts, diagnostics);
  if (diagnostics.some((d) => d.severity === 'error')) return { diagnostics, texts };
  return { snapshot: { label: spec, sources, ...(host && { host }) }, diagnostics, texts };
}

function listFiles(spec: string, diagnostics: Diagnostic[]): { files: string[]; directory: boolean } | undefined {
  const parts = spec.split(',').filter((p) => p !== '');
  if (parts.length === 1 && isDirectory(parts[0]!)) {
    const dir = parts[0]!;
    const files = readdirSync(dir)
      .sort()
      .map((name) => join(dir, name))
      .filter((path) => !isDirectory(path));
    return { files, directory: true };
  }
  if (parts.length === 0) {
    diagnostics.push({ severity: 'error', code: 'usage', message: 'empty snapshot: give a directory or files joined with ","' });
    return undefined;
  }
  return { files: parts, directory: false };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** JSON or YAML by name, or JSON by its first character (an nft -j listing starts with `{`, ip
 * -j output with `[`). */
function isStructured(file: string, text: string): boolean {
  return /\.(json|ya?ml)$/i.test(file) || /^\s*[[{]/.test(text);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `ruleset` for nft -j, `host` for nftsim's host shape or ip -j output, else `other` (notes,
 * expected results and scenarios a directory may also hold). */
function kindOf(value: unknown): 'ruleset' | 'host' | 'other' {
  if (Array.isArray(value)) return value.every((e) => isRecord(e) && ('ifname' in e || 'dst' in e)) ? 'host' : 'other';
  if (!isRecord(value)) return 'other';
  if ('nftables' in value) return 'ruleset';
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === 'host' && isRecord(value.host)) return 'host';
  return keys.length > 0 && keys.every((k) => HOST_KEYS.has(k)) ? 'host' : 'other';
}

/** One HostInput from every part (ip -j addr entries count as interfaces, ip -j route entries as
 * routes), checked with readHost so that a bad field is reported at its place. */
function mergeHostParts(parts: readonly { value: unknown; path: FieldPath; input: InputFile }[], diagnostics: Diagnostic[]): HostInput | undefined {
  const interfaces: unknown[] = [];
  const routes: unknown[] = [];
  let forwarding: boolean | undefined;
  const rules: { rules?: HostInput['rules']; rules6?: HostInput['rules6'] } = {};
  for (const part of parts) {
    const value = isRecord(part.value) && 'host' in part.value ? part.value.host : part.value;
    const path: FieldPath = value === part.value ? [] : ['host'];
    // Each file's fields are checked at their place; a route naming an interface of another file
    // (ip -j route beside ip -j addr) is checked once all are merged, below.
    const errors = readHost([{ value, path }]).errors.filter((e) => !UNKNOWN_INTERFACE.test(e.message));
    // readHost names host-level fields under `host`; the file's own root is the host here.
    diagnostics.push(...inputDiagnostics(errors.map((e) => ({ ...e, path: e.path[0] === 'host' && path.length === 0 ? e.path.slice(1) : e.path })), part.input));
    if (Array.isArray(value)) {
      interfaces.push(...value.filter((entry) => isRecord(entry) && 'ifname' in entry));
      routes.push(...ipJsonRoutesAsInput(value));
    } else if (isRecord(value)) {
      if (Array.isArray(value.interfaces)) interfaces.push(...(value.interfaces as unknown[]));
      if (Array.isArray(value.routes)) routes.push(...(value.routes as unknown[]));
      if (typeof value.forwarding === 'boolean') forwarding = value.forwarding;
      if (value.rules !== undefined) rules.rules = value.rules as HostInput['rules'];
      if (value.rules6 !== undefined) rules.rules6 = value.rules6 as HostInput['rules6'];
    }
  }
  const host = { interfaces, routes, ...rules, ...(forwarding !== undefined && { forwarding }) } as HostInput;
  for (const e of readHost([{ value: host, path: ['host'] }]).errors) {
    if (UNKNOWN_INTERFACE.test(e.message)) diagnostics.push({ severity: 'error', code: 'input', message: e.message });
  }
  return host;
}

// readHost's message for a route through an interface the host does not have.
const UNKNOWN_INTERFACE = /uses unknown interface/;

/** A short name for a snapshot's side in messages: the directory's or first file's base name. */
export function snapshotName(snapshot: Snapshot): string {
  return basename(snapshot.label.split(',')[0]!.replace(/\/+$/, ''));
}
