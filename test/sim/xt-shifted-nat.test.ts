// iptables' NAT targets with a shifted port range (`/base`, NF_NAT_RANGE_PROTO_OFFSET):
// nf_nat_l4proto_unique_tuple takes the range's first port plus (port - base) as a 16-bit count
// modulo the range's size, moved on while taken. DNAT keeps its base (revision 2's struct
// nf_nat_range2); SNAT and MASQUERADE lose it (their structs have none): base 0, which
// iptables-save prints as `/0`. Kernel rows "xt DNAT: a shifted …", "xt SNAT: … shifted …",
// "xt MASQUERADE: --to-ports with a shift …" and the flow row "xt flow: DNAT to a shifted range
// …" check the same against the kernel.
import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { simulateOne } from './helpers.js';

const SYN = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'tcp', sport: 40000, dport: 80 } as const;

function natDump(rule: string): string {
  return `*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n-A ${rule}\nCOMMIT\n`;
}

describe('a shifted port range', () => {
  it.each([
    ['DNAT: 1000 + (80 - 70)', 'PREROUTING -p tcp -j DNAT --to-destination 10.244.1.6:1000-2000/70', SYN, '10.244.1.6', 1010],
    ['DNAT: a base above the port wraps in 16 bits', 'PREROUTING -p tcp -j DNAT --to-destination 10.244.1.6:1000-2000/100', SYN, '10.244.1.6', 1000 + ((80 - 100 + 65536) % 1001)],
    ['DNAT: a port the range holds moves all the same', 'PREROUTING -p tcp -j DNAT --to-destination :70-100/60', SYN, '10.244.1.5', 90],
    ['DNAT: --random does not undo the shift', 'PREROUTING -p tcp -j DNAT --to-destination 10.244.1.6:1000-2000/70 --random', SYN, '10.244.1.6', 1010],
    ['DNAT: the offset modulo the size', 'PREROUTING -p tcp -j DNAT --to-destination 10.244.1.6:2000-2009/1', { ...SYN, dport: 1234 }, '10.244.1.6', 2003],
  ])('%s', (_name, rule, packet, dst, dport) => {
    const outcome = simulateOne(natDump(rule), packet);
    expect([outcome.packet.dst, outcome.packet.dport]).toEqual([dst, dport]);
    expect(outcome.trace.filter((e) => e.kind === 'unsupported')).toEqual([]);
  });

  it.each([
    ['SNAT: base 0, whatever the dump says', 'POSTROUTING -p tcp -j SNAT --to-source 192.0.2.10:1000-2000/70', 1000 + (40000 % 1001)],
    ['SNAT: /0, as iptables-save prints it', 'POSTROUTING -p tcp -j SNAT --to-source 192.0.2.10:1000-2000/0', 1000 + (40000 % 1001)],
    ['SNAT: the source in the range keeps its port (get_unique_tuple step 1)', 'POSTROUTING -p tcp -j SNAT --to-source 192.0.2.99:39000-41000/70', 40000],
    ['MASQUERADE: base 0', 'POSTROUTING -o eth0 -p tcp -j MASQUERADE --to-ports 1000-2000/70', 1000 + (40000 % 1001)],
  ])('%s', (_name, rule, sport) => {
    const outcome = simulateOne(natDump(rule), { ...SYN, dst: '198.51.100.7' });
    expect(outcome.packet.sport).toBe(sport);
    expect(outcome.trace.filter((e) => e.kind === 'unsupported')).toEqual([]);
  });

  it('stays an xt target, without a lowering warning', () => {
    const { ruleset, diagnostics } = parseRuleset(natDump('PREROUTING -p tcp -j DNAT --to-destination 10.244.1.6:1000-2000/70'), { file: 'x.ipt' });
    expect(diagnostics).toEqual([]);
    const stmts = ruleset.tables[0]!.chains.find((c) => c.name === 'PREROUTING')!.rules[0]!.stmts;
    expect(stmts.at(-1)).toMatchObject({ kind: 'xt-extension', type: 'target', name: 'DNAT' });
  });

  it('REDIRECT: iptables refuses a shift', () => {
    const { diagnostics } = parseRuleset(natDump('PREROUTING -p tcp -j REDIRECT --to-ports 1000-2000/70'), { file: 'x.ipt' });
    expect(diagnostics.filter((d) => d.severity === 'error').map((d) => [d.code, d.message, d.span?.line, d.span?.column])).toEqual([
      ['bad-option', 'REDIRECT: a shifted port range (`/base`) is refused by iptables ("Shifted portmap ranges not supported with this kernel")', 6, 22],
    ]);
  });
});
