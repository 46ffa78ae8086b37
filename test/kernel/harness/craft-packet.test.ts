// The harness's packets: what craftPacket builds, parseFrame reads back, checksums included.
import { describe, expect, it } from 'vitest';
import { craftPacket, parseFrame, type KernelPacket } from '../../../test/kernel/harness/craft-packet.js';

/** The Internet checksum over `data` is 0 when its checksum field is right. */
function sumsToZero(data: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i + 1 < data.length; i += 2) sum += data.readUInt16BE(i);
  if (data.length % 2 === 1) sum += data[data.length - 1]! << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return sum === 0xffff;
}

function frame(ip: Buffer): Buffer {
  const ethertype = ip[0]! >> 4 === 4 ? [0x08, 0x00] : [0x86, 0xdd];
  return Buffer.concat([Buffer.alloc(12), Buffer.from(ethertype), ip]);
}

describe('craftPacket and parseFrame', () => {
  it.each<{ packet: KernelPacket; seen: object }>([
    {
      packet: { src: '100.64.2.2', dst: '100.64.1.1', protocol: 'tcp', sport: 41000, dport: 30080, tcpFlags: 'syn' },
      seen: { family: 'ip', src: '100.64.2.2', dst: '100.64.1.1', protocol: 'tcp', sport: 41000, dport: 30080, tcpFlags: 'syn', tag: 7, ttl: 64 },
    },
    {
      packet: { src: '192.0.2.1', dst: '198.51.100.2', protocol: 'tcp', tcpFlags: 'syn,ack' },
      seen: { protocol: 'tcp', sport: 40000, dport: 80, tcpFlags: 'syn,ack' },
    },
    {
      packet: { src: '192.0.2.1', dst: '198.51.100.2', protocol: 'udp', sport: 5000, dport: 53 },
      seen: { protocol: 'udp', sport: 5000, dport: 53 },
    },
    { packet: { src: '192.0.2.1', dst: '198.51.100.2', protocol: 'icmp', icmpId: 77 }, seen: { protocol: 'icmp', icmpId: 77 } },
    {
      packet: { src: '2001:db8::99', dst: '2001:db8:1::20', protocol: 'udp', sport: 5000, dport: 53, ttl: 9 },
      seen: { family: 'ip6', src: '2001:db8::99', dst: '2001:db8:1::20', protocol: 'udp', tag: 7, ttl: 9 },
    },
    { packet: { src: 'fe80::1', dst: 'ff02::1', protocol: 'icmp', icmpId: 3 }, seen: { family: 'ip6', protocol: 'icmpv6', icmpId: 3 } },
  ])('reads back $packet.protocol $packet.src → $packet.dst', ({ packet, seen }) => {
    const ip = craftPacket(packet, 7);
    expect(parseFrame(frame(ip))).toMatchObject(seen);
    const l4 = ip[0]! >> 4 === 4 ? ip.subarray(20) : ip.subarray(40);
    const pseudo =
      ip[0]! >> 4 === 4
        ? Buffer.concat([ip.subarray(12, 20), Buffer.from([0, ip[9]!, 0, l4.length])])
        : Buffer.concat([ip.subarray(8, 40), Buffer.from([0, 0, 0, l4.length, 0, 0, 0, ip[6]!])]);
    if (ip[0]! >> 4 === 4) expect(sumsToZero(ip.subarray(0, 20))).toBe(true);
    expect(sumsToZero(packet.protocol === 'icmp' && ip[0]! >> 4 === 4 ? l4 : Buffer.concat([pseudo, l4]))).toBe(true);
  });

  it('reads no identifier from an ICMP error (its bytes 4-5 are unused)', () => {
    const ip = craftPacket({ src: '192.0.2.1', dst: '198.51.100.2', protocol: 'icmp', icmpType: 'time-exceeded', quoted: { src: '198.51.100.2', dst: '192.0.2.1', protocol: 'udp' } }, 7);
    expect(parseFrame(frame(ip))).not.toHaveProperty('icmpId');
  });

  // RFC 792 / RFC 4443: type, code, checksum, 4 unused bytes, then the quoted packet.
  it.each([
    ['icmp', { src: '198.51.100.20', dst: '192.0.2.1', protocol: 'icmp', icmpType: 'destination-unreachable', icmpCode: 'port-unreachable' }, [3, 3], 20],
    ['icmpv6', { src: '2001:db8:2::20', dst: '2001:db8:1::1', protocol: 'icmp', icmpType: 'time-exceeded', icmpCode: 'host-unreachable' }, [3, 3], 40],
  ] as const)('crafts an %s error quoting the packet it is about', (_name, error, [type, code], headerLength) => {
    const quoted: KernelPacket = { src: error.dst, dst: error.src, protocol: 'udp', sport: 40000, dport: 53 };
    const ip = craftPacket({ ...error, quoted }, 7);
    const l4 = ip.subarray(headerLength);
    expect([l4[0], l4[1], l4.readUInt32BE(4)]).toEqual([type, code, 0]);
    expect(parseFrame(frame(l4.subarray(8)))).toMatchObject({ src: quoted.src, dst: quoted.dst, protocol: 'udp', sport: 40000, dport: 53 });
  });

  it.each([
    { packet: { src: '192.0.2.1', dst: '198.51.100.2', protocol: 'icmp', icmpType: 'time-exceeded' } as const, error: /needs the packet it quotes/ },
    { packet: { src: '192.0.2.1', dst: '2001:db8::1', protocol: 'tcp' } as const, error: /differ in family/ },
    { packet: { src: '192.0.2.1', dst: '192.0.2.2', protocol: 'tcp', tcpFlags: 'syn,bogus' } as const, error: /unknown TCP flag bogus/ },
  ])('refuses $packet', ({ packet, error }) => {
    expect(() => craftPacket(packet, 1)).toThrow(error);
  });
});
