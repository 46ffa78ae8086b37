// Policy routing (`ip rule`): the routing table the kernel looks a packet's route up in, chosen
// by its mark, addresses and interfaces (net/core/fib_rules.c fib_rules_lookup). A host given
// without rules has the kernel's default ones: local, main, default.

import { familyBits, parseAddress, prefixMask, type Address, type AddressFamily, type Cidr } from './address.js';
import type { FieldPath, FieldReader } from './read-fields.js';

export interface HostRule {
  readonly priority: number;
  /** `not`: the rule applies where its selector does not match (FIB_RULE_INVERT). */
  readonly not: boolean;
  readonly fwmark?: { readonly value: number; readonly mask: number };
  readonly src?: Cidr;
  readonly dst?: Cidr;
  readonly iif?: string;
  readonly oif?: string;
  /** What a match does: look the table up, or end the lookup without a route. */
  readonly action: 'lookup' | 'unreachable' | 'blackhole' | 'prohibit';
  /** For `lookup`: the table (tableId). */
  readonly table: string;
  /** `suppress_prefixlength`: a route found with a prefix this long or shorter is ignored, and
   * the lookup goes on with the next rule (fib4_rule_suppress). */
  readonly suppressPrefixlen?: number;
}

/** What a route is looked up for (struct flowi): the packet's mark, its input interface (`lo`
 * for a locally generated packet and for fib and rpfilter lookups, as the kernel's
 * LOOPBACK_IFINDEX), its source address. No output interface: only a socket bound to a device
 * has one, and nftsim routes such a packet (`oif` given) to it without rules. */
export interface RouteKey {
  readonly mark: number;
  readonly iif?: string;
  readonly src?: Address;
}

/** A lookup with no mark, interface or source: what the main table alone gives, when no rule
 * selects on them. */
export const PLAIN_KEY: RouteKey = { mark: 0 };

/** The key of a lookup the host makes for itself (nft fib without `mark`, xt_rpfilter without
 * `--validmark`): no mark, from LOOPBACK_IFINDEX. */
export const HOST_KEY: RouteKey = { mark: 0, iif: 'lo' };

const TABLE_IDS: Readonly<Record<string, string>> = { default: '253', main: '254', local: '255' };

/** A routing table as rules and routes name it: `main`, `local` and `default` by their numbers
 * (254, 255, 253), other names as they are (iproute2's rt_tables names them). */
export function tableId(name: string | number): string {
  const text = String(name);
  return TABLE_IDS[text] ?? text;
}

export const MAIN_TABLE = tableId('main');
export const LOCAL_TABLE = tableId('local');
const DEFAULT_TABLE = tableId('default');

/** The rules of a host that lists none, after the local table's, which lookupRoute's caller
 * consults first: main and default for IPv4 (fib_default_rules_init), main only for IPv6
 * (fib6_rules_net_init). */
export const DEFAULT_RULES: Readonly<Record<AddressFamily, readonly HostRule[]>> = {
  ip: [
    { priority: 32766, not: false, action: 'lookup', table: MAIN_TABLE },
    { priority: 32767, not: false, action: 'lookup', table: DEFAULT_TABLE },
  ],
  ip6: [{ priority: 32766, not: false, action: 'lookup', table: MAIN_TABLE }],
};

const RULE_FIELDS = ['priority', 'not', 'src', 'srclen', 'dst', 'dstlen', 'fwmark', 'fwmask', 'iif', 'oif', 'table', 'action', 'suppress_prefixlen'];
/** Fields `ip -j rule show` prints that neither select nor act. */
const IGNORED_FIELDS = ['iif_detached', 'oif_detached', 'flags', 'protocol', 'realms'];
/** What `ip -j rule show` prints of selectors and actions nftsim does not model (iproute2
 * iprule.c): a rule with one is refused. The ends of a range go with its start. */
const UNMODELLED_SELECTORS = ['tos', 'dsfield', 'ipproto', 'sport', 'sport_start', 'dport', 'dport_start', 'uid_start', 'l3mdev', 'goto', 'nop', 'suppress_ifgroup'];
const RANGE_ENDS = ['sport_end', 'dport_end', 'uid_end'];

/** The rules of one family as `ip -j rule show` (`ip -6 -j rule show`) prints them, in
 * priority order. */
export function readRules(reader: FieldReader, value: unknown, path: FieldPath, family: AddressFamily): HostRule[] {
  const rules: HostRule[] = [];
  for (const [i, item] of (reader.array(value, path) ?? []).entries()) {
    const at = [...path, i];
    const record = reader.object(item, at, [...RULE_FIELDS, ...IGNORED_FIELDS, ...UNMODELLED_SELECTORS, ...RANGE_ENDS], 'kept');
    if (!record) continue;
    const unmodelled = UNMODELLED_SELECTORS.find((field) => record[field] !== undefined);
    if (unmodelled) {
      reader.fail([...at, unmodelled], `a rule selecting by ${unmodelled} is not modelled`);
      continue;
    }
    const priority = reader.unsigned(record.priority, [...at, 'priority'], 32);
    const prefix = (field: 'src' | 'dst'): Cidr | undefined => {
      const text = record[field];
      if (text === undefined || text === 'all') return undefined;
      const address = typeof text === 'string' ? parseAddress(text) : undefined;
      if (!address || address.family !== family) return reader.fail([...at, field], `expected 'all' or an ${family === 'ip' ? 'IPv4' : 'IPv6'} address`);
      const length = record[`${field}len`] === undefined ? familyBits(family) : reader.unsigned(record[`${field}len`], [...at, `${field}len`], 8);
      return length === undefined ? undefined : { ...address, prefix: length };
    };
    const src = prefix('src');
    const dst = prefix('dst');
    const fwmark = record.fwmark === undefined ? undefined : reader.unsigned(record.fwmark, [...at, 'fwmark'], 32);
    const fwmask = record.fwmask === undefined ? 0xffffffff : reader.unsigned(record.fwmask, [...at, 'fwmask'], 32);
    const action = record.action === undefined ? 'lookup' : reader.string(record.action, [...at, 'action']);
    if (action !== undefined && action !== 'lookup' && action !== 'unreachable' && action !== 'blackhole' && action !== 'prohibit') {
      reader.fail([...at, 'action'], `expected unreachable, blackhole or prohibit (a rule without action looks its table up)`);
      continue;
    }
    const table = record.table === undefined ? undefined : typeof record.table === 'number' ? String(record.table) : reader.string(record.table, [...at, 'table']);
    if (action === 'lookup' && table === undefined) reader.fail([...at, 'table'], 'a rule without action needs a table');
    const iif = record.iif === undefined ? undefined : reader.string(record.iif, [...at, 'iif']);
    const oif = record.oif === undefined ? undefined : reader.string(record.oif, [...at, 'oif']);
    const suppress = record.suppress_prefixlen === undefined ? undefined : reader.unsigned(record.suppress_prefixlen, [...at, 'suppress_prefixlen'], 8);
    if (priority === undefined || action === undefined || (action === 'lookup' && table === undefined) || fwmask === undefined) continue;
    rules.push({
      priority,
      // `ip -j` prints the flag as `"not": null`.
      not: record.not !== undefined && record.not !== false,
      ...(fwmark !== undefined && { fwmark: { value: fwmark, mask: fwmask } }),
      ...(src && { src }),
      ...(dst && { dst }),
      ...(iif !== undefined && { iif }),
      ...(oif !== undefined && { oif }),
      action,
      table: tableId(table ?? ''),
      ...(suppress !== undefined && { suppressPrefixlen: suppress }),
    });
  }
  // Rules of equal priority keep their order (fib_nl_newrule inserts after them).
  return rules.sort((a, b) => a.priority - b.priority);
}

/** fib_rule_match: every selector the rule has matches (interfaces, mark under its mask, source
 * and destination prefixes), inverted by `not`. An `oif` rule matches no lookup nftsim makes
 * (RouteKey). */
export function isRuleMatching(rule: HostRule, dst: Address, key: RouteKey): boolean {
  let matched =
    (rule.iif === undefined || rule.iif === key.iif) &&
    rule.oif === undefined &&
    (rule.fwmark === undefined || ((rule.fwmark.value ^ key.mark) & rule.fwmark.mask) === 0) &&
    (rule.dst === undefined || isInPrefix(dst, rule.dst));
  if (matched && rule.src !== undefined) matched = key.src !== undefined && isInPrefix(key.src, rule.src);
  return matched !== rule.not;
}

function isInPrefix(address: Address, prefix: Cidr): boolean {
  if (address.family !== prefix.family) return false;
  const mask = prefixMask(familyBits(prefix.family), prefix.prefix);
  return (address.n & mask) === (prefix.n & mask);
}
