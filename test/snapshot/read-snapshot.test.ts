import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSnapshot } from '../../src/snapshot/read-snapshot.js';
import { readHost } from '../../src/sim/host.js';
import { formatAddress } from '../../src/sim/address.js';

function dir(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), 'nftsim-snapshot-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
  return d;
}

const NFT = 'table ip t {\n\tchain c {\n\t\ttype filter hook input priority 0; policy accept;\n\t}\n}\n';
const IPT = '*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -i wt0 -j ACCEPT\nCOMMIT\n';
const IP_ADDR = JSON.stringify([{ ifname: 'eth0', addr_info: [{ family: 'inet', local: '192.0.2.10', prefixlen: 24 }] }]);
const IP_ROUTE = JSON.stringify([{ dst: 'default', gateway: '192.0.2.1', dev: 'eth0' }]);

describe('readSnapshot', () => {
  it('reads a directory by content: rulesets, ip -j addr/route, and skips notes and other JSON', () => {
    const d = dir({ 'ruleset.txt.nft': NFT, 'iptables': IPT, 'addr.json': IP_ADDR, 'route': IP_ROUTE, 'NOTES.md': '# notes', 'expected.json': '{"findings":[]}' });
    const { snapshot, diagnostics } = readSnapshot(d);
    expect(diagnostics.map((x) => x.message)).toEqual([]);
    expect(snapshot!.sources.map((s) => s.file.split('/').pop()).sort()).toEqual(['iptables', 'ruleset.txt.nft']);
    expect(snapshot!.host).toEqual({ interfaces: JSON.parse(IP_ADDR), routes: [{ dst: 'default', family: 'ip', dev: 'eth0', table: '254', type: 'unicast', via: '192.0.2.1' }] });
  });

  // What `ip -j route show` prints beside the route (iproute2 6.1): the snapshot's host reads.
  it('keeps the routes of ip -j route show, which read as a host', () => {
    const route = [
      { dst: 'default', gateway: '192.0.2.1', dev: 'eth0', protocol: 'dhcp', prefsrc: '192.0.2.10', metric: 100, flags: [] },
      { dst: '10.244.1.0/24', dev: 'cni0', scope: 'link', flags: ['linkdown'] },
    ];
    const route6 = [{ dst: 'default', dev: 'eth0', metric: 1024, flags: [], pref: 'medium' }];
    const addr = [...JSON.parse(IP_ADDR), { ifname: 'cni0', addr_info: [{ family: 'inet', local: '10.244.1.1', prefixlen: 24 }] }];
    const d = dir({ 'a.nft': NFT, 'addr.json': JSON.stringify(addr), 'route.json': JSON.stringify(route), 'route6.json': JSON.stringify(route6) });
    const { snapshot, diagnostics } = readSnapshot(d);
    expect(diagnostics).toEqual([]);
    const { host, errors } = readHost([{ value: snapshot!.host, path: ['host'] }]);
    expect(errors).toEqual([]);
    expect(host.routes.filter((r) => r.dst.prefix === 0).map((r) => [r.dst.family, r.dev, r.via && formatAddress(r.via)])).toEqual([
      ['ip', 'eth0', '192.0.2.1'],
      ['ip6', 'eth0', undefined],
    ]);
  });

  it('reads a ,-joined list with nftsim\'s host shape in YAML', () => {
    const d = dir({ 'a.nft': NFT, 'host.yaml': 'interfaces:\n  - { name: wt0, addresses: [100.64.1.1/16] }\nforwarding: false\n' });
    const { snapshot, diagnostics } = readSnapshot(`${join(d, 'a.nft')},${join(d, 'host.yaml')}`);
    expect(diagnostics).toEqual([]);
    expect(snapshot!.host).toEqual({ interfaces: [{ name: 'wt0', addresses: ['100.64.1.1/16'] }], routes: [], forwarding: false });
  });

  it('keeps the routing rules of the host shape', () => {
    const rules = [{ priority: 100, src: 'all', fwmark: '0xca6c', table: '51820' }];
    const d = dir({ 'a.nft': NFT, 'host.json': JSON.stringify({ interfaces: [{ name: 'wg0', addresses: ['10.9.0.1/24'] }], rules, rules6: rules }) });
    const { snapshot, diagnostics } = readSnapshot(d);
    expect(diagnostics).toEqual([]);
    expect(snapshot!.host).toMatchObject({ rules, rules6: rules });
  });

  it.each([
    ['an unreadable file', (d: string) => join(d, 'missing.nft'), /cannot read/],
    ['a listed JSON file that is neither ruleset nor host', (d: string) => `${join(d, 'a.nft')},${join(d, 'other.json')}`, /neither a ruleset/],
    ['a host field of the wrong type, at its place', (d: string) => `${join(d, 'a.nft')},${join(d, 'bad-host.json')}`, /.+/],
    ['no ruleset at all', (d: string) => join(d, 'host.json'), /no ruleset found/],
  ])('reports %s as an error', (_name, spec, message) => {
    const d = dir({ 'a.nft': NFT, 'other.json': '{"x":1}', 'bad-host.json': '{\n  "interfaces": 5\n}\n', 'host.json': '{"interfaces":[]}' });
    const { snapshot, diagnostics } = readSnapshot(spec(d));
    expect(snapshot).toBeUndefined();
    const errors = diagnostics.filter((x) => x.severity === 'error');
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.map((e) => e.message).join('\n')).toMatch(message);
  });

  it('locates a bad host field at file:line', () => {
    const d = dir({ 'a.nft': NFT, 'bad-host.json': '{\n  "interfaces": 5\n}\n' });
    const { diagnostics } = readSnapshot(`${join(d, 'a.nft')},${join(d, 'bad-host.json')}`);
    expect(diagnostics[0]!.span).toMatchObject({ line: 2 });
  });
});
