// fast-check arbitraries for iptables rule specs, written as iptables-save text.
import fc from 'fast-check';

const maybeNot = fc.boolean().map((b) => (b ? '! ' : ''));
const byte = fc.integer({ min: 0, max: 255 });
const ipv4 = fc.tuple(byte, byte, byte, byte).map((b) => b.join('.'));
const ipv4Prefix = fc.tuple(ipv4, fc.option(fc.integer({ min: 0, max: 32 }), { nil: undefined })).map(([a, p]) => (p === undefined ? a : `${a}/${p}`));
const port = fc.integer({ min: 0, max: 65535 });
const portRange = fc.tuple(port, port).map(([a, b]) => (a === b ? `${a}` : `${Math.min(a, b)}:${Math.max(a, b)}`));
const hex32 = fc.integer({ min: 0, max: 0xffffffff }).map((n) => `0x${n.toString(16)}`);
const ifname = fc.tuple(fc.constantFrom('eth', 'veth', 'wt', 'cali', 'docker', 'lo'), fc.option(fc.nat(99), { nil: undefined }), fc.boolean()).map(
  ([base, n, wildcard]) => `${base}${n ?? ''}${wildcard ? '+' : ''}`,
);
const chainName = fc.constantFrom('KUBE-SERVICES', 'KUBE-SVC-ABCDEF', 'DOCKER-USER', 'cali-fw-abc', 'ufw-user-input');
/** Free text as comments and log prefixes hold it: blanks, quotes, backslashes, leading dashes. */
const freeText = fc.string({ unit: fc.constantFrom('a', 'Z', '0', ' ', '"', "'", '\\', '-', '!', '#', ':', '/', '*', 'é'), maxLength: 20 });

function quote(s: string): string {
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

const someOf = (names: readonly string[]) => fc.subarray([...names], { minLength: 1 }).map((s) => s.join(','));

const matchArb = fc.oneof(
  freeText.map((t) => `-m comment --comment ${quote(t)}`),
  fc.tuple(maybeNot, someOf(['NEW', 'ESTABLISHED', 'RELATED', 'INVALID', 'DNAT', 'SNAT'])).map(([n, s]) => `-m conntrack ${n}--ctstate ${s}`),
  fc.tuple(maybeNot, hex32, hex32).map(([n, v, m]) => `-m mark ${n}--mark ${v}/${m}`),
  fc.tuple(maybeNot, hex32).map(([n, v]) => `-m connmark ${n}--mark ${v}`),
  fc.tuple(maybeNot, someOf(['LOCAL', 'UNICAST', 'BROADCAST'])).map(([n, t]) => `-m addrtype ${n}--dst-type ${t}`),
  fc.integer({ min: 0, max: 1_000_000 }).map((n) => `-m statistic --mode random --probability ${(n / 1_000_000).toFixed(11)}`),
  fc.tuple(fc.constantFrom('KUBE-LB', 'cali40s:abc', 'blocklist'), someOf(['src', 'dst'])).map(([s, f]) => `-m set --match-set ${s} ${f}`),
  fc.tuple(fc.integer({ min: 1, max: 1000 }), fc.constantFrom('sec', 'minute', 'hour', 'day')).map(([n, u]) => `-m limit --limit ${n}/${u}`),
  fc.tuple(ipv4, ipv4).map(([a, b]) => `-m iprange --src-range ${a}-${b}`),
  fc.tuple(maybeNot, ifname).map(([n, i]) => `-m physdev ${n}--physdev-in ${i}`),
  fc.tuple(fc.constantFrom('frob', 'xyz'), fc.array(fc.constantFrom('1', 'a', '0x2'), { maxLength: 3 })).map(([m, a]) => `-m ${m} --opt ${a.join(' ')}`.trimEnd()),
);

const tcpMatchArb = fc.oneof(
  fc.tuple(maybeNot, portRange).map(([n, p]) => `-m tcp ${n}--dport ${p}`),
  fc.tuple(maybeNot, portRange).map(([n, p]) => `-m tcp ${n}--sport ${p}`),
  fc.array(port, { minLength: 1, maxLength: 5 }).map((ps) => `-m multiport --dports ${ps.join(',')}`),
  fc.constant('-m tcp --tcp-flags FIN,SYN,RST,ACK SYN'),
);

const targetArb = fc.oneof(
  fc.constantFrom('-j ACCEPT', '-j DROP', '-j RETURN', '-j NOTRACK'),
  chainName.map((c) => `-j ${c}`),
  chainName.map((c) => `-g ${c}`),
  fc.tuple(hex32, hex32).map(([v, m]) => `-j MARK --set-xmark ${v}/${m}`),
  freeText.map((t) => `-j LOG --log-prefix ${quote(t)}`),
  fc.tuple(ipv4, port).map(([a, p]) => `-j DNAT --to-destination ${a}:${p}`),
  fc.constantFrom('-j MASQUERADE --random-fully', '-j REJECT --reject-with icmp-port-unreachable', '-j CT --zone 3'),
);

/** A rule spec (the text after `-A CHAIN`) in iptables-save's shape. */
export const ruleSpecArb: fc.Arbitrary<string> = fc
  .record({
    source: fc.option(fc.tuple(maybeNot, ipv4Prefix), { nil: undefined }),
    destination: fc.option(fc.tuple(maybeNot, ipv4Prefix), { nil: undefined }),
    inInterface: fc.option(fc.tuple(maybeNot, ifname), { nil: undefined }),
    outInterface: fc.option(fc.tuple(maybeNot, ifname), { nil: undefined }),
    tcp: fc.boolean(),
    matches: fc.array(matchArb, { maxLength: 4 }),
    tcpMatches: fc.array(tcpMatchArb, { maxLength: 2 }),
    target: fc.option(targetArb, { nil: undefined }),
  })
  .map((r) =>
    [
      r.source && `${r.source[0]}-s ${r.source[1]}`,
      r.destination && `${r.destination[0]}-d ${r.destination[1]}`,
      r.inInterface && `${r.inInterface[0]}-i ${r.inInterface[1]}`,
      r.outInterface && `${r.outInterface[0]}-o ${r.outInterface[1]}`,
      r.tcp ? '-p tcp' : undefined,
      ...r.matches,
      ...(r.tcp ? r.tcpMatches : []),
      r.target,
    ]
      .filter((p) => p !== undefined)
      .join(' '),
  );
