// The comparison of the kernel-differential tests (issue 4): what the kernel did to a packet
// (kernel-harness.ts) against what simulatePacket says, on the points the kernel shows.
//
// What the kernel's side can show, and so what is compared:
// - the disposition (a reject prints as drop in the trace and ends the packet like one);
// - oif, addresses and ports of the packet a peer captured (NAT included);
// - every NAT: each NAT the simulator reports must be what the captured packet shows, and each
//   rewrite the captured packet shows must be one the simulator reports;
// - the events (hook, family, table, chain, kind, verdict), a rule identified by its index in its
//   chain (the kernel prints `unknown rule handle N` for rules loaded after the monitor started);
// - the mark at policy and return events, the only lines where nft prints it (absent: zero).
// The simulator's `return` event at the end of a regular chain (kind return, verdict continue)
// has no kernel counterpart: kernel 6.18 traces nothing there (nf_tables_core.c pops the jump
// stack silently), so those events are left out of the sequence.
import type { Ruleset } from '../../src/model/ast.js';
import type { Loc, Outcome, TraceEvent } from '../../src/sim/outcome.js';
import type { KernelPacket } from './harness/craft-packet.js';
import type { KernelResult } from './harness/kernel-harness.js';

/** Rule positions by location, to name a simulated rule event the way the kernel's trace does. */
export type RuleIndex = ReadonlyMap<string, number>;

function locKey(loc: Pick<Loc, 'file' | 'line' | 'column'>): string {
  return `${loc.file}:${loc.line}:${loc.column}`;
}

export function indexRules(ruleset: Ruleset): RuleIndex {
  const index = new Map<string, number>();
  for (const table of ruleset.tables) {
    for (const chain of table.chains) chain.rules.forEach((rule, i) => index.set(locKey(rule.span), i));
  }
  return index;
}

function describeSimEvent(event: TraceEvent, rules: RuleIndex): string {
  const at = event.kind === 'rule' ? ` #${rules.get(locKey(event.at)) ?? '?'}` : '';
  const mark = event.kind === 'policy' || event.kind === 'return' ? ` mark ${event.mark}` : '';
  return `${event.hook} ${event.family} ${event.table} ${event.chain} ${event.kind} ${event.verdict}${at}${mark}`;
}

function describeKernelEvent(event: KernelResult['trace'][number]): string {
  const at = event.kind === 'rule' ? ` #${event.ruleIndex ?? '?'}` : '';
  const mark = event.kind === 'policy' || event.kind === 'return' ? ` mark ${event.mark ?? '0x00000000'}` : '';
  return `${event.hook ?? '?'} ${event.family} ${event.table} ${event.chain} ${event.kind} ${event.verdict}${at}${mark}`;
}

/** The simulated events the kernel would print, in the kernel's words. */
export function simulatedSteps(outcome: Outcome, rules: RuleIndex): string[] {
  return outcome.trace
    .filter((event) => !(event.kind === 'return' && event.verdict === 'continue'))
    .map((event) => describeSimEvent(event, rules));
}

export function kernelSteps(kernel: KernelResult): string[] {
  return kernel.trace.map(describeKernelEvent);
}

/** `10.0.0.1:8080` / `[2001:db8::1]:80` / `10.0.0.1` / `10.0.0.1:1024-65535` → parts. */
function parseNatTarget(to: string): { address: string; port?: string } {
  const bracketed = /^\[([^\]]+)\](?::(.+))?$/.exec(to);
  if (bracketed) return { address: bracketed[1]!, ...(bracketed[2] !== undefined && { port: bracketed[2] }) };
  const colons = to.split(':').length - 1;
  if (colons === 1) {
    const [address, port] = to.split(':');
    return { address: address!, port: port! };
  }
  return { address: to };
}

/** The address a NAT event rewrote: a reply of a connection gets the original mapping reversed
 * (a DNAT rewrites its source, a SNAT its destination). */
function natSide(nat: Outcome['nat'][number]): 'src' | 'dst' {
  const destination = nat.type === 'dnat' || nat.type === 'redirect';
  return destination !== (nat.conntrack === 'reply') ? 'dst' : 'src';
}

function isPortRangeNote(event: TraceEvent): boolean {
  return event.kind === 'unsupported' && (event.reason ?? '').startsWith('NAT to a port range');
}

/** A simulated port (a number, or a range where the kernel picks) against the kernel's. */
function isPortMatching(simulated: number | string | undefined, kernel: number | undefined): boolean {
  if (simulated === undefined || kernel === undefined) return simulated === kernel;
  if (typeof simulated === 'number') return simulated === kernel;
  const range = /^(\d+)-(\d+)$/.exec(simulated);
  if (range) return kernel >= Number(range[1]) && kernel <= Number(range[2]);
  return Number(simulated) === kernel;
}

/** The disagreements between one outcome and the kernel; empty when they agree. */
export function findDisagreements(kernel: KernelResult, outcome: Outcome, packet: KernelPacket, rules: RuleIndex): string[] {
  const problems: string[] = [];
  const disposition = outcome.disposition === 'rejected' ? 'dropped' : outcome.disposition;
  if (disposition !== kernel.disposition) problems.push(`disposition: kernel ${kernel.disposition}, nftsim ${outcome.disposition}`);
  const seen = kernel.delivered;
  if (seen && (kernel.disposition === 'forwarded' || kernel.disposition === 'sent')) {
    if (seen.iface !== outcome.oif) problems.push(`oif: kernel ${seen.iface}, nftsim ${String(outcome.oif)}`);
    const p = outcome.packet;
    if (p.src !== seen.src || p.dst !== seen.dst) {
      problems.push(`addresses: kernel ${seen.src} → ${seen.dst}, nftsim ${p.src} → ${p.dst}`);
    }
    const ported = p.protocol !== 'icmp' && p.protocol !== 'icmpv6';
    if (ported && (!isPortMatching(p.sport, seen.sport) || !isPortMatching(p.dport, seen.dport))) {
      problems.push(`ports: kernel ${String(seen.sport)} → ${String(seen.dport)}, nftsim ${String(p.sport)} → ${String(p.dport)}`);
    }
    if (!ported && seen.icmpId !== undefined && !isPortMatching(p.icmpId, seen.icmpId)) {
      problems.push(`ICMP identifier: kernel ${seen.icmpId}, nftsim ${String(p.icmpId)}`);
    }
    problems.push(...findNatDisagreements(outcome, packet, seen));
  } else if (kernel.disposition === 'forwarded' || kernel.disposition === 'sent') {
    problems.push(`the kernel passed postrouting but no peer captured the packet`);
  }
  const expected = kernelSteps(kernel);
  // A NAT to a port range shows the range where the kernel picks the port, and says so with an
  // unsupported event: ports are compared by containment, so the event is no disagreement.
  const events = { ...outcome, trace: outcome.trace.filter((event) => !isPortRangeNote(event)) };
  const actual = simulatedSteps(events, rules);
  if (expected.join('\n') !== actual.join('\n')) {
    problems.push(`events differ:\n  kernel:\n    ${expected.join('\n    ')}\n  nftsim:\n    ${actual.join('\n    ')}`);
  }
  const unsupported = events.trace.filter((event) => event.kind === 'unsupported');
  if (unsupported.length > 0) problems.push(`nftsim did not model: ${unsupported.map((event) => event.reason ?? '?').join('; ')}`);
  return problems;
}

function findNatDisagreements(outcome: Outcome, packet: KernelPacket, seen: NonNullable<KernelResult['delivered']>): string[] {
  const problems: string[] = [];
  const sides = new Set(outcome.nat.map(natSide));
  const p = outcome.packet;
  for (const nat of outcome.nat) {
    const target = parseNatTarget(nat.to);
    const isDestination = natSide(nat) === 'dst';
    const address = isDestination ? seen.dst : seen.src;
    const port = isDestination ? seen.dport : seen.sport;
    // A statement after the NAT may set what it set (`tcp dport set` at postrouting after a reply
    // got its destination back at output): then nftsim's own packet differs from the event too,
    // and the packets themselves are compared (findDisagreements).
    const ownAddress = isDestination ? p.dst : p.src;
    const ownPort = isDestination ? p.dport : p.sport;
    if (target.address !== address && target.address === ownAddress) problems.push(`${nat.type} to ${nat.to}: the kernel's packet has ${address}`);
    if (target.port !== undefined && !isPortMatching(target.port, port) && String(target.port) === String(ownPort)) {
      problems.push(`${nat.type} to ${nat.to}: the kernel's packet has port ${String(port)}`);
    }
  }
  // An ICMP echo's identifier NAT rewrote is compared with the packet (findDisagreements). A side
  // nftsim's packet shows rewritten too (a payload statement did it, which the kernel's trace
  // shows as the rule's match) is compared there.
  const ported = packet.protocol === 'tcp' || packet.protocol === 'udp';
  const changed = (side: 'src' | 'dst', to: { readonly src: string; readonly dst: string; readonly sport?: number | string; readonly dport?: number | string }): boolean => {
    const port = side === 'src' ? 'sport' : 'dport';
    return to[side] !== packet[side] || (ported && packet[port] !== undefined && String(to[port]) !== String(packet[port]));
  };
  if (changed('dst', seen) && !changed('dst', p) && !sides.has('dst')) problems.push(`the kernel rewrote the destination, nftsim reports no NAT of it`);
  if (changed('src', seen) && !changed('src', p) && !sides.has('src')) problems.push(`the kernel rewrote the source, nftsim reports no NAT of it`);
  return problems;
}

/**
 * Agreement: the kernel took one of the simulated branches. The answer names the disagreements
 * with the closest outcome (fewest problems) when none agrees.
 */
export function compareWithKernel(kernel: KernelResult, outcomes: readonly Outcome[], packet: KernelPacket, rules: RuleIndex): string[] {
  if (outcomes.length === 0) return ['nftsim gave no outcome'];
  let best: string[] | undefined;
  for (const outcome of outcomes) {
    const problems = findDisagreements(kernel, outcome, packet, rules);
    if (problems.length === 0) return [];
    if (!best || problems.length < best.length) best = problems;
  }
  return outcomes.length === 1 ? best! : [`none of nftsim's ${outcomes.length} outcomes agrees; the closest:`, ...best!];
}

/** A flow agrees when one combination of nftsim's random choices agrees on every packet. */
export function compareFlowWithKernel(
  kernel: readonly { readonly packet: KernelPacket; readonly result: KernelResult }[],
  outcomes: readonly { readonly packets: readonly Outcome[] }[],
  rules: RuleIndex,
): string[] {
  if (outcomes.length === 0) return ['nftsim gave no outcome'];
  let best: string[] | undefined;
  for (const outcome of outcomes) {
    const problems = kernel.flatMap(({ packet, result }, i) => {
      const simulated = outcome.packets[i];
      if (!simulated) return [`packet ${i}: nftsim has no outcome`];
      return findDisagreements(result, simulated, packet, rules).map((problem) => `packet ${i}: ${problem}`);
    });
    if (problems.length === 0) return [];
    if (!best || problems.length < best.length) best = problems;
  }
  return outcomes.length === 1 ? best! : [`none of nftsim's ${outcomes.length} flow outcomes agrees; the closest:`, ...best!];
}
