import type { Diagnostic } from '../model/diagnostic.js';
import type { NodeSource } from '../parser/parse-ruleset.js';
import type { ComponentProfile, Insertion, ParameterSpec, ParameterType, ProfileVersion } from './profile.js';

// Parameters and templates of component profiles (docs/components.md). `{{name}}` is a
// parameter's value, `{{name.field}}` a value derived from it (`{{address.ip}}`,
// `{{address.network}}`); a template line that uses a list parameter is repeated for each of its
// values and left out when the list is empty.

/** A parameter's value: its text, the fields derived from it, and for lists the items. */
interface ParameterValue {
  readonly text: string;
  readonly fields: Readonly<Record<string, string>>;
  readonly items?: readonly string[];
}

export type ParameterValues = ReadonlyMap<string, ParameterValue>;

const INTERFACE = /^[A-Za-z0-9_.:@-]{1,15}$/;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function ipv4ToNumber(text: string): number | undefined {
  const m = IPV4.exec(text);
  if (!m) return undefined;
  const octets = m.slice(1, 5).map(Number);
  if (octets.some((o) => o > 255)) return undefined;
  return octets.reduce((n, o) => n * 256 + o, 0);
}

function numberToIpv4(n: number): string {
  return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
}

/** `100.64.1.1/16` → its address, length and network, or undefined. */
function readPrefix(text: string): { ip: string; len: number; network: string } | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const ip = text.slice(0, slash);
  const lenText = text.slice(slash + 1);
  const n = ipv4ToNumber(ip);
  const len = /^\d{1,2}$/.test(lenText) ? Number(lenText) : NaN;
  if (n === undefined || !(len >= 0 && len <= 32)) return undefined;
  const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
  return { ip, len, network: `${numberToIpv4((n & mask) >>> 0)}/${len}` };
}

function isPort(text: string): boolean {
  const parts = text.split('-');
  if (parts.length > 2 || parts.some((p) => !/^\d{1,5}$/.test(p) || Number(p) < 1 || Number(p) > 65535)) return false;
  return parts.length === 1 || Number(parts[0]) <= Number(parts[1]);
}

// What each type accepts, as said in errors.
const TYPE_TEXT: Readonly<Record<ParameterType, string>> = {
  interface: 'an interface name (at most 15 characters)',
  prefix: 'an IPv4 address with its prefix length (100.64.1.1/16)',
  cidr: 'an IPv4 network (10.20.1.0/24)',
  'cidr-list': 'IPv4 networks separated by commas (10.20.1.0/24,10.30.0.0/16), or nothing',
  'port-list': 'ports or port ranges separated by commas (22,30000-32767), or nothing',
  mark: 'a 32-bit number (0x4000)',
  string: 'text',
};

/** A value of `type`, or undefined when `text` is not one. */
function readValue(type: ParameterType, text: string): ParameterValue | undefined {
  switch (type) {
    case 'interface':
      return INTERFACE.test(text) ? { text, fields: {} } : undefined;
    case 'prefix': {
      const p = readPrefix(text);
      return p && { text, fields: { ip: p.ip, len: String(p.len), network: p.network } };
    }
    case 'cidr': {
      const p = readPrefix(text);
      return p && { text: p.network, fields: { network: p.network, len: String(p.len) } };
    }
    case 'cidr-list':
    case 'port-list': {
      const items = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
      const ok = type === 'port-list' ? items.every(isPort) : items.every((i) => readPrefix(i) !== undefined);
      const normal = type === 'cidr-list' ? items.map((i) => readPrefix(i)!.network) : items;
      return ok ? { text: normal.join(','), fields: {}, items: normal } : undefined;
    }
    case 'mark': {
      const n = /^(0x[0-9a-f]{1,8}|\d{1,10})$/i.test(text) ? Number(text) : NaN;
      return n >= 0 && n <= 0xffffffff ? { text, fields: { hex: `0x${n.toString(16).padStart(8, '0')}` } } : undefined;
    }
    case 'string':
      return text === '' ? undefined : { text, fields: {} };
    default: {
      const exhaustive: never = type;
      return exhaustive;
    }
  }
}

function setHint(spec: ParameterSpec): string {
  return `--set ${spec.name}=${spec.example ?? spec.default ?? '…'}`;
}

/** The values of a profile's parameters from `--set NAME=VALUE` pairs and the defaults. Every
 * missing or malformed value is an error naming what is needed. */
export function resolveParameters(profile: ComponentProfile, given: Readonly<Record<string, string>>): { values?: ParameterValues; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const fail = (code: string, message: string) => diagnostics.push({ severity: 'error', code, message });
  const texts = new Map<string, string>();
  const known = new Set(profile.parameters.map((p) => p.name));
  for (const [name, value] of Object.entries(given)) {
    const shortValue = profile.shorthand && profile.parameters.find((p) => p.name === profile.shorthand!.value);
    if (known.has(name)) texts.set(name, value);
    else if (profile.shorthand && shortValue && INTERFACE.test(name) && readValue(shortValue.type, value.trim())) {
      // `--set wt0=100.64.1.1/16`: the interface and its address.
      texts.set(profile.shorthand.interface, name);
      texts.set(profile.shorthand.value, value);
    } else {
      const short = profile.shorthand ? `, or INTERFACE=${shortValue?.example ?? 'VALUE'} for its ${profile.shorthand.interface} and ${profile.shorthand.value}` : '';
      fail('unknown-parameter', `${profile.name} has no parameter '${name}' (it has: ${[...known].join(', ')}${short})`);
    }
  }
  const values = new Map<string, ParameterValue>();
  for (const spec of profile.parameters) {
    const text = texts.get(spec.name) ?? spec.default;
    if (text === undefined) {
      const short = profile.shorthand?.value === spec.name ? ` (or --set ${profileDefault(profile, profile.shorthand.interface)}=${spec.example ?? '…'})` : '';
      fail('missing-parameter', `${profile.name} needs ${spec.name}: ${spec.description}; give ${setHint(spec)}${short}`);
      continue;
    }
    const value = readValue(spec.type, text.trim());
    if (!value) {
      fail('bad-parameter', `${profile.name} parameter ${spec.name}='${text}' is not ${TYPE_TEXT[spec.type]}; e.g. ${setHint(spec)}`);
      continue;
    }
    values.set(spec.name, value);
  }
  return diagnostics.length > 0 ? { diagnostics } : { values, diagnostics };
}

function profileDefault(profile: ComponentProfile, name: string): string {
  return profile.parameters.find((p) => p.name === name)?.default ?? name;
}

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_-]+)(?:\.([A-Za-z0-9_-]+))?\s*\}\}/g;

/** A template with its placeholders filled; a line using a list parameter repeats per item. */
export function renderTemplate(template: string, values: ParameterValues, where: string): { text: string; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const out: string[] = [];
  for (const line of template.split('\n')) {
    const lists = new Set<string>();
    for (const m of line.matchAll(PLACEHOLDER)) if (values.get(m[1]!)?.items) lists.add(m[1]!);
    if (lists.size > 1) {
      diagnostics.push({ severity: 'error', code: 'profile', message: `${where}: a line may use one list parameter, not ${[...lists].join(' and ')}: ${line.trim()}` });
      continue;
    }
    const list = [...lists][0];
    const items = list === undefined ? [undefined] : values.get(list)!.items!;
    for (const item of items) {
      out.push(
        line.replace(PLACEHOLDER, (whole, name: string, field: string | undefined) => {
          const value = values.get(name);
          const text = name === list ? item : field === undefined ? value?.text : value?.fields[field];
          if (text === undefined || (field !== undefined && name === list)) {
            diagnostics.push({ severity: 'error', code: 'profile', message: `${where}: unknown placeholder ${whole}` });
            return whole;
          }
          return text;
        }),
      );
    }
  }
  return { text: out.join('\n'), diagnostics };
}

/** The text of one insertion as the agent writes it, rendered (nft rule body or iptables spec). */
export function renderInsertion(insertion: Insertion, values: ParameterValues, where: string): { rule: string; diagnostics: Diagnostic[] } {
  const { text, diagnostics } = renderTemplate(insertion.rule, values, where);
  return { rule: text.trim(), diagnostics };
}

/** The files a profile version writes, rendered, named `<name>@<range>.<ext>`; insertions go to
 * files of their own after them (`…-insert.nft`, `…-insert.ipt`), in the order listed, `top`
 * ones so that they end up first in the order listed. `skip` leaves out insertions (by index)
 * whose chain the node does not have. */
export function renderVersion(
  profile: ComponentProfile,
  version: ProfileVersion,
  values: ParameterValues,
  skip: ReadonlySet<number> = new Set(),
): { sources: NodeSource[]; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const base = `${profile.name}@${version.range.text.replace(/[<>=]/g, '')}`;
  const sources: NodeSource[] = [];
  version.files.forEach((f, i) => {
    const rendered = renderTemplate(f.text, values, `${profile.file} ${version.range.text} file ${i + 1}`);
    diagnostics.push(...rendered.diagnostics);
    const ext = f.format === 'nft' ? 'nft' : f.family === 'ip6' ? 'ip6t' : 'ipt';
    const suffix = version.files.length > 1 ? `-${i + 1}` : '';
    sources.push({ file: `${base}${suffix}.${ext}`, text: rendered.text.endsWith('\n') ? rendered.text : `${rendered.text}\n`, format: f.format });
  });
  const nftLines: string[] = [];
  const iptLines = new Map<string, string[]>();
  // Per chain, how many `top` rules went in so far: the next one goes after them.
  const topCount = new Map<string, number>();
  const tops = version.insertions.map((ins, i) => ({ ins, i })).filter(({ ins, i }) => ins.position === 'top' && !skip.has(i));
  const nftTopsReversed = tops.filter(({ ins }) => ins.format === 'nft').reverse();
  const emitNft = (ins: Insertion, i: number) => {
    const r = renderInsertion(ins, values, `${profile.file} ${version.range.text} insert ${i + 1}`);
    diagnostics.push(...r.diagnostics);
    nftLines.push(`${ins.position === 'top' ? 'insert' : 'add'} rule ${ins.family} ${ins.table} ${ins.chain} ${r.rule}`);
  };
  // nft has no "insert at position N" without handles: inserting the top rules last-first leaves
  // them first in the order listed.
  for (const { ins, i } of nftTopsReversed) emitNft(ins, i);
  version.insertions.forEach((ins, i) => {
    if (skip.has(i)) return;
    if (ins.format === 'nft') {
      if (ins.position === 'append') emitNft(ins, i);
      return;
    }
    const r = renderInsertion(ins, values, `${profile.file} ${version.range.text} insert ${i + 1}`);
    diagnostics.push(...r.diagnostics);
    const key = `${ins.family === 'ip6' ? 'ip6' : 'ip'} ${ins.table}`;
    const lines = iptLines.get(key) ?? [];
    iptLines.set(key, lines);
    if (ins.position === 'top') {
      const chainKey = `${key} ${ins.chain}`;
      const n = (topCount.get(chainKey) ?? 0) + 1;
      topCount.set(chainKey, n);
      lines.push(`-I ${ins.chain} ${n} ${r.rule}`);
    } else lines.push(`-A ${ins.chain} ${r.rule}`);
  });
  if (nftLines.length > 0) sources.push({ file: `${base}-insert.nft`, text: `${nftLines.join('\n')}\n`, format: 'nft' });
  for (const family of ['ip', 'ip6'] as const) {
    const blocks = [...iptLines].filter(([key]) => key.startsWith(`${family} `)).map(([key, lines]) => `*${key.slice(family.length + 1)}\n${lines.join('\n')}\nCOMMIT\n`);
    if (blocks.length > 0) sources.push({ file: `${base}-insert.${family === 'ip6' ? 'ip6t' : 'ipt'}`, text: blocks.join(''), format: 'iptables' });
  }
  return { sources, diagnostics };
}
