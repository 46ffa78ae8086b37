import { describe, expect, it } from 'vitest';
import { protocolNumber } from '../../../src/parser/iptables/parse-option-value.js';

// libxtables xtables_parse_protocol: getprotobyname() (/etc/protocols) first, then
// xtables_chain_protos, then a number up to 255.
describe('protocolNumber (`-p NAME`)', () => {
  it.each([
    ['tcp', 6],
    ['ipencap', 4], // /etc/protocols: IP-ENCAP is 4 …
    ['ipip', 94], // … and IPIP 94 (Calico's `-p ipencap` is protocol 4)
    ['mobility-header', 135],
    ['all', 0], // xtables_chain_protos only
    ['mh', 135],
    ['icmpv6', 58],
    ['47', 47],
    ['256', undefined],
    ['nosuchproto', undefined],
  ])('%s is %s', (name, number) => {
    expect(protocolNumber(name)).toBe(number);
  });
});
