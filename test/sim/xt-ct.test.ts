// iptables' CT target as a conntrack template (xt_CT.c xt_ct_tg_check, xt_ct_target): every CT
// but --notrack attaches one, in zone 0 unless --zone gives one; --ctevents and --expevents only
// pick netlink events, --helper a helper for payload nftsim's packets do not carry. --zone mark
// takes the zone from the packet's mark when conntrack looks the packet up (NF_CT_FLAG_MARK,
// nf_conntrack_zones.h nf_ct_zone_tmpl), its low 16 bits.
// Kernel rows "xt CT: …" (test/kernel/differential-expressions.test.ts) and the flow rows "xt
// flow: CT --zone mark …" (test/kernel/differential.test.ts) check the same on Linux.
import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import { HOST } from './helpers.js';

const PACKET = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'tcp', sport: 40000, dport: 80 } as const;

/** nft rules after conntrack telling the packet's zone by a mark bit, and its state. */
const ZONE_PROBE = `table ip probe {
  chain c {
    type filter hook prerouting priority -150; policy accept;
    ct zone 0 meta mark set mark or 0x1000000
    ct zone 5 meta mark set mark or 0x2000000
    ct zone 7 meta mark set mark or 0x4000000
    ct state new meta mark set mark or 0x10000000
  }
}
`;

function run(raw: readonly string[], mark = 0, packet: object = PACKET): { mark: string; unsupported: string[]; warnings: string[] } {
  const dump = `*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n${raw.map((r) => `-A PREROUTING ${r}`).join('\n')}\nCOMMIT\n`;
  const { ruleset, diagnostics } = parseRuleset([
    { text: dump, file: 'raw.ipt', format: 'iptables' },
    { text: ZONE_PROBE, file: 'probe.nft', format: 'nft' },
  ]);
  const result = simulatePacket(ruleset, { host: HOST, packet: { ...(packet as typeof PACKET), mark } });
  const [outcome] = result.outcomes;
  const warnings = diagnostics.filter((d) => d.severity !== 'info').map((d) => d.code);
  return { mark: outcome!.mark, unsupported: outcome!.trace.filter((e) => e.kind === 'unsupported').map((e) => e.reason ?? ''), warnings };
}

describe('the CT target', () => {
  it.each([
    ['--ctevents: a template in zone 0', ['-j CT --ctevents new,destroy'], 0, 0x11000000],
    ['--ctevents keeps NOTRACK from the packet', ['-j CT --ctevents new', '-j NOTRACK'], 0, 0x11000000],
    ['--ctevents keeps a later CT --zone from it', ['-j CT --expevents new', '-j CT --zone 5'], 0, 0x11000000],
    ['--zone 5 --ctevents: zone 5', ['-j CT --zone 5 --ctevents new'], 0, 0x12000000],
    ['--zone mark: the mark\'s zone', ['-j CT --zone mark'], 0x5, 0x12000005],
    ['--zone mark: the mark\'s low 16 bits', ['-j CT --zone mark'], 0x30005, 0x12030005],
    ['--zone mark: the mark conntrack finds, set after the target', ['-j CT --zone mark', '-j MARK --set-xmark 0x7/0xffffffff'], 0x5, 0x14000007],
    ['--zone mark after CT --zone 5: the first template stays', ['-j CT --zone 5', '-j CT --zone mark'], 0x7, 0x12000007],
    // A helper acts on payload nftsim's packets do not carry: the template of its zone.
    ['--helper: a template in zone 0', ['-p tcp -j CT --helper ftp'], 0, 0x11000000],
    ['--helper --zone 5: zone 5', ['-p tcp -j CT --helper ftp --zone 5'], 0, 0x12000000],
    ['--helper keeps NOTRACK from the packet', ['-p tcp -j CT --helper ftp', '-j NOTRACK'], 0, 0x11000000],
  ])('%s', (_name, raw, mark, expected) => {
    expect(run(raw, mark)).toEqual({ mark: `0x${expected.toString(16).padStart(8, '0')}`, unsupported: [], warnings: [] });
  });

  it.each([
    ['--zone-orig: a zone of one direction', '-j CT --zone-orig 1', /iptables target CT --zone-orig/],
    // It expects replies to a local socket's broadcasts, whatever they carry.
    ['--helper netbios-ns', '-p udp -j CT --helper netbios-ns', /iptables target CT --helper/],
  ])('%s stays not modelled', (_name, rule, reason) => {
    const { unsupported, warnings } = run([rule], 0, { ...PACKET, protocol: 'udp', dport: 137 });
    expect(warnings).toEqual(['unsupported']);
    expect(unsupported).toHaveLength(1);
    expect(unsupported[0]).toMatch(reason);
  });
});
