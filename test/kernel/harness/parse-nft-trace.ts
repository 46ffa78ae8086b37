// Lines of `nft monitor trace` (nft 1.0.6; the printer is trace_print_* in nftables src/netlink.c)
// read into events. The forms seen on kernel 6.18:
//   trace id 80c56f0e ip filter INPUT packet: iif "eth0" ether saddr … ip saddr 192.0.2.1 … ip id 57569 …
//   trace id 80c56f0e inet kdtrace pre rule meta nftrace set 1 # handle 3 (verdict continue)
//   trace id 80c56f0e ip filter INPUT unknown rule handle 4 (verdict jump X)
//   trace id 80c56f0e ip filter X verdict continue meta mark 0x00000042
//   trace id 80c56f0e ip filter INPUT policy drop meta mark 0x00000042
// A rule loaded after the monitor started prints as `unknown rule handle N` (nft's cache is not
// refreshed), so the handle is what identifies a rule. The kernel sends the mark with every event
// but nft prints it only on policy and return lines, and only when it is not zero.

export type TraceKind = 'rule' | 'policy' | 'return';

export interface TraceEvent {
  readonly id: string;
  readonly family: string;
  readonly table: string;
  readonly chain: string;
  readonly kind: TraceKind;
  /** nft monitor trace's words: `accept`, `drop`, `continue`, `return`, `jump X`, `goto X`. */
  readonly verdict: string;
  /** The rule's handle (kind rule). */
  readonly handle?: number;
  /** `0x…` as nft prints it; on policy and return events only (absent there means 0x00000000). */
  readonly mark?: string;
}

/** The `packet:` line a trace prints when a base chain first sees the packet. */
export interface TracePacketLine {
  readonly id: string;
  readonly family: string;
  readonly table: string;
  readonly chain: string;
  /** Each `key value` pair of the line (`iif`, `oif`, `ip saddr`, `ip id`, `tcp dport`…), unquoted. */
  readonly fields: Readonly<Record<string, string>>;
}

export type TraceLine =
  | { readonly kind: 'event'; readonly event: TraceEvent }
  | { readonly kind: 'packet'; readonly packet: TracePacketLine };

const HEADER = /^trace id ([0-9a-f]{8}) (\S+) (\S+) (\S+) (.*)$/;
const RULE = /^rule (.*?)(?: # handle (\d+))? \(verdict (.+)\)$/;
const UNKNOWN_RULE = /^unknown rule handle (\d+) \(verdict (.+)\)$/;
const POLICY = /^policy (\S+)(?: meta mark (0x[0-9a-f]+))?$/;
const RETURN = /^verdict (.+?)(?: meta mark (0x[0-9a-f]+))?$/;
/** Keys of a packet line with two words (`ip saddr`); the rest are one word (`iif`). */
const TWO_WORD_KEY_PREFIXES = new Set(['ether', 'ip', 'ip6', 'tcp', 'udp', 'icmp', 'icmpv6', 'vlan', 'arp', 'sctp', 'meta']);

/** One line of `nft monitor trace`; undefined for anything else (a conntrack line, a blank). */
export function parseNftTraceLine(line: string): TraceLine | undefined {
  const header = HEADER.exec(line.trimEnd());
  if (!header) return undefined;
  const [, id = '', family = '', table = '', chain = '', rest = ''] = header;
  const where = { id, family, table, chain };
  if (rest.startsWith('packet: ')) return { kind: 'packet', packet: { ...where, fields: parsePacketFields(rest.slice(8)) } };
  const rule = RULE.exec(rest);
  if (rule) return event({ ...where, kind: 'rule', verdict: rule[3]!, ...handle(rule[2]) });
  const unknown = UNKNOWN_RULE.exec(rest);
  if (unknown) return event({ ...where, kind: 'rule', verdict: unknown[2]!, ...handle(unknown[1]) });
  const policy = POLICY.exec(rest);
  if (policy) return event({ ...where, kind: 'policy', verdict: policy[1]!, ...mark(policy[2]) });
  const returned = RETURN.exec(rest);
  if (returned) return event({ ...where, kind: 'return', verdict: returned[1]!, ...mark(returned[2]) });
  return undefined;
}

function event(value: TraceEvent): TraceLine {
  return { kind: 'event', event: value };
}

function handle(text: string | undefined): { handle?: number } {
  return text === undefined ? {} : { handle: Number(text) };
}

function mark(text: string | undefined): { mark?: string } {
  return text === undefined ? {} : { mark: text };
}

/** `iif "eth0" ip saddr 192.0.2.1 tcp flags == syn @th,64,16 0x6869` → key/value pairs. */
function parsePacketFields(text: string): Record<string, string> {
  const words = text.trim().split(/\s+/);
  const fields: Record<string, string> = {};
  let i = 0;
  while (i < words.length) {
    const first = words[i]!;
    const key = TWO_WORD_KEY_PREFIXES.has(first) && i + 1 < words.length ? `${first} ${words[++i]}` : first;
    i++;
    // `tcp flags == syn`: the only relational form the printer uses in a packet line.
    if (words[i] === '==') i++;
    // The first occurrence wins: a later one would belong to an inner header.
    fields[key] ??= (words[i] ?? '').replace(/^"(.*)"$/, '$1');
    i++;
  }
  return fields;
}
