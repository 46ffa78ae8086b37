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
