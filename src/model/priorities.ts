import type { Family, Hook } from './ast.js';

// Standard chain priority names and the hooks where nft accepts them. Source: nftables
// src/rule.c, `std_prios[]` and `bridge_std_prios[]` with `std_prio_family_hook_compat()`
// (v1.0.6, unchanged through v1.1.x).
interface PriorityName {
  readonly name: string;
  readonly value: number;
  /** Hooks where the name is valid; undefined means every hook of the family. */
  readonly hooks?: readonly Hook[];
}

const INET_PRIORITIES: readonly PriorityName[] = [
  { name: 'raw', value: -300 },
  { name: 'mangle', value: -150 },
  { name: 'dstnat', value: -100, hooks: ['prerouting'] },
  { name: 'filter', value: 0 },
  { name: 'security', value: 50 },
  { name: 'srcnat', value: 100, hooks: ['postrouting'] },
];

const BRIDGE_PRIORITIES: readonly PriorityName[] = [
  { name: 'dstnat', value: -300, hooks: ['prerouting'] },
  { name: 'filter', value: -200 },
  { name: 'out', value: 100, hooks: ['output'] },
  { name: 'srcnat', value: 300, hooks: ['postrouting'] },
];

// netdev and arp families only know `filter` (src/rule.c: std_prio_family_hook_compat).
const FILTER_ONLY: readonly PriorityName[] = [{ name: 'filter', value: 0 }];

export function priorityNames(family: Family): readonly PriorityName[] {
  switch (family) {
    case 'ip':
    case 'ip6':
    case 'inet':
      return INET_PRIORITIES;
    case 'bridge':
      return BRIDGE_PRIORITIES;
    case 'arp':
    case 'netdev':
      return FILTER_ONLY;
    default: {
      const exhaustive: never = family;
      return exhaustive;
    }
  }
}

/** The numeric value of `name` for a chain of `family` at `hook`, or undefined where nft would
 * reject the name ("'dstnat' is invalid priority in this context"). */
export function resolvePriorityName(family: Family, hook: Hook, name: string): number | undefined {
  const entry = priorityNames(family).find((p) => p.name === name);
  if (!entry) return undefined;
  if (entry.hooks && !entry.hooks.includes(hook)) return undefined;
  return entry.value;
}

/** How nft 1.0.6 prints a numeric priority: `name ± N` when a standard name for the family and
 * hook lies within 10 (src/rule.c `prio2str`, which only tries offsets within ±10), else the
 * number. */
export function priorityText(family: Family, hook: Hook, value: number): string {
  for (const p of priorityNames(family)) {
    if (p.hooks && !p.hooks.includes(hook)) continue;
    const offset = value - p.value;
    if (offset === 0) return p.name;
    if (Math.abs(offset) <= 10) return `${p.name} ${offset > 0 ? '+' : '-'} ${Math.abs(offset)}`;
  }
  return String(value);
}
