// The kernel side of the differential tests (issue 4): a node network namespace built from a host
// description, one veth per host interface with its peer in a namespace of its own, and per case:
// the rulesets loaded with `nft -f` / `iptables-nft-restore`, one crafted packet injected from the
// iif's peer (or from a raw socket inside the node for the output path), the node's
// `nft monitor trace` and what the peers capture read back.
//
// One harness keeps its namespaces for all its cases: a case flushes the ruleset and the conntrack
// table instead of rebuilding anything, so it costs a few process starts (nft, iptables-nft-restore)
// and no more. Packet I/O goes through packet-agent.py, one long-lived process that opened its
// sockets in every namespace at the start.
//
// Knowing when a case is over: after the case packet the agent sends a sentinel (UDP 9 → 9) the
// same way in; the trace table drops it at priority -500, before any other chain. Its trace line
// comes after every line of the case packet, since the kernel handles the two in order.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createNamespace, deleteNamespace, runInNamespace, runInNamespaceOrThrow } from '../helpers/network-namespace.mjs';
import { craftPacket, DEFAULT_SEQ, encodeAddress, findIpFamily, parseFrame, type KernelPacket, type SeenPacket } from './craft-packet.js';
import { parseNftTraceLine, type TraceEvent, type TracePacketLine } from './parse-nft-trace.js';

export interface HostInterface {
  readonly name: string;
  /** `192.0.2.10/24`, `2001:db8::10/64`. */
  readonly addresses: readonly string[];
}

export interface HostRoute {
  /** `default` or a prefix. */
  readonly dst: string;
  readonly via?: string;
  /** For a unicast route (the default type). */
  readonly dev?: string;
  readonly table?: string;
  readonly type?: 'unicast' | 'throw' | 'unreachable' | 'blackhole' | 'prohibit';
  /** A multipath route's nexthops, instead of `via` and `dev`. */
  readonly nexthops?: readonly { readonly via?: string; readonly dev: string; readonly weight?: number }[];
}

/** A routing rule as `ip -j rule show` prints it (the fields the harness sets up). */
export interface HostRule {
  readonly priority: number;
  readonly not?: null;
  readonly src?: string;
  readonly srclen?: number;
  readonly dst?: string;
  readonly dstlen?: number;
  readonly fwmark?: string;
  readonly fwmask?: string;
  readonly iif?: string;
  readonly table?: string;
  readonly action?: 'unreachable' | 'blackhole' | 'prohibit';
  readonly suppress_prefixlen?: number;
}

/** The `host` of the issue's packet JSON. */
export interface KernelHost {
  readonly interfaces: readonly HostInterface[];
  readonly routes?: readonly HostRoute[];
  /** The whole rule list of each family, as `ip -j rule show` and `ip -6 -j rule show` print it. */
  readonly rules?: readonly HostRule[];
  readonly rules6?: readonly HostRule[];
  readonly forwarding?: boolean;
}

export interface KernelRuleset {
  /** nft: `nft -f`; iptables / ip6tables: iptables-save text for `ip(6)tables-nft-restore`;
   * ipset: `ipset save` text for `ipset -exist restore` over the sets of earlier cases, emptied
   * first (destroying them fails while the kernel has not yet released the rules of the last case
   * that named them); first in a case, before the rules naming its sets. */
  readonly kind: 'nft' | 'iptables' | 'ip6tables' | 'ipset';
  readonly text: string;
}

export interface KernelCase {
  /** Loaded in this order (the kernel registers base chains of equal priority in load order). */
  readonly rulesets: readonly KernelRuleset[];
  readonly packet: KernelPacket;
}

/** A packet of a flow: a packet, or the reply to the previous one (its addresses and ports as the
 * previous packet's peer captured them, swapped; injected from that peer), fields overriding. */
export type KernelFlowPacket = KernelPacket | ({ readonly reply: true } & Partial<KernelPacket>);

export interface KernelFlowCase {
  /** Loaded once; the conntrack table is flushed before the first packet only. */
  readonly rulesets: readonly KernelRuleset[];
  /** The initial mark of packets from outside is the first packet's (one trace table for all). */
  readonly packets: readonly KernelFlowPacket[];
  /** End the flow after a packet the kernel dropped (TCP tracking would hold the connection's
   * later packets invalid), or before a reply to a packet neither a peer captured nor the node
   * took in (it has no sender).
   * Without it, a reply to such a packet is an error. */
  readonly endAtLoss?: boolean;
}

export interface KernelFlowResult {
  /** Each packet as injected (replies resolved) and what the kernel did to it. */
  readonly steps: readonly { readonly packet: KernelPacket; readonly result: KernelResult }[];
}

export interface KernelHarnessOptions {
  /** More addresses for a peer, by host interface name (e.g. the pods behind cni0); `a.b.c.d/len`. */
  readonly peerAddresses?: Readonly<Record<string, readonly string[]>>;
}

/** A trace event with what the listing of the loaded ruleset says about its chain and rule. */
export interface KernelTraceEvent extends TraceEvent {
  /** Hook of the base chain the packet was in (a regular chain inherits its caller's). */
  readonly hook?: string;
  /** Priority of that base chain. */
  readonly priority?: number;
  /** 0-based position of the rule in its chain (kind rule). */
  readonly ruleIndex?: number;
}

export interface KernelPacketSeen extends SeenPacket {
  /** The host interface whose far side received the packet. */
  readonly iface: string;
}

export type KernelDisposition = 'forwarded' | 'sent' | 'delivered' | 'dropped';

/** Hooks whose end the packet reached, every chain of the rulesets at that hook passed. */
export type KernelHookEnd = 'input' | 'forward' | 'postrouting';

export interface KernelResult {
  /** The case packet's trace without the harness's own table, in kernel order. */
  readonly trace: readonly KernelTraceEvent[];
  /** The `packet:` lines: the packet as each base chain first saw it (addresses before/after NAT). */
  readonly packets: readonly TracePacketLine[];
  /** What arrived on the far side, addresses and ports as rewritten by the node. */
  readonly delivered: KernelPacketSeen | undefined;
  /**
   * forwarded / sent: passed the end of postrouting (from an interface / generated locally) and
   * did not come back in through lo; delivered: passed the end of input; dropped: neither (a drop or reject verdict, which prints as
   * drop, is then the last event; without one the stack dropped it, e.g. no route).
   */
  readonly disposition: KernelDisposition;
  /** A packet delivered to the node: its addresses and ports as the end of input saw them. */
  readonly arrived?: Omit<KernelPacket, 'iif' | 'oif'>;
  readonly reached: readonly KernelHookEnd[];
  /** The raw trace lines of the case packet, kdtrace included, for failure messages. */
  readonly lines: readonly string[];
  readonly elapsedMs: number;
}

export interface KernelHarness {
  readonly nodeNamespace: string;
  readonly peerNamespaces: ReadonlyMap<string, string>;
  run(testCase: KernelCase): Promise<KernelResult>;
  /** Several packets of one or more connections, later ones meeting the conntrack entries of the
   * earlier ones. */
  runFlow(flowCase: KernelFlowCase): Promise<KernelFlowResult>;
  close(): void;
}

const AGENT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'packet-agent.py');
const TRACE_TABLE = 'kdtrace';
/** The peer's end of every veth, in the peer's own namespace. */
const PEER_IFNAME = 'kdpeer';
const SENTINEL_PORT = 9;
/** The trace table's chains at the end of these hooks tell where the packet got to. */
const HOOK_END_CHAINS: readonly KernelHookEnd[] = ['input', 'forward', 'postrouting'];
/** Last of all, yet before conntrack confirmation (INT_MAX, include/uapi/linux/netfilter_ipv4.h). */
const HOOK_END_PRIORITY = 2147483000;
const SENTINEL_TIMEOUT_MS = 3000;
/** How long frames may trail the sentinel's trace line (they are normally already queued). */
const CAPTURE_GRACE_MS = 3;
/** How long more a frame is waited for when the trace says the packet left the node. */
const LATE_CAPTURE_MS = 500;

/**
 * Builds the namespaces for `host` and starts the trace monitor and the packet agent. Call close()
 * when done (it is also done at process exit); on failure everything made so far is removed.
 */
export async function openKernelHarness(host: KernelHost, options: KernelHarnessOptions = {}): Promise<KernelHarness> {
  const namespaces: string[] = [];
  const children: ChildProcessWithoutNullStreams[] = [];
  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    for (const child of children) child.kill();
    for (const name of namespaces) deleteNamespace(name);
    process.off('exit', close);
  };
  process.on('exit', close);
  try {
    const node = createNamespace('kd');
    namespaces.push(node);
    const peers = new Map<string, string>();
    host.interfaces.forEach((iface, index) => {
      const peer = createNamespace(`kd-p${index}`);
      namespaces.push(peer);
      peers.set(iface.name, peer);
    });
    buildTopology(host, node, peers, options);
    const monitor = startTraceMonitor(node);
    children.push(monitor.child);
    const agent = startAgent();
    children.push(agent.child);
    await agent.request({
      op: 'open',
      node: `/run/netns/${node}`,
      peers: host.interfaces.map((iface, index) => ({
        ns: `/run/netns/${peers.get(iface.name)}`,
        ifname: PEER_IFNAME,
        dstMac: nodeMac(index),
        srcMac: peerMac(index),
      })),
    });
    const runner = new CaseRunner(host, node, monitor, agent);
    await runner.waitUntilMonitoring();
    return {
      nodeNamespace: node,
      peerNamespaces: peers,
      run: async (testCase) => (await runner.runFlow({ rulesets: testCase.rulesets, packets: [testCase.packet] })).steps[0]!.result,
      runFlow: (flowCase) => runner.runFlow(flowCase),
      close,
    };
  } catch (error) {
    close();
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Topology

function nodeMac(index: number): string {
  return `02:6b:64:00:${index.toString(16).padStart(2, '0')}:01`;
}

function peerMac(index: number): string {
  return `02:6b:64:00:${index.toString(16).padStart(2, '0')}:02`;
}

/**
 * The node's veths are NOARP: every next hop resolves at once to the device's own MAC, so no
 * neighbour resolution can delay or lose a packet, whatever address NAT picked. The peer receives
 * such frames as PACKET_OTHERHOST: its capture sees them, its stack drops them without a reply.
 */
function buildTopology(host: KernelHost, node: string, peers: ReadonlyMap<string, string>, options: KernelHarnessOptions): void {
  const hasIpv6 = host.interfaces.some((iface) => iface.addresses.some((address) => findIpFamily(splitPrefix(address).address) === 'ip6'));
  const forwarding = host.forwarding ?? true ? '1' : '0';
  runInNamespaceOrThrow(node, [
    'sysctl',
    '-q',
    '-w',
    `net.ipv4.ip_forward=${forwarding}`,
    'net.ipv4.conf.all.rp_filter=0',
    'net.ipv4.conf.default.rp_filter=0',
    // No ICMP redirects: nftsim does not simulate the packets the kernel makes (docs/simulator-limits.md).
    'net.ipv4.conf.all.send_redirects=0',
    'net.ipv4.conf.default.send_redirects=0',
    `net.ipv6.conf.all.disable_ipv6=${hasIpv6 ? 0 : 1}`,
    `net.ipv6.conf.default.disable_ipv6=${hasIpv6 ? 0 : 1}`,
    ...(hasIpv6
      ? [
          `net.ipv6.conf.all.forwarding=${forwarding}`,
          'net.ipv6.conf.default.accept_dad=0',
          // No link-local address but those the host description lists (nftsim knows no other).
          'net.ipv6.conf.default.addr_gen_mode=1',
          'net.ipv6.conf.default.accept_ra=0',
          'net.ipv6.conf.default.router_solicitations=0',
        ]
      : []),
  ]);
  const nodeBatch = ['link set dev lo up'];
  host.interfaces.forEach((iface, index) => {
    const peer = peers.get(iface.name)!;
    runInNamespaceOrThrow(peer, ['sysctl', '-q', '-w', 'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.default.disable_ipv6=1']);
    const created = runInNamespace(node, [
      'ip', 'link', 'add', iface.name, 'address', nodeMac(index), 'type', 'veth',
      'peer', 'name', PEER_IFNAME, 'address', peerMac(index), 'netns', peer,
    ]);
    if (created.status !== 0) throw new Error(`creating veth ${iface.name}: ${created.stderr.trim()}`);
    nodeBatch.push(`link set dev ${iface.name} arp off`, `link set dev ${iface.name} up`);
    for (const address of iface.addresses) {
      const nodad = findIpFamily(splitPrefix(address).address) === 'ip6' ? ' nodad' : '';
      nodeBatch.push(`address add ${address} dev ${iface.name}${nodad}`);
    }
    const peerBatch = ['link set dev lo up', `link set dev ${PEER_IFNAME} arp off`, `link set dev ${PEER_IFNAME} up`];
    const peerAddresses = choosePeerAddresses(host, iface, options.peerAddresses?.[iface.name] ?? []);
    for (const address of peerAddresses) peerBatch.push(`address add ${address} dev ${PEER_IFNAME}`);
    // Back through the node's address in a subnet of the peer's (on an interface of two subnets
    // with a gateway in the second, the peer has only the gateway's).
    const own = iface.addresses.map(splitPrefix).filter((prefix) => findIpFamily(prefix.address) === 'ip');
    const back = own.find((prefix) => peerAddresses.some((peer) => sameIpv4Subnet(prefix.address, splitPrefix(peer).address, prefix.length))) ?? own[0];
    if (back) peerBatch.push(`route add default via ${back.address} dev ${PEER_IFNAME}`);
    runInNamespaceOrThrow(peer, ['ip', '-batch', '-'], `${peerBatch.join('\n')}\n`);
  });
  for (const route of host.routes ?? []) {
    const via = route.via ?? route.nexthops?.find((nexthop) => nexthop.via)?.via;
    const v6 = via ? findIpFamily(via) === 'ip6' : route.dst.includes(':');
    const dst = route.dst === 'default' ? (v6 ? '::/0' : '0.0.0.0/0') : route.dst;
    const type = route.type && route.type !== 'unicast' ? `${route.type} ` : '';
    const nexthops = (route.nexthops ?? []).map((nexthop) => ` nexthop${nexthop.via ? ` via ${nexthop.via}` : ''} dev ${nexthop.dev}${nexthop.weight ? ` weight ${nexthop.weight}` : ''}`).join('');
    // iproute2 reads the nexthops last.
    nodeBatch.push(`route add ${type}${dst}${route.via ? ` via ${route.via}` : ''}${route.dev ? ` dev ${route.dev}` : ''}${route.table ? ` table ${route.table}` : ''}${nexthops}`);
  }
  runInNamespaceOrThrow(node, ['ip', '-batch', '-'], `${nodeBatch.join('\n')}\n`);
  for (const [flag, rules] of [['-4', host.rules], ['-6', host.rules6]] as const) {
    if (rules) runInNamespaceOrThrow(node, ['ip', flag, '-batch', '-'], ['rule flush', ...rules.filter((r) => r.priority !== 0).map(ruleCommand)].join('\n') + '\n');
  }
}

/** `rule add …` for a rule of `ip -j rule show` (the local rule at 0 survives `rule flush`). */
function ruleCommand(rule: HostRule): string {
  const prefix = (address: string | undefined, length: number | undefined) => (address === undefined || address === 'all' ? undefined : length === undefined ? address : `${address}/${length}`);
  const from = prefix(rule.src, rule.srclen);
  const to = prefix(rule.dst, rule.dstlen);
  return [
    'rule add',
    rule.not !== undefined ? 'not' : '',
    from ? `from ${from}` : '',
    to ? `to ${to}` : '',
    rule.fwmark ? `fwmark ${rule.fwmark}${rule.fwmask ? `/${rule.fwmask}` : ''}` : '',
    rule.iif ? `iif ${rule.iif}` : '',
    `pref ${rule.priority}`,
    rule.action ?? `lookup ${rule.table}`,
    rule.suppress_prefixlen !== undefined ? `suppress_prefixlength ${rule.suppress_prefixlen}` : '',
  ]
    .filter((part) => part !== '')
    .join(' ');
}

/**
 * The destination MAC of the frame carrying a packet to `dst` into the node through `iface`, as a
 * sender on the link sets it: the group's MAC for a multicast address (RFC 1112, RFC 2464), the
 * broadcast MAC for the limited broadcast and the broadcast address of one of the interface's
 * subnets, else undefined (the node's own MAC). The kernel reads skb->pkt_type (`meta pkttype`)
 * from it; nftsim gives a received packet the same (src/sim/host.ts linkPacketType). Which MAC a
 * sender picks is this rule and nftsim's alike, not the kernel's: the kernel rows check how the
 * kernel reads the frame, and what it then does with the packet.
 */
function linkDestination(iface: HostInterface, dst: string): string | undefined {
  const bytes = encodeAddress(dst);
  const hex = (values: readonly number[]): string => values.map((b) => b.toString(16).padStart(2, '0')).join(':');
  if (bytes.length === 16) return bytes[0] === 0xff ? hex([0x33, 0x33, ...bytes.subarray(12)]) : undefined;
  if (bytes[0]! >> 4 === 0xe) return hex([0x01, 0x00, 0x5e, bytes[1]! & 0x7f, bytes[2]!, bytes[3]!]);
  const n = ipv4ToNumber(dst);
  const subnetBroadcast = iface.addresses.map(splitPrefix).some(({ address, length }) => {
    if (findIpFamily(address) !== 'ip' || length >= 31) return false;
    const hostBits = length === 0 ? -1 : ~(~0 << (32 - length));
    return ((ipv4ToNumber(address) | hostBits) | 0) === n;
  });
  return n === -1 || subnetBroadcast ? 'ff:ff:ff:ff:ff:ff' : undefined;
}

function splitPrefix(text: string): { address: string; length: number } {
  const [address = '', length] = text.split('/');
  return { address, length: Number(length ?? (address.includes(':') ? 128 : 32)) };
}

/**
 * The peer's addresses: every gateway the routes name on this interface, the given extra ones, and
 * else the first host address of each IPv4 subnet that is not the node's. Only for looks and for
 * traffic the peer might originate: the capture works below IP and needs none.
 */
function choosePeerAddresses(host: KernelHost, iface: HostInterface, extra: readonly string[]): string[] {
  const chosen = new Set(extra);
  for (const text of iface.addresses) {
    const { address, length } = splitPrefix(text);
    if (findIpFamily(address) !== 'ip') continue;
    const gateways = (host.routes ?? []).flatMap((route): readonly { readonly via?: string; readonly dev?: string }[] => route.nexthops ?? [route]).filter((hop) => hop.dev === iface.name && hop.via && findIpFamily(hop.via) === 'ip');
    for (const hop of gateways) chosen.add(`${hop.via}/${length}`);
    if (gateways.length === 0 && length < 31) {
      const base = ipv4ToNumber(address) & (length === 0 ? 0 : ~0 << (32 - length));
      const own = ipv4ToNumber(address);
      const candidate = base + 1 === own ? base + 2 : base + 1;
      chosen.add(`${numberToIpv4(candidate)}/${length}`);
    }
  }
  return [...chosen];
}

function sameIpv4Subnet(a: string, b: string, length: number): boolean {
  if (findIpFamily(b) !== 'ip') return false;
  const mask = length === 0 ? 0 : ~0 << (32 - length);
  return (ipv4ToNumber(a) & mask) === (ipv4ToNumber(b) & mask);
}

function ipv4ToNumber(address: string): number {
  return address.split('.').reduce((value, part) => value * 256 + Number(part), 0) | 0;
}

function numberToIpv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.');
}

// ---------------------------------------------------------------------------------------------
// Processes

interface TraceMonitor {
  readonly child: ChildProcessWithoutNullStreams;
  /** Every line from now on goes to `listener` (replacing the previous one). */
  listen(listener: (line: string) => void): void;
}

function startTraceMonitor(node: string): TraceMonitor {
  // stdbuf: nft writes through stdio, which a pipe would otherwise block-buffer.
  const child = spawn('ip', ['netns', 'exec', node, 'stdbuf', '-oL', 'nft', 'monitor', 'trace']);
  let listener: (line: string) => void = () => {};
  createInterface({ input: child.stdout }).on('line', (line) => listener(line));
  child.stderr.resume();
  return { child, listen: (next) => (listener = next) };
}

interface Agent {
  readonly child: ChildProcessWithoutNullStreams;
  request(message: Record<string, unknown>): Promise<Record<string, unknown>>;
}

function startAgent(): Agent {
  const child = spawn('python3', ['-u', AGENT]);
  const waiting: { resolve: (reply: Record<string, unknown>) => void; reject: (error: Error) => void }[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => {
    const reply = JSON.parse(line) as Record<string, unknown>;
    const next = waiting.shift();
    if (!next) return;
    if (reply.ok === true) next.resolve(reply);
    else next.reject(new Error(`packet agent: ${String(reply.error)}`));
  });
  child.on('exit', (code) => {
    for (const next of waiting.splice(0)) next.reject(new Error(`packet agent exited (${code}): ${stderr.trim()}`));
  });
  return {
    child,
    request: (message) =>
      new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        child.stdin.write(`${JSON.stringify(message)}\n`);
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// Cases

interface ListedChain {
  readonly hook?: string;
  readonly priority?: number;
  /** Rule handles in chain order. */
  readonly handles: number[];
}

interface NftJsonListing {
  readonly nftables: readonly Record<string, Record<string, unknown>>[];
}

class CaseRunner {
  private nextTag = 1;
  private readonly listings = new Map<string, ReadonlyMap<string, ListedChain>>();

  constructor(
    private readonly host: KernelHost,
    private readonly node: string,
    private readonly monitor: TraceMonitor,
    private readonly agent: Agent,
  ) {}

  /** Sends sentinels until one shows in the trace: nft monitor has then subscribed. */
  async waitUntilMonitoring(): Promise<void> {
    this.loadRulesets([], undefined);
    const deadline = Date.now() + SENTINEL_TIMEOUT_MS;
    for (;;) {
      const tag = this.takeTag();
      const seen = this.collectTraceLines(200, tag);
      const sentinel = craftSentinel('127.0.0.1', tag).toString('hex');
      await this.agent.request({ op: 'inject', via: -1, packet: sentinel, sentinel, dst: '127.0.0.1' });
      try {
        await seen;
        return;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`nft monitor trace in ${this.node} shows nothing: ${String(error)}`);
      }
    }
  }

  async runFlow(flowCase: KernelFlowCase): Promise<KernelFlowResult> {
    const [first] = flowCase.packets;
    if (first === undefined || 'reply' in first) throw new Error('a flow starts with a packet, not a reply');
    const listing = this.loadRulesets(flowCase.rulesets, first.iif === undefined ? undefined : first.mark);
    await this.agent.request({ op: 'flush' });
    const steps: { packet: KernelPacket; result: KernelResult }[] = [];
    for (const written of flowCase.packets) {
      const last = steps[steps.length - 1]?.result;
      if (flowCase.endAtLoss && last && (last.disposition === 'dropped' || ('reply' in written && !isAnswerable(last)))) break;
      const packet = 'reply' in written ? replyTo(steps[steps.length - 1], written) : written;
      steps.push({ packet, result: await this.inject(packet, listing) });
    }
    return { steps };
  }

  private async inject(packet: KernelPacket, listing: ReadonlyMap<string, ListedChain>): Promise<KernelResult> {
    const started = performance.now();
    const tag = this.takeTag();
    const via = packet.iif === undefined ? -1 : this.host.interfaces.findIndex((iface) => iface.name === packet.iif);
    if (via === -1 && packet.iif !== undefined) throw new Error(`packet.iif ${packet.iif} is not a host interface`);
    if (packet.protocol === 'udp' && packet.sport === SENTINEL_PORT && packet.dport === SENTINEL_PORT) {
      throw new Error(`UDP ${SENTINEL_PORT} → ${SENTINEL_PORT} is the harness's sentinel`);
    }
    const seen = this.collectTraceLines(SENTINEL_TIMEOUT_MS, tag);
    await this.agent.request({
      op: 'inject',
      via,
      packet: craftPacket(packet, tag).toString('hex'),
      // After a local packet the sentinel comes in from the first peer: a packet the node sent
      // itself through lo waits in the same backlog, so its prerouting and input come first.
      sentinel: craftSentinel(via === -1 && this.host.interfaces.length === 0 ? '127.0.0.1' : '192.0.0.8', tag).toString('hex'),
      ...(via === -1 && this.host.interfaces.length > 0 && { sentinelVia: 0 }),
      dst: packet.dst,
      ...(via >= 0 && { dstMac: linkDestination(this.host.interfaces[via]!, packet.dst) }),
      mark: packet.iif === undefined ? parseMark(packet.mark) : 0,
      oif: packet.oif,
    });
    const lines = await seen;
    const collect = async (graceMs: number) => ((await this.agent.request({ op: 'collect', graceMs })) as { frames: { peer: number; hex: string }[] }).frames;
    const frames = await collect(CAPTURE_GRACE_MS);
    const result = this.buildResult(lines, frames, tag, findIpFamily(packet.src), listing, packet, started);
    if (result.delivered || (result.disposition !== 'forwarded' && result.disposition !== 'sent')) return result;
    // The packet left the node but its frame has not reached the peer's socket yet: on a busy
    // machine the peer's backlog can trail the sentinel by more than the grace.
    return this.buildResult(lines, [...frames, ...(await collect(LATE_CAPTURE_MS))], tag, findIpFamily(packet.src), listing, packet, started);
  }

  /** 1..0xfffe, wrapping: fits an IPv4 identification and an IPv6 flow label, never 0. */
  private takeTag(): number {
    const tag = this.nextTag;
    this.nextTag = (this.nextTag % 0xfffe) + 1;
    return tag;
  }

  /**
   * Flushes the ruleset, loads `rulesets` in order and the trace table, and returns the listing's
   * chains. `mark`: the initial mark of a packet from outside, set by the trace table (a veth
   * clears the mark of a packet crossing namespaces). The flush and the trace table ride along with
   * the first nft ruleset when there is one (the trace table after it, so that a `flush ruleset`
   * in it cannot remove it): every process start counts.
   */
  private loadRulesets(rulesets: readonly KernelRuleset[], mark: string | number | undefined): ReadonlyMap<string, ListedChain> {
    const trace = traceTable(parseMark(mark), this.host.interfaces.map((iface) => iface.name));
    const [first] = rulesets;
    if (first?.kind !== 'nft') this.runOrThrow(['nft', '-f', '-'], `flush ruleset\n${trace}`, 'the trace table');
    rulesets.forEach((ruleset, index) => {
      const where = `ruleset ${index} (${ruleset.kind})`;
      if (ruleset.kind === 'ipset') {
        this.runOrThrow(['ipset', 'flush'], '', 'emptying the ipsets of earlier cases');
        this.runOrThrow(['ipset', '-exist', 'restore'], ruleset.text, where);
      } else if (ruleset.kind !== 'nft') this.runOrThrow([`${ruleset.kind}-nft-restore`], ruleset.text, where);
      else if (index === 0) this.runOrThrow(['nft', '-f', '-'], `flush ruleset\n${ruleset.text}\n${trace}`, `${where}, its line numbers + 1`);
      else this.runOrThrow(['nft', '-f', '-'], ruleset.text, where);
    });
    const key = JSON.stringify(rulesets);
    const cached = this.listings.get(key);
    if (cached) return cached;
    // After a flush, every table is new and numbers its chains and rules from 1 again: the same
    // rulesets always get the same handles, so their listing can be reused.
    const chains = readListing(this.runOrThrow(['nft', '-j', 'list', 'ruleset'], '', 'the listing'));
    if (!chains.has(chainKey('inet', TRACE_TABLE, 'pre'))) throw new Error(`a ruleset removed table inet ${TRACE_TABLE}`);
    this.listings.set(key, chains);
    return chains;
  }

  /**
   * Runs a tool in the node's network namespace. nsenter rather than `ip netns exec`, which also
   * remounts /sys for each command: half the cost of a call, and nft and iptables need only the
   * network namespace.
   */
  private runOrThrow(args: readonly string[], input: string, what: string): string {
    const result = spawnSync('nsenter', [`--net=/run/netns/${this.node}`, ...args], { input, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    if (result.status !== 0) throw new Error(`${what} refused by ${args[0]}: ${(result.stderr ?? String(result.error)).trim().slice(0, 2000)}`);
    return result.stdout;
  }

  /**
   * The trace lines up to the drop of the sentinel tagged `tag`; rejects after `timeoutMs`. The
   * tag tells this inject's sentinel from a late one of an earlier inject.
   */
  private collectTraceLines(timeoutMs: number, tag: number): Promise<string[]> {
    const lines: string[] = [];
    let sentinelId: string | undefined;
    const collected = new Promise<string[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.monitor.listen(() => {});
        reject(new Error(`no sentinel in the trace after ${timeoutMs} ms; lines: ${lines.slice(-20).join('\n')}`));
      }, timeoutMs);
      this.monitor.listen((line) => {
        lines.push(line);
        const parsed = parseNftTraceLine(line);
        if (parsed?.kind === 'packet' && isSentinel(parsed.packet, tag)) sentinelId = parsed.packet.id;
        if (parsed?.kind === 'event' && parsed.event.id === sentinelId && parsed.event.table === TRACE_TABLE && parsed.event.verdict === 'drop') {
          clearTimeout(timer);
          this.monitor.listen(() => {});
          resolve(lines);
        }
      });
    });
    // Awaited only after the inject request: a failing request must not leave it unhandled.
    collected.catch(() => {});
    return collected;
  }

  private buildResult(
    lines: readonly string[],
    frames: readonly { peer: number; hex: string }[],
    tag: number,
    family: 'ip' | 'ip6',
    chains: ReadonlyMap<string, ListedChain>,
    packet: KernelPacket,
    started: number,
  ): KernelResult {
    const tagKey = family === 'ip' ? 'ip id' : 'ip6 flowlabel';
    const tagText = String(family === 'ip' ? tag & 0xffff : tag);
    const parsed = lines.map((line) => ({ line, parsed: parseNftTraceLine(line) }));
    const ids = new Set(
      parsed.flatMap(({ parsed: p }) => (p?.kind === 'packet' && p.packet.fields[tagKey] === tagText && !isSentinel(p.packet, tag) ? [p.packet.id] : [])),
    );
    const mine = parsed.filter(({ parsed: p }) => p !== undefined && ids.has(p.kind === 'packet' ? p.packet.id : p.event.id));
    const packets: TracePacketLine[] = [];
    const trace: KernelTraceEvent[] = [];
    let hook: string | undefined;
    let priority: number | undefined;
    const reached: KernelHookEnd[] = [];
    // A locally generated packet to a local address leaves through lo and comes back in: the
    // trace table's prerouting chain then sees it.
    let cameBack = false;
    let arrived: TracePacketLine | undefined;
    for (const { parsed: p } of mine) {
      if (p === undefined) continue;
      if (p.kind === 'packet') {
        if (p.packet.table !== TRACE_TABLE) packets.push(p.packet);
        else if (p.packet.chain === 'end_input') arrived = p.packet;
        continue;
      }
      const event = p.event;
      const chain = chains.get(chainKey(event.family, event.table, event.chain));
      if (chain?.hook !== undefined) [hook, priority] = [chain.hook, chain.priority];
      if (event.table === TRACE_TABLE && event.family === 'inet') {
        if (event.chain === 'pre' && packet.iif === undefined) cameBack = true;
        const end = HOOK_END_CHAINS.find((name) => `end_${name}` === event.chain);
        if (end && event.kind === 'policy') reached.push(end);
        continue;
      }
      const ruleIndex = event.handle === undefined ? -1 : (chain?.handles.indexOf(event.handle) ?? -1);
      trace.push({
        ...event,
        ...(hook === undefined ? {} : { hook, priority }),
        ...(ruleIndex >= 0 ? { ruleIndex } : {}),
      });
    }
    const delivered = frames
      .map((frame) => ({ frame, seen: parseFrame(Buffer.from(frame.hex, 'hex')) }))
      .find(({ seen }) => seen !== undefined && seen.family === family && seen.tag === (family === 'ip' ? tag & 0xffff : tag));
    const seen: KernelPacketSeen | undefined = delivered?.seen && {
      ...delivered.seen,
      iface: this.host.interfaces[delivered.frame.peer]!.name,
    };
    // The netdev egress hook comes after the trace table's last chain: a drop there ends the way.
    const droppedAtEgress = trace.some((e) => e.hook === 'egress' && e.verdict === 'drop');
    const left = reached.includes('postrouting') && !cameBack && !droppedAtEgress;
    const disposition = reached.includes('input') ? 'delivered' : left ? (packet.iif === undefined ? 'sent' : 'forwarded') : 'dropped';
    return {
      trace,
      packets,
      delivered: seen,
      disposition,
      ...(disposition === 'delivered' && arrived && { arrived: packetOfLine(arrived, family, packet.protocol) }),
      reached,
      lines: mine.map(({ line }) => line),
      elapsedMs: performance.now() - started,
    };
  }
}

/** The sequence number a reply starts from. */
export const REPLY_SEQ = 0x2000_0000;

/** The addresses and ports (an ICMP echo's identifier) of a trace `packet:` line. */
function packetOfLine(line: TracePacketLine, family: 'ip' | 'ip6', protocol: KernelPacket['protocol']): Omit<KernelPacket, 'iif' | 'oif'> {
  const { fields } = line;
  const number = (key: string): number | undefined => (fields[key] === undefined ? undefined : Number(fields[key]));
  const l4 = protocol === 'icmp' && family === 'ip6' ? 'icmpv6' : protocol;
  const ported = protocol === 'tcp' || protocol === 'udp';
  const sport = ported ? number(`${l4} sport`) : undefined;
  const dport = ported ? number(`${l4} dport`) : undefined;
  // nft prints an ICMPv6 echo's identifier and sequence as one 32-bit `parameter-problem` (the
  // field of the same place in an error): the identifier is its high half.
  const echo = l4 === 'icmpv6' && (fields['icmpv6 type'] === 'echo-request' || fields['icmpv6 type'] === 'echo-reply');
  const pointer = number('icmpv6 parameter-problem');
  const icmpId = ported ? undefined : (number(`${l4} id`) ?? (echo && pointer !== undefined ? Math.floor(pointer / 0x10000) : undefined));
  return {
    src: fields[`${family} saddr`] ?? '',
    dst: fields[`${family} daddr`] ?? '',
    protocol,
    ...(sport !== undefined && { sport }),
    ...(dport !== undefined && { dport }),
    ...(icmpId !== undefined && { icmpId }),
  };
}

/** Whether the reply to a packet can be made: a peer captured it, or the node took it in (the
 * reply is then the node's own packet). */
function isAnswerable(result: KernelResult): boolean {
  return result.delivered !== undefined || result.arrived !== undefined;
}

/** The reply to the previous packet of a flow: from the peer that captured it, or from the node
 * when it was delivered there (sent by root, as every local packet of the harness). */
function replyTo(previous: { packet: KernelPacket; result: KernelResult } | undefined, written: { reply: true } & Partial<KernelPacket>): KernelPacket {
  if (!previous || !isAnswerable(previous.result)) throw new Error('a reply needs a previous packet that a peer captured or the node took in');
  const { reply: _reply, ...overrides } = written;
  const { protocol } = previous.packet;
  const ported = protocol === 'tcp' || protocol === 'udp';
  const seen = previous.result.delivered ?? previous.result.arrived!;
  if (overrides.icmpType !== undefined && overrides.icmpType !== 'echo-request' && overrides.icmpType !== 'echo-reply') {
    // An ICMP error about the previous packet quotes it as it was seen.
    const { src, dst, sport, dport, icmpId } = seen;
    const quoted: KernelPacket = { ...previous.packet, src, dst, ...(sport !== undefined && { sport }), ...(dport !== undefined && { dport }), ...(icmpId !== undefined && { icmpId }) };
    return {
      ...(previous.result.delivered ? { iif: previous.result.delivered.iface } : { skuid: 0, skgid: 0 }),
      src: seen.dst,
      dst: seen.src,
      protocol: 'icmp',
      quoted,
      ...overrides,
    };
  }
  return {
    ...(previous.result.delivered ? { iif: previous.result.delivered.iface } : { skuid: 0, skgid: 0 }),
    src: seen.dst,
    dst: seen.src,
    protocol,
    ...(ported && { sport: seen.dport, dport: seen.sport }),
    // An echo reply keeps the identifier the request arrived with (the capture reads it as sport).
    ...(!ported && { icmpType: 'echo-reply', ...(seen.icmpId !== undefined && { icmpId: seen.icmpId }) }),
    // The server's answer to a SYN: its own sequence number, the client's acknowledged.
    ...(protocol === 'tcp' && { tcpFlags: 'syn,ack', tcpSeq: REPLY_SEQ, tcpAck: ((previous.packet.tcpSeq ?? DEFAULT_SEQ) + 1) >>> 0 }),
    ...overrides,
  };
}

/** Chains by `family table name` from `nft -j list ruleset`: hook, priority and rule handles. */
function readListing(json: string): Map<string, ListedChain> {
  const listing = JSON.parse(json) as NftJsonListing;
  const chains = new Map<string, ListedChain>();
  for (const item of listing.nftables) {
    const { chain, rule } = item;
    if (chain) {
      chains.set(chainKey(chain.family, chain.table, chain.name), {
        ...(typeof chain.hook === 'string' ? { hook: chain.hook, priority: Number(chain.prio) } : {}),
        handles: [],
      });
    } else if (rule) {
      chains.get(chainKey(rule.family, rule.table, rule.chain))?.handles.push(Number(rule.handle));
    }
  }
  return chains;
}

function chainKey(family: unknown, table: unknown, chain: unknown): string {
  return `${String(family)} ${String(table)} ${String(chain)}`;
}

function parseMark(mark: string | number | undefined): number {
  if (mark === undefined) return 0;
  const value = typeof mark === 'number' ? mark : Number(mark);
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new Error(`bad mark ${String(mark)}`);
  return value;
}

/**
 * The harness's own table: traces every packet from the first hook on (ingress for a packet from
 * outside), drops the sentinel, and gives a packet from outside its initial mark. At output it lets through only packets of a
 * socket (the harness's own are root's): what the node's stack makes in answer (a TCP reset or an
 * ICMP error for a closed port, an echo reply, a reject's answer) is dropped before any other
 * chain and conntrack see it, as nftsim simulates only the packets it is given; a flow's reply
 * from the node is the harness's. Priority -500 comes before every usual chain
 * (raw is -300, conntrack -200). Its end_* chains only show the packet got that far.
 */
function traceTable(mark: number, interfaces: readonly string[]): string {
  const sentinel = `udp sport ${SENTINEL_PORT} udp dport ${SENTINEL_PORT} drop`;
  const setMark = mark === 0 ? '' : `\n    meta mark set ${mark}`;
  // A packet from outside is traced and gets its mark at ingress, before any chain of the
  // rulesets (an ingress chain of theirs may change the mark, which prerouting then sees). The
  // sentinel is traced from prerouting only, as before ingress chains were traced: its skb may
  // reuse the case packet's, and with it the trace id.
  const ingress = interfaces.map(
    (name, i) =>
      `  chain in${i} {\n    type filter hook ingress device "${name}" priority -500; policy accept;\n    udp sport ${SENTINEL_PORT} udp dport ${SENTINEL_PORT} accept\n    meta nftrace set 1${setMark}\n  }\n`,
  );
  return `table inet ${TRACE_TABLE} {
${ingress.join('')}  chain pre {
    type filter hook prerouting priority -500; policy accept;
    meta nftrace set 1
    ${sentinel}
  }
  chain out {
    type filter hook output priority -500; policy drop;
    meta nftrace set 1
    ${sentinel}
    meta skuid 0 accept
  }
${HOOK_END_CHAINS.map((hook) => `  chain end_${hook} {\n    type filter hook ${hook} priority ${HOOK_END_PRIORITY}; policy accept;\n    meta nftrace set 1\n  }\n`).join('')}}
`;
}

function craftSentinel(address: string, tag: number): Buffer {
  return craftPacket({ src: address, dst: address, protocol: 'udp', sport: SENTINEL_PORT, dport: SENTINEL_PORT }, tag);
}

function isSentinel(packet: TracePacketLine, tag: number): boolean {
  const { fields } = packet;
  return packet.table === TRACE_TABLE && fields['ip id'] === String(tag & 0xffff) && fields['udp dport'] === String(SENTINEL_PORT);
}
