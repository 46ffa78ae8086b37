import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { simulateFlow, type FlowInput } from '../../src/sim/simulate-flow.js';
import { HOST } from './helpers.js';

// xt_recent as kube-proxy uses it for sessionAffinity: ClientIP: each rule marks the packet with
// a bit when it matches, so the final mark says which matched.
function marks(rules: readonly string[], packets: FlowInput['packets']): string[] {
  const dump = ['*mangle', ':PREROUTING ACCEPT [0:0]', ...rules.map((r) => `-A PREROUTING ${r}`), 'COMMIT', ''].join('\n');
  const { ruleset, diagnostics } = parseRuleset(dump, { file: 'recent.save' });
  if (diagnostics.some((d) => d.severity === 'error')) throw new Error(diagnostics.map((d) => d.message).join('; '));
  const result = simulateFlow(ruleset, { host: HOST, packets });
  if (result.errors) throw new Error(result.errors.map((e) => e.message).join('; '));
  expect(result.outcomes).toHaveLength(1);
  return result.outcomes[0]!.packets.map((o) => {
    expect(o.uncertain).toBe(false);
    return o.mark;
  });
}

const CLIENT = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'udp', sport: 5555, dport: 53 } as const;
const OTHER = { ...CLIENT, src: '192.0.2.98' } as const;
const RCHECK = '-m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j MARK --set-xmark 0x1/0x1';
const SET = '-m recent --set --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j MARK --set-xmark 0x2/0x2';

describe('iptables match recent', () => {
  it.each([
    ['a first packet finds the list empty (--rcheck does not match), --set matches', [RCHECK, SET], [CLIENT], ['0x00000002']],
    ['a later packet of the same client finds the address --set recorded', [RCHECK, SET], [CLIENT, CLIENT], ['0x00000002', '0x00000003']],
    ['another client is not in the list', [RCHECK, SET], [CLIENT, OTHER], ['0x00000002', '0x00000002']],
    ['`! --rcheck` inverts', ['-m recent ! --rcheck --name L -j MARK --set-xmark 0x1/0x1'], [CLIENT], ['0x00000001']],
    ['--hitcount needs that many earlier hits', ['-m recent --rcheck --hitcount 2 --name L -j MARK --set-xmark 0x1/0x1', '-m recent --set --name L'], [CLIENT, CLIENT, CLIENT], ['0x00000000', '0x00000000', '0x00000001']],
    ['--remove matches once and forgets the address', ['-m recent --remove --name L -j MARK --set-xmark 0x1/0x1', '-m recent --set --name L -j MARK --set-xmark 0x2/0x2'], [CLIENT, CLIENT], ['0x00000002', '0x00000003']],
    // recent_mt records an --update's hit when the result, `!` applied, matches (checked on Linux
    // 6.18, test/kernel/differential-expressions.test.ts): `! --update` short of its hitcount
    // records one, `! --update` that reaches it does not.
    ['`! --update` records a hit when it matches', ['-m recent --set --name L', '-m recent ! --update --hitcount 3 --name L -j MARK --set-xmark 0x1/0x1', '-m recent --rcheck --hitcount 2 --name L -j MARK --set-xmark 0x2/0x2'], [CLIENT], ['0x00000003']],
    ['`! --update` reaching its hitcount records none', ['-m recent --set --name L', '-m recent --set --name L', '-m recent ! --update --hitcount 2 --name L -j MARK --set-xmark 0x1/0x1', '-m recent --rcheck --hitcount 3 --name L -j MARK --set-xmark 0x2/0x2'], [CLIENT], ['0x00000000']],
    ['lists are told apart by --name', ['-m recent --rcheck --name B -j MARK --set-xmark 0x1/0x1', '-m recent --set --name A'], [CLIENT, CLIENT], ['0x00000000', '0x00000000']],
    // recent_mt_check makes the list with the mask of the first rule naming it; the others mask
    // with the list's (kernel flow rows "xt flow: recent rules of one name with different masks").
    ['the first rule of a name gives the list its mask: /24', ['-m recent --set --name N --mask 255.255.255.0', '-m recent --rcheck --name N --mask 255.255.255.255 -j MARK --set-xmark 0x1/0x1'], [CLIENT, OTHER], ['0x00000001', '0x00000001']],
    // recent_entry_lookup with --rttl finds an entry only of the packet's TTL, the one the last
    // --set or --update saw (kernel flow row "xt flow: recent --rttl …").
    ['--rttl: a packet of the TTL --set saw', ['-m recent --rcheck --rttl --name T -j MARK --set-xmark 0x1/0x1', '-m recent --set --name T'], [CLIENT, CLIENT], ['0x00000000', '0x00000001']],
    ['--rttl: a packet of another TTL', ['-m recent --rcheck --rttl --name T -j MARK --set-xmark 0x1/0x1', '-m recent --rcheck --name T -j MARK --set-xmark 0x2/0x2', '-p udp --dport 53 -m recent --set --name T'], [CLIENT, { ...CLIENT, dport: 54, ttl: 50 }], ['0x00000000', '0x00000002']],
    ['the first rule of a name gives the list its mask: /32', ['-m recent --rcheck --name N --mask 255.255.255.255 -j MARK --set-xmark 0x1/0x1', '-m recent --set --name N --mask 255.255.255.0'], [CLIENT, CLIENT], ['0x00000000', '0x00000001']],
  ])('%s', (_, rules, packets, expected) => {
    expect(marks(rules, packets)).toEqual(expected);
  });
});
