// nft monitor trace lines as nft 1.0.6 printed them on kernel 6.18 (recorded with the harness).
import { describe, expect, it } from 'vitest';
import { parseNftTraceLine } from '../../../test/kernel/harness/parse-nft-trace.js';

describe('parseNftTraceLine', () => {
  it.each([
    {
      line: 'trace id 80c56f0e inet kdtrace pre rule meta nftrace set 1 # handle 3 (verdict continue)',
      event: { id: '80c56f0e', family: 'inet', table: 'kdtrace', chain: 'pre', kind: 'rule', verdict: 'continue', handle: 3 },
    },
    {
      line: 'trace id 8a433647 ip filter INPUT rule ip saddr 192.0.2.1 return (verdict return)',
      event: { id: '8a433647', family: 'ip', table: 'filter', chain: 'INPUT', kind: 'rule', verdict: 'return' },
    },
    {
      line: 'trace id 80c56f0e ip filter INPUT unknown rule handle 4 (verdict jump X)',
      event: { id: '80c56f0e', family: 'ip', table: 'filter', chain: 'INPUT', kind: 'rule', verdict: 'jump X', handle: 4 },
    },
    {
      line: 'trace id 80c56f0e ip filter INPUT policy drop meta mark 0x00000042 ',
      event: { id: '80c56f0e', family: 'ip', table: 'filter', chain: 'INPUT', kind: 'policy', verdict: 'drop', mark: '0x00000042' },
    },
    {
      line: 'trace id 3fd652ac inet kdtrace pre policy accept ',
      event: { id: '3fd652ac', family: 'inet', table: 'kdtrace', chain: 'pre', kind: 'policy', verdict: 'accept' },
    },
    {
      line: 'trace id 3fd652ac ip nat KUBE-MARK-MASQ verdict continue meta mark 0x00004000 ',
      event: { id: '3fd652ac', family: 'ip', table: 'nat', chain: 'KUBE-MARK-MASQ', kind: 'return', verdict: 'continue', mark: '0x00004000' },
    },
  ])('reads $line', ({ line, event }) => {
    expect(parseNftTraceLine(line)).toEqual({ kind: 'event', event });
  });

  it('reads the fields of a packet line, unquoted, the outer header first', () => {
    const parsed = parseNftTraceLine(
      'trace id 877a8642 ip n post packet: iif "wt0" oif "cni0" ether saddr 02:6b:64:00:01:02 ip saddr 100.64.2.2 ip daddr 10.244.1.10 ip ttl 63 ip id 62 tcp sport 40000 tcp dport 1 tcp flags == syn tcp window 64240 ',
    );
    expect(parsed).toEqual({
      kind: 'packet',
      packet: {
        id: '877a8642',
        family: 'ip',
        table: 'n',
        chain: 'post',
        fields: {
          iif: 'wt0',
          oif: 'cni0',
          'ether saddr': '02:6b:64:00:01:02',
          'ip saddr': '100.64.2.2',
          'ip daddr': '10.244.1.10',
          'ip ttl': '63',
          'ip id': '62',
          'tcp sport': '40000',
          'tcp dport': '1',
          'tcp flags': 'syn',
          'tcp window': '64240',
        },
      },
    });
  });

  it.each(['', 'not a trace line', 'trace id 877a8642 ip n post conntrack: ct state new'])('ignores %j', (line) => {
    expect(parseNftTraceLine(line)).toBeUndefined();
  });
});
