// Expressions evaluated against the packet, each row naming the kernel fact it encodes. The
// packet: a TCP SYN from 192.0.2.99:40000 to the node's 192.0.2.10:22 on eth0 (helpers.ts
// LOCAL), no options, no payload (packet-bytes.ts), seen by an input chain of an inet table.
import { describe, expect, it } from 'vitest';
import { jhash } from '../../src/sim/evaluate-special-expr.js';
import { FORWARDED, LOCAL, simulate, simulateOne } from './helpers.js';
import type { PacketInput } from '../../src/sim/packet.js';

function markedBy(match: string, packet: PacketInput = LOCAL, hook = 'input', family = 'inet'): string {
  const text = `table ${family} t {\n\tchain c {\n\t\ttype filter hook ${hook} priority 0;\n\t\t${match} meta mark set 1\n\t}\n}\n`;
  const outcome = simulateOne(text, packet);
  expect(outcome.trace.filter((e) => e.kind === 'unsupported').map((e) => e.reason)).toEqual([]);
  return outcome.mark;
}

const UDP: PacketInput = { iif: 'eth0', src: '192.0.2.99', dst: '192.0.2.10', protocol: 'udp', dport: 53 };
const PING: PacketInput = { iif: 'eth0', src: '192.0.2.99', dst: '192.0.2.10', protocol: 'icmp' };
const PING6: PacketInput = { iif: 'eth0', src: '2001:db8::99', dst: '2001:db8::10', protocol: 'icmpv6' };
const TCP6: PacketInput = { iif: 'eth0', src: '2001:db8::99', dst: '2001:db8::10', dport: 22 };
const TO_INTERNET: PacketInput = { iif: 'eth0', src: '192.0.2.99', dst: '198.51.100.7', dport: 443 };

describe('header fields read from the packet bytes (nft src/proto.c offsets)', () => {
  it.each([
    // IPv4 header: no options, DF, identification 0 (packet-bytes.ts defaults).
    ['ip hdrlength 5', LOCAL, true],
    ['ip version 4', LOCAL, true],
    ['ip id 0', LOCAL, true],
    ['ip frag-off & 0x4000 != 0', LOCAL, true],
    ['ip frag-off & 0x1fff != 0', LOCAL, false],
    ['ip ecn not-ect', LOCAL, true],
    ['ip length 40', LOCAL, true],
    ['ip length 28', UDP, true],
    // The header checksum of 192.0.2.99 → 192.0.2.10, TTL 64, TCP, length 40, DF.
    ['ip checksum 0xb662', LOCAL, true],
    ['tcp sequence 268435456', LOCAL, true],
    ['tcp ackseq 0', LOCAL, true],
    ['tcp doff 5', LOCAL, true],
    ['tcp reserved 0', LOCAL, true],
    ['tcp window 64240', LOCAL, true],
    ['tcp urgptr 0', LOCAL, true],
    ['udp length 8', UDP, true],
    ['udp length 8', LOCAL, false], // a tcp packet: the l4proto dependency fails
    ['icmp id 40000', PING, true],
    ['icmp sequence 1', PING, true],
    ['icmp mtu 0', PING, false], // `icmp mtu` depends on type destination-unreachable
    ['icmp gateway 0', PING, false], // … and `icmp gateway` on redirect
    ['icmpv6 id 40000', PING6, true],
    ['icmpv6 mtu 0', PING6, false], // packet-too-big only
    ['ip6 flowlabel 0', TCP6, true],
    ['ip6 length 20', TCP6, true], // the payload length, without the 40-byte header
    ['ip6 length 20', LOCAL, false],
    ['ether type ip', LOCAL, true],
    ['vlan id 1', LOCAL, false], // no VLAN tag: the ether type dependency fails
  ] as const)('%s (%j) → %s', (match, packet, expected) => {
    expect(markedBy(match, packet)).toBe(expected ? '0x00000001' : '0x00000000');
  });
});

describe('raw payload @base,offset,length', () => {
  it.each([
    ['@nh,0,4 4', true], // IPv4 version
    ['@nh,72,8 6', true], // protocol tcp
    ['@nh,96,32 0xc0000263', true], // 192.0.2.99
    ['@th,16,16 22', true], // destination port
    ['@th,110,1 1', true], // the SYN bit of the flags byte
    ['@ll,96,16 0x0800', true], // the ethertype of the received frame
    ['@ih,0,8 0', false], // no payload: reading beyond the packet is NFT_BREAK
    ['@th,152,8 0', true], // the last byte of the TCP header
    ['@th,160,8 0', false], // one beyond: the packet ends there
  ] as const)('%s → %s', (match, expected) => {
    expect(markedBy(match)).toBe(expected ? '0x00000001' : '0x00000000');
  });

  it('the MAC addresses of the received frame are not modelled: said so', () => {
    const o = simulateOne('table inet t {\n\tchain c {\n\t\ttype filter hook input priority 0;\n\t\tether saddr 02:00:00:00:00:01 accept\n\t}\n}\n', LOCAL);
    expect(o.trace.find((e) => e.kind === 'unsupported')?.reason).toContain('MAC addresses');
  });

  it('a locally generated packet has no link layer header (nft_payload: NFT_BREAK)', () => {
    expect(markedBy('@ll,96,16 0x0800', { src: '192.0.2.10', dst: '192.0.2.99', dport: 22 }, 'output')).toBe('0x00000000');
  });
});

describe('options and extension headers the packet does not carry (nft_exthdr.c)', () => {
  it.each([
    ['tcp option maxseg exists', LOCAL, false],
    ['tcp option maxseg missing', LOCAL, true],
    ['tcp option maxseg size 1460', LOCAL, false], // a field of an absent option: NFT_BREAK
    ['tcp option sack-perm missing', UDP, true], // no TCP header: absent, no protocol dependency
    ['ip option rr missing', LOCAL, true],
    ['exthdr hbh missing', TCP6, true],
    ['exthdr hbh missing', LOCAL, false], // inet: nft adds `meta nfproto ipv6`
    ['sctp chunk init missing', LOCAL, true],
    // A raw option load has no presence flag: without the option it breaks, `0` included; with it,
    // the bytes from the kind byte on (kernel rows "tcp option raw", "raw tcp option of an
    // optionless SYN").
    ['tcp option @2,16,16 0', LOCAL, false],
    // nft reads a kind number it has a name for as that name (`tcp option 2` lists as maxseg;
    // kernel row "xt tcp: --tcp-option 2 of a SYN with MSS").
    ['tcp option 2 exists', { ...LOCAL, tcpMss: 1460 }, true],
    ['tcp option 2 missing', LOCAL, true],
    ['tcp option @2,16,16 1460', { ...LOCAL, tcpMss: 1460 }, true],
    ['tcp option @2,0,16 0x0204', { ...LOCAL, tcpMss: 1460 }, true],
    ['tcp option @2,16,32 0', { ...LOCAL, tcpMss: 1460 }, false], // past the option's 4 bytes: breaks
  ] as const)('%s (%j) → %s', (match, packet, expected) => {
    expect(markedBy(match, packet)).toBe(expected ? '0x00000001' : '0x00000000');
  });
});

describe('rt: the route the packet took (nft_rt.c)', () => {
  it.each([
    ['rt ip nexthop 192.0.2.10', LOCAL, 'input', true], // local delivery: the destination
    ['rt ip nexthop 192.0.2.1', TO_INTERNET, 'forward', true], // the default route's gateway
    ['rt ip6 nexthop 192.0.2.1', TO_INTERNET, 'forward', false], // NEXTHOP6 of an IPv4 packet
    ['rt ip nexthop 192.0.2.1', TO_INTERNET, 'prerouting', false], // no route yet: NFT_BREAK
    ['rt mtu 1460', TO_INTERNET, 'forward', true], // `rt mtu` is the TCP MSS: 1500 - 40
    ['rt mtu 1440', TCP6, 'input', true], // IPv6: 1500 - 60
    ['rt ipsec missing', TO_INTERNET, 'forward', true],
  ] as const)('%s at %s → %s', (match, packet, hook, expected) => {
    expect(markedBy(match, packet, hook)).toBe(expected ? '0x00000001' : '0x00000000');
  });
});

// nft_meta.c NFT_META_IFTYPE reads pkt->skb->dev: the input device until postrouting, where
// ip_output has set it to the output device; none at output (NFT_BREAK). `oiftype` reads the
// output device. Checked on Linux 6.18 (kernel row "meta iiftype of the node's own packet").
describe('meta iiftype, oiftype and the interface kinds: the device the packet is on', () => {
  const SENT: PacketInput = { src: '192.0.2.10', dst: '198.51.100.7', dport: 443 };
  const TO_SELF: PacketInput = { src: '192.0.2.10', dst: '127.0.0.1', dport: 22 };
  it.each([
    ['meta iiftype ether', TO_INTERNET, 'prerouting', true],
    ['meta iiftype ether', TO_INTERNET, 'postrouting', true],
    ['meta iiftype ether', SENT, 'postrouting', true], // the output device: its iif is none
    ['meta iiftype loopback', TO_SELF, 'postrouting', true],
    ['meta iiftype ether', SENT, 'output', false], // no device yet: NFT_BREAK …
    ['meta iiftype != ether', SENT, 'output', false], // … whatever the test
    ['meta oiftype ether', LOCAL, 'input', false],
    ['meta oiftype != ether', LOCAL, 'input', false], // no output device: NFT_BREAK, not 0
    ['meta oiftype ether', SENT, 'output', true],
    // nft_meta_get_eval_kind: no device breaks too (a device's kind is not in the host model).
    ['meta iifkind "veth"', SENT, 'output', false],
    ['meta oifkind "veth"', LOCAL, 'input', false],
  ] as const)('%s (%j) at %s → %s', (match, packet, hook, expected) => {
    expect(markedBy(match, packet, hook)).toBe(expected ? '0x00000001' : '0x00000000');
  });
});

describe('meta and ct keys with a known value for the first packet', () => {
  it.each([
    ['meta iifgroup 0', LOCAL, true],
    ['meta oifgroup 0', LOCAL, false], // no output interface at input: NFT_BREAK
    ['meta priority 0', LOCAL, true],
    ['meta secmark 0', LOCAL, true],
    ['meta sdif 0', LOCAL, true],
    ['meta ibrname "br0"', LOCAL, false], // not a bridge port
    ['meta cgroup 1', TO_INTERNET, false], // a forwarded packet has no socket
    ['socket transparent 0', TO_INTERNET, false], // … so no socket expression matches
    ['ct original packets 1', LOCAL, true], // accounting counts the first packet
    ['ct bytes 40', LOCAL, true],
    ['ct avgpkt 40', LOCAL, true],
    ['ct reply packets 0', LOCAL, true],
    ['ct reply ip saddr 192.0.2.10', LOCAL, true], // the inverted original tuple
    ['ct reply proto-dst 40000', LOCAL, true],
    ['ct original ip6 saddr ::1', LOCAL, false], // another family: NFT_BREAK
    ['ct helper "ftp"', LOCAL, false], // no helper assigned
    ['ipsec in reqid 1', LOCAL, false], // no secpath
  ] as const)('%s (%j) → %s', (match, packet, expected) => {
    expect(markedBy(match, packet, packet === TO_INTERNET ? 'forward' : 'input')).toBe(expected ? '0x00000001' : '0x00000000');
  });

  // In an ip or ip6 table the tuple's addresses have no family of their own: nft lists
  // `ct original daddr X` there, and iptables-nft writes `--ctorigdst X` so. They take the
  // table's (test/parser, test/model for the JSON and iptables forms), as `rt nexthop` does.
  it.each([
    ['rt nexthop 192.0.2.10', LOCAL, 'ip', true], // local delivery: the destination
    ['rt nexthop 2001:db8::10', TCP6, 'ip6', true],
    ['ct original daddr 192.0.2.10', LOCAL, 'ip', true],
    ['ct original saddr 192.0.2.0/24', LOCAL, 'ip', true],
    ['ct reply saddr { 192.0.2.7, 192.0.2.10 }', LOCAL, 'ip', true],
    ['ct original daddr != 192.0.2.10', LOCAL, 'ip', false],
    ['ct original daddr 2001:db8::10', TCP6, 'ip6', true],
    ['ct reply daddr 2001:db8::/64', TCP6, 'ip6', true],
  ] as const)('%s (%j) in an %s table', (match, packet, family, expected) => {
    expect(markedBy(match, packet, 'input', family)).toBe(expected ? '0x00000001' : '0x00000000');
  });

  it('ct reply saddr follows the DNAT mapping (nf_nat_setup_info alters the reply tuple)', () => {
    const text = `table ip nat {\n\tchain pre {\n\t\ttype nat hook prerouting priority dstnat;\n\t\tdnat to 10.244.1.9:8080\n\t}\n}\ntable ip f {\n\tchain fwd {\n\t\ttype filter hook forward priority 0;\n\t\tct reply ip saddr 10.244.1.9 ct reply proto-src 8080 ct original ip daddr 10.244.1.5 meta mark set 7\n\t}\n}\n`;
    expect(simulateOne(text, FORWARDED).mark).toBe('0x00000007');
  });
});

describe('hashes (nft_hash.c)', () => {
  it('jhash is Linux jhash (lookup3): the empty key gives the initial value', () => {
    expect(jhash(new Uint8Array(0), 0)).toBe(0xdeadbeef);
  });

  it('jhash without a seed has a random seed: every result is a branch of equal share', () => {
    const text = 'table ip t {\n\tchain c {\n\t\ttype filter hook input priority 0;\n\t\tmeta mark set jhash ip saddr mod 4\n\t}\n}\n';
    const outcomes = simulate(text, LOCAL);
    expect(outcomes.map((o) => o.mark).sort()).toEqual(['0x00000000', '0x00000001', '0x00000002', '0x00000003']);
    expect(outcomes.every((o) => o.probability === 0.25)).toBe(true);
  });

  it('symhash has a random boot-time key: branches too', () => {
    const text = 'table ip t {\n\tchain c {\n\t\ttype filter hook input priority 0;\n\t\tmeta mark set symhash mod 2 offset 100\n\t}\n}\n';
    expect(simulate(text, LOCAL).map((o) => o.mark).sort()).toEqual(['0x00000064', '0x00000065']);
  });
});
