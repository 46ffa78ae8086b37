// A 10,000-service kube-proxy dump (bench/gen/kube-proxy-dump.mjs, 5 endpoints a service:
// about 237,000 lines, 19 MB) parses completely and cleanly. Time and heap are logged for
// comparison with `iptables-legacy-restore --test`, not asserted (DESIGN.md: benchmarks live in
// bench/, tests do not time).
import { describe, expect, it } from 'vitest';
import { parseIptablesSave } from '../../../src/parser/iptables/parse-iptables-save.js';
import { generateKubeProxyDump } from '../../../bench/gen/kube-proxy-dump.mjs';

describe('kube-proxy dump at scale', () => {
  it('parses every rule of a 10,000-service dump without diagnostics', () => {
    const text = generateKubeProxyDump({ services: 10_000, endpointsPerService: 5, seed: 1 });
    const started = performance.now();
    const { dump, diagnostics } = parseIptablesSave(text, { file: 'kube-proxy.ipt' });
    const ms = performance.now() - started;
    const lines = text.split('\n');
    console.log(`kube-proxy dump: ${lines.length} lines, ${(text.length / 1e6).toFixed(1)} MB parsed in ${ms.toFixed(0)} ms, heap ${(process.memoryUsage().heapUsed / 1e6).toFixed(0)} MB`);
    expect(diagnostics).toEqual([]);
    const rules = dump.tables.flatMap((t) => t.commands).filter((c) => c.op === 'append');
    expect(rules).toHaveLength(lines.filter((l) => l.startsWith('-A ')).length);
    expect(dump.tables.map((t) => t.name)).toEqual(['mangle', 'filter', 'nat']);
    const statistic = rules.find((c) => c.rule?.matches.some((m) => m.name === 'statistic'))?.rule?.matches.find((m) => m.name === 'statistic');
    expect(statistic?.options.find((o) => o.name === 'probability')?.value).toMatchObject({ type: 'probability' });
  });
});
