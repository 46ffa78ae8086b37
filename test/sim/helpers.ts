import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import type { Ruleset } from '../../src/model/ast.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import type { HostInput } from '../../src/sim/host.js';
import type { PacketInput } from '../../src/sim/packet.js';
import type { Outcome } from '../../src/sim/outcome.js';

export const HOST: HostInput = {
  interfaces: [
    { name: 'eth0', addresses: ['192.0.2.10/24', '2001:db8::10/64'] },
    { name: 'wt0', addresses: ['100.64.1.1/16'] },
    { name: 'cni0', addresses: ['10.244.0.1/16'] },
  ],
  routes: [
    { dst: 'default', via: '192.0.2.1', dev: 'eth0' },
    { dst: '10.244.1.0/24', dev: 'cni0' },
  ],
};

/** Marks a connection's counts at prerouting (nf_conn_acct, nft_ct_get_eval NFT_CT_PKTS, _BYTES,
 * _AVGPKT): original packets 1 0x1, 2 0x2, 3 0x4; reply packets 1 0x8; bytes 84 0x10; avgpkt 28
 * (a UDP packet's headers) 0x20. The kernel rows (test/kernel/differential.test.ts) run it too. */
export const COUNT_MARKS = `table ip t {
  chain pre {
    type filter hook prerouting priority 0; policy accept;
    ct original packets 1 meta mark set mark or 0x1
    ct original packets 2 meta mark set mark or 0x2
    ct original packets 3 meta mark set mark or 0x4
    ct reply packets 1 meta mark set mark or 0x8
    ct bytes 84 meta mark set mark or 0x10
    ct avgpkt 28 meta mark set mark or 0x20
  }
}
`;

/** A forwarded TCP SYN from eth0's network to a pod. */
export const FORWARDED: PacketInput = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', dport: 80 };
/** A TCP SYN to the node itself. */
export const LOCAL: PacketInput = { iif: 'eth0', src: '192.0.2.99', dst: '192.0.2.10', dport: 22 };

export function parse(text: string): Ruleset {
  const { ruleset, diagnostics } = parseRuleset(text, { file: 'test.nft' });
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new Error(`test ruleset does not parse: ${errors.map((d) => d.message).join('; ')}`);
  return ruleset;
}

export function simulate(text: string, packet: PacketInput, host: HostInput = HOST): Outcome[] {
  const result = simulatePacket(parse(text), { host, packet });
  if (result.errors) throw new Error(result.errors.map((e) => e.message).join('; '));
  return [...result.outcomes];
}

/** The only outcome of a simulation without random branches. */
export function simulateOne(text: string, packet: PacketInput, host: HostInput = HOST): Outcome {
  const outcomes = simulate(text, packet, host);
  if (outcomes.length !== 1) throw new Error(`expected one outcome, got ${outcomes.length}`);
  return outcomes[0]!;
}

/** `table chain kind verdict` of each trace event, the sequence the kernel-differential tests
 * compare. */
export function steps(outcome: Outcome): string[] {
  return outcome.trace.map((e) => `${e.table} ${e.chain} ${e.kind} ${e.verdict}`);
}
