import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { generateKubeProxyDump, kubeChainHash } from '../../bench/gen/kube-proxy-dump.mjs';

// The generator behind the benchmark and corpus/real: deterministic, in kube-proxy's shapes, and
// byte-for-byte what iptables-nft-save prints once the dump is loaded into a kernel.

const small = { services: 12, endpointsPerService: 3, seed: 1 };
const rulesOf = (dump: string, chainPrefix: string) =>
  dump.split('\n').filter((line) => line.startsWith(`-A ${chainPrefix}`));

describe('generateKubeProxyDump', () => {
  it('gives the same dump for the same seed and another for another seed', () => {
    expect(generateKubeProxyDump(small)).toBe(generateKubeProxyDump(small));
    expect(generateKubeProxyDump({ ...small, seed: 2 })).not.toBe(generateKubeProxyDump(small));
  });

  // kube-proxy's %0.10f of 1/n, stored by libxt_statistic as round(p * 2^31), saved as %.11f.
  it.each([
    [2, ['0.50000000000']],
    [3, ['0.33333333349', '0.50000000000']],
    [5, ['0.20000000019', '0.25000000000', '0.33333333349', '0.50000000000']],
  ])('with %i endpoints, the endpoint rules carry the probabilities %j', (endpointsPerService, expected) => {
    const dump = generateKubeProxyDump({ ...small, endpointsPerService, nodePorts: false, sessionAffinity: false });
    const svcRules = rulesOf(dump, 'KUBE-SVC-');
    const firstChain = svcRules[0].split(' ')[1];
    const probabilities = svcRules
      .filter((line) => line.split(' ')[1] === firstChain)
      .map((line) => /--probability (\S+)/.exec(line)?.[1])
      .filter((p) => p !== undefined);
    expect(probabilities).toEqual(expected);
  });

  it('writes the masquerade mark and the postrouting steps as iptables-save prints them', () => {
    const dump = generateKubeProxyDump(small);
    expect(rulesOf(dump, 'KUBE-MARK-MASQ ')).toEqual(['-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000']);
    expect(rulesOf(dump, 'KUBE-POSTROUTING ')).toEqual([
      '-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN',
      '-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0',
      '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully',
    ]);
  });

  it.each(['KUBE-SVC-', 'KUBE-SEP-'])('names %s chains like kube-proxy: 16 base32 characters of a sha256', (prefix) => {
    const names = rulesOf(generateKubeProxyDump(small), prefix).map((line) => line.split(' ')[1]);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(name).toMatch(new RegExp(`^${prefix}[A-Z2-7]{16}$`));
  });

  // The fixtures of kube-proxy's own tests: ns1/svc1:p80 over tcp, endpoint 10.180.0.1:80.
  it('hashes chain names exactly as kube-proxy does', () => {
    expect(kubeChainHash('ns1/svc1:p80tcp')).toBe('XPGD46QRK7WJZT7O');
    expect(kubeChainHash('ns1/svc1:p80tcp10.180.0.1:80')).toBe('SXIVWICOYRO3J4NJ');
  });

  it.each([
    ['keeps endpoint comments up to 1000 endpoints', 250, 4, true],
    ['drops them above, like kube-proxy large-cluster mode', 300, 4, false],
  ])('%s', (_, services, endpointsPerService, commented) => {
    const dump = generateKubeProxyDump({ services, endpointsPerService, seed: 1 });
    const sepRules = rulesOf(dump, 'KUBE-SEP-');
    expect(sepRules.some((line) => line.includes('--comment'))).toBe(commented);
  });

  it('has about 240,000 lines at 10,000 services of 5 endpoints', () => {
    const lines = generateKubeProxyDump({ services: 10_000, endpointsPerService: 5, seed: 1 }).split('\n').length;
    expect(lines).toBeGreaterThan(220_000);
    expect(lines).toBeLessThan(260_000);
  });
});

// Kernel round trip: needs root, `ip netns` and iptables-nft. Skipped, with the reason, elsewhere.
const kernelSkipReason = findKernelSkipReason();
if (kernelSkipReason) console.warn(`kube-proxy dump kernel round trip not run: ${kernelSkipReason}`);

function findKernelSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  for (const tool of ['ip', 'iptables-nft-restore', 'iptables-nft-save']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} not installed`;
  }
  return undefined;
}

describe.runIf(!kernelSkipReason)('generateKubeProxyDump in a kernel', () => {
  it.each([
    { services: 5, endpointsPerService: 3, seed: 1 },
    { services: 300, endpointsPerService: 4, seed: 7 },
    { services: 40, endpointsPerService: 1, seed: 3, nodePorts: false },
  ])('iptables-nft-save prints %j back unchanged', (options) => {
    const dump = generateKubeProxyDump(options);
    const ns = `${process.env.NFTSIM_NETNS_PREFIX ?? 'nftsim-test'}-${process.pid}`;
    const run = (args: string[], input?: string) => {
      const result = spawnSync('ip', ['netns', 'exec', ns, ...args], { input, encoding: 'utf8' });
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      return result.stdout;
    };
    expect(spawnSync('ip', ['netns', 'add', ns]).status).toBe(0);
    try {
      run(['iptables-nft-restore'], dump);
      const withoutComments = (text: string) => text.split('\n').filter((line) => !line.startsWith('#'));
      expect(withoutComments(run(['iptables-nft-save']))).toEqual(withoutComments(dump));
    } finally {
      spawnSync('ip', ['netns', 'del', ns]);
    }
  });
});
