// iptables' TCPOPTSTRIP target (xt_TCPOPTSTRIP.c) and nft's `reset tcp option`
// (nft_exthdr_tcp_strip_eval): a stripped option's bytes become NOPs in place, the header and the
// packet keep their length. Kernel rows "xt TCPOPTSTRIP: …" and "reset tcp option maxseg: …"
// (test/kernel/differential-expressions.test.ts) check the same on Linux.
import { describe, expect, it } from 'vitest';
import { readStripList } from '../../src/model/tcpoptstrip-options.js';
import { simulateOne } from './helpers.js';

const SYN_MSS = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'tcp', sport: 40000, dport: 80, tcpMss: 1460 } as const;

/** The mark a packet leaves prerouting with: mangle PREROUTING runs `target`, then each test
 * sets its bit when it matches. */
function marked(target: string, tests: readonly string[], packet: object = SYN_MSS): string {
  const rules = [`-A PREROUTING ${target}`, ...tests.map((t, i) => `-A PREROUTING ${t} -j MARK --set-xmark 0x${(1 << i).toString(16)}/0x${(1 << i).toString(16)}`)];
  return simulateOne(`*mangle\n:PREROUTING ACCEPT [0:0]\n${rules.join('\n')}\nCOMMIT\n`, packet as typeof SYN_MSS).mark;
}

describe('TCPOPTSTRIP', () => {
  it.each([
    ['a name', 'mss', [2]],
    ['names and numbers, as iptables-save prints numbers', 'wscale,2,sack-permitted,sack,timestamp,md5', [3, 2, 4, 5, 8, 19]],
    ['hexadecimal and octal (strtoui base 0)', '0x2,010', [2, 8]],
  ])('reads --strip-options: %s', (_name, text, kinds) => {
    expect(readStripList(text)).toEqual(kinds);
  });

  // iptables-nft 1.8.9's messages.
  it.each([
    ['0', 'Option value may not be 0 or 1'],
    ['1', 'Option value may not be 0 or 1'],
    ['256', 'Bad TCP option value "256"'],
    ['nosuch', 'Bad TCP option value "nosuch"'],
    ['mss,2', 'Option "2" already specified'],
  ])('refuses the list %s as iptables does', (text, message) => {
    expect(readStripList(text)).toBe(message);
  });

  it.each([
    ['the MSS option is gone for -m tcpmss, which then gives its inversion', '-p tcp -j TCPOPTSTRIP --strip-options mss', ['-p tcp -m tcpmss --mss 1460', '-p tcp -m tcpmss ! --mss 1460'], '0x00000002'],
    ['NOPs stand in its place', '-p tcp -j TCPOPTSTRIP --strip-options 2', ['-p tcp -m tcp --tcp-option 2', '-p tcp -m tcp --tcp-option 1'], '0x00000002'],
    ['the packet keeps its length', '-p tcp -j TCPOPTSTRIP --strip-options 2', ['-m length --length 44'], '0x00000001'],
    ['other kinds leave the MSS option', '-p tcp -j TCPOPTSTRIP --strip-options wscale,sack,timestamp', ['-p tcp -m tcpmss --mss 1460', '-p tcp -m tcp --tcp-option 1'], '0x00000001'],
  ])('%s', (_name, target, tests, mark) => {
    expect(marked(target, tests)).toBe(mark);
  });

  it('TCPMSS then inserts an MSS option before the NOPs (the header has no data)', () => {
    const tests = ['-p tcp -m tcpmss --mss 536', '-p tcp -m tcp --tcp-option 1', '-m length --length 48'];
    expect(marked('-p tcp -j TCPOPTSTRIP --strip-options mss\n-A PREROUTING -p tcp -j TCPMSS --set-mss 1000', tests)).toBe('0x00000007');
  });
});

describe('nft reset tcp option', () => {
  const nft = (rules: string) => `table ip t {\n  chain c {\n    type filter hook prerouting priority 0; policy accept;\n    ${rules}\n  }\n}\n`;
  it.each([
    ['writes NOPs over the MSS option', 'reset tcp option maxseg\n    tcp option maxseg exists meta mark set mark or 0x1\n    tcp option nop exists meta mark set mark or 0x2', '0x00000002'],
    ['leaves the bytes for raw reads', 'reset tcp option maxseg\n    @th,160,32 0x01010101 meta mark set mark or 0x1\n    tcp option @2,16,16 1460 meta mark set mark or 0x2', '0x00000001'],
  ])('%s', (_name, rules, mark) => {
    expect(simulateOne(nft(rules), SYN_MSS).mark).toBe(mark);
  });
});
