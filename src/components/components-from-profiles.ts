import type { Diagnostic } from '../model/diagnostic.js';
import { listProfiles, type ProfileOptions } from './profile.js';

/** What the linter's component attribution needs of a component (the shape of
 * src/rules/facts/known-components.ts's KnownComponent), drawn from a profile. */
export interface ProfileComponent {
  readonly name: string;
  readonly chainPrefixes: readonly string[];
  /** Table names it owns outright (`netbird` of `ip netbird`). */
  readonly tables: readonly string[];
  readonly commentPrefixes?: readonly string[];
  /** Bits it sets or tests, any version: a masked use's mask, a full-word value's bits. */
  readonly bits: readonly { readonly mask: number; readonly meaning: string }[];
}

/** The component a profile describes, where one component has a profile per mode: kube-proxy
 * writes different rules in iptables and nftables mode, but it is the one kube-proxy to the
 * linter (src/rules/facts/known-components.ts names it so). */
const COMPONENT_OF_PROFILE: Readonly<Record<string, string>> = {
  'kube-proxy-iptables': 'kube-proxy',
  'kube-proxy-nftables': 'kube-proxy',
};

/** The components the profiles describe, for attribution: chain prefixes, owned tables, comment
 * prefixes, and the mark bits of every version (socket marks included: they are on the packets the
 * agent sends). Profiles of the same name as a built-in component should replace its entry. */
export function componentsFromProfiles(options: ProfileOptions = {}): { components: ProfileComponent[]; diagnostics: Diagnostic[] } {
  const { profiles, diagnostics } = listProfiles(options);
  const components = profiles.map((p): ProfileComponent => {
    const bits = new Map<number, string>();
    for (const v of p.versions) {
      for (const m of v.marks) {
        const mask = m.mask === 0xffffffff ? m.value : m.mask;
        if (mask !== 0 && !bits.has(mask)) bits.set(mask, m.meaning);
      }
    }
    return {
      name: COMPONENT_OF_PROFILE[p.name] ?? p.name,
      chainPrefixes: p.chainPrefixes,
      tables: [...new Set(p.ownsTables.map((t) => t.split(/\s+/)[1]!))],
      ...(p.commentPrefixes.length > 0 ? { commentPrefixes: p.commentPrefixes } : {}),
      bits: [...bits].map(([mask, meaning]) => ({ mask, meaning })),
    };
  });
  return { components, diagnostics };
}
