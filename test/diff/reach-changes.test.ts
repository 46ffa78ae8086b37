import { describe, expect, it } from 'vitest';
import { reachFilterOf } from '../../src/diff/reach-changes.js';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';

// A kube-proxy-like nat table: services by ClusterIP and port, one service's endpoint chain changed.
const NAT = `table ip nat {
  chain PREROUTING { type nat hook prerouting priority dstnat; policy accept; counter jump KUBE-SERVICES }
  chain OUTPUT { type nat hook output priority dstnat; policy accept; counter jump KUBE-SERVICES }
  chain KUBE-SERVICES {
    ip daddr 10.96.0.1 tcp dport 443 jump KUBE-SVC-A
    ip daddr 10.96.0.2 udp dport 53 jump KUBE-SVC-B
    iifname != "wt0" ip daddr 10.96.0.3 tcp dport 80 jump KUBE-SVC-C
  }
  chain KUBE-SVC-A { jump KUBE-SEP-A }
  chain KUBE-SVC-B { jump KUBE-SEP-B }
  chain KUBE-SVC-C { jump KUBE-SEP-C }
  chain KUBE-SEP-A { meta l4proto tcp dnat to 10.244.1.1:443 }
  chain KUBE-SEP-B { meta l4proto udp dnat to 10.244.1.2:53 }
  chain KUBE-SEP-C { meta l4proto tcp dnat to 10.244.1.3:80 }
}`;

const ruleset = parseRuleset(NAT, { file: 'nat.nft' }).ruleset;

describe('reachFilterOf', () => {
  it.each([
    ['the changed service from outside', ['ip nat KUBE-SEP-A'], { iif: 'eth0', src: '192.0.2.7', dst: '10.96.0.1', protocol: 'tcp', dport: 443 }, true],
    ['the changed service, sent locally', ['ip nat KUBE-SEP-A'], { dst: '10.96.0.1', protocol: 'tcp', dport: 443 }, true],
    ['another service', ['ip nat KUBE-SEP-A'], { iif: 'eth0', dst: '10.96.0.2', protocol: 'udp', dport: 53 }, false],
    ['the changed service\'s address on another port', ['ip nat KUBE-SEP-A'], { iif: 'eth0', dst: '10.96.0.1', protocol: 'tcp', dport: 80 }, false],
    ['the changed service\'s port over udp', ['ip nat KUBE-SEP-A'], { iif: 'eth0', dst: '10.96.0.1', protocol: 'udp', dport: 443 }, false],
    ['a service whose rule excludes the interface', ['ip nat KUBE-SEP-C'], { iif: 'wt0', dst: '10.96.0.3', protocol: 'tcp', dport: 80 }, false],
    ['the same service from another interface', ['ip nat KUBE-SEP-C'], { iif: 'eth0', dst: '10.96.0.3', protocol: 'tcp', dport: 80 }, true],
    ['anything, when a base chain changed', ['ip nat PREROUTING'], { iif: 'eth0', dst: '10.96.0.2', protocol: 'udp', dport: 53 }, true],
    ['nothing, when nothing changed', [], { iif: 'eth0', dst: '10.96.0.1', protocol: 'tcp', dport: 443 }, false],
  ] as const)('%s: %s', (_name, changed, packet, reaches) => {
    const may = reachFilterOf([ruleset], new Set(changed), new Set());
    expect(may(packet)).toBe(reaches);
  });

  it('keeps every probe when a chain a reply may pass (not nat) leads to a change', () => {
    const { ruleset: filter } = parseRuleset('table ip filter { chain FORWARD { type filter hook forward priority 0; ip daddr 10.0.0.1 jump X } chain X { accept } }', { file: 'f.nft' });
    const may = reachFilterOf([filter], new Set(['ip filter X']), new Set());
    expect(may({ iif: 'eth0', dst: '10.9.9.9', protocol: 'tcp', dport: 1 })).toBe(true);
  });
});
