// What simulatePacket returns (issue 4, Output): the CLI's `--json` is this object serialised.

import type { Family, Hook } from '../model/ast.js';

/** Where a rule (or a base chain, for its policy) was written in the input. */
export interface Loc {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly handle?: number;
}

/** One event of the packet's way, in `nft monitor trace`'s words: `rule` for a rule that matched
 * (verdict `continue` when it has none), `return` when a regular chain ends without a verdict,
 * `policy` for a base chain's policy, `unsupported` for what nftsim does not model there. */
export interface TraceEvent {
  readonly hook: Hook;
  readonly family: Family;
  readonly table: string;
  readonly chain: string;
  /** The base chain's priority. */
  readonly priority: number;
  readonly kind: 'rule' | 'policy' | 'return' | 'unsupported';
  readonly verdict: string;
  /** The packet mark after the event, 0x%08x. */
  readonly mark: string;
  readonly at: Loc;
  /** The base chain shares its place at the hook with another: the kernel runs them in
   * registration order, taken here from the listing order. */
  readonly orderDependent?: boolean;
  /** For `unsupported`: what nftsim could not model and what it assumed. */
  readonly reason?: string;
}

export interface NatEvent {
  readonly type: 'dnat' | 'snat' | 'masquerade' | 'redirect';
  /** `10.0.0.1:8080`, `192.0.2.10`, `[2001:db8::1]:80`; a range where the kernel picks. */
  readonly to: string;
  /** The rule that set the mapping up; absent when none did: the null binding of a NAT hook no
   * nat chain mapped the connection at gave its source another port, the tuple being another
   * connection's already (nf_nat_core.c get_unique_tuple). */
  readonly at?: Loc;
  /** Absent: the rule at `at` set the mapping up for this packet. Present: a later packet of the
   * connection the rule's mapping rewrote, without the nat chains (nf_nat_packet), in this
   * direction of the connection; `to` is where it rewrote this packet. */
  readonly conntrack?: 'original' | 'reply';
}

export type Disposition = 'forwarded' | 'delivered' | 'sent' | 'dropped' | 'rejected' | 'queued' | 'unknown';

export interface Outcome {
  readonly probability: number;
  readonly disposition: Disposition;
  readonly verdict: 'accept' | 'drop' | 'reject' | 'queue';
  readonly iif?: string;
  readonly oif?: string;
  readonly packet: {
    readonly src: string;
    readonly dst: string;
    readonly protocol: string;
    /** A number, or a range (`1024-65535`) where NAT picks a random port. */
    readonly sport?: number | string;
    readonly dport?: number | string;
    /** An ICMP query's or answer's identifier: a number, or a range (`0-65535`) where NAT
     * picks one at random. */
    readonly icmpId?: number | string;
  };
  readonly mark: string;
  readonly ctMark: string;
  readonly nat: readonly NatEvent[];
  /** The rule or policy that decided the packet's fate (for accepted packets, the last accept
   * rule, else the last policy); absent when routing decided. */
  readonly decidedBy?: Loc;
  readonly trace: readonly TraceEvent[];
  /** Something on the way was not modelled (see the `unsupported` events). */
  readonly uncertain: boolean;
  /** Why routing dropped the packet (`no route to …`, `forwarding disabled`). */
  readonly reason?: string;
}

export interface SimulationResult {
  readonly outcomes: readonly Outcome[];
}

// Every trace event carries the mark's text, and a ruleset uses few mark values: each is
// formatted once (bounded, as marks may come from packets).
const markTexts = new Map<number, string>();

export function formatMark(mark: number): string {
  let text = markTexts.get(mark);
  if (text === undefined) {
    text = `0x${(mark >>> 0).toString(16).padStart(8, '0')}`;
    if (markTexts.size >= 4096) markTexts.clear();
    markTexts.set(mark, text);
  }
  return text;
}
