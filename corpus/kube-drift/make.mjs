// @ts-check
// Regenerates the cases of corpus/kube-drift: a cluster (what kubectl prints for its Services,
// EndpointSlices and Nodes) and the rules some of its nodes have, each case with the truth a
// drift check must report. Deterministic: the same script writes the same bytes.
//
//   node corpus/kube-drift/make.mjs                  # every case
//   node corpus/kube-drift/make.mjs stale-endpoints  # only the named ones
//
// Every case comes from a plan of bench/gen/kube-proxy-dump.mjs (seeded), with its pods placed
// on nodes (node-1 is the dump generators' "this node"). The cluster is the plan, moved on by
// the events of bench/gen/perturb-plan.mjs; a node's rules are what kube-proxy writes for the
// state it last synced to (kube-cluster.mjs nodePlan, then kube-proxy-dump.mjs or
// kube-proxy-nft.mjs). truth.json is driftTruth of the two states — never nftsim's output;
// expected-drift.json is nftsim's, written by test/kube/corpus.test.ts with
// NFTSIM_UPDATE_EXPECTED=1.
//
// The incident case loads its rules into a real kernel (root, `ip netns`, iptables-nft, nft), as
// corpus/real/make.sh does, and keeps what the tools list back; without those it is skipped,
// said so, and its files are left as they are. Namespace: "$NFTSIM_NETNS_PREFIX-<pid>" (default
// prefix nftsim-corpus), deleted afterwards.

import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatKubeProxyDump, planServices } from '../../bench/gen/kube-proxy-dump.mjs';
import { formatKubeProxyNft } from '../../bench/gen/kube-proxy-nft.mjs';
import { generateCluster, nodeName, nodePlan } from '../../bench/gen/kube-cluster.mjs';
import { driftTruth, evolveCluster, sortEndpoints } from '../../bench/gen/perturb-plan.mjs';

/** @typedef {import('../../bench/gen/kube-cluster.mjs').StateServicePort} StateServicePort */
/** @typedef {import('../../bench/gen/perturb-plan.mjs').Change} Change */
/** @typedef {import('../../bench/gen/perturb-plan.mjs').EventKind} EventKind */

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const INCIDENT = path.join(ROOT, 'corpus/real/kube-proxy-wt0-native-rules');
const NS = `${process.env.NFTSIM_NETNS_PREFIX ?? 'nftsim-corpus'}-${process.pid}`;
const EXPECTED = 'expected-drift.json';

/**
 * One node of a case: the state its kube-proxy last synced to, and the node it believes it is.
 * @typedef {object} NodeSpec
 * @property {number} node          its index (node-1 is 0)
 * @property {StateServicePort[]} rulesFrom
 * @property {number} [rulesNode]   the node kube-proxy took itself for (its --hostname-override)
 * @property {'iptables' | 'nftables'} mode
 * @property {boolean} [native]     the VPN agent's native wt0 rules in ip/ip6 filter FORWARD
 * @property {string} story         one line for the README
 */

/**
 * @typedef {object} CaseSpec
 * @property {string} title
 * @property {string} shows          what the case shows, for the README
 * @property {{ services: number, endpointsPerService: number, seed: number, nodes: number, sessionAffinity?: boolean }} plan
 * @property {StateServicePort[]} cluster
 * @property {Change[]} changes      the events since the stale nodes' last sync ([] for none)
 * @property {NodeSpec[]} nodes
 */

// ---------------------------------------------------------------------------------------------
// The cases

/** @type {Record<string, () => CaseSpec>} */
const CASES = {
  'in-sync': () => {
    const plan = { services: 12, endpointsPerService: 3, seed: 11, nodes: 3 };
    // Pods come and go while the node keeps up: a pod not ready yet, one terminating beside ready
    // ones (not used), a Service whose every pod is terminating but serving (used: kube-proxy
    // falls back to them).
    const { after, changes } = evolve(plan, [['starting', 1], ['scale-down-terminating', 1], ['all-terminating', 1]]);
    return {
      title: 'in sync: the node\'s rules are those of the cluster now',
      shows: 'No drift: nothing missing, stale or wrongly shared, exit 0, although the slices hold endpoints that are not ready (starting), terminating beside ready ones (kube-proxy leaves them out) and a Service whose endpoints are all terminating but serving (kube-proxy falls back to them).',
      plan,
      cluster: after,
      changes,
      nodes: [{ node: 0, rulesFrom: after, mode: 'iptables', story: 'synced to the cluster as it is (the events below are in its rules)' }],
    };
  },

  'stale-endpoints': () => {
    const plan = { services: 20, endpointsPerService: 3, seed: 21, nodes: 4 };
    const { before, after, changes } = evolve(plan, [['rollout', 2], ['scale-up', 2], ['scale-down', 1], ['scale-down-terminating', 1], ['created', 1], ['deleted', 1]]);
    return {
      title: 'stale: the node still has the rules of its last good sync',
      shows: 'Exactly the endpoints the node lacks (new pods of rollouts and scale-ups, a Service created since) are missing, exactly those it keeps (replaced, scaled-down and terminating pods, a Service deleted since) are stale; the endpoints still right but shared among too few or too many have a wrong share. Exit 1.',
      plan,
      cluster: after,
      changes,
      nodes: [{ node: 0, rulesFrom: before, mode: 'iptables', story: 'last synced before the events below' }],
    };
  },

  'local-policy': () => {
    const plan = { services: 10, endpointsPerService: 3, seed: 31, nodes: 3 };
    const cluster = planOf(plan);
    // Two ClusterIP Services get internalTrafficPolicy: Local, one with an endpoint on node-1 and
    // one without (its ClusterIP traffic is dropped on node-1).
    const clusterIPs = cluster.filter((svc) => svc.nodePort === undefined && svc.endpoints.length > 0);
    const withLocal = clusterIPs.find((svc) => svc.endpoints.some((ep) => ep.node === 0));
    const withoutLocal = clusterIPs.find((svc) => svc !== withLocal && svc.endpoints.every((ep) => ep.node !== 0) && svc.endpoints.some((ep) => ep.node === 1));
    if (!withLocal || !withoutLocal) throw new Error('local-policy: the plan has no ClusterIP Services for internalTrafficPolicy: Local; change the seed');
    const localised = cluster.map((svc) => (svc === withLocal || svc === withoutLocal ? { ...svc, internalLocal: true } : svc));
    return {
      title: 'Local traffic policies: right on one node, wrong on another',
      shows: 'Services with externalTrafficPolicy: Local (LoadBalancer, with and without an endpoint on node-1) and internalTrafficPolicy: Local (ClusterIP, with and without one). node-1 is in sync. node-2 has the very same rules: its kube-proxy takes itself for node-1 (a wrong --hostname-override), so its Local paths go to node-1\'s endpoints (a wrong share: expected 0 on that path, or stale where no path of the Service should reach them) and miss node-2\'s own. Exit 1.',
      plan,
      cluster: localised,
      changes: [],
      nodes: [
        { node: 0, rulesFrom: localised, mode: 'iptables', story: 'in sync' },
        { node: 1, rulesFrom: localised, rulesNode: 0, mode: 'iptables', story: 'in sync with the cluster, but its kube-proxy runs with --hostname-override=node-1: its rules are node-1\'s' },
      ],
    };
  },

  'wt0-incident': () => {
    const plan = { services: 31, endpointsPerService: 3, seed: 4, nodes: 4 };
    // The incident of DESIGN.md: 35 of 87 endpoints missing across 12 services.
    const { before, after, changes } = evolve(plan, [['rollout', 11], ['scale-up', 1, 2], ['scale-down', 1, 2]]);
    return {
      title: 'the wt0 incident: a VPN agent\'s native rules stop kube-proxy\'s syncs',
      shows: 'node-1 has Netbird\'s native rules in `ip filter FORWARD` and `ip6 filter FORWARD` (`oifname "wt0" ct state established,related accept`): iptables-nft-save cannot read the table ("Table `filter\' is incompatible"), every kube-proxy sync since fails, and its nat rules are those of the last good sync. Its verdict counts the missing endpoints and points at the iptables-nft-incompatible finding, as does every drifting Service\'s explainedBy. The filter table is only in the nft listing, where kube-proxy\'s `-m comment` matches list as blanks: kube-drift says so in the node\'s notes (it changes no DNAT). node-2, without the native rules, is in sync. Exit 1.',
      plan,
      cluster: after,
      changes,
      nodes: [
        { node: 0, rulesFrom: before, mode: 'iptables', native: true, story: 'Netbird\'s native rules appended to ip/ip6 filter FORWARD; kube-proxy\'s last good sync was before the events below' },
        { node: 1, rulesFrom: after, mode: 'iptables', story: 'no native rules; in sync' },
      ],
    };
  },

  'nftables-mode': () => {
    const plan = { services: 10, endpointsPerService: 3, seed: 51, nodes: 3, sessionAffinity: false };
    const { before, after, changes } = evolve(plan, [['rollout', 1], ['scale-up', 1], ['scale-down', 1], ['created', 1], ['deleted', 1]]);
    return {
      title: 'kube-proxy in nftables mode: one node in sync, one stale',
      shows: 'The same check on `table ip kube-proxy` (verdict maps, numgen): node-1 is in sync, node-2 has the rules of its last sync before the events below; exactly their endpoints are reported. Exit 1.',
      plan,
      cluster: after,
      changes,
      nodes: [
        { node: 0, rulesFrom: after, mode: 'nftables', story: 'in sync' },
        { node: 1, rulesFrom: before, mode: 'nftables', story: 'last synced before the events below' },
      ],
    };
  },
};

/** @param {CaseSpec['plan']} plan @returns {StateServicePort[]} */
function planOf(plan) {
  return planServices({ ...plan, sessionAffinity: plan.sessionAffinity ?? true });
}

/** @param {CaseSpec['plan']} plan @param {[EventKind, number, number?][]} events */
function evolve(plan, events) {
  return evolveCluster(planOf(plan), events.map(([kind, count, pods]) => ({ kind, count, ...(pods !== undefined && { pods }) })), { seed: plan.seed, nodes: plan.nodes });
}

// ---------------------------------------------------------------------------------------------
// Writing a case

/** @param {string} name */
function makeCase(name) {
  const spec = CASES[name]();
  const dir = path.join(HERE, name);
  const kernel = spec.nodes.some((n) => n.native) ? findKernelSkipReason() : undefined;
  if (kernel) {
    console.warn(`make.mjs: ${name} skipped (${kernel}); its files are left as they are`);
    return;
  }
  // Everything but expected-drift.json, which is nftsim's (test/kube/corpus.test.ts writes it).
  mkdirSync(dir, { recursive: true });
  for (const entry of readdirSync(dir)) if (entry !== EXPECTED) rmSync(path.join(dir, entry), { recursive: true, force: true });
  const { services, nodes } = generateCluster(spec.cluster, { nodes: spec.plan.nodes });
  writeFileSync(path.join(dir, 'cluster.json'), `${JSON.stringify(services, null, 4)}\n`);
  writeFileSync(path.join(dir, 'nodes.json'), `${JSON.stringify(nodes, null, 4)}\n`);
  checkChanges(name, spec);

  const truthNodes = spec.nodes.map((n) => {
    const node = nodeName(n.node);
    const nodeDir = path.join(dir, node);
    mkdirSync(nodeDir);
    const rules = nodePlan(n.rulesFrom, n.rulesNode ?? n.node);
    const explainedBy = n.mode === 'nftables'
      ? writeNft(nodeDir, rules)
      : writeIptables(dir, node, rules, n.native === true, `nftsim corpus/kube-drift/make.mjs ${name} ${node}`);
    const truth = driftTruth({ cluster: spec.cluster, node: n.node, rulesFrom: n.rulesFrom, rulesNode: n.rulesNode ?? n.node, mode: n.mode });
    const drifts = truth.services.length > 0;
    return {
      node,
      story: n.story,
      status: drifts ? 'drift' : 'in-sync',
      verdictContains: verdictWords(node, truth, explainedBy),
      summary: { services: truth.checked, endpointsExpected: truth.endpointsExpected, missing: truth.missing, stale: truth.stale, wrongShare: truth.wrongShare },
      services: truth.services,
      explainedBy: drifts ? explainedBy : [],
    };
  });
  const truth = {
    description: `${spec.title}. Derived by corpus/kube-drift/make.mjs from the cluster states (bench/gen/perturb-plan.mjs driftTruth), not from nftsim.`,
    exitCode: truthNodes.some((n) => n.status === 'drift') ? 1 : 0,
    events: spec.changes,
    nodes: truthNodes,
  };
  writeFileSync(path.join(dir, 'truth.json'), `${JSON.stringify(truth, null, 2)}\n`);
  writeFileSync(path.join(dir, 'README.md'), readme(name, spec, truth));
  console.log(`made corpus/kube-drift/${name}`);
}

/** The event log must say what driftTruth says for a node that synced before every event (with
 * Cluster traffic policies, which are the only Services events take): two derivations, one
 * answer. @param {string} name @param {CaseSpec} spec */
function checkChanges(name, spec) {
  for (const n of spec.nodes) {
    if (n.rulesFrom === spec.cluster || n.rulesNode !== undefined) continue;
    const truth = driftTruth({ cluster: spec.cluster, node: n.node, rulesFrom: n.rulesFrom });
    for (const kind of /** @type {const} */ (['missing', 'stale'])) {
      const fromTruth = truth.services.flatMap((s) => s[kind].map((ep) => `${s.namespace}/${s.name}${s.portName === '' ? '' : `:${s.portName}`} ${ep}`)).sort();
      const fromLog = spec.changes.flatMap((c) => c[kind].map((ep) => `${c.service} ${ep}`)).sort();
      if (JSON.stringify(fromTruth) !== JSON.stringify(fromLog)) {
        throw new Error(`${name}: the ${kind} endpoints of the event log and of driftTruth differ:\n${fromLog.join('\n')}\n---\n${fromTruth.join('\n')}`);
      }
    }
  }
}

/** The verdict's words that follow from the truth alone: the issue's `N of M endpoints missing
 * across K services` and its pointer to the finding that explains the drift.
 * @param {string} node @param {ReturnType<typeof driftTruth>} truth @param {{ rule: string, file: string, line: number }[]} explainedBy */
function verdictWords(node, truth, explainedBy) {
  const plural = (/** @type {number} */ n, /** @type {string} */ word) => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (truth.services.length === 0) return [`${node}: in sync (${plural(truth.endpointsExpected, 'endpoint')} across ${plural(truth.checked, 'service')})`];
  const words = [`${node}: `];
  const missingIn = truth.services.filter((s) => s.missing.length > 0).length;
  if (truth.missing > 0) words.push(`${truth.missing} of ${plural(truth.endpointsExpected, 'endpoint')} missing across ${plural(missingIn, 'service')}`);
  if (truth.stale > 0) words.push(`${plural(truth.stale, 'stale endpoint')} across ${plural(truth.services.filter((s) => s.stale.length > 0).length, 'service')}`);
  if (explainedBy.length > 0) words.push(`kube-proxy has probably not synced — see ${explainedBy[0].rule} finding at ${explainedBy[0].file}:${explainedBy[0].line}`);
  return words;
}

/** kube-proxy's nftables mode: `nft list ruleset` is its table. @param {string} nodeDir
 * @param {ReturnType<typeof nodePlan>} rules @returns {{ rule: string, file: string, line: number }[]} */
function writeNft(nodeDir, rules) {
  writeFileSync(path.join(nodeDir, 'ruleset.nft'), formatKubeProxyNft(rules));
  return [];
}

/**
 * kube-proxy's iptables mode. Without native rules the node's capture is the dump, as
 * iptables-nft-save prints it (test/corpus/kube-proxy-dump.test.ts). With them, the dump goes
 * through a real kernel: iptables-nft-restore it and corpus/real's IPv6 filter rules, run the
 * agent's native.sh, list back with iptables-nft-save, ip6tables-nft-save and `nft -a list
 * ruleset`. Returns where the finding that explains the drift is: the native `ct state` rule of
 * `ip filter FORWARD`.
 * @param {string} dir @param {string} node @param {ReturnType<typeof nodePlan>} rules
 * @param {boolean} native @param {string} header
 * @returns {{ rule: string, file: string, line: number }[]}
 */
function writeIptables(dir, node, rules, native, header) {
  const nodeDir = path.join(dir, node);
  const dump = formatKubeProxyDump(rules, header);
  if (!native) {
    writeFileSync(path.join(nodeDir, 'iptables.save'), dump);
    return [];
  }
  const inputs = path.join(dir, 'inputs');
  mkdirSync(inputs, { recursive: true });
  const files = {
    dump: path.join(inputs, `${node}-kube-proxy.save`),
    dump6: path.join(inputs, `${node}-kube-proxy6.save`),
    native: path.join(inputs, `${node}-native.sh`),
  };
  writeFileSync(files.dump, dump);
  writeFileSync(files.dump6, readFileSync(path.join(INCIDENT, 'input6.save')));
  writeFileSync(files.native, readFileSync(path.join(INCIDENT, 'native.sh')));
  run('ip', ['netns', 'add', NS]);
  try {
    /** @param {string[]} command @param {string} [stdin] a file */
    const inNs = (command, stdin) => run('ip', ['netns', 'exec', NS, ...command], stdin);
    inNs(['iptables-nft-restore'], files.dump);
    inNs(['ip6tables-nft-restore'], files.dump6);
    inNs(['bash', '-e', files.native]);
    writeFileSync(path.join(nodeDir, 'iptables.save'), undate(inNs(['iptables-nft-save'])));
    writeFileSync(path.join(nodeDir, 'ip6tables.save'), undate(inNs(['ip6tables-nft-save'])));
    const listing = inNs(['nft', '-a', 'list', 'ruleset']);
    writeFileSync(path.join(nodeDir, 'ruleset.nft'), listing);
    return [{ rule: 'iptables-nft-incompatible', file: `${node}/ruleset.nft`, line: nativeCtStateLine(listing) }];
  } finally {
    spawnSync('ip', ['netns', 'del', NS]);
  }
}

/** iptables-nft-save's `# Generated by … on DATE` and `# Completed on DATE`, without the date,
 * so that the case is the same bytes every time. @param {string} text */
function undate(text) {
  return text.replace(/^(# (?:Generated by .*?|Completed)) on .*$/gm, '$1');
}

/** The line of `oifname "wt0" ct state …` in `table ip filter` chain FORWARD. @param {string} listing */
function nativeCtStateLine(listing) {
  const lines = listing.split('\n');
  let table = '';
  let chain = '';
  for (const [i, line] of lines.entries()) {
    const t = /^table (\S+ \S+) \{/.exec(line);
    if (t) table = t[1];
    const c = /^\tchain (\S+) \{/.exec(line);
    if (c) chain = c[1];
    if (table === 'ip filter' && chain === 'FORWARD' && /oifname "wt0" ct state/.test(line)) return i + 1;
  }
  throw new Error('the native ct state rule is not in ip filter FORWARD of the listing');
}

/** Runs a command; its stdout. @param {string} command @param {string[]} args @param {string} [stdin] a file */
function run(command, args, stdin) {
  const result = spawnSync(command, args, { input: stdin === undefined ? undefined : readFileSync(stdin), encoding: 'utf8', maxBuffer: 1 << 28 });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.error?.message ?? result.stderr}`);
  return result.stdout;
}

/** Why the kernel steps cannot run, or undefined. @returns {string | undefined} */
function findKernelSkipReason() {
  if (process.getuid?.() !== 0) return 'not root, so no network namespace';
  for (const tool of ['ip', 'nft', 'iptables-nft-restore', 'iptables-nft-save', 'ip6tables-nft-restore', 'ip6tables-nft-save', 'bash']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} not installed`;
  }
  return undefined;
}

/** @param {string} command */
function version(command) {
  return spawnSync(command, ['--version'], { encoding: 'utf8' }).stdout.trim();
}

// ---------------------------------------------------------------------------------------------
// README

/** @param {string} name @param {CaseSpec} spec @param {{ exitCode: number, events: Change[], nodes: { node: string, story: string, status: string, summary: Record<string, number>, services: import('../../bench/gen/perturb-plan.mjs').ServiceTruth[] }[] }} truth */
function readme(name, spec, truth) {
  const p = spec.plan;
  const iptablesNodes = spec.nodes.filter((n) => n.mode === 'iptables').map((n) => nodeName(n.node));
  const kernelNodes = spec.nodes.filter((n) => n.native).map((n) => nodeName(n.node));
  const lines = [
    `# ${spec.title}`,
    '',
    `Shows: ${spec.shows}`,
    '',
    '    nftsim kube-drift --cluster cluster.json --cluster nodes.json ' + spec.nodes.map((n) => nodeName(n.node)).join(' '),
    '',
    '## How it was made',
    '',
    `\`node corpus/kube-drift/make.mjs ${name}\` (deterministic; it rewrites every file but ${EXPECTED}): the plan of`,
    `bench/gen/kube-proxy-dump.mjs with services=${p.services} endpointsPerService=${p.endpointsPerService} seed=${p.seed}, pods placed on ${p.nodes} nodes`,
    `(nodes=${p.nodes}; node-1 is the generators' "this node")${p.sessionAffinity === false ? ', no session affinity' : ''}.`,
    '',
    '- `cluster.json`: what `kubectl get services,endpointslices -A -o json` prints for the cluster now,',
    '  `nodes.json`: `kubectl get nodes -o json` (bench/gen/kube-cluster.mjs).',
  ];
  for (const n of spec.nodes) {
    const node = nodeName(n.node);
    const files = n.mode === 'nftables'
      ? '`ruleset.nft`, table `ip kube-proxy` as `nft list ruleset` prints it (bench/gen/kube-proxy-nft.mjs)'
      : n.native
        ? '`iptables.save`, `ip6tables.save` and `ruleset.nft` (`nft -a list ruleset`), listed by the real tools (below)'
        : '`iptables.save`, kube-proxy\'s dump as iptables-nft-save prints it (bench/gen/kube-proxy-dump.mjs)';
    lines.push(`- \`${node}/\`: ${files}; ${n.story}.`);
  }
  if (kernelNodes.length > 0) {
    lines.push(
      '',
      `The capture of ${kernelNodes.join(', ')} was made in a fresh network namespace from \`inputs/\`: kube-proxy's last`,
      'good sync (`NODE-kube-proxy.save`), the IPv6 filter rules and the agent\'s commands of',
      'corpus/real/kube-proxy-wt0-native-rules (`NODE-kube-proxy6.save`, `NODE-native.sh`):',
      '',
      '    ip netns exec NS iptables-nft-restore < inputs/NODE-kube-proxy.save',
      '    ip netns exec NS ip6tables-nft-restore < inputs/NODE-kube-proxy6.save',
      '    ip netns exec NS bash -e inputs/NODE-native.sh',
      '    ip netns exec NS iptables-nft-save > NODE/iptables.save',
      '    ip netns exec NS ip6tables-nft-save > NODE/ip6tables.save',
      '    ip netns exec NS nft -a list ruleset > NODE/ruleset.nft',
      '',
      'with the date left out of iptables-nft-save\'s `# Generated by` and `# Completed` lines. Tools:',
      `${version('nft')}; ${version('iptables-nft')}; kernel ${spawnSync('uname', ['-r'], { encoding: 'utf8' }).stdout.trim()}.`,
    );
  }
  lines.push('', '## What must be reported (truth.json)', '');
  if (truth.events.length > 0) {
    lines.push('Events in the cluster (bench/gen/perturb-plan.mjs), and what each means for a node whose rules predate it:', '');
    for (const c of truth.events) {
      const what = [c.missing.length > 0 && `missing ${c.missing.join(', ')}`, c.stale.length > 0 && `stale ${c.stale.join(', ')}`].filter(Boolean).join('; ');
      lines.push(`- ${c.kind} of \`${c.service}\`${what ? `: ${what}` : ' (no drift)'}`);
    }
    lines.push('');
  }
  for (const n of truth.nodes) {
    const s = n.summary;
    lines.push(`${n.node}: ${n.status}; ${s.services} service ports, ${s.endpointsExpected} endpoints expected, ${s.missing} missing, ${s.stale} stale, ${s.wrongShare} with a wrong share.`);
    for (const svc of n.services) {
      const flag = svc.noRules ? ' (no rules)' : svc.orphan ? ' (deleted, rules remain)' : '';
      const parts = [svc.missing.length > 0 && `missing ${svc.missing.join(', ')}`, svc.stale.length > 0 && `stale ${svc.stale.join(', ')}`, svc.wrongShare.length > 0 && `wrong share ${sortEndpoints(svc.wrongShare).join(', ')}`].filter(Boolean);
      lines.push(`- \`${svc.namespace}/${svc.name}${svc.portName === '' ? '' : `:${svc.portName}`}\` ${svc.protocol}/${svc.port}${flag}: ${parts.join('; ')}`);
    }
    lines.push('');
  }
  lines.push(`Exit code ${truth.exitCode}. ${EXPECTED} is nftsim's \`--format json\` output, checked by test/kube/corpus.test.ts`);
  lines.push('(`NFTSIM_UPDATE_EXPECTED=1 npx vitest run test/kube/corpus.test.ts` rewrites it), which also checks it against truth.json.', '');
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------

const names = process.argv.slice(2);
for (const name of names) {
  if (!(name in CASES)) {
    console.error(`make.mjs: unknown case ${name} (known: ${Object.keys(CASES).join(', ')})`);
    process.exit(2);
  }
}
for (const name of names.length > 0 ? names : Object.keys(CASES)) makeCase(name);
