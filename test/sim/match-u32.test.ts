// iptables' u32 match (xt_u32.c): the argument as libxt_u32.c reads it, and the tests on the
// packet's words. Kernel rows "xt u32: …" (test/kernel/differential-expressions.test.ts) check
// the same packets against the kernel.
import { describe, expect, it } from 'vitest';
import { parseU32 } from '../../src/sim/match-u32.js';
import { HOST, parse } from './helpers.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';

describe('parseU32', () => {
  it.each([
    ['one test', '6&0xFF=6', [{ start: 6, steps: [{ op: '&', n: 255 }], ranges: [[6, 6]] }]],
    [
      'iptables-save\'s spelling, @ and shifts',
      '0x0>>0x16&0x3c@0x0>>0x10=0x50',
      [{ start: 0, steps: [{ op: '>>', n: 22 }, { op: '&', n: 60 }, { op: '@', n: 0 }, { op: '>>', n: 16 }], ranges: [[80, 80]] }],
    ],
    ['ranges, a list, spaces and &&', ' 0 >> 28 = 4 && 8 & 0xFF0000 >> 16 = 6 , 17:18', [
      { start: 0, steps: [{ op: '>>', n: 28 }], ranges: [[4, 4]] },
      { start: 8, steps: [{ op: '&', n: 0xff0000 }, { op: '>>', n: 16 }], ranges: [[6, 6], [17, 18]] },
    ]],
    ['C octal and decimal numbers', '010=0:4294967295', [{ start: 8, steps: [], ranges: [[0, 0xffffffff]] }]],
    ['the longest shift the kernel takes', '0>>31=0', [{ start: 0, steps: [{ op: '>>', n: 31 }], ranges: [[0, 0]] }]],
  ])('reads %s', (_name, text, tests) => {
    expect(parseU32(text)).toEqual(tests);
  });

  it.each([
    ['no value', '0>>28'],
    ['a trailing &&', '0=1&&'],
    ['an unknown operator', '0|1=1'],
    ['a number past 32 bits', '0=0x100000000'],
    ['12 location numbers', `0${'&1'.repeat(11)}=1`],
    ['12 values', `0=${Array.from({ length: 12 }, (_, i) => i).join(',')}`],
    // The kernel refuses these (u32_mt_checkentry, EINVAL from iptables-nft-restore).
    ['a right shift by 32', '0>>32=0'],
    ['a left shift by 32', '0<<32=0'],
  ])('refuses %s', (_name, text) => {
    expect(parseU32(text)).toBeUndefined();
  });
});

describe('the u32 match on a packet', () => {
  const packet = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'tcp', sport: 40000, dport: 80 } as const;
  const marked = (match: string, fields: object = {}) => {
    const text = `*mangle\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -m u32 ${match} -j MARK --set-xmark 0x1/0xffffffff\nCOMMIT\n`;
    const [outcome] = simulatePacket(parse(text), { host: HOST, packet: { ...packet, ...fields } }, { seed: 1 }).outcomes;
    return outcome!;
  };
  it.each([
    ['the destination port after the IHL', '--u32 "0>>22&0x3C@0&0xFFFF=80"', '0x00000001'],
    ['the source port is not 80', '--u32 "0>>22&0x3C@0>>16=80"', '0x00000000'],
    ['the protocol byte and the version', '--u32 "6&0xFF=6&&0>>28=4"', '0x00000001'],
    ['a negated test', '! --u32 "6&0xFF=17"', '0x00000001'],
    ['a word past the end', '--u32 "0>>22&0x3C@40=0:0xFFFFFFFF"', '0x00000000'],
    ['a word past the end, negated', '! --u32 "0>>22&0x3C@40=0:0xFFFFFFFF"', '0x00000001'],
  ])('%s', (_name, match, mark) => {
    expect(marked(match).mark).toBe(mark);
  });

  it('says a shift count past 31, which the kernel refuses, is not modelled', () => {
    const outcome = marked('--u32 "0>>60=4"');
    expect(outcome.uncertain).toBe(true);
    expect(outcome.trace.find((e) => e.kind === 'unsupported')?.reason).toContain('iptables match u32 whose tests iptables or the kernel refuses');
  });

  it('reads payload bytes as zeros, as nftsim\'s packets carry them', () => {
    expect(marked('--u32 "0>>22&0x3C@20=0"', { length: 44 }).mark).toBe('0x00000001');
  });

  it('does not guess over a port NAT picked at random', () => {
    const text = `*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -p tcp -j DNAT --to-destination 10.244.1.5:8000-9000 --random\nCOMMIT\n*mangle\n:FORWARD ACCEPT [0:0]\n-A FORWARD -m u32 --u32 "0>>22&0x3C@0&0xFFFF=8080" -j MARK --set-xmark 0x1/0xffffffff\nCOMMIT\n`;
    const [outcome] = simulatePacket(parse(text), { host: HOST, packet }, { seed: 1 }).outcomes;
    expect(outcome!.uncertain).toBe(true);
    expect(outcome!.trace.filter((e) => e.kind === 'unsupported').map((e) => e.reason)).toContainEqual(expect.stringContaining('iptables match u32 after NAT picked a random port (8000-9000)'));
  });
});
