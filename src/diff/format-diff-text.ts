// `nftsim diff`'s text output: changed flows as a few classes with counts and compressed ranges,
// then the new and resolved findings, the structural changes, and the probe count.

import { PROBE_REASONS, type ProbeReason } from './derive-probes.js';
import type { ChangedFlow, DiffResult } from './diff-snapshots.js';

export function formatDiffText(diff: DiffResult, options: { readonly probesReport?: boolean } = {}): string {
  let text = '';
  const classes = new Map<string, ChangedFlow[]>();
  for (const flow of diff.changedFlows) {
    const list = classes.get(flow.class);
    if (list) list.push(flow);
    else classes.set(flow.class, [flow]);
  }
  text += `changed flows: ${diff.changedFlows.length}${classes.size > 0 ? ` in ${classes.size} class${classes.size === 1 ? '' : 'es'}` : ''}\n`;
  for (const [title, flows] of classes) {
    const [what, rest] = splitTitle(title);
    text += `  ${what}: ${flows.length} flow${flows.length === 1 ? '' : 's'} ${rest.from} to ${summarizeDestinations(flows)}, ${rest.decided}\n`;
  }
  const { new: added, resolved } = diff.findings;
  text += `lint findings: ${added.length} new, ${resolved.length} resolved\n`;
  for (const [sign, list] of [['+', added], ['-', resolved]] as const) {
    for (const f of list) text += `  ${sign} ${f.location.file}:${f.location.line}:${f.location.column}: ${f.severity} ${f.rule}: ${f.message}\n`;
  }
  text += `structural changes: ${diff.structural.length}\n`;
  for (const s of diff.structural) text += `  ${s.level} ${s.message}${s.at ? ` (${s.at.file}:${s.at.line})` : ''}\n`;
  const p = diff.probes;
  text += `probes: ${p.count} (ingress ${p.ingress.join(', ')}; ${p.unreached} cannot reach a change, ${p.simulated} simulated on both sides, ${p.reused} untouched by any change${p.unfit > 0 ? `, ${p.unfit} not fitting the host` : ''})\n`;
  if (options.probesReport) {
    for (const [reason, n] of Object.entries(p.byReason)) {
      const capped = n.kept < n.derived ? ` (sampled from ${n.derived}${n.pinned ? `, all ${n.pinned} of changed chains kept` : ''})` : '';
      text += `  ${String(n.kept).padStart(6)} ${reason}${capped}: ${PROBE_REASONS[reason as ProbeReason] ?? ''}\n`;
    }
  }
  return text;
}

/** `masquerade lost from wt0, decided by …` → the change, `from wt0`, `decided by …`. */
function splitTitle(title: string): [string, { from: string; decided: string }] {
  const fromAt = title.lastIndexOf(' from ', title.indexOf(', decided by '));
  const decidedAt = title.indexOf(', decided by ');
  return [title.slice(0, fromAt), { from: title.slice(fromAt + 1, decidedAt), decided: title.slice(decidedAt + 2) }];
}

/** `192.0.2.10 tcp ports 30000–30023` per destination address, at most three addresses. */
function summarizeDestinations(flows: readonly ChangedFlow[]): string {
  const byAddr = new Map<string, Map<string, number[]>>();
  for (const f of flows) {
    const protocol = String(f.probe.protocol ?? 'tcp');
    const name = { '6': 'tcp', '17': 'udp', '1': 'icmp', '132': 'sctp', '58': 'icmpv6' }[protocol] ?? protocol;
    let protos = byAddr.get(f.probe.dst);
    if (!protos) byAddr.set(f.probe.dst, (protos = new Map()));
    const ports = protos.get(name) ?? [];
    if (f.probe.dport !== undefined) ports.push(f.probe.dport);
    protos.set(name, ports);
  }
  const parts = [...byAddr].slice(0, 3).map(([addr, protos]) =>
    `${addr} ${[...protos].map(([proto, ports]) => (ports.length === 0 ? proto : `${proto} port${ports.length > 1 ? 's' : ''} ${compressRanges(ports)}`)).join(', ')}`,
  );
  return `${parts.join('; ')}${byAddr.size > 3 ? `; and ${byAddr.size - 3} more addresses` : ''}`;
}

/** `30000–30023, 30080`: sorted, distinct, consecutive runs joined. */
export function compressRanges(values: readonly number[]): string {
  const sorted = [...new Set(values)].sort((a, b) => a - b);
  const runs: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    runs.push(j === i ? String(sorted[i]) : `${sorted[i]}–${sorted[j]}`);
    i = j + 1;
  }
  return runs.join(', ');
}
