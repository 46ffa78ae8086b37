// The rules on captured real rulesets: the incident example must fire, clean single-component
// nodes (kube-proxy alone, Docker alone, Calico alone) must not.

import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseNode } from '../../src/parser/parse-ruleset.js';
import { lintRuleset } from '../../src/rules/framework/lint-ruleset.js';

const CORPUS = join(resolve(import.meta.dirname, '../..'), 'corpus');
const lint = (dir: string, files: string[]) =>
  lintRuleset(parseNode(files.map((f) => ({ file: f, text: readFileSync(join(CORPUS, dir, f), 'utf8') }))).ruleset).findings.map(
    (f) => `${f.location.file}:${f.location.line} ${f.rule}`,
  );

describe('lint on the corpus', () => {
  it.each([
    ['kube-proxy alone', 'real/kube-proxy-5svc', ['ruleset.nft', 'iptables.save']],
    ['kube-proxy alone, nft -j', 'real/kube-proxy-5svc', ['ruleset.json']],
    ['Docker alone', 'real/docker-bridge', ['ruleset.nft', 'iptables.save']],
    ['Docker alone, nft -j', 'real/docker-bridge', ['ruleset.json']],
    ['Calico alone', 'real/calico-ipip', ['ruleset.nft', 'iptables.save']],
    ['Calico alone, nft -j', 'real/calico-ipip', ['ruleset.json']],
  ])('finds nothing on %s', (_, dir, files) => {
    expect(lint(dir, files)).toEqual([]);
  });

  it('reports the NodePort masquerade incident, kube-proxy\'s OR into Netbird\'s exact mark and the equal-priority mangle chains', () => {
    expect(lint('examples/nodeport-masquerade', ['node.nft', 'node.ipt'])).toEqual([
      'node.ipt:8 mark-bit-collision',
      'node.ipt:42 mark-bit-collision',
      'node.nft:105 priority-tie',
      'node.nft:113 priority-tie',
    ]);
  });
});
