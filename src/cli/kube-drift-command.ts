// `nftsim kube-drift --cluster FILE NODE_SNAPSHOT...`: a thin layer over readCluster,
// readSnapshot, kubeDrift and formatDriftText.

import { Command, Option } from 'commander';
import { isError, type Diagnostic } from '../model/diagnostic.js';
import { readCluster } from '../kube/read-cluster.js';
import { formatDriftText } from '../kube/format-drift-text.js';
import { kubeDrift, type NodeSnapshot } from '../kube/kube-drift.js';
import { formatDiagnostic } from '../report/format-diagnostic.js';
import { IPTABLES_VERSION } from '../rules/framework/lint-config.js';
import { readSnapshot, snapshotName } from '../snapshot/read-snapshot.js';
import { readTextFile } from '../parser/read-text-file.js';

interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

interface KubeDriftCommandOptions {
  readonly cluster?: string[];
  readonly format: 'text' | 'json';
  readonly iptablesVersion?: string;
}

// `node-3=captures/node-3` names a snapshot; a path holding `=` needs `./`.
const NAMED = /^([^=/,]+)=(.+)$/;

export function addKubeDriftCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('kube-drift')
    .description('does each node\'s ruleset serve the endpoints its Services should have? (kube-proxy iptables or nftables mode)')
    .argument('<snapshots...>', 'one per node: a directory, or files joined with "," (nft listing, nft -j, iptables-save dumps, host); NAME=SNAPSHOT names the node (default: the directory\'s or first file\'s name)')
    .option('--cluster <file>', 'kubectl get services,endpointslices -A -o json (and kubectl get nodes -o json), JSON or YAML; repeatable', (v: string, acc: string[] = []) => [...acc, v])
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .option('--iptables-version <version>', 'the nodes\' iptables-nft version, for the findings that explain drift (default 1.8.9)')
    .action((snapshots: string[], opts: KubeDriftCommandOptions) => {
      setExit(kubeDriftCommand(snapshots, opts, io));
    });
}

function kubeDriftCommand(specs: readonly string[], opts: KubeDriftCommandOptions, io: Io): number {
  const sources = new Map<string, string>();
  const diagnostics: Diagnostic[] = [];
  const report = (): boolean => {
    for (const d of diagnostics) io.err(`${formatDiagnostic(d, sources)}\n`);
    const failed = diagnostics.some(isError);
    diagnostics.length = 0;
    return failed;
  };
  const usage = (message: string): number => {
    diagnostics.push({ severity: 'error', code: 'usage', message });
    report();
    return 2;
  };
  if (!opts.cluster || opts.cluster.length === 0) return usage('give the cluster with --cluster FILE (kubectl get services,endpointslices -A -o json)');
  if (opts.iptablesVersion !== undefined && !IPTABLES_VERSION.test(opts.iptablesVersion)) {
    return usage(`--iptables-version expects a version such as 1.8.9, got '${opts.iptablesVersion}'`);
  }

  const clusterFiles: { file: string; text: string }[] = [];
  for (const file of opts.cluster) {
    try {
      const text = readTextFile(file);
      sources.set(file, text);
      clusterFiles.push({ file, text });
    } catch {
      diagnostics.push({ severity: 'error', code: 'read-error', message: `cannot read '${file}'` });
    }
  }
  const { cluster, diagnostics: clusterDiagnostics } = readCluster(clusterFiles);
  diagnostics.push(...clusterDiagnostics.filter((d) => d.severity !== 'info'));

  const nodes: NodeSnapshot[] = [];
  const names = new Set<string>();
  for (const spec of specs) {
    const named = NAMED.exec(spec);
    const read = readSnapshot(named ? named[2]! : spec);
    for (const [file, text] of read.texts) sources.set(file, text);
    diagnostics.push(...read.diagnostics);
    if (!read.snapshot) continue;
    const name = named ? named[1]! : snapshotName(read.snapshot);
    if (names.has(name)) diagnostics.push({ severity: 'error', code: 'usage', message: `two snapshots are named '${name}': name them with NAME=SNAPSHOT` });
    names.add(name);
    nodes.push({ name, snapshot: read.snapshot });
  }
  if (report() || !cluster) return 2;

  const result = kubeDrift(cluster, nodes, { ...(opts.iptablesVersion !== undefined && { lint: { iptablesVersion: opts.iptablesVersion } }) });
  diagnostics.push(...result.diagnostics.filter((d) => d.severity !== 'info'));
  if (report()) return 2;

  if (opts.format === 'json') io.out(`${JSON.stringify({ nodes: result.nodes }, null, 2)}\n`);
  else io.out(formatDriftText(result));
  return result.nodes.some((n) => n.status === 'drift') ? 1 : 0;
}
