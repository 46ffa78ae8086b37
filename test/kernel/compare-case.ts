// One packet through a kernel harness and through simulatePacket, compared as the differential
// suite compares (differential-compare.ts): for the kernel checks written case by case.
import { parseRuleset, type NodeSource } from '../../src/parser/parse-ruleset.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import { compareWithKernel, indexRules, kernelSteps } from './differential-compare.js';
import type { KernelPacket } from './harness/craft-packet.js';
import type { KernelHarness, KernelHost, KernelRuleset } from './harness/kernel-harness.js';

/** The disagreements (empty when nftsim agrees) and the kernel's way, for the failure message. */
export async function compareCase(
  harness: KernelHarness,
  host: KernelHost,
  rulesets: readonly (KernelRuleset & { readonly file: string })[],
  packet: KernelPacket,
): Promise<{ problems: string[]; kernelWay: string[] }> {
  const sources: NodeSource[] = rulesets.map((r) => ({ text: r.text, file: r.file, format: r.kind === 'nft' || r.kind === 'ipset' ? r.kind : 'iptables' }));
  const { ruleset, diagnostics } = parseRuleset(sources);
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new Error(`the case does not parse: ${errors.map((d) => d.message).join('; ')}`);
  const kernel = await harness.run({ rulesets, packet });
  const simulated = simulatePacket(ruleset, { host, packet });
  if (simulated.errors) return { problems: simulated.errors.map((e) => e.message), kernelWay: kernelSteps(kernel) };
  return { problems: compareWithKernel(kernel, simulated.outcomes, packet, indexRules(ruleset)), kernelWay: kernelSteps(kernel) };
}
