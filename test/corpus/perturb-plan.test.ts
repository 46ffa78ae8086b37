import { describe, expect, it } from 'vitest';
import { planServices } from '../../bench/gen/kube-proxy-dump.mjs';
import { driftTruth, evolveCluster, type EventKind } from '../../bench/gen/perturb-plan.mjs';

// How corpus/kube-drift's clusters move on (bench/gen/perturb-plan.mjs) and the truth a drift
// check is held to: the event log and driftTruth must say the same, each event must mean what
// Kubernetes makes of it, and Local traffic policies must count per node.

const OPTIONS = { services: 24, endpointsPerService: 3, seed: 9, nodes: 4 };
const plan = planServices(OPTIONS);
const key = (s: { namespace: string; name: string; portName: string }) => `${s.namespace}/${s.name}${s.portName === '' ? '' : `:${s.portName}`}`;

describe('evolveCluster', () => {
  it.each([1, 2, 3, 4, 5])('logs the endpoints driftTruth finds missing and stale (seed %i)', (seed) => {
    const { before, after, changes } = evolveCluster(planServices({ ...OPTIONS, seed }), [
      { kind: 'rollout', count: 2 }, { kind: 'scale-up', count: 1, pods: 2 }, { kind: 'scale-down', count: 1 },
      { kind: 'scale-down-terminating', count: 1 }, { kind: 'created', count: 1 }, { kind: 'deleted', count: 1 },
    ], { seed, nodes: OPTIONS.nodes });
    const truth = driftTruth({ cluster: after, node: 0, rulesFrom: before });
    for (const kind of ['missing', 'stale'] as const) {
      const fromTruth = truth.services.flatMap((s) => s[kind].map((ep) => `${key(s)} ${ep}`)).sort();
      const fromLog = changes.flatMap((c) => c[kind].map((ep) => `${c.service} ${ep}`)).sort();
      expect(fromTruth).toEqual(fromLog);
    }
  });

  // What each event leaves for a node that last synced before it.
  it.each<[EventKind, { missing: number; stale: number; flag?: 'noRules' | 'orphan' }]>([
    ['rollout', { missing: 3, stale: 3 }],
    ['scale-up', { missing: 1, stale: 0 }],
    ['scale-down', { missing: 0, stale: 1 }],
    ['scale-down-terminating', { missing: 0, stale: 1 }],
    ['starting', { missing: 0, stale: 0 }],
    ['all-terminating', { missing: 0, stale: 0 }],
    ['created', { missing: 3, stale: 0, flag: 'noRules' }],
    ['deleted', { missing: 0, stale: 3, flag: 'orphan' }],
  ])('%s: %j', (kind, want) => {
    const { before, after, changes } = evolveCluster(plan, [{ kind, count: 1 }], { seed: 1, nodes: OPTIONS.nodes });
    expect(changes).toHaveLength(1);
    const truth = driftTruth({ cluster: after, node: 0, rulesFrom: before });
    expect({ missing: truth.missing, stale: truth.stale }).toEqual({ missing: want.missing, stale: want.stale });
    expect(truth.wrongShare).toBe(0);
    if (want.flag) expect(truth.services.find((s) => key(s) === changes[0]!.service)).toMatchObject({ [want.flag]: true });
  });

  it('keeps a scaled-down terminating pod in the slice, and takes new pods from free node addresses', () => {
    const { after, changes } = evolveCluster(plan, [{ kind: 'scale-down-terminating', count: 1 }, { kind: 'rollout', count: 1 }], { seed: 1, nodes: OPTIONS.nodes });
    const terminating = after.find((s) => s.name === changes[0]!.service)!;
    expect(terminating.endpoints.at(-1)!.conditions).toEqual({ ready: false, serving: true, terminating: true });
    const used = plan.flatMap((s) => s.endpoints.map((ep) => ep.ip));
    for (const ep of changes[1]!.missing) expect(used).not.toContain(ep.split(':')[0]);
  });

  it('is the same for the same seed', () => {
    const events = [{ kind: 'rollout' as const, count: 3 }];
    expect(evolveCluster(plan, events, { seed: 4, nodes: 4 })).toEqual(evolveCluster(plan, events, { seed: 4, nodes: 4 }));
  });
});

describe('driftTruth', () => {
  it('finds nothing for a node whose rules are the cluster\'s', () => {
    expect(driftTruth({ cluster: plan, node: 0, rulesFrom: plan })).toMatchObject({ services: [], missing: 0, stale: 0, wrongShare: 0 });
  });

  // A node whose kube-proxy takes itself for node-1: its Local paths reach node-1's endpoints.
  it('counts Local traffic policies per node: another node\'s endpoint is a wrong share where another path should reach it, else stale', () => {
    const lb = plan.find((p) => p.externalLocal && p.endpoints.some((ep) => ep.local))!;
    const internal = { ...plan.find((p) => p.nodePort === undefined && p.endpoints.some((ep) => ep.local))!, internalLocal: true };
    const cluster = plan.map((p) => (p.name === internal.name ? internal : p));
    const truth = driftTruth({ cluster, node: 1, rulesFrom: cluster, rulesNode: 0 });
    const local = (p: typeof lb) => p.endpoints.filter((ep) => ep.node === 0).map((ep) => `${ep.ip}:${ep.port}`);
    expect(truth.services.find((s) => lb.name.startsWith(key(s)))!.wrongShare).toEqual(local(lb));
    expect(truth.services.find((s) => internal.name.startsWith(key(s)))!.stale).toEqual(local(internal));
  });
});
