// The source address masquerade gives a packet (nf_nat_masquerade.c): the address the kernel
// would pick as the source of a packet sent through the egress interface, which is not always
// that interface's first address. A local packet to a local address leaves through lo, whose
// loopback addresses are never picked: the kernel takes another interface's address.

import { isInCidr, prefixMask, type Address, type Cidr } from './address.js';
import { addressesOf, ipv6MulticastScope, ipv6Scope, isMulticastAddress, type Host } from './host.js';

/** The address masquerade rewrites the source to, for a packet to `dst` leaving through `oif`;
 * `nexthop` gives rt_nexthop (the route's gateway, else the destination), asked for only when the
 * interface has several addresses to choose from. Undefined when the node has none to give (the
 * kernel drops the packet). */
export function masqueradeSource(host: Host, oif: string, dst: Address, nexthop: () => Address): Cidr | undefined {
  return dst.family === 'ip' ? ipv4Source(host, oif, nexthop) : ipv6Source(host, oif, dst);
}

/** inet_select_addr(out, nexthop, RT_SCOPE_UNIVERSE) (devinet.c): of the egress interface's
 * primary addresses of universe scope, the first in the nexthop's subnet, else the first; when it
 * has none, the first such address of the interfaces in their order (lo is first). */
function ipv4Source(host: Host, oif: string, nexthop: () => Address): Cidr | undefined {
  const own = addressesOf(host, oif);
  let first: Cidr | undefined;
  let via: Address | undefined;
  for (let i = 0; i < own.length; i++) {
    if (!isUniversePrimary(own, i)) continue;
    const c = own[i]!;
    if (!first) first = c;
    else {
      via ??= nexthop();
      if (isInCidr(via, first)) return first;
      if (isInCidr(via, c)) return c;
    }
  }
  if (first) return first;
  for (const iface of host.interfaces) {
    for (let i = 0; i < iface.addresses.length; i++) if (isUniversePrimary(iface.addresses, i)) return iface.addresses[i];
  }
  return undefined;
}

/** Whether the address at `i` is an IPv4 address of universe scope that is not secondary. The
 * scope is the one iproute2 gives when none is said (default_scope: host for 127.0.0.0/8, as the
 * kernel's own 127.0.0.1 on lo); an address is secondary when an earlier one of the interface has
 * its prefix length and subnet (__inet_insert_ifa sets IFA_F_SECONDARY). */
function isUniversePrimary(addresses: readonly Cidr[], i: number): boolean {
  const c = addresses[i]!;
  if (c.family !== 'ip' || (c.n >= LOOPBACK_NET && c.n <= LOOPBACK_LAST)) return false;
  for (let j = 0; j < i; j++) {
    const earlier = addresses[j]!;
    if (earlier.family === 'ip' && earlier.prefix === c.prefix && isInCidr(c, earlier)) return false;
  }
  return true;
}

/** 127.0.0.0/8. */
const LOOPBACK_NET = 0x7f000000n;
const LOOPBACK_LAST = 0x7fffffffn;

/** ipv6_dev_get_saddr(net, out, dst, 0) (addrconf.c): every IPv6 address of the node (only the
 * egress interface's for a multicast destination or one of link-local scope or narrower),
 * compared by the rules of RFC 6724 in the kernel's order, the first of the best kept: the
 * interface's addresses are read in the order `ip addr show` lists them, which for addresses of
 * one scope is the newest first (ipv6_link_dev_addr). Rules 3, 4 and 7 (deprecated, home and
 * temporary addresses) are not told apart: the host input has no address flags. */
function ipv6Source(host: Host, oif: string, dst: Address): Cidr | undefined {
  const multicast = isMulticastAddress(dst);
  // __ipv6_addr_src_scope: a multicast address's own scope field.
  const dstScope = multicast ? ipv6MulticastScope(dst.n) : SCOPE_VALUE[ipv6Scope(dst.n)];
  const dstLabel = labelOf(dst.n);
  const onlyOif = multicast || dstScope <= SCOPE_VALUE.link;
  let best: Cidr | undefined;
  let bestScore: readonly number[] = [];
  for (const iface of host.interfaces) {
    if (onlyOif && iface.name !== oif) continue;
    for (const c of iface.addresses) {
      if (c.family !== 'ip6') continue;
      const scope = SCOPE_VALUE[ipv6Scope(c.n)];
      const score = [
        // Rule 1: the destination itself.
        c.n === dst.n ? 1 : 0,
        // Rule 2: the smallest scope that is enough, else the largest.
        scope >= dstScope ? -scope : scope - 128,
        // Rule 5: on the egress interface.
        iface.name === oif ? 1 : 0,
        // Rule 6: the destination's label.
        labelOf(c.n) === dstLabel ? 1 : 0,
        // Rule 8: the longest prefix in common, up to the address's own prefix length.
        Math.min(commonPrefix(c.n, dst.n), c.prefix),
      ];
      if (!best || isBetter(score, bestScore)) {
        best = c;
        bestScore = score;
      }
    }
  }
  return best;
}

function isBetter(score: readonly number[], than: readonly number[]): boolean {
  for (let i = 0; i < score.length; i++) if (score[i] !== than[i]) return score[i]! > than[i]!;
  return false;
}

/** IPV6_ADDR_SCOPE_* of a unicast address (__ipv6_addr_src_scope): ::1 is of link-local scope
 * there (__ipv6_addr_type, "addr-select 3.4"). */
const SCOPE_VALUE = { loopback: 2, link: 2, site: 5, global: 14 } as const;

/** The kernel's default address labels (addrlabel.c ip6addrlbl_init_table), longest prefix
 * first. */
const LABELS: readonly { readonly prefix: bigint; readonly length: number; readonly label: number }[] = [
  { prefix: 1n, length: 128, label: 0 },
  { prefix: 0xffffn << 32n, length: 96, label: 4 },
  { prefix: 0n, length: 96, label: 3 },
  { prefix: 0x2001n << 112n, length: 32, label: 6 },
  { prefix: 0x2001_0010n << 96n, length: 28, label: 7 },
  { prefix: 0x2002n << 112n, length: 16, label: 2 },
  { prefix: 0x3ffen << 112n, length: 16, label: 12 },
  { prefix: 0xfec0n << 112n, length: 10, label: 11 },
  { prefix: 0xfc00n << 112n, length: 7, label: 5 },
];

function labelOf(n: bigint): number {
  for (const l of LABELS) if ((n & prefixMask(128, l.length)) === l.prefix) return l.label;
  return 1;
}

function commonPrefix(a: bigint, b: bigint): number {
  const diff = a ^ b;
  return diff === 0n ? 128 : 128 - diff.toString(2).length;
}
