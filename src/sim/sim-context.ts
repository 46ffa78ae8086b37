// The mutable state of one simulated run: the packet as rules change it, its conntrack entry,
// where it is, what happened so far, and the oracle deciding random branches.

import type { Chain, Hook, Rule, Table } from '../model/ast.js';
import type { Address } from './address.js';
import type { Host } from './host.js';
import type { Loc, NatEvent, TraceEvent } from './outcome.js';
import type { CtStateName, Packet } from './packet.js';
import type { HookIndex } from './pipeline.js';

/** Thrown by the evaluators for something nftsim does not model; the rule it happens in becomes
 * an `unsupported` trace event (an internal signal, never seen by callers). */
export class NotModelled extends Error {}

export interface PacketState {
  src: Address;
  dst: Address;
  sport?: number | string;
  dport?: number | string;
  l4proto: number;
  tcpFlags: number;
  icmpType?: number;
  icmpCode?: number;
  mark: number;
  length: number;
  dscp: number;
  ttl: number;
  readonly skuid?: number;
  readonly skgid?: number;
}

export interface CtStateValue {
  state: CtStateName;
  mark: number;
  status: number;
  zone: number;
  readonly direction: 0 | 1;
  /** The original tuple, for `ct original ip saddr` and friends. */
  readonly original: { readonly src: Address; readonly dst: Address; readonly sport?: number; readonly dport?: number };
}

/** A random choice among weighted branches: returns the index taken. */
export type Chooser = (weights: readonly number[]) => number;

export interface SimContext {
  readonly host: Host;
  readonly index: HookIndex;
  readonly family: Packet['family'];
  readonly pkt: PacketState;
  readonly ct: CtStateValue;
  /** Conntrack has attached its entry (after NF_IP_PRI_CONNTRACK at prerouting/output). */
  ctAttached: boolean;
  readonly iif?: string;
  /** Set by the routing decision. */
  oif?: string;
  /** The NAT manipulations set up so far (nf_nat_initialized per manip type). */
  readonly natDone: Set<'src' | 'dst'>;
  readonly nat: NatEvent[];
  readonly trace: TraceEvent[];
  uncertain: boolean;
  readonly choose: Chooser;
  /** Elements added by `add @set` / `update @set` during the run, by set. */
  readonly dynamicSets: Map<object, unknown[]>;
  /** Where evaluation is: filled per base chain and rule. */
  hook: Hook;
  table: Table;
  chain: Chain;
  basePriority: number;
  orderDependent: boolean;
  rule?: Rule;
}

export function locOf(node: { readonly span: { readonly file: string; readonly line: number; readonly column: number }; readonly handle?: number }): Loc {
  const { file, line, column } = node.span;
  return node.handle === undefined ? { file, line, column } : { file, line, column, handle: node.handle };
}
