import { describe, expect, it } from 'vitest';
import { simulateFlow } from '../../src/sim/simulate-flow.js';
import { HOST, parse, simulateOne, steps } from './helpers.js';

// The ruleset of the kernel check (Linux 6.18, `nft monitor trace` in a namespace with
// 192.0.2.10/24 on a veth): a local TCP connect to 192.0.2.99:80, DNATed in output to the
// node's own 192.0.2.10:8080.
const RULESET = `table ip t {
  chain raw_out { type filter hook output priority -300; policy accept;
    tcp dport { 80, 81, 8080 } meta nftrace set 1
  }
  chain nat_out { type nat hook output priority -100; policy accept;
    tcp dport 80 dnat to 192.0.2.10:8080
  }
  chain pre { type filter hook prerouting priority 0; policy accept;
    ct state new counter comment "pre-new"
    ct state established counter comment "pre-est"
    ct status confirmed counter comment "pre-confirmed"
    ct status dnat counter comment "pre-dnat"
    ct direction original counter comment "pre-orig"
  }
  chain nat_pre { type nat hook prerouting priority -100; policy accept;
    counter comment "nat-pre-ran"
  }
  chain filter_in { type filter hook input priority 0; policy accept;
    ct state new counter comment "in-new"
  }
  chain nat_in { type nat hook input priority 100; policy accept;
    counter comment "nat-in-ran"
  }
  chain nat_post { type nat hook postrouting priority 100; policy accept;
    counter comment "nat-post-ran"
  }
  chain filter_post { type filter hook postrouting priority 0; policy accept;
    ct status confirmed counter comment "post-confirmed"
  }
}`;

describe('a local packet to a local address comes back in through lo', () => {
  // Kernel trace of the SYN: output, postrouting (oif lo), then prerouting and input with iif lo;
  // ct state still new there, status confirmed and dnat, direction original; the nat chains at
  // prerouting and input do not run (both mappings set up: nf_nat_inet_fn); delivered.
  it('replays the kernel trace of a SYN DNATed in output to a local address', () => {
    const o = simulateOne(RULESET, { dst: '192.0.2.99', dport: 80 });
    expect(o).toMatchObject({ disposition: 'delivered', iif: 'lo', packet: { src: '192.0.2.10', dst: '192.0.2.10', dport: 8080 } });
    expect(o.oif).toBeUndefined();
    expect(o.trace.map((e) => `${e.hook} ${e.chain} ${e.kind} ${e.verdict}`)).toEqual([
      'output raw_out rule continue',
      'output raw_out policy accept',
      'output nat_out rule accept',
      'postrouting filter_post policy accept',
      'postrouting nat_post rule continue',
      'postrouting nat_post policy accept',
      'prerouting pre rule continue',
      'prerouting pre rule continue',
      'prerouting pre rule continue',
      'prerouting pre rule continue',
      'prerouting pre policy accept',
      'input filter_in rule continue',
      'input filter_in policy accept',
    ]);
    const pre = o.trace.filter((e) => e.chain === 'pre' && e.kind === 'rule').map((e) => e.at.line);
    expect(pre).toEqual([9, 11, 12, 13]); // new, confirmed, dnat, original
  });

  it('delivers the answer to the connecting socket from the address it asked for (DNAT undone at postrouting)', () => {
    const { outcomes } = simulateFlow(parse(RULESET), { host: HOST, packets: [{ dst: '192.0.2.99', dport: 80, sport: 52110 }, { reply: true }] });
    expect(outcomes[0]!.packets[1]).toMatchObject({ disposition: 'delivered', iif: 'lo', packet: { src: '192.0.2.99', sport: 80, dst: '192.0.2.10', dport: 52110 } });
  });

  it('delivers the later packets of that connection the same way: established, no nat chain anywhere', () => {
    const syn = { dst: '192.0.2.99', dport: 80, sport: 52110 };
    const { outcomes } = simulateFlow(parse(RULESET), { host: HOST, packets: [syn, { reply: true }, { ...syn, tcpFlags: 'ack' }] });
    const ack = outcomes[0]!.packets[2]!;
    expect(ack).toMatchObject({ disposition: 'delivered', iif: 'lo', packet: { dst: '192.0.2.10', dport: 8080 } });
    expect(steps(ack).filter((s) => s.startsWith('t nat'))).toEqual([]);
    // Kernel: pre-est, pre-confirmed, pre-dnat, pre-orig; post-confirmed at postrouting.
    expect(ack.trace.filter((e) => e.kind === 'rule' && (e.chain === 'pre' || e.chain === 'filter_post')).map((e) => `${e.chain}:${e.at.line}`)).toEqual(['filter_post:28', 'pre:10', 'pre:11', 'pre:12', 'pre:13']);
  });

  it.each([
    ['the loopback address', '127.0.0.1'],
    ['an address of another interface of the node', '10.244.0.1'],
  ])('takes output → postrouting → prerouting (iif lo) → input for %s without NAT', (_name, dst) => {
    const text = `table inet f {
      chain out { type filter hook output priority 0; policy accept; }
      chain post { type filter hook postrouting priority 0; policy accept; }
      chain pre { type filter hook prerouting priority 0; policy accept; iif lo counter }
      chain in { type filter hook input priority 0; policy drop; iif lo accept }
    }`;
    const o = simulateOne(text, { dst, dport: 22 });
    expect(o).toMatchObject({ disposition: 'delivered', iif: 'lo' });
    expect(o.trace.map((e) => `${e.hook} ${e.kind} ${e.verdict}`)).toEqual([
      'output policy accept',
      'postrouting policy accept',
      'prerouting rule continue',
      'prerouting policy accept',
      'input rule accept',
    ]);
  });

  // An ACK conntrack finds invalid at output (its connection, in output's zone 1, saw no reply:
  // the SYN-ACK was in zone 0) leaves it without an entry (nf_conntrack_in: skb->_nfct = 0), so
  // prerouting looks it up afresh in zone 0 and opens a connection there (kernel-checked,
  // test/kernel/differential.test.ts "to a local address").
  it('looks a packet found invalid at output up afresh when it comes back in', () => {
    const text = `table ip t {
      chain zone { type filter hook output priority -300; policy accept; ip daddr 192.0.2.10 ct zone set 1 }
      chain out { type filter hook output priority 0; policy accept; ct state invalid counter }
      chain pre { type nat hook prerouting priority -100; policy accept; }
      chain in { type filter hook input priority 0; policy accept; ct state new counter }
    }`;
    const syn = { src: '100.64.1.1', dst: '192.0.2.10', dport: 80, sport: 40001 };
    const { outcomes } = simulateFlow(parse(text), { host: HOST, packets: [syn, { reply: true }, { ...syn, tcpFlags: 'ack' }] });
    const ack = outcomes[0]!.packets[2]!;
    expect(ack).toMatchObject({ disposition: 'delivered', iif: 'lo' });
    expect(ack.trace.map((e) => `${e.hook} ${e.chain} ${e.kind}`)).toEqual([
      'output zone rule',
      'output zone policy',
      'output out rule',
      'output out policy',
      'prerouting pre policy',
      'input in rule',
      'input in policy',
    ]);
  });

  it('still sends a local packet to another host out of its interface', () => {
    expect(simulateOne('table ip t { chain o { type filter hook output priority 0; } }', { dst: '192.0.2.99' })).toMatchObject({ disposition: 'sent', oif: 'eth0' });
  });
});
