// ipsets as `ipset save` lists them: the sets iptables rules name in `-m set --match-set`
// (Calico's pools and policy selectors, kube-proxy's ipvs mode, VPN agents' peer lists). They
// live beside the tables of a node's capture, in no table (the kernel keeps them per network
// namespace, for iptables and ip6tables alike).

import type { Span } from './ast.js';

/** What one part of an element is, by the set's type (`hash:ip,port,net`: ip, port, net). */
export type IpSetDimension = 'ip' | 'net' | 'port' | 'mac' | 'iface' | 'mark' | 'set';

/** The dimensions of the types `ipset` knows (ipset(8) SET TYPES), by type name. */
export const IPSET_TYPES: ReadonlyMap<string, readonly IpSetDimension[]> = new Map([
  ['bitmap:ip', ['ip']],
  ['bitmap:ip,mac', ['ip', 'mac']],
  ['bitmap:port', ['port']],
  ['hash:ip', ['ip']],
  ['hash:mac', ['mac']],
  ['hash:ip,mac', ['ip', 'mac']],
  ['hash:net', ['net']],
  ['hash:net,net', ['net', 'net']],
  ['hash:ip,port', ['ip', 'port']],
  ['hash:net,port', ['net', 'port']],
  ['hash:ip,port,ip', ['ip', 'port', 'ip']],
  ['hash:ip,port,net', ['ip', 'port', 'net']],
  ['hash:ip,mark', ['ip', 'mark']],
  ['hash:net,port,net', ['net', 'port', 'net']],
  ['hash:net,iface', ['net', 'iface']],
  ['list:set', ['set']],
] as const);

/** One part of an element, read by its dimension. An address (as written, without its prefix)
 * of an `ip` dimension has the prefix of the set's netmask (a whole host without one). A port
 * carries its protocol: `tcp:80` (a bare port is TCP's), an ICMP type and code as
 * `type << 8 | code` (ip_set_getport.c), a protocol without ports port 0; bitmap:port's ports
 * have no protocol (-1). */
export type IpSetPart =
  | { readonly kind: 'address'; readonly family: 'ip' | 'ip6'; readonly address: string; readonly prefix: number }
  | { readonly kind: 'port'; readonly protocol: number; readonly port: number }
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'mark'; readonly value: number };

export interface IpSetElement {
  readonly span: Span;
  /** The element as written: `10.0.0.1,tcp:80`. */
  readonly text: string;
  readonly parts: readonly IpSetPart[];
  /** `nomatch`: a hash:net-like set's exception inside a wider element of it. */
  readonly nomatch: boolean;
}

export interface IpSet {
  readonly kind: 'ipset';
  readonly span: Span;
  readonly name: string;
  /** `hash:ip,port`; a key of IPSET_TYPES. */
  readonly type: string;
  /** inet or inet6 for the types of one family; undefined for bitmap:port, hash:mac and
   * list:set, which serve both (NFPROTO_UNSPEC). */
  readonly family: 'inet' | 'inet6' | undefined;
  /** hash:ip's and bitmap:ip's `netmask`: elements and packets are whole networks of this prefix. */
  readonly netmask?: number;
  /** `bitmask` (ipset 7.17, Linux 6.1): the address parts of hash:ip and hash:ip,port are cut to
   * this mask, which need not be a prefix. */
  readonly bitmask?: string;
  /** The `create` line's options after the type, as written (hashsize, range, timeout…). */
  readonly options: readonly string[];
  readonly elements: readonly IpSetElement[];
}
