import { describe, expect, it } from 'vitest';
import { formatDriftText } from '../../src/kube/format-drift-text.js';
import type { DriftSummary, KubeDriftResult, NodeDrift, ServiceDrift } from '../../src/kube/kube-drift.js';

const SUMMARY: DriftSummary = { services: 40, endpointsExpected: 87, missing: 0, stale: 0, wrongShare: 0, noRules: 0, orphans: 0, drifting: 0, undecided: 0 };

function node(fields: Partial<NodeDrift>): NodeDrift {
  return { node: 'node-1', verdict: 'node-1: in sync (87 endpoints across 40 services)', status: 'in-sync', mode: 'iptables', families: [{ family: 'ipv4', mode: 'iptables' }], host: 'snapshot', summary: SUMMARY, services: [], undecided: [], explainedBy: [], notes: [], ...fields };
}

function web(fields: Partial<ServiceDrift>): ServiceDrift {
  return { namespace: 'default', name: 'web', port: 80, protocol: 'tcp', portName: 'http', family: 'ipv4', missing: [], stale: [], wrongShare: [], explainedBy: [], endpointsExpected: 3, notes: [], at: { file: 'cluster.json', line: 12, column: 5 }, probes: [], ...fields };
}

const POD_PROBE = { access: 'clusterIP', client: 'pod', packet: { iif: 'cni0', src: '10.128.0.254', dst: '172.30.0.10', protocol: 'tcp', dport: 80 }, expected: [], observed: [], missing: [], unexpected: [], wrongShare: [] } as const;

function text(...nodes: NodeDrift[]): string {
  const result: KubeDriftResult = { nodes, diagnostics: [] };
  return formatDriftText(result);
}

describe('formatDriftText', () => {
  it('prints an in-sync node as its verdict, its mode, and the summary', () => {
    expect(text(node({}))).toBe(
      'node-1: in sync (87 endpoints across 40 services)\n' +
        '  kube-proxy: iptables mode (ipv4)\n' +
        'summary: 1 node (1 in sync, 0 drifting); 40 service ports checked, 0 of 87 endpoints missing, 0 stale, 0 with a wrong share\n',
    );
  });

  it.each([
    [
      'missing endpoints, with where their packets went instead',
      web({ missing: ['10.1.2.3:8080', '10.1.2.4:8080'], probes: [{ ...POD_PROBE, missing: ['10.1.2.3:8080', '10.1.2.4:8080'], unmapped: { share: 1, disposition: 'rejected', decidedBy: { file: 'node.save', line: 47, column: 1 } } }] }),
      '  default/web:http/tcp: missing 10.1.2.3:8080, 10.1.2.4:8080 (pod → clusterIP 172.30.0.10:80: rejected at node.save:47) (Service at cluster.json:12)\n',
    ],
    [
      'stale endpoints with their DNAT rule',
      web({ stale: ['10.1.9.9:8080'], probes: [{ ...POD_PROBE, unexpected: ['10.1.9.9:8080'], observed: [{ endpoint: '10.1.9.9:8080', share: 1, at: { file: 'node.save', line: 90, column: 1 } }] }] }),
      '  default/web:http/tcp: stale 10.1.9.9:8080 (DNAT at node.save:90) (Service at cluster.json:12)\n',
    ],
    [
      'a wrong share with the share expected',
      web({ wrongShare: [{ endpoint: '10.1.2.4:8080', share: 0.5, expected: 1 / 3, access: 'clusterIP', client: 'pod' }] }),
      '  default/web:http/tcp: share 10.1.2.4:8080 50% (expected 33.3%, pod → clusterIP) (Service at cluster.json:12)\n',
    ],
    [
      'a Service without rules, IPv6',
      web({ family: 'ipv6', noRules: true, missing: ['[2001:db8::5]:8080'], probes: [{ ...POD_PROBE, missing: ['[2001:db8::5]:8080'], unmapped: { share: 1, disposition: 'forwarded' } }] }),
      '  default/web:http/tcp (IPv6): no rules; missing [2001:db8::5]:8080 (pod → clusterIP 172.30.0.10:80: forwarded without DNAT) (Service at cluster.json:12)\n',
    ],
    [
      'the rules of a deleted Service',
      web({ name: 'api', portName: '', orphan: true, stale: ['10.1.2.3:8443'], at: { file: 'node.save', line: 120, column: 1 } }),
      '  default/api/tcp: the Service (or this address of it) no longer exists, its rules remain; stale 10.1.2.3:8443 (rule at node.save:120)\n',
    ],
    [
      'a long list cut short',
      web({ missing: Array.from({ length: 10 }, (_, i) => `10.1.2.${i}:8080`) }),
      '  default/web:http/tcp: missing 10.1.2.0:8080, 10.1.2.1:8080, 10.1.2.2:8080, 10.1.2.3:8080, 10.1.2.4:8080, 10.1.2.5:8080, 10.1.2.6:8080, 10.1.2.7:8080 and 2 more (Service at cluster.json:12)\n',
    ],
    [
      'a Service port nftsim could not decide',
      web({ undecided: true, notes: ['pod → clusterIP 172.30.0.10:80: undecided (not modelled on its way: ruleset.nft:54)'] }),
      '  default/web:http/tcp: undecided; pod → clusterIP 172.30.0.10:80: undecided (not modelled on its way: ruleset.nft:54) (Service at cluster.json:12)\n',
    ],
    [
      'notes',
      web({ notes: ['sessionAffinity is ClientIP but the rules have none'] }),
      '  default/web:http/tcp: sessionAffinity is ClientIP but the rules have none (Service at cluster.json:12)\n',
    ],
  ])('prints a drifting service: %s', (_, service, line) => {
    const out = text(node({ status: 'drift', verdict: 'node-3: …', services: [service] }));
    expect(out.split('\n')[2]).toBe(line.slice(0, -1));
  });

  it('counts undecided nodes and Service ports in the summary', () => {
    const undecided = node({ status: 'undecided', verdict: 'node-1: no drift found, but 1 of 40 services undecided: nftsim does not model a rule on their way (see notes)', summary: { ...SUMMARY, undecided: 1 } });
    expect(text(undecided).split('\n').at(-2)).toBe('summary: 1 node (0 in sync, 0 drifting, 1 undecided); 40 service ports checked, 0 of 87 endpoints missing, 0 stale, 0 with a wrong share, 1 service port undecided');
  });

  it('prints the findings that explain a node once, after its verdict, then the notes and a summary over all nodes', () => {
    const drifting = node({
      node: 'node-3',
      status: 'drift',
      verdict: 'node-3: 1 of 87 endpoints missing across 1 service; kube-proxy has probably not synced — see iptables-nft-incompatible finding at ruleset.nft:47',
      summary: { ...SUMMARY, missing: 1, drifting: 1 },
      services: [web({ missing: ['10.1.2.3:8080'] })],
      explainedBy: [{ rule: 'iptables-nft-incompatible', messageId: 'table-unreadable', severity: 'error', message: '`ct state` (ct) in ip filter FORWARD is outside what iptables-nft 1.8.9 can read', family: 'ipv4', location: { file: 'ruleset.nft', line: 47, column: 17 } }],
      notes: ['host made from the cluster\'s Node node-3'],
    });
    const unchecked = node({ node: 'node-4', status: 'unchecked', mode: 'none', families: [], verdict: 'node-4: not checked — no kube-proxy rules found', summary: { ...SUMMARY, services: 0, endpointsExpected: 0 } });
    expect(text(drifting, unchecked)).toBe(
      'node-3: 1 of 87 endpoints missing across 1 service; kube-proxy has probably not synced — see iptables-nft-incompatible finding at ruleset.nft:47\n' +
        '  kube-proxy: iptables mode (ipv4)\n' +
        '  explained by:\n' +
        '    ruleset.nft:47:17: error iptables-nft-incompatible: `ct state` (ct) in ip filter FORWARD is outside what iptables-nft 1.8.9 can read\n' +
        '  default/web:http/tcp: missing 10.1.2.3:8080 (Service at cluster.json:12)\n' +
        '  note: host made from the cluster\'s Node node-3\n' +
        'node-4: not checked — no kube-proxy rules found\n' +
        'summary: 2 nodes (0 in sync, 1 drifting, 1 not checked); 40 service ports checked, 1 of 87 endpoints missing, 0 stale, 0 with a wrong share\n',
    );
  });
});
