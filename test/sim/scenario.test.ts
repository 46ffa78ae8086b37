import { describe, expect, it } from 'vitest';
import { readHost } from '../../src/sim/host.js';
import { readScenario, runScenario } from '../../src/sim/scenario.js';
import { HOST, parse } from './helpers.js';

const host = readHost([{ value: HOST, path: ['host'] }]).host;
const UDP = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.5', protocol: 'udp', sport: 5555, dport: 9999 };
const COUNT_NEW = 'table ip t { chain p { type filter hook prerouting priority 0; ct state new meta mark set 1 } }';

function run(text: string, value: unknown) {
  const { scenario, errors } = readScenario(value);
  if (!scenario) throw new Error(errors.map((e) => e.message).join('; '));
  return runScenario(parse(text), host, scenario);
}

describe('scenario flows', () => {
  it.each([
    ['both packets and flows', { packets: [], flows: [] }, /flows: give `packets` or `flows`, not both/],
    ['a flow without packets', { flows: [{ name: 'x' }] }, /flows\[0\]\.packets: expected an array/],
    ['an unknown flow field', { flows: [{ packets: [], pakets: [] }] }, /flows\[0\]\.pakets: unknown field/],
    ['a case without packet', { flows: [{ packets: [{ name: 'x' }] }] }, /flows\[0\]\.packets\[0\]\.packet: required/],
    ['a bad src expectation', { flows: [{ packets: [{ packet: UDP, expect: { src: 1 } }] }] }, /expect\.src: expected a string/],
    // Values no outcome can have are input errors (exit 2), not failed expectations (exit 1).
    ['a port out of range', { flows: [{ packets: [{ packet: UDP, expect: { dst: '1.2.3.4:99999' } }] }] }, /expect\.dst: expected an address, "a\.b\.c\.d:port" or "\[v6\]:port"/],
    ['an address that is none', { flows: [{ packets: [{ packet: UDP, expect: { src: '1.2.3.999' } }] }] }, /expect\.src: expected an address/],
    ['a port without an address', { flows: [{ packets: [{ packet: UDP, expect: { dst: ':80' } }] }] }, /expect\.dst: expected an address/],
    ['an IPv4 endpoint in brackets', { flows: [{ packets: [{ packet: UDP, expect: { dst: '[192.0.2.1]:80' } }] }] }, /expect\.dst: expected an address/],
    ['a mark beyond 32 bits', { flows: [{ packets: [{ packet: UDP, expect: { mark: '0x1ffffffff' } }] }] }, /expect\.mark: expected "V" or "V\/M" \(0x… or decimal, 32 bits\)/],
  ])('names the field for %s', (_name, value, message) => {
    expect(readScenario(value).errors.map((e) => e.message).join('\n')).toMatch(message);
  });

  it('carries the conntrack table across the whole scenario, lone packets and flows alike', () => {
    const lone = run(COUNT_NEW, { packets: [{ packet: UDP }, { packet: { reply: true } }, { packet: UDP }] });
    // A lone packet is a flow of its own: `reply` needs a previous packet in the same flow.
    expect(lone.errors.map((e) => e.message)).toEqual(['packets[1].packet.reply: a reply needs a previous packet in the flow']);
    const flows = run(COUNT_NEW, { flows: [{ name: 'a', packets: [{ packet: UDP }, { packet: { reply: true } }] }, { name: 'b', packets: [{ packet: UDP, expect: { mark: '0x0' } }] }] });
    expect(flows.results.map((r) => [r.flow, r.name, r.outcomes[0]!.mark, r.failures])).toEqual([
      ['a', 'packet 1', '0x00000001', []],
      ['a', 'packet 2', '0x00000000', []],
      ['b', 'packet 1', '0x00000000', []],
    ]);
  });

  it('checks expectations against every branch, src and dst included', () => {
    const text = `table ip nat { chain pre { type nat hook prerouting priority dstnat; numgen random mod 2 vmap { 0 : jump a, 1 : jump b } }
      chain a { dnat to 10.244.1.5 } chain b { dnat to 10.244.1.6 } }`;
    const { results } = run(text, { flows: [{ packets: [{ packet: { ...UDP, dst: '192.0.2.10' }, expect: { dst: '10.244.1.5:9999', src: '192.0.2.99' } }] }] });
    expect(results[0]!.failures).toEqual(['outcome 2: dst: expected 10.244.1.5:9999, got 10.244.1.6:9999']);
  });

  it('goes on from the first branch\'s state and notes when the branches left different ones', () => {
    const text = `table ip nat { chain pre { type nat hook prerouting priority dstnat; numgen random mod 2 vmap { 0 : jump a, 1 : jump b } }
      chain a { dnat to 10.244.1.5 } chain b { dnat to 10.244.1.6 } }`;
    const syn = { ...UDP, dst: '192.0.2.10' };
    const { results, notes } = run(text, { flows: [{ name: 'first', packets: [{ packet: syn }] }, { name: 'second', packets: [{ packet: syn }] }] });
    expect(results[1]!.outcomes.map((o) => o.packet.dst)).toEqual(['10.244.1.5']);
    expect(notes).toEqual(["first: 1 of its 2 branches leave a different conntrack table or set contents; the scenario goes on from branch 1's"]);
  });
});
