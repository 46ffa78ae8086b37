// The chain and set indexes (src/sim/chain-index.ts, src/sim/lookup-element.ts) only skip work:
// with them and with a plain scan of every rule and element, every packet has the same outcomes.
// Checked on generated rulesets whose long chains mix indexed tests (exact header fields, meta
// keys, fib) with the rest (negations, prefixes, wildcards, sets, maps, rewrites of the tested
// fields, NAT to a port range that the next tests cannot read), and on small kube-proxy dumps.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateKubeProxyDump } from '../../bench/gen/kube-proxy-dump.mjs';
import type { Ruleset } from '../../src/model/ast.js';
import { withoutIndexes } from '../../src/sim/chain-index.js';
import type { HostInput } from '../../src/sim/host.js';
import type { PacketInput } from '../../src/sim/packet.js';
import { simulatePacket } from '../../src/sim/simulate-packet.js';
import { parse } from './helpers.js';

const HOST: HostInput = {
  interfaces: [
    { name: 'eth0', addresses: ['192.168.0.2/24'] },
    { name: 'eth1', addresses: ['10.0.0.254/16'] },
  ],
  routes: [{ dst: 'default', via: '192.168.0.1', dev: 'eth0' }],
};

/** Both ways, every outcome in full (trace, marks, NAT); indexed several times, the later ones
 * with the rules met before compiled (src/sim/compile-rule.ts compiles a rule on its first run). */
function expectSameOutcomes(ruleset: Ruleset, packet: PacketInput): void {
  const scanned = withoutIndexes(() => simulatePacket(ruleset, { host: HOST, packet }));
  for (let run = 0; run < 4; run++) expect(simulatePacket(ruleset, { host: HOST, packet })).toEqual(scanned);
}

// Few distinct values, so that generated tests and packets often meet.
const ADDRESSES = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.5', '10.0.1.1', '192.168.0.2', '192.168.0.9'];
const PORTS = [22, 53, 80, 443, 8080];
const address = fc.constantFrom(...ADDRESSES);
const port = fc.constantFrom(...PORTS);
const proto = fc.constantFrom('tcp', 'udp');
const mark = fc.constantFrom('0x0', '0x1', '0x4000');

/** Exact tests the chain index keys on, one arbitrary per field. `meta iif 2` reads a name
 * where the literal is an index: comparing them is not modelled (the scan reports it). */
const KEY_FIELDS: readonly fc.Arbitrary<string>[] = [
  proto.map((p) => `meta l4proto ${p}`),
  address.map((a) => `ip saddr ${a}`),
  address.map((a) => `ip daddr ${a}`),
  port.map((n) => `tcp dport ${n}`),
  port.map((n) => `udp dport ${n}`),
  port.map((n) => `th dport ${n}`),
  fc.constantFrom('eth0', 'eth1').map((i) => `iifname "${i}"`),
  fc.constantFrom('"eth0"', '"eth1"', '2').map((i) => `meta iif ${i}`),
  mark.map((m) => `meta mark ${m}`),
  fc.constantFrom('local', 'unicast').map((t) => `fib daddr type ${t}`),
];

/** Tests it does not key on (and that end the run of keyed tests of a rule). */
const otherTest = fc.oneof(
  address.map((a) => `ip daddr != ${a}`),
  fc.constantFrom('ip daddr 10.0.0.0/30', 'ip saddr 10.0.0.0/24', 'ip daddr 10.0.0.0-10.0.0.2'),
  fc.constant('iifname "eth*"'),
  fc.constant('iifname { "eth1", "et*" }'),
  fc.constant('meta iif { 2, 3 }'),
  fc.uniqueArray(fc.oneof(address, fc.constantFrom('10.0.0.0/31', '10.0.1.0/24', '10.0.0.2-10.0.0.4')), { minLength: 1, maxLength: 4 }).map((xs) => `ip daddr { ${xs.join(', ')} }`),
  fc.constant('ip daddr @addrs'),
  fc.constant('ip daddr . tcp dport @pairs'),
  fc.tuple(address, port).map(([a, p]) => `ip daddr . tcp dport { ${a} . ${p}, 10.0.0.0/24 . 22 }`),
  fc.constant('ct state new'),
  fc.constant('meta mark & 0x4000 == 0x4000'),
);

/** Statements before the verdict that change what later tests read. */
const effect = fc.oneof(
  mark.map((m) => `meta mark set ${m}`),
  address.map((a) => `ip daddr set ${a}`),
  port.map((p) => `tcp dport set ${p}`),
  fc.constant('counter'),
);

/** What follows a rule's keyed tests: other tests, an effect, a verdict (jumps go only to later
 * chains, so there is no loop). */
function ruleTail(chainIndex: number, chains: number, nat: boolean): fc.Arbitrary<string> {
  const targets = Array.from({ length: chains - chainIndex - 1 }, (_, i) => `c${chainIndex + 1 + i}`);
  const verdicts: fc.Arbitrary<string>[] = [fc.constantFrom('', 'accept', 'drop', 'return', 'counter')];
  if (targets.length > 0) {
    verdicts.push(fc.tuple(fc.constantFrom('jump', 'goto'), fc.constantFrom(...targets)).map(([v, t]) => `${v} ${t}`));
  }
  // A NAT to a port range leaves the port unknown: later tests of it are not modelled.
  if (nat) verdicts.push(fc.oneof(address.map((a) => `dnat to ${a}`), fc.constant('dnat to 10.0.0.5:1000-2000'), fc.constant('meta l4proto tcp dnat to 10.0.0.3:8080')));
  else verdicts.push(fc.constant('ip daddr . meta l4proto . th dport vmap @services'));
  return fc
    .tuple(fc.array(fc.oneof(otherTest, ...KEY_FIELDS), { maxLength: 2 }), fc.option(effect, { freq: 4 }), fc.oneof(...verdicts))
    .map(([others, change, verdict]) => [...others, change ?? '', verdict].filter((x) => x !== '').join(' '));
}

/** A block of rules opening with tests of the same one or two fields (other values each rule),
 * the shape of kube-proxy's long chains, so that runs long enough to be indexed occur. */
function block(chainIndex: number, chains: number, nat: boolean): fc.Arbitrary<string[]> {
  const fields = fc.uniqueArray(fc.integer({ min: 0, max: KEY_FIELDS.length - 1 }), { minLength: 0, maxLength: 2 });
  return fields.chain((picked) =>
    fc.array(
      fc.tuple(fc.tuple(...picked.map((i) => KEY_FIELDS[i]!)), ruleTail(chainIndex, chains, nat)).map(([keys, tail]) => [...keys, tail].filter((x) => x !== '').join(' ') || 'counter'),
      { minLength: 1, maxLength: 12 },
    ),
  );
}

const rules = (chainIndex: number, chains: number, nat: boolean): fc.Arbitrary<string[]> =>
  fc.array(block(chainIndex, chains, nat), { maxLength: 4 }).map((blocks) => blocks.flat());

const CHAINS = 4;
const rulesetText = fc
  .tuple(
    rules(-1, CHAINS, true),
    rules(-1, CHAINS, false),
    rules(-1, CHAINS, false),
    fc.tuple(...Array.from({ length: CHAINS }, (_, i) => rules(i, CHAINS, false))),
    fc.uniqueArray(fc.oneof(address, fc.constantFrom('10.0.0.0/30', '10.0.1.0/28', '10.0.0.4-10.0.0.6')), { maxLength: 6 }),
    fc.uniqueArray(fc.tuple(address, port).map(([a, p]) => `${a} . ${p}`), { maxLength: 6 }),
    fc.uniqueArray(fc.tuple(address, proto, port).map(([a, pr, p]) => `${a} . ${pr} . ${p}`), { maxLength: 8 }),
  )
  .map(([pre, fwd, input, regular, addrs, pairs, services]) => {
    const chain = (name: string, head: string, body: string[]) => `  chain ${name} {\n${head ? `    ${head}\n` : ''}${body.map((r) => `    ${r}\n`).join('')}  }\n`;
    const elements = (xs: string[]) => (xs.length > 0 ? ` elements = { ${xs.join(', ')} }` : '');
    return [
      'table ip t {',
      `  set addrs { type ipv4_addr; flags interval;${elements(addrs)} }`,
      `  set pairs { type ipv4_addr . inet_service;${elements(pairs)} }`,
      `  map services { type ipv4_addr . inet_proto . inet_service : verdict;${elements(services.map((s, i) => `${s} : ${['accept', 'drop', 'return'][i % 3]}`))} }`,
      chain('pre', 'type nat hook prerouting priority dstnat; policy accept;', pre),
      chain('fwd', 'type filter hook forward priority 0; policy accept;', fwd),
      chain('in', 'type filter hook input priority 0; policy drop;', input),
      ...regular.map((body, i) => chain(`c${i}`, '', body)),
      '}',
      '',
    ].join('\n');
  });

const packet: fc.Arbitrary<PacketInput> = fc
  .record({
    iif: fc.constantFrom('eth0', 'eth1'),
    src: address,
    dst: address,
    protocol: fc.constantFrom('tcp', 'udp', 'icmp'),
    dport: port,
    mark,
  })
  .map(({ protocol, dport, ...rest }) => (protocol === 'icmp' ? { ...rest, protocol } : { ...rest, protocol, dport }));

describe('chain and set indexes', () => {
  it('give the outcomes of a plain scan on generated rulesets', () => {
    fc.assert(
      fc.property(rulesetText, fc.array(packet, { minLength: 1, maxLength: 8 }), (text, packets) => {
        const ruleset = parse(text);
        for (const p of packets) expectSameOutcomes(ruleset, p);
      }),
      { numRuns: 150 },
    );
  });

  // Found by the property above (seed -1697116624): `meta iif 2` (an index) and `meta iif "eth0"`
  // in one rule gave the run's index the wrong type for the field, so it skipped the rule the
  // scan reports as unsupported.
  it('give the outcomes of a plain scan when one rule tests a field as an integer and a name', () => {
    const pre = [
      'meta iif 2 ip saddr 10.0.0.1 meta iif "eth0" jump c0',
      'meta iif "eth0" ip saddr 10.0.0.1 dnat to 10.0.0.5:1000-2000',
      'meta l4proto tcp meta l4proto tcp dnat to 10.0.0.3:8080',
      'meta l4proto tcp jump c0',
      'meta l4proto tcp dnat to 10.0.0.1',
      'meta l4proto tcp meta l4proto tcp dnat to 10.0.0.3:8080',
      'meta l4proto tcp jump c0',
      'meta l4proto tcp',
    ];
    const text = ['table ip t {', '  chain pre {', '    type nat hook prerouting priority dstnat; policy accept;', ...pre.map((r) => `    ${r}`), '  }', '  chain c0 {', '  }', '}', ''].join('\n');
    expectSameOutcomes(parse(text), { iif: 'eth0', src: '10.0.0.1', dst: '10.0.0.1', protocol: 'tcp', dport: 22 });
  });

  // iptables' owner match without a socket gives its inversion (xt_owner.c), which the index's
  // probe of `meta skuid` cannot read: a rule keyed on `--uid-owner N` is passed over, as the
  // match fails; a rule whose every test is negated matches, and is no key.
  it('give the outcomes of a plain scan on a run of iptables owner tests of a forwarded packet', () => {
    const rules = [...Array.from({ length: 9 }, (_, i) => `-A POSTROUTING -m owner --uid-owner ${i} -j MARK --set-xmark 0x${i + 1}/0xff`), '-A POSTROUTING -m owner ! --uid-owner 0 -j MARK --set-xmark 0x100/0x100'];
    const ruleset = parse(['*mangle', ':POSTROUTING ACCEPT [0:0]', ...rules, 'COMMIT', ''].join('\n'));
    const packet: PacketInput = { iif: 'eth0', src: '203.0.113.2', dst: '10.0.0.5', protocol: 'tcp', dport: 80 };
    expectSameOutcomes(ruleset, packet);
    expect(simulatePacket(ruleset, { host: HOST, packet }).outcomes[0]!.mark).toBe('0x00000100');
  });

  it('give the outcomes of a plain scan on kube-proxy dumps', () => {
    fc.assert(
      fc.property(
        fc.record({ services: fc.integer({ min: 10, max: 60 }), endpointsPerService: fc.integer({ min: 1, max: 3 }), seed: fc.nat(), sessionAffinity: fc.boolean() }),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom('service', 'node-port', 'miss')), { minLength: 1, maxLength: 6 }),
        (options, picks) => {
          const text = generateKubeProxyDump({ ...options, nodePorts: true });
          const ruleset = parse(text);
          const nat = text.slice(text.indexOf('\n*nat'));
          const services = [...nat.matchAll(/^-A KUBE-SERVICES -d ([\d.]+)\/32 -p (tcp|udp) .*--dport (\d+) -j /gm)];
          const nodePorts = [...nat.matchAll(/^-A KUBE-NODEPORTS -p (tcp|udp) .*--dport (\d+) -j /gm)];
          for (const [n, kind] of picks) {
            const s = services[n % services.length];
            const np = nodePorts[n % Math.max(1, nodePorts.length)];
            const packet: PacketInput =
              kind === 'service' && s ? { iif: 'eth0', src: '203.0.113.2', dst: s[1]!, protocol: s[2]!, dport: Number(s[3]) }
              : kind === 'node-port' && np ? { iif: 'eth0', src: '203.0.113.2', dst: '192.168.0.2', protocol: np[1]!, dport: Number(np[2]) }
              : { iif: 'eth0', src: '203.0.113.2', dst: `172.30.${n % 256}.${(n >> 8) % 256}`, dport: 1 + (n % 1000) };
            expectSameOutcomes(ruleset, packet);
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
