// The changed flows `nftsim diff` reports for the incident cases of corpus/diff, re-checked on the
// real kernel (issue 6, "What it must show"): each flow's probe is sent through the BEFORE and the
// AFTER rulesets loaded into network namespaces (kernel-harness.ts), and nftsim's simulation of it
// must agree with what the kernel shows on both sides (differential-compare.ts), as for the
// incidents in differential.test.ts.
//
// The cases are those whose AFTER side is an agent overlay (`--apply`): kube-proxy's iptables-save
// dump loaded with iptables-nft-restore, then the overlay's nft files with `nft -f`, as the agent
// writes them. (nodeport-masquerade-lost's AFTER side is an nft listing of iptables-nft tables,
// which `nft -f` does not load back; differential.test.ts checks its incident packets.) Probes
// sent locally without a source address are left out: the harness needs the socket's address.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { diffSnapshots } from '../../src/diff/diff-snapshots.js';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import type { PacketInput } from '../../src/sim/packet.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import type { Snapshot } from '../../src/snapshot/snapshot.js';
import { DIFF_CORPUS, loadDiffCase } from '../diff/corpus-cases.js';
import { compareWithKernel, indexRules, kernelSteps } from './differential-compare.js';
import type { KernelPacket, KernelProtocol } from './harness/craft-packet.js';
import { openKernelHarness, type KernelHarness, type KernelHost, type KernelRuleset } from './harness/kernel-harness.js';
import { findKernelSkipReason } from './helpers/network-namespace.mjs';

const REQUIRED_TOOLS = ['ip', 'nft', 'iptables-nft-restore', 'python3', 'sysctl', 'stdbuf', 'nsenter'];
const skipReason = findKernelSkipReason(REQUIRED_TOOLS);
if (skipReason) console.warn(`kernel re-check of the diff incidents (test/kernel/diff-incidents.test.ts) skipped: ${skipReason}`);

const INCIDENT_CASES = ['netbird-0.40-apply-nodeport', 'netbird-0.30-apply-forward'];
const PROTOCOL_NAMES: Readonly<Record<string, KernelProtocol>> = { '6': 'tcp', '17': 'udp', '1': 'icmp', '58': 'icmpv6', tcp: 'tcp', udp: 'udp', icmp: 'icmp', icmpv6: 'icmpv6' };

/** The probe as the harness sends it; undefined when it cannot (no source address). */
function kernelPacketOf(probe: PacketInput): KernelPacket | undefined {
  const protocol = PROTOCOL_NAMES[String(probe.protocol ?? 'tcp')];
  if (probe.src === undefined || protocol === undefined) return undefined;
  return {
    ...(probe.iif !== undefined && { iif: probe.iif }),
    src: probe.src,
    dst: probe.dst,
    protocol,
    ...(probe.sport !== undefined && { sport: probe.sport }),
    ...(probe.dport !== undefined && { dport: probe.dport }),
    ...(protocol === 'tcp' && { tcpFlags: 'syn' }),
    ...(probe.mark !== undefined && { mark: probe.mark }),
  };
}

/** A side's files as the kernel loads them, in order: dumps with iptables-nft-restore, the rest
 * with nft -f (the file names say which: corpus/diff's cases name them so). */
function kernelRulesetsOf(snapshot: Snapshot): KernelRuleset[] {
  return snapshot.sources.map((s) => ({ kind: s.file.endsWith('.ipt') ? 'iptables' : 'nft', text: s.text }));
}

const harnesses: Promise<KernelHarness>[] = [];
afterAll(async () => {
  for (const harness of harnesses) (await harness.catch(() => undefined))?.close();
});

describe.skipIf(skipReason !== undefined).each(INCIDENT_CASES)('kernel re-check of the changed flows of corpus/diff/%s', (name) => {
  const { spec, before, after } = loadDiffCase(name);
  const hostFile = spec.before.find((f) => /\.ya?ml$/.test(f))!;
  const host = parseYaml(readFileSync(path.join(DIFF_CORPUS, name, hostFile), 'utf8')) as KernelHost;
  const flows = diffSnapshots(before, after).diff?.changedFlows ?? [];
  const packets = flows.flatMap((f) => {
    const packet = kernelPacketOf(f.probe);
    return packet ? [{ name: `${f.class.slice(0, f.class.indexOf(', decided by'))}: ${JSON.stringify(f.probe)}`, packet }] : [];
  });
  // The harness's peers answer from the probes' sources.
  const peerAddresses: Record<string, string[]> = {};
  for (const { packet } of packets) if (packet.iif !== undefined) (peerAddresses[packet.iif] ??= []).push(packet.src);
  let harness: Promise<KernelHarness> | undefined;
  const open = (): Promise<KernelHarness> => {
    if (!harness) harnesses.push((harness = openKernelHarness(host, { peerAddresses })));
    return harness;
  };
  const sides = [
    { side: 'before', rulesets: kernelRulesetsOf(before), ruleset: parseRuleset(before.sources).ruleset },
    { side: 'after', rulesets: kernelRulesetsOf(after), ruleset: parseRuleset(after.sources).ruleset },
  ] as const;

  it('has changed flows to re-check', () => {
    expect(packets.length).toBeGreaterThan(0);
  });

  it.each(packets)('$name', async ({ packet }) => {
    const h = await open();
    for (const { side, rulesets, ruleset } of sides) {
      const kernel = await h.run({ rulesets, packet });
      const simulated = simulatePacket(ruleset, { host, packet });
      expect(simulated.errors, side).toBeUndefined();
      expect(compareWithKernel(kernel, simulated.outcomes, packet, indexRules(ruleset)), `${side}: kernel way:\n${kernelSteps(kernel).join('\n')}`).toEqual([]);
    }
  });
});
