import { describe, expect, it } from 'vitest';
import { componentsFromProfiles } from '../../src/components/components-from-profiles.js';
import { KNOWN_COMPONENTS, componentOf } from '../../src/rules/facts/known-components.js';

const NO_OWNERS = { tables: {}, chains: {}, marks: {} };

describe('componentsFromProfiles', () => {
  it('names both kube-proxy profiles kube-proxy, as the linter does', () => {
    const { components, diagnostics } = componentsFromProfiles();
    expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(components.map((c) => c.name).sort()).toEqual(['kube-proxy', 'kube-proxy', 'netbird']);
  });
});

describe('KNOWN_COMPONENTS with the shipped profiles', () => {
  it('holds each component once', () => {
    const names = KNOWN_COMPONENTS.map((c) => c.name);
    expect(names).toEqual([...new Set(names)]);
  });

  it.each([
    ['netbird', 0x1bd20],
    ['netbird', 0x1bd00],
    ['kube-proxy', 0x4000],
  ])('attributes %s\'s profile bit 0x%s', (name, bit) => {
    const c = KNOWN_COMPONENTS.find((k) => k.name === name)!;
    expect(c.bits.some((b) => (bit & ~b.mask) >>> 0 === 0)).toBe(true);
  });

  it.each([
    ['ip', 'netbird', 'netbird-acl-input-filter', 'netbird'],
    ['ip', 'nat', 'KUBE-MARK-MASQ', 'kube-proxy'],
    ['ip', 'kube-proxy', 'filter-forward', 'kube-proxy'],
  ])('attributes %s %s %s to %s', (family, table, chain, owner) => {
    expect(componentOf(NO_OWNERS, family, table, chain)).toBe(owner);
  });
});
