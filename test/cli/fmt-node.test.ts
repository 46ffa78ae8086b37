import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { formatRuleset } from '../../src/model/format-ruleset.js';
import { parseRuleset } from '../../src/parser/parse-ruleset.js';

// `nftsim fmt` given the files a node was captured as, run in process from the sources.
const ROOT = resolve(import.meta.dirname, '../..');
const EXAMPLE = join(ROOT, 'corpus/examples/nodeport-masquerade');
const INCIDENT = join(ROOT, 'corpus/real/kube-proxy-wt0-native-rules');

async function fmt(...args: string[]) {
  let out = '';
  let err = '';
  const code = await main(['node', 'nftsim', 'fmt', ...args], { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

describe('nftsim fmt with an nft listing and an iptables-save dump', () => {
  it('prints the listing with the dump rules in nft syntax, and says how each table was assembled', async () => {
    const listing = join(EXAMPLE, 'node.nft');
    const dump = join(EXAMPLE, 'node.ipt');
    const result = await fmt(listing, dump);
    expect(result.code).toBe(0);
    // The dump's rules carry their comments, which the listing prints as blanks.
    expect(result.out).toContain(
      '\t\tcounter packets 0 bytes 0 jump KUBE-FORWARD comment "kubernetes forwarding rules"\n',
    );
    expect(result.out).toContain('table ip netbird {');
    expect(result.out).not.toMatch(/^\t\t /m); // no blank left by an xt match
    expect(result.err).toContain(`info: ip filter: 4 chains and 4 rules from ${dump}, aligned with ${listing}; no native rules\n`);
    expect(result.err).toContain(`info: ip netbird: from ${listing}\n`);
  });

  it('keeps the native wt0 rules of the incident in ip filter FORWARD', async () => {
    const result = await fmt(join(INCIDENT, 'ruleset.nft'), join(INCIDENT, 'iptables.save'));
    expect(result.code).toBe(0);
    const listed = parseRuleset(readFileSync(join(INCIDENT, 'ruleset.nft'), 'utf8')).ruleset;
    const filter = listed.tables.find((t) => t.family === 'ip' && t.name === 'filter')!;
    expect(result.out).toContain(formatRuleset({ kind: 'ruleset', tables: [filter] }));
    expect(result.out).toContain('\t\tiifname "wt0" accept\n\t\toifname "wt0" ct state established,related accept\n');
    expect(result.err).toContain('iptables-nft-save could not list this table');
  });
});

describe('nftsim fmt with an ipset save input', () => {
  it('lists the ipsets after the tables as commented-out ipset save lines, so nft -f still loads it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nftsim-fmt-'));
    const dump = join(dir, 'iptables.save');
    const sets = join(dir, 'node.ipset');
    writeFileSync(dump, '*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m set --match-set allowed src -j ACCEPT\nCOMMIT\n');
    writeFileSync(sets, 'create allowed hash:net family inet hashsize 1024 maxelem 65536\nadd allowed 10.0.0.0/8\nadd allowed 10.1.0.0/16 nomatch\n');
    const result = await fmt(dump, sets);
    expect(result.code).toBe(0);
    expect(result.out.endsWith('# ipsets (ipset save)\n# create allowed hash:net family inet hashsize 1024 maxelem 65536\n# add allowed 10.0.0.0/8\n# add allowed 10.1.0.0/16 nomatch\n')).toBe(true);
    expect(parseRuleset(result.out).diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  });
});
