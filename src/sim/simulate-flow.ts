// simulateFlow: several packets of one or more connections through a node, in order, each seeing
// the conntrack entries and dynamic set elements the earlier ones left (issue 4, Conntrack).

import type { Ruleset } from '../model/ast.js';
import { formatAddress } from './address.js';
import { icmpAnswerType, isIcmpError, portBounds } from './conntrack-table.js';
import type { Host, HostInput } from './host.js';
import type { Outcome } from './outcome.js';
import { L4_NUMBERS, readPacket, type Packet, type PacketInput, type QuotedPacket } from './packet.js';
import type { HookIndex } from './pipeline.js';
import { pathText, type FieldPath, type InputError } from './read-fields.js';
import type { SimState } from './sim-context.js';
import { TCP_FLAG } from './tcp-tracking.js';
import { cloneSimState, createSimState, enumerateBranches, indexOf, readInputHost, runPacket, type PacketRun, type SimulateOptions } from './simulate-packet.js';

/** A packet of a flow written as the reply to the previous one: addresses and ports of the
 * previous packet as it left the node, swapped; arriving on the interface it left through (or
 * generated locally when it was delivered); any packet field overrides. It answers the previous
 * packet's connection, overridden or not: a port the kernel picked at random for that
 * connection is the one it carries, another connection's pick from the same range is not. */
export type ReplyInput = { readonly reply: true } & Partial<PacketInput>;

export interface FlowInput {
  readonly host?: HostInput | Host;
  readonly packets: readonly (PacketInput | ReplyInput)[];
}

/** One combination of the flow's random choices: every packet's outcome, each with the joint
 * probability of the combination. */
export interface FlowOutcome {
  readonly probability: number;
  readonly packets: readonly Outcome[];
}

export interface SimulateFlowResult {
  readonly outcomes: readonly FlowOutcome[];
  readonly errors?: readonly InputError[];
}

/** Simulates the packets in order on one conntrack table and set state. Random choices of all
 * packets are enumerated jointly (or `seed` picks one combination). Bad input gives `errors`,
 * never an exception. */
export function simulateFlow(ruleset: Ruleset, input: FlowInput, options: SimulateOptions = {}): SimulateFlowResult {
  const { host, errors } = readInputHost(input.host);
  if (errors.length > 0) return { outcomes: [], errors };
  if (!Array.isArray(input.packets)) return { outcomes: [], errors: [{ path: ['packets'], message: 'packets: expected an array' }] };
  const steps = input.packets.map((value, i): FlowStep => ({ value, path: ['packets', i] }));
  const run = runFlow(indexOf(ruleset), host, steps, createSimState(), options);
  if (run.errors.length > 0) return { outcomes: [], errors: run.errors };
  return { outcomes: run.branches.map(({ probability, packets }) => ({ probability, packets })) };
}

/** A packet of a flow as written, and where (errors name fields under `path`). */
export interface FlowStep {
  readonly value: unknown;
  readonly path: FieldPath;
}

export interface FlowBranch extends FlowOutcome {
  /** The state after the flow in this branch. */
  readonly state: SimState;
}

/** Runs the steps from `state` (left unchanged) for every combination of random choices. */
export function runFlow(index: HookIndex, host: Host, steps: readonly FlowStep[], state: SimState, options: SimulateOptions): { branches: FlowBranch[]; errors: InputError[] } {
  // Packets written out are read once; replies depend on the branch and are read in it.
  const errors: InputError[] = [];
  const written = steps.map((step) => {
    if (isReply(step.value)) return undefined;
    const read = readPacket(step.value, host, step.path);
    errors.push(...read.errors);
    return read.packet;
  });
  if (errors.length > 0) return { branches: [], errors };
  const seen = new Set<string>();
  const results = enumerateBranches(options, (choose) => {
    const branchState = cloneSimState(state);
    const runs: PacketRun[] = [];
    for (const [i, step] of steps.entries()) {
      const packet = written[i] ?? readReply(step, runs.at(-1), host);
      if ('errors' in packet) {
        // A reply can fail in some branches only: report each problem once.
        for (const e of packet.errors.filter((e) => !seen.has(e.message))) {
          seen.add(e.message);
          errors.push(e);
        }
        break;
      }
      runs.push(runPacket(index, host, packet, { keep: true }, branchState, choose));
    }
    return { runs, state: branchState };
  });
  if (errors.length > 0) return { branches: [], errors };
  const branches = results.map(({ probability, value }) => ({
    probability,
    packets: value.runs.map((r) => ({ ...r.outcome, probability })),
    state: value.state,
  }));
  return { branches, errors };
}

/** ICMP and ICMPv6 echo requests (include/uapi/linux/icmp.h ICMP_ECHO, icmpv6.h ICMPV6_ECHO_REQUEST). */
function isEcho(l4proto: number, type: number): boolean {
  return (l4proto === L4_NUMBERS.icmp && type === 8) || (l4proto === L4_NUMBERS.icmpv6 && type === 128);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isReply(value: unknown): boolean {
  return isRecord(value) && 'reply' in value;
}

/** The reply to `previous` as it left the node, with the step's fields over it. */
function readReply(step: FlowStep, previous: PacketRun | undefined, host: Host): Packet | { errors: InputError[] } {
  const { reply, ...overrides } = step.value as Record<string, unknown>;
  const fail = (path: FieldPath, message: string) => ({ errors: [{ path, message: `${pathText(path)}: ${message}` }] });
  if (reply !== true) return fail([...step.path, 'reply'], 'expected true (the reply to the previous packet)');
  if (!previous) return fail([...step.path, 'reply'], 'a reply needs a previous packet in the flow');
  const { outcome, final: p } = previous;
  const local = outcome.disposition === 'delivered';
  if (!local && outcome.oif === undefined && overrides.iif === undefined) {
    return fail(step.path, `the previous packet did not leave the node (${outcome.disposition}${outcome.reason ? `: ${outcome.reason}` : ''}): give \`iif\``);
  }
  // A port NAT let the kernel pick from a range: the reply goes to the range's first port.
  const port = (value: number | string | undefined): number | undefined => (value === undefined ? undefined : portBounds(value)[0]);
  // Another protocol given (an ICMP error): only the addresses are the previous packet's.
  const sameTransport = overrides.protocol === undefined || overrides.protocol === p.l4proto || L4_NUMBERS[String(overrides.protocol)] === p.l4proto;
  const derived: Record<string, unknown> = {
    ...(!local && { iif: outcome.oif }),
    src: formatAddress(p.dst),
    dst: formatAddress(p.src),
    ...(sameTransport && { protocol: p.l4proto }),
    ...(sameTransport && p.sport !== undefined && { sport: port(p.dport), dport: port(p.sport) }),
    ...(sameTransport && p.l4proto === L4_NUMBERS.tcp && { tcpFlags: (p.tcpFlags & TCP_FLAG.syn) !== 0 && (p.tcpFlags & TCP_FLAG.ack) === 0 ? 'syn,ack' : 'ack' }),
  };
  if (sameTransport && p.icmpType !== undefined) {
    const answer = icmpAnswerType(p.l4proto, p.icmpType);
    if (answer === undefined && overrides.icmpType === undefined) return fail(step.path, `ICMP type ${p.icmpType} is not a query with an answer: give \`icmpType\``);
    // Linux answers an echo with the request's code (icmp_echo, icmpv6_echo_reply copy the
    // header), the other queries with code 0 (icmp_timestamp).
    Object.assign(derived, { icmpType: answer, icmpCode: isEcho(p.l4proto, p.icmpType) ? p.icmpCode : 0 });
  }
  const read = readPacket({ ...derived, ...overrides }, host, step.path);
  if (!read.packet) return { errors: read.errors };
  // It answers the previous packet's connection, and carries the query's identifier as it
  // arrived (the first of a range NAT picked from, as for ports) unless the step gives one.
  const keepsId = read.packet.icmpId !== undefined && overrides.icmpId === undefined && p.icmpId !== undefined;
  const packet = { ...read.packet, ...(previous.entry && { answers: previous.entry }), ...(keepsId && { icmpId: port(p.icmpId)! }) };
  // An ICMP error that gives the packet it quotes keeps it.
  if (packet.icmpType === undefined || !isIcmpError(packet.l4proto, packet.icmpType) || overrides.quoted !== undefined) return packet;
  // An ICMP error about the previous packet quotes it as it left the node, as much as fits in
  // an error of 576 bytes (IPv4, icmp_send) or 1280 (IPv6, icmp6_send).
  const quoted: QuotedPacket = { src: p.src, dst: p.dst, l4proto: p.l4proto, sport: port(p.sport), dport: port(p.dport), icmpType: p.icmpType, icmpCode: p.icmpCode, icmpId: port(p.icmpId) };
  const length = overrides.length === undefined ? Math.min(packet.length + p.length, previous.family === 'ip' ? 576 : 1280) : packet.length;
  return { ...packet, quoted, length };
}
