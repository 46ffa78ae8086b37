// `nftsim kube-drift`'s text output: per node its verdict, the findings that explain it, then one
// line per drifting Service port (`ns/svc:port/tcp: missing …; stale …; share … (expected …)`)
// with where the rules are, the notes; and a summary over all nodes at the end.

import type { Loc } from '../sim/outcome.js';
import type { KubeDriftResult, NodeDrift, ProbeResult, ServiceDrift } from './kube-drift.js';

/** How many endpoints a line lists before `and N more`. */
const MAX_LISTED = 8;

export function formatDriftText(result: KubeDriftResult): string {
  let text = '';
  for (const node of result.nodes) text += formatNode(node);
  return text + formatSummary(result);
}

function formatNode(node: NodeDrift): string {
  let text = `${node.verdict}\n`;
  if (node.mode !== 'none') text += `  kube-proxy: ${node.families.map((f) => `${f.mode} mode (${f.family})`).join(', ')}\n`;
  if (node.explainedBy.length > 0) {
    text += '  explained by:\n';
    for (const f of node.explainedBy) text += `    ${f.location.file}:${f.location.line}:${f.location.column}: ${f.severity} ${f.rule}: ${f.message}\n`;
  }
  for (const service of [...node.services, ...node.undecided]) text += formatService(service);
  for (const note of node.notes) text += `  note: ${note}\n`;
  return text;
}

function formatService(s: ServiceDrift): string {
  const spn = `${s.namespace}/${s.name}${s.portName ? `:${s.portName}` : ''}`;
  const title = `${spn}/${s.protocol}${s.family === 'ipv6' ? ' (IPv6)' : ''}`;
  const parts: string[] = [];
  if (s.orphan) parts.push('the Service (or this address of it) no longer exists, its rules remain');
  if (s.noRules) parts.push('no rules');
  if (s.undecided) parts.push('undecided');
  if (s.missing.length > 0) parts.push(`missing ${list(s.missing)}${whereInstead(s.probes)}`);
  if (s.stale.length > 0) parts.push(`stale ${list(s.stale.map((e) => withLoc(e, dnatAt(s.probes, e))))}`);
  for (const w of s.wrongShare.slice(0, MAX_LISTED)) parts.push(`share ${w.endpoint} ${percent(w.share)} (expected ${percent(w.expected)}, ${w.client} → ${w.access})`);
  if (s.wrongShare.length > MAX_LISTED) parts.push(`and ${s.wrongShare.length - MAX_LISTED} more wrong shares`);
  parts.push(...s.notes);
  const at = s.at ? ` (${s.orphan ? 'rule' : 'Service'} at ${s.at.file}:${s.at.line})` : '';
  return `  ${title}: ${parts.join('; ')}${at}\n`;
}

function formatSummary(result: KubeDriftResult): string {
  const nodes = result.nodes;
  const count = (status: NodeDrift['status']): number => nodes.filter((n) => n.status === status).length;
  const sum = (key: keyof NodeDrift['summary']): number => nodes.reduce((n, node) => n + node.summary[key], 0);
  const states = [
    `${count('in-sync')} in sync`,
    `${count('drift')} drifting`,
    ...(count('undecided') > 0 ? [`${count('undecided')} undecided`] : []),
    ...(count('unchecked') > 0 ? [`${count('unchecked')} not checked`] : []),
  ];
  const figures = [
    `${sum('services')} service ports checked`,
    `${sum('missing')} of ${sum('endpointsExpected')} endpoints missing`,
    `${sum('stale')} stale`,
    `${sum('wrongShare')} with a wrong share`,
    ...(sum('noRules') > 0 ? [`${ports(sum('noRules'))} without rules`] : []),
    ...(sum('orphans') > 0 ? [`${ports(sum('orphans'))} of deleted services still in the rules`] : []),
    ...(sum('undecided') > 0 ? [`${ports(sum('undecided'))} undecided`] : []),
  ];
  return `summary: ${nodes.length} node${nodes.length === 1 ? '' : 's'} (${states.join(', ')}); ${figures.join(', ')}\n`;
}

function ports(n: number): string {
  return `${n} service port${n === 1 ? '' : 's'}`;
}

function list(items: readonly string[]): string {
  const shown = items.slice(0, MAX_LISTED).join(', ');
  return items.length > MAX_LISTED ? `${shown} and ${items.length - MAX_LISTED} more` : shown;
}

function percent(share: number): string {
  return `${Math.round(share * 1000) / 10}%`;
}

function withLoc(text: string, at: Loc | undefined): string {
  return at ? `${text} (DNAT at ${at.file}:${at.line})` : text;
}

function dnatAt(probes: readonly ProbeResult[], endpoint: string): Loc | undefined {
  for (const p of probes) {
    const seen = p.observed.find((o) => o.endpoint === endpoint);
    if (seen) return seen.at;
  }
  return undefined;
}

/** What became of the packets that should have reached the missing endpoints: ` (rejected at
 * FILE:LINE)`, ` (forwarded untouched)`, from the first probe that lost them. */
function whereInstead(probes: readonly ProbeResult[]): string {
  const probe = probes.find((p) => p.missing.length > 0 && p.unmapped !== undefined);
  const u = probe?.unmapped;
  if (!u) return '';
  const ended = u.disposition === 'dropped' || u.disposition === 'rejected';
  // A packet that went on has no deciding rule worth naming (the last accept on its way).
  const at = ended && u.decidedBy ? ` at ${u.decidedBy.file}:${u.decidedBy.line}` : u.reason !== undefined ? ` (${u.reason})` : '';
  return ` (${probe.client} → ${probe.access} ${probe.packet.dst}:${probe.packet.dport}: ${ended ? u.disposition : `${u.disposition} without DNAT`}${at})`;
}
