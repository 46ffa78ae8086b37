import type { Chain, Hook } from '../model/ast.js';
import { chainsAt, isDeviceHook, isTied, slotOf, type HookEntry } from '../sim/pipeline.js';
import { hookIndexOf } from './framework/mark-ops.js';
import type { LintRule } from './framework/lint-rule.js';

// The simulator's hook tables decide which base chains meet the same packet and which of them
// share a slot: the kernel orders chains of equal priority by registration order
// (net/netfilter/core.c nf_hook_entries_grow), which a listing does not record, so the outcome
// can change after a reboot or an agent restart.
const HOOKS: readonly Hook[] = ['ingress', 'prerouting', 'input', 'forward', 'output', 'postrouting', 'egress'];

export const priorityTie: LintRule = {
  id: 'priority-tie',
  meta: {
    description: 'Two base chains in different tables that see the same packets at the same hook and priority, so their order depends on registration order.',
    severity: 'warning',
    docs: 'docs/rules/priority-tie.md',
    messages: {
      tie: '{{chain}} and {{other}} both run at {{hook}} priority {{priority}}: which runs first depends on which was registered first',
      other: '{{other}} is registered here',
    },
  },
  check(context) {
    const index = hookIndexOf(context);
    const reported = new Set<string>();
    const name = (e: HookEntry): string => `${e.table.family} ${e.table.name} ${e.chain.name}`;
    for (const family of ['ip', 'ip6'] as const) {
      for (const hook of HOOKS) {
        const devices = isDeviceHook(hook) ? [...new Set((index.byHook.get(hook) ?? []).flatMap((r) => r.chain.base!.devices))] : [undefined];
        for (const device of devices) {
          const entries = chainsAt(index, hook, family, device).filter((e) => e.orderDependent);
          for (const [i, a] of entries.entries()) {
            for (const b of entries.slice(i + 1)) {
              if (a.table === b.table || !isTied(hook, a, b)) continue;
              // Report at the chain listed later, pointing back at the earlier one.
              const [first, second] = isListedBefore(a.chain, b.chain) ? [a, b] : [b, a];
              const key = `${hook}\0${name(first)}\0${name(second)}`;
              if (reported.has(key)) continue;
              reported.add(key);
              context.report({
                messageId: 'tie',
                data: { chain: name(second), other: name(first), hook, priority: slotOf(hook, second) },
                span: second.chain.base!.priority.span,
                related: [{ messageId: 'other', data: { other: name(first) }, span: first.chain.base!.priority.span }],
              });
            }
          }
        }
      }
    }
  },
};

function isListedBefore(a: Chain, b: Chain): boolean {
  return a.span.file === b.span.file ? a.span.start < b.span.start : a.span.file < b.span.file;
}
