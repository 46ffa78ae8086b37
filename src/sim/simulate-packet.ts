// simulatePacket: what the kernel does to one packet on a node, for every random branch.

import type { Hook, Rule, Ruleset, Chain } from '../model/ast.js';
import { formatAddress } from './address.js';
import { evaluateBaseChain, type ChainResult } from './evaluate-chain.js';
import { readHost, lookupRoute, localInterfaceOf, type Host, type HostInput } from './host.js';
import { formatMark, type Disposition, type Loc, type Outcome, type SimulationResult } from './outcome.js';
import { protocolName, readPacket, type Packet, type PacketInput } from './packet.js';
import { buildHookIndex, chainsAt, CONNTRACK_PRIORITY, NAT_HOOK_PRIORITY, NAT_MANIP, type HookIndex } from './pipeline.js';
import type { InputError } from './read-fields.js';
import { locOf, type Chooser, type SimContext } from './sim-context.js';

export interface SimulateOptions {
  /** Pick one branch of every random choice with this seed instead of listing them all. */
  readonly seed?: number;
  /** Stop listing branches after this many outcomes (default 4096). */
  readonly maxOutcomes?: number;
}

export interface SimulationInput {
  readonly host?: HostInput | Host;
  readonly packet: PacketInput;
}

/** The outcomes, or (for bad input) no outcome and the errors naming the fields. */
export interface SimulatePacketResult extends SimulationResult {
  readonly errors?: readonly InputError[];
}

// Built once per parsed ruleset, so that simulating many packets does not re-index it.
const indexes = new WeakMap<Ruleset, HookIndex>();

function indexOf(ruleset: Ruleset): HookIndex {
  let index = indexes.get(ruleset);
  if (!index) {
    index = buildHookIndex(ruleset);
    indexes.set(ruleset, index);
  }
  return index;
}

function isResolvedHost(host: HostInput | Host): host is Host {
  return Array.isArray(host.routes) && host.routes.some((r) => typeof (r as { dst: unknown }).dst === 'object');
}

/** Resolves the JSON host and packet (errors name the field) for simulatePacket. */
export function readSimulationInput(input: { readonly host?: unknown; readonly packet: unknown }): { host?: Host; packet?: Packet; errors: InputError[] } {
  const hostValue = input.host as HostInput | Host | undefined;
  const hostResult = hostValue !== undefined && isResolvedHost(hostValue) ? { host: hostValue, errors: [] } : readHost([{ value: input.host ?? {}, path: ['host'] }]);
  const packetResult = readPacket(input.packet, hostResult.host);
  const errors = [...hostResult.errors, ...packetResult.errors];
  return errors.length > 0 ? { errors } : { host: hostResult.host, packet: packetResult.packet!, errors };
}

/** Simulates one packet through the node's ruleset. Every random branch (statistic, numgen,
 * meta random) becomes its own outcome with its probability, unless `seed` picks one. Can be
 * called many times on one ruleset. Bad input gives `errors`, never an exception. */
export function simulatePacket(ruleset: Ruleset, input: SimulationInput, options: SimulateOptions = {}): SimulatePacketResult {
  const { host, packet, errors } = readSimulationInput(input);
  if (!host || !packet) return { outcomes: [], errors };
  return { outcomes: simulateResolved(ruleset, host, packet, options) };
}

/** simulatePacket for an already resolved host and packet. */
export function simulateResolved(ruleset: Ruleset, host: Host, packet: Packet, options: SimulateOptions = {}): Outcome[] {
  const index = indexOf(ruleset);
  const max = options.maxOutcomes ?? 4096;
  const outcomes: Outcome[] = [];
  if (options.seed !== undefined) {
    const random = seededRandom(options.seed);
    let probability = 1;
    const choose: Chooser = (weights) => {
      let r = random();
      for (const [i, w] of weights.entries()) {
        if (r < w || i === weights.length - 1) {
          probability *= w;
          return i;
        }
        r -= w;
      }
      return weights.length - 1;
    };
    const outcome = runOnce(index, host, packet, choose);
    return [{ ...outcome, probability }];
  }
  // Each run follows one branch of every choice; the branches not taken are queued as forced
  // prefixes of choices and run again from the start (a run is deterministic given its choices).
  const pending: number[][] = [[]];
  while (pending.length > 0 && outcomes.length < max) {
    const forced = pending.shift()!;
    const taken: number[] = [];
    let probability = 1;
    const choose: Chooser = (weights) => {
      let pick: number;
      if (taken.length < forced.length) pick = forced[taken.length]!;
      else {
        const live = weights.flatMap((w, i) => (w > 0 ? [i] : []));
        pick = live[0] ?? 0;
        for (const other of live.slice(1)) pending.push([...taken, other]);
      }
      taken.push(pick);
      probability *= weights[pick]!;
      return pick;
    };
    const outcome = runOnce(index, host, packet, choose);
    outcomes.push({ ...outcome, probability });
  }
  return outcomes;
}

/** mulberry32: small, fast, good enough to pick branches reproducibly. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Ending = { readonly disposition: Disposition; readonly verdict: Outcome['verdict']; readonly by?: Rule | Chain; readonly reason?: string };

function runOnce(index: HookIndex, host: Host, packet: Packet, choose: Chooser): Omit<Outcome, 'probability'> {
  const ctx: SimContext = {
    host,
    index,
    family: packet.family,
    pkt: {
      src: packet.src,
      dst: packet.dst,
      ...(packet.sport !== undefined && { sport: packet.sport }),
      ...(packet.dport !== undefined && { dport: packet.dport }),
      l4proto: packet.l4proto,
      tcpFlags: packet.tcpFlags,
      ...(packet.icmpType !== undefined && { icmpType: packet.icmpType, icmpCode: packet.icmpCode }),
      mark: packet.mark,
      length: packet.length,
      dscp: packet.dscp,
      ttl: packet.ttl,
      ...(packet.skuid !== undefined && { skuid: packet.skuid }),
      ...(packet.skgid !== undefined && { skgid: packet.skgid }),
    },
    ct: {
      ...packet.ct,
      original: { src: packet.src, dst: packet.dst, sport: packet.sport, dport: packet.dport },
    },
    ctAttached: false,
    ...(packet.iif !== undefined && { iif: packet.iif }),
    natDone: new Set(),
    nat: [],
    trace: [],
    uncertain: false,
    choose,
    dynamicSets: new Map(),
    hook: 'prerouting',
    table: undefined as never,
    chain: undefined as never,
    basePriority: 0,
    orderDependent: false,
  };
  const ending = packet.iif !== undefined ? receive(ctx, packet) : send(ctx, packet);
  return finish(ctx, ending);
}

/** Runs every base chain of a hook; an ending when the packet's way ends there. */
function runHook(ctx: SimContext, hook: Hook): Ending | undefined {
  ctx.hook = hook;
  const conntrackAt = CONNTRACK_PRIORITY[hook];
  // No rule enables conntrack for this family: no packet ever gets an entry (pipeline.ts).
  const tracked = ctx.index.conntrack.has(ctx.family);
  ctx.ctAttached = conntrackAt === undefined ? tracked && hook !== 'ingress' : false;
  const natSlot = NAT_HOOK_PRIORITY[hook];
  for (const entry of chainsAt(ctx.index, hook, ctx.family, ctx.iif)) {
    const isNat = entry.chain.base?.type === 'nat';
    const slot = isNat && natSlot !== undefined ? natSlot : entry.priority;
    if (conntrackAt !== undefined && slot > conntrackAt) ctx.ctAttached = tracked;
    if (isNat && !isNatConsulted(ctx, hook)) continue;
    const result: ChainResult = evaluateBaseChain(entry, ctx);
    if (result.verdict === 'accept') continue;
    return endingOf(result);
  }
  if (conntrackAt !== undefined) ctx.ctAttached = tracked;
  return undefined;
}

/** nat chains run for a packet that opens a connection (new) whose mapping for this hook's
 * manipulation is not set up yet; once a chain set it up, later nat chains at the hook are
 * skipped (nf_nat_core.c nf_nat_inet_fn: `if (!nf_nat_initialized(ct, maniptype))`, and the
 * loop ends at the first chain that initialised it). No entry (invalid, untracked): no NAT. */
function isNatConsulted(ctx: SimContext, hook: Hook): boolean {
  const manip = NAT_MANIP[hook];
  if (!manip || ctx.natDone.has(manip) || !ctx.ctAttached) return false;
  return ctx.ct.state === 'new' || ctx.ct.state === 'related';
}

function endingOf(result: ChainResult): Ending {
  switch (result.verdict) {
    case 'drop':
      return { disposition: 'dropped', verdict: 'drop', by: result.by };
    case 'reject':
      return { disposition: 'rejected', verdict: 'reject', by: result.by };
    case 'queue':
      return { disposition: 'queued', verdict: 'queue', by: result.by };
    case 'unknown':
    case 'accept':
      return { disposition: 'unknown', verdict: 'accept', by: result.by };
    default: {
      const exhaustive: never = result.verdict;
      return exhaustive;
    }
  }
}

/** A packet arriving on iif: ingress, prerouting, the routing decision, then input or forward
 * and postrouting. */
function receive(ctx: SimContext, packet: Packet): Ending {
  const early = runHook(ctx, 'ingress') ?? runHook(ctx, 'prerouting');
  if (early) return early;
  const dst = ctx.pkt.dst;
  if (localInterfaceOf(ctx.host, dst)) {
    return runHook(ctx, 'input') ?? { disposition: 'delivered', verdict: 'accept' };
  }
  // ip_route_input_slow: no forwarding on the input device → EHOSTUNREACH; no route → dropped.
  if (!ctx.host.forwarding) return { disposition: 'dropped', verdict: 'drop', reason: 'forwarding disabled on the host' };
  const oif = packet.oif ?? lookupRoute(ctx.host, dst)?.dev;
  if (oif === undefined) return { disposition: 'dropped', verdict: 'drop', reason: `no route to ${formatAddress(dst)}` };
  ctx.oif = oif;
  return runHook(ctx, 'forward') ?? runHook(ctx, 'postrouting') ?? { disposition: 'forwarded', verdict: 'accept' };
}

/** A locally generated packet: routed first (the socket's route), output, re-routed when output
 * changed the destination (ip_route_me_harder, nf_nat_ipv4_local_fn), then postrouting. */
function send(ctx: SimContext, packet: Packet): Ending {
  const route = (): string | undefined =>
    packet.oif ?? (localInterfaceOf(ctx.host, ctx.pkt.dst) ? 'lo' : lookupRoute(ctx.host, ctx.pkt.dst)?.dev);
  const oif = route();
  if (oif === undefined) return { disposition: 'dropped', verdict: 'drop', reason: `no route to ${formatAddress(ctx.pkt.dst)}` };
  ctx.oif = oif;
  const dst = ctx.pkt.dst;
  const out = runHook(ctx, 'output');
  if (out) return out;
  if (ctx.pkt.dst.n !== dst.n) {
    const rerouted = route();
    if (rerouted === undefined) return { disposition: 'dropped', verdict: 'drop', reason: `no route to ${formatAddress(ctx.pkt.dst)}` };
    ctx.oif = rerouted;
  }
  return runHook(ctx, 'postrouting') ?? { disposition: 'sent', verdict: 'accept' };
}

function finish(ctx: SimContext, ending: Ending): Omit<Outcome, 'probability'> {
  const p = ctx.pkt;
  const decidedBy = decidingLoc(ctx, ending);
  const uncertain = ctx.uncertain || ending.disposition === 'unknown';
  return {
    disposition: ending.disposition,
    verdict: ending.verdict,
    ...(ctx.iif !== undefined && { iif: ctx.iif }),
    ...(ctx.oif !== undefined && { oif: ctx.oif }),
    packet: {
      src: formatAddress(p.src),
      dst: formatAddress(p.dst),
      protocol: protocolName(p.l4proto),
      ...(p.sport !== undefined && { sport: p.sport }),
      ...(p.dport !== undefined && { dport: p.dport }),
    },
    mark: formatMark(p.mark),
    ctMark: formatMark(ctx.ct.mark),
    nat: ctx.nat,
    ...(decidedBy && { decidedBy }),
    trace: ctx.trace,
    uncertain,
    ...(ending.reason !== undefined && { reason: ending.reason }),
  };
}

/** The rule or policy that decided: the one that ended the packet, else the last accepting
 * rule, else the last policy. */
function decidingLoc(ctx: SimContext, ending: Ending): Loc | undefined {
  if (ending.by) return locOf(ending.by);
  if (ending.reason !== undefined) return undefined;
  const events = ctx.trace;
  for (let i = events.length - 1; i >= 0; i--) {
    if (events[i]!.kind === 'rule' && events[i]!.verdict === 'accept') return events[i]!.at;
  }
  for (let i = events.length - 1; i >= 0; i--) {
    if (events[i]!.kind === 'policy') return events[i]!.at;
  }
  return undefined;
}
