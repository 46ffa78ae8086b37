import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';

const EXAMPLE = join(resolve(import.meta.dirname, '../..'), 'corpus/examples/nodeport-masquerade');
const RULES = ['node.nft', 'node.ipt'].map((f) => join(EXAMPLE, f));

function temp(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'nftsim-run-')), name);
  writeFileSync(path, text);
  return path;
}

async function run(args: string[]) {
  let out = '';
  let err = '';
  const code = await main(['node', 'nftsim', 'run', ...args], { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

const YAML_HOST = `host:
  interfaces:
    - { name: eth0, addresses: [192.0.2.10/24] }
    - { name: wt0, addresses: [100.64.1.1/16] }
    - { name: cni0, addresses: [10.244.0.1/16] }
  routes:
    - { dst: 10.244.1.0/24, dev: cni0 }
    - { dst: 10.244.2.0/24, dev: cni0 }
`;
const FLOW = `${YAML_HOST}flows:
  - name: nodeport
    packets:
      - name: syn
        packet: { iif: wt0, src: 100.64.2.2, dst: 192.0.2.10, sport: 41000, dport: 30080 }
        expect: { nat: [dnat], mark: 0x0/0x4000 }
      - name: answer
        packet: { reply: true }
        expect: { oif: wt0, src: "192.0.2.10:30080" }
`;

describe('nftsim run with YAML scenarios and flows', () => {
  it('reads YAML by extension and prints a PASS line per packet of a flow', async () => {
    const { code, out } = await run([temp('s.yaml', FLOW), ...RULES]);
    expect(code).toBe(0);
    expect(out).toBe('PASS nodeport / syn\nPASS nodeport / answer\n');
  });

  it('reads YAML by content when the name does not say', async () => {
    expect((await run([temp('scenario', FLOW), ...RULES])).code).toBe(0);
  });

  it('prints every packet\'s trace with --trace, the conntrack NAT marked as such', async () => {
    const { out } = await run(['--trace', '--seed', '1', temp('s.yaml', FLOW), ...RULES]);
    expect(out).toMatch(/PASS nodeport \/ answer\n[^]*=> forwarded \(accept\) iif cni0 oif wt0\n {3}tcp 192\.0\.2\.10:30080 -> 100\.64\.2\.2:41000 {2}mark 0x00000000 {2}ct mark 0x0001bd10\n {3}dnat to 192\.0\.2\.10:30080 {2}\(conntrack, reply direction, set up by .*node\.ipt:\d+\)/);
  });

  // The null binding at postrouting moves the second connection's source port (its tuple is the
  // first one's after the DNAT): no rule set that mapping up.
  it('says so where the kernel moved a port with no rule', async () => {
    const udp = '{ iif: eth0, src: 192.0.2.99, protocol: udp, sport: 5555, dport: 53';
    const flow = `${YAML_HOST}flows:\n  - name: two\n    packets:\n      - packet: ${udp}, dst: 10.244.1.7 }\n      - packet: ${udp}, dst: 10.244.1.8 }\n`;
    const rules = temp('r.nft', 'table ip nat {\n  chain pre { type nat hook prerouting priority dstnat; policy accept; dnat to 10.244.1.5 }\n}\n');
    const { out } = await run(['--trace', temp('s.yaml', flow), rules]);
    expect(out).toContain('   snat to 192.0.2.99:1024-65535  (the kernel, no rule: the tuple was taken)\n');
  });

  it('gives per packet the flow and the outcomes of every branch with --json', async () => {
    const { out } = await run(['--json', temp('s.yaml', FLOW), ...RULES]);
    const json = JSON.parse(out);
    expect(json.results.map((r: { flow: string; name: string; pass: boolean; outcomes: unknown[] }) => [r.flow, r.name, r.pass, r.outcomes.length])).toEqual([
      ['nodeport', 'syn', true, 2],
      ['nodeport', 'answer', true, 2],
    ]);
    expect(json.results[1].outcomes[1]).toMatchObject({ probability: 0.5, iif: 'cni0', nat: [{ type: 'dnat', conntrack: 'reply' }] });
  });

  it('exits 1 on a failed expectation of a flow packet, with its trace', async () => {
    const { code, out } = await run([temp('s.yaml', FLOW.replace('oif: wt0', 'oif: eth0')), ...RULES]);
    expect(code).toBe(1);
    expect(out).toContain('FAIL nodeport / answer\n  outcome 1: oif: expected eth0, got wt0\n');
    expect(out).toContain('=> forwarded (accept) iif cni0 oif wt0');
  });

  it.each([
    ['a YAML syntax error', `${YAML_HOST}flows: [ { name: x\n`, /s\.yaml:\d+:\d+: error: YAML: /],
    ['an unknown field', FLOW.replace('sport: 41000', 'sprot: 41000'), /s\.yaml:13:63: error: flows\[0\]\.packets\[0\]\.packet\.sprot: unknown field/],
    ['a wrong value', FLOW.replace('dport: 30080', 'dport: 70000'), /s\.yaml:13:77: error: flows\[0\]\.packets\[0\]\.packet\.dport: expected an integer/],
    ['a bad host address', FLOW.replace('192.0.2.10/24', '192.0.2.300/24'), /s\.yaml:3:33: error: host\.interfaces\[0\]\.addresses\[0\]/],
    ['a bad reply override', FLOW.replace('{ reply: true }', '{ reply: true, iif: wt9 }'), /s\.yaml:16:32: error: flows\[0\]\.packets\[1\]\.packet\.iif: unknown interface 'wt9'/],
  ])('exits 2 on %s, naming file:line:column with the line and a caret', async (_name, text, message) => {
    const { code, out, err } = await run([temp('s.yaml', text), ...RULES]);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(message);
    expect(err).toMatch(/\n\s*\^/);
  });
});

const HOST = { interfaces: [{ name: 'eth0', addresses: ['192.0.2.10/24'] }, { name: 'wt0', addresses: ['100.64.1.1/16'] }, { name: 'cni0', addresses: ['10.244.0.1/16'] }], routes: [{ dst: '10.244.1.0/24', dev: 'cni0' }, { dst: '10.244.2.0/24', dev: 'cni0' }] };
const PACKET = { iif: 'wt0', src: '100.64.2.2', dst: '192.0.2.10', dport: 30080 };

describe('nftsim run', () => {
  it('prints the trace like nft monitor trace, file:line, the mark where it changes, then the outcome', async () => {
    const { code, out } = await run([temp('p.json', JSON.stringify({ host: HOST, packet: PACKET })), ...RULES]);
    expect(code).toBe(0);
    expect(out).toContain('-- branch 1 of 2, probability 0.5\n');
    expect(out).toContain('prerouting  ip nat KUBE-MARK-MASQ rule counter packets 0 bytes 0 meta mark set mark or 0x4000 (verdict continue)  (node.ipt:42)  mark 0x0001fd20\n'.replace('node.ipt', join(EXAMPLE, 'node.ipt')));
    expect(out).toContain('ip nat POSTROUTING policy accept');
    expect(out).toContain('=> forwarded (accept) iif wt0 oif cni0\n   tcp 100.64.2.2:40000 -> 10.244.1.10:8080  mark 0x0001bd20  ct mark 0x0001bd10\n');
  });

  it('prints an ICMP query\'s identifier after its addresses', async () => {
    const echo = { iif: 'eth0', src: '192.0.2.99', dst: '10.244.1.10', protocol: 'icmp', icmpId: 7 };
    const { out } = await run([temp('p.json', JSON.stringify({ host: HOST, packet: echo })), temp('empty.nft', '')]);
    expect(out).toContain('   icmp 192.0.2.99 -> 10.244.1.10 id 7  mark 0x00000000');
  });

  it('prints simulatePacket\'s object with --json', async () => {
    const { code, out } = await run(['--json', temp('p.json', JSON.stringify({ host: HOST, packet: PACKET })), ...RULES]);
    expect(code).toBe(0);
    const json = JSON.parse(out);
    expect(json.outcomes).toHaveLength(2);
    expect(json.outcomes[0]).toMatchObject({ probability: 0.5, disposition: 'forwarded', verdict: 'accept', iif: 'wt0', oif: 'cni0', mark: '0x0001bd20', nat: [{ type: 'dnat', to: '10.244.1.10:8080' }] });
    expect(json.outcomes[0].trace[0]).toEqual(expect.objectContaining({ hook: 'prerouting', family: 'ip', table: 'netbird', chain: 'netbird-mangle-prerouting', priority: -150, kind: 'rule', verdict: 'continue' }));
  });

  it('accepts ip -j addr show and ip -j route show as --host', async () => {
    const addr = temp('addr.json', JSON.stringify([
      { ifindex: 1, ifname: 'lo', flags: ['LOOPBACK'], addr_info: [{ family: 'inet', local: '127.0.0.1', prefixlen: 8 }] },
      { ifindex: 2, ifname: 'eth0', mtu: 1500, addr_info: [{ family: 'inet', local: '192.0.2.10', prefixlen: 24, scope: 'global' }] },
      { ifindex: 3, ifname: 'wt0', addr_info: [{ family: 'inet', local: '100.64.1.1', prefixlen: 16 }] },
      { ifindex: 4, ifname: 'cni0', addr_info: [{ family: 'inet', local: '10.244.0.1', prefixlen: 16 }] },
    ]));
    const route = temp('route.json', JSON.stringify([{ dst: 'default', gateway: '192.0.2.1', dev: 'eth0', flags: [] }, { dst: '10.244.1.0/24', dev: 'cni0', protocol: 'kernel' }]));
    const { code, out } = await run(['--json', '--seed', '1', '--host', addr, '--host', route, temp('p.json', JSON.stringify({ packet: PACKET })), ...RULES]);
    expect(code).toBe(0);
    expect(JSON.parse(out).outcomes).toHaveLength(1);
  });

  it.each([
    ['a bad route of the second', [{ dst: 'default', gateway: '192.0.2.1', dev: 'eth0' }, { dst: 'zzz', dev: 'eth0' }], /route\.json:1:\d+: error: \[1\]\.dst: 'zzz' is not 'default' or a prefix/],
    ['a route through an interface no file gives', [{ dst: '10.0.0.0/8', dev: 'bogus0' }], /route\.json:1:\d+: error: \[0\]\.dev: route to 10\.0\.0\.0\/8 uses unknown interface 'bogus0'/],
    ['a multipath route with a weight beyond 256', [{ dst: '10.0.0.0/8', nexthops: [{ gateway: '192.0.2.1', dev: 'eth0', weight: 300 }, { gateway: '192.0.2.2', dev: 'eth0' }] }], /route\.json:1:\d+: error: \[0\]\.nexthops\[0\]\.weight: expected a weight from 1 to 256/],
  ])('blames the --host file of %s', async (_name, routes, message) => {
    const addr = temp('addr.json', JSON.stringify([{ ifname: 'eth0', addr_info: [{ family: 'inet', local: '192.0.2.10', prefixlen: 24 }] }]));
    const { code, err } = await run(['--host', addr, '--host', temp('route.json', JSON.stringify(routes)), temp('p.json', JSON.stringify({ packet: { iif: 'eth0', src: '192.0.2.1', dst: '192.0.2.10' } })), ...RULES]);
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err).not.toContain('addr.json');
  });

  it('refuses an address of ip -j addr show it cannot read, naming it', async () => {
    const addr = temp('addr.json', JSON.stringify([{ ifname: 'eth0', addr_info: [{ family: 'inet', local: '192.0.2.300', prefixlen: 24 }] }]));
    const { code, err } = await run(['--host', addr, temp('p.json', JSON.stringify({ packet: { iif: 'eth0', src: '192.0.2.1', dst: '192.0.2.10' } })), ...RULES]);
    expect(code).toBe(2);
    expect(err).toMatch(/addr\.json:1:\d+: error: \[0\]\.addr_info\[0\]: expected `local` and `prefixlen` of an address/);
  });

  it.each([
    ['an unknown field', { host: HOST, packet: { ...PACKET, dprot: 1 } }, /p\.json:1:\d+: error: packet\.dprot: unknown field/],
    ['a wrong value', { host: HOST, packet: { ...PACKET, sport: 70000 } }, /error: packet\.sport: expected an integer from 0 to 65535/],
    ['an unknown interface', { host: HOST, packet: { ...PACKET, iif: 'wt9' } }, /error: packet\.iif: unknown interface 'wt9'/],
    ['a bad host address', { host: { interfaces: [{ name: 'eth0', addresses: ['192.0.2.300/24'] }] }, packet: PACKET }, /error: host\.interfaces\[0\]\.addresses\[0\]: '192\.0\.2\.300\/24' is not an address/],
    ['an unknown top-level field', { host: HOST, packet: PACKET, pakcet: {} }, /error: pakcet: unknown field/],
  ])('exits 2 on %s, naming the field at file:line:col', async (_name, input, message) => {
    const { code, out, err } = await run([temp('p.json', JSON.stringify(input)), ...RULES]);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(message);
  });

  it('exits 2 on JSON syntax errors with the position', async () => {
    const { code, err } = await run([temp('p.json', '{\n  "packet": {,\n}\n'), ...RULES]);
    expect(code).toBe(2);
    expect(err).toMatch(/p\.json:2:\d+: error: JSON: /);
  });
});
