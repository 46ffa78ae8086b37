// iptables' HMARK target (xt_HMARK.c hmark_tg_v4, hmark_tg_v6, hmark_hash): the mark becomes
// jhash_3words(smaller address, larger address, ports word, --hmark-rnd) xor the masked
// protocol, scaled to --hmark-mod and offset by --hmark-offset; fields enter under the masks
// libxt_HMARK.c sets. Kernel rows "xt HMARK: …" (test/kernel/differential-expressions.test.ts)
// and the flow rows "xt flow: HMARK …" (test/kernel/differential.test.ts) check the marks on
// Linux.
import { describe, expect, it } from 'vitest';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';
import { hmarkHash } from '../../src/sim/xt-hmark.js';
import { simulateOne } from './helpers.js';

const TCP = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'tcp', sport: 40000, dport: 80 } as const;
/** The same connection's other direction. */
const TCP_BACK = { iif: 'cni0', src: '10.244.1.5', dst: '192.0.2.99', protocol: 'tcp', sport: 80, dport: 40000 } as const;
const V6 = { iif: 'eth0', src: '2001:db8::99', dst: '2001:db8:1::5', protocol: 'tcp', sport: 40000, dport: 80 } as const;

function hmark(options: string, packet: object = TCP, chain = 'PREROUTING', table = 'mangle'): { mark: string; unsupported: string[] } {
  const only = (packet as { src: string }).src.includes(':') ? '-d 2001:db8:1::5 ' : '';
  const text = `*${table}\n:${chain} ACCEPT [0:0]\n-A ${chain} ${only}-j HMARK ${options}\nCOMMIT\n`;
  const outcome = simulateOne(text, packet as typeof TCP);
  return { mark: outcome.mark, unsupported: outcome.trace.filter((e) => e.kind === 'unsupported').map((e) => e.reason ?? '') };
}

const FIVE = '--hmark-tuple src,dst,sport,dport,proto --hmark-rnd 0xcafe --hmark-mod 1000 --hmark-offset 10000';

describe('HMARK', () => {
  it('is jhash_3words of the words, the protocol xored in, scaled and offset', () => {
    // jhash_3words(1, 2, 3, 0) is 0xa46158f5 (__jhash_final of 0xdeadbeef + 12 added to each).
    expect(hmarkHash({ src: 1, dst: 2, ports: 3, proto: 0 }, { protoMask: 0, rnd: 0, mod: 2 ** 16, offset: 0 })).toBe(0xa461);
    expect(hmarkHash({ src: 2, dst: 1, ports: 3, proto: 0 }, { protoMask: 0, rnd: 0, mod: 2 ** 16, offset: 0 })).toBe(0xa461);
    expect(hmarkHash({ src: 1, dst: 2, ports: 3, proto: 0x5 }, { protoMask: 0xffff, rnd: 0, mod: 2 ** 32, offset: 0 })).toBe(0xa46158f0);
    expect(hmarkHash({ src: 1, dst: 2, ports: 3, proto: 6 }, { protoMask: 0xffff, rnd: 0, mod: 1, offset: 7 })).toBe(7);
  });

  it.each([
    ['both directions of a connection get one mark (addresses and ports ordered)', FIVE, TCP_BACK],
    ['a field without a mask does not enter: the source port', '--hmark-tuple src,dst,dport --hmark-rnd 0x1 --hmark-mod 65536', { ...TCP, sport: 1234 }],
    ['a prefix masks the host part', '--hmark-src-prefix 24 --hmark-rnd 0x1 --hmark-mod 65536', { ...TCP, src: '192.0.2.7' }],
    ['the protocol enters only under --hmark-proto-mask', '--hmark-tuple src,dst --hmark-rnd 0x1 --hmark-mod 0xffffffff', { ...TCP, protocol: 'udp' }],
    ['--hmark-spi-mask 0xffff0000 is the source port\'s mask alone', '--hmark-tuple dst --hmark-spi-mask 0xffff0000 --hmark-rnd 0x9 --hmark-mod 997', { ...TCP, dport: 443 }],
  ])('%s', (_name, options, other) => {
    const mark = hmark(options);
    // The target did set a mark: the packet's own is 0.
    expect(mark.mark).not.toBe('0x00000000');
    expect(hmark(options, other)).toEqual(mark);
  });

  it.each([
    ['a masked field enters: the source port', '--hmark-tuple src,dst,sport,dport --hmark-rnd 0x1 --hmark-mod 65536', { ...TCP, sport: 1234 }],
    ['the protocol enters under --hmark-proto-mask (xored into the low bits, which a large modulus keeps)', '--hmark-tuple src,dst,proto --hmark-rnd 0x1 --hmark-mod 0xffffffff', { ...TCP, protocol: 'udp' }],
  ])('%s', (_name, options, other) => {
    expect(hmark(options, other).mark).not.toBe(hmark(options).mark);
  });

  it.each([
    ['tuple words are prefixes in any case', '--hmark-tuple SRC,dp,Pro --hmark-rnd 0x3 --hmark-mod 100000', '--hmark-src-prefix 32 --hmark-dport-mask 0xffff --hmark-proto-mask 0xffff --hmark-rnd 0x3 --hmark-mod 100000'],
    ['--hmark-tuple spi is both port masks', '--hmark-tuple spi --hmark-rnd 0x3 --hmark-mod 100000', '--hmark-sport-mask 0xffff --hmark-dport-mask 0xffff --hmark-rnd 0x3 --hmark-mod 100000'],
    ['a later option overrides the mask an earlier one set', '--hmark-tuple src --hmark-src-prefix 24 --hmark-rnd 0x3 --hmark-mod 100000', '--hmark-src-prefix 24 --hmark-rnd 0x3 --hmark-mod 100000'],
  ])('%s', (_name, options, same) => {
    expect(hmark(options).mark).not.toBe('0x00000000');
    expect(hmark(options)).toEqual(hmark(same));
  });

  it('--hmark-mod 1 gives the offset, the old mark gone', () => {
    expect(hmark('--hmark-tuple src --hmark-rnd 0x1 --hmark-mod 1 --hmark-offset 0x100', { ...TCP, mark: 0xff000000 })).toEqual({ mark: '0x00000100', unsupported: [] });
  });

  it('folds an IPv6 address\'s masked words by xor', () => {
    // Only the last word differs, and the /96 prefix masks it off.
    expect(hmark('--hmark-src-prefix 96 --hmark-rnd 0x1 --hmark-mod 65536', { ...V6, src: '2001:db8::1:99' })).toEqual(hmark('--hmark-src-prefix 96 --hmark-rnd 0x1 --hmark-mod 65536', V6));
  });

  it('ct mode before conntrack (no entry) leaves the mark', () => {
    expect(hmark('--hmark-tuple ct,src --hmark-rnd 0x1 --hmark-mod 16', { ...TCP, mark: 5 }, 'PREROUTING', 'raw')).toEqual({ mark: '0x00000005', unsupported: [] });
  });

  // iptables-nft 1.8.9's messages, and the kernel's hmark_tg_check (EINVAL).
  it.each([
    ['without --hmark-rnd', '--hmark-tuple src --hmark-mod 4', '--hmark-rnd is mandatory'],
    ['without --hmark-mod', '--hmark-tuple src --hmark-rnd 1', '--hmark-mod is mandatory'],
    ['with --hmark-mod 0', '--hmark-tuple src --hmark-rnd 1 --hmark-mod 0', 'bad value for option "--hmark-mod", or out of range (1-4294967295)'],
    ['without a tuple, prefix or mask', '--hmark-rnd 1 --hmark-mod 4', 'you have to specify --hmark-tuple at least'],
    ['with a tuple word iptables refuses', '--hmark-tuple src,bogus --hmark-rnd 0x1 --hmark-mod 4', '"--hmark-tuple" requires a list of types with no spaces, e.g. src,dst,sport,dport,proto'],
    ['with the spi and a port mask', '--hmark-tuple spi,sport --hmark-rnd 1 --hmark-mod 2', 'you cannot use --hmark-spi-mask and --hmark-?port-mask,at the same time'],
    ['with an spi and a port set', '--hmark-tuple src --hmark-rnd 1 --hmark-mod 2 --hmark-spi 1 --hmark-sport 2', '--hmark-spi and --hmark-sport or --hmark-dport cannot be combined (the kernel refuses the rule)'],
  ])('is refused %s', (_name, options, message) => {
    const { diagnostics } = parseRuleset([{ text: `*mangle\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j HMARK ${options}\nCOMMIT\n`, file: 'h.save' }]);
    expect(diagnostics.filter((d) => d.severity === 'error').map((d) => d.message)).toEqual([`HMARK: ${message}`]);
  });
});
