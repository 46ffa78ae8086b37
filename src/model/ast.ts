// The one typed model every input lowers into: nft text, nft JSON and (later) iptables-save.
//
// Conventions (see ../shared/DESIGN.md, house style):
// - every node is a plain, immutable, JSON-serialisable object with a string-literal `kind` and a
//   `span` pointing back into the input;
// - a rule is an ordered list of statements, as in the kernel: a match is a `match` statement
//   holding a relational expression, so `tcp dport 22 counter accept` is three statements;
// - literals keep their spelling (`text`) and, once typed from their left-hand side, their meaning
//   (`value`); the printer prints from the meaning where it knows the datatype.

/** Where a node came from. `start`/`end` are UTF-16 offsets into the file's text, end exclusive;
 * `line` and `column` are 1-based and point at `start`. */
export interface Span {
  readonly file: string;
  readonly start: number;
  readonly end: number;
  readonly line: number;
  readonly column: number;
}

// The typed option values of xt extensions live in the model (xt-option.ts), so that the model
// depends on no parser; re-exported here as part of the contract.
import type { XtOptionValue } from './xt-option.js';
import type { IpSet } from './ipset.js';

export type { XtOptionValue };

export type Family = 'ip' | 'ip6' | 'inet' | 'arp' | 'bridge' | 'netdev';

export interface Ruleset {
  readonly kind: 'ruleset';
  readonly tables: readonly Table[];
  /** The ipsets of the node (`ipset save`), which iptables rules name; absent when no input
   * held any. */
  readonly ipsets?: readonly IpSet[];
}

export interface Table {
  readonly kind: 'table';
  readonly span: Span;
  readonly family: Family;
  readonly name: string;
  readonly handle?: number;
  readonly flags: readonly string[];
  readonly comment?: string;
  /** Stateful objects, sets and maps, flowtables and chains, each in creation (listing) order. */
  readonly objects: readonly StatefulObject[];
  readonly sets: readonly NamedSet[];
  readonly flowtables: readonly Flowtable[];
  readonly chains: readonly Chain[];
}

// ---------------------------------------------------------------------------------------------
// Chains and rules

export type Hook =
  | 'prerouting'
  | 'input'
  | 'forward'
  | 'output'
  | 'postrouting'
  | 'ingress'
  | 'egress';

export type ChainType = 'filter' | 'nat' | 'route';

/** A chain priority as written (`filter - 10`, `-300`, `dstnat`) and its numeric value for the
 * chain's family and hook (undefined when the name does not exist there). */
export interface Priority {
  readonly span: Span;
  readonly name?: string;
  readonly offset: number;
  readonly value?: number;
}

export interface BaseChainSpec {
  readonly type: ChainType;
  readonly hook: Hook;
  readonly priority: Priority;
  readonly policy?: 'accept' | 'drop';
  /** `device "lo"` or `devices = { ... }`; empty for non-netdev hooks. */
  readonly devices: readonly string[];
  /** True when written as `devices = { }` rather than `device "x"`. */
  readonly deviceList?: boolean;
  /** An ingress or egress chain whose listing does not say its devices: nft 1.0.6's JSON leaves
   * them out (json.c prints `chain->dev`, which a listed chain does not set). */
  readonly devicesUnknown?: boolean;
}

export interface Chain {
  readonly kind: 'chain';
  readonly span: Span;
  readonly name: string;
  readonly handle?: number;
  readonly comment?: string;
  /** Chain flags. `binding` marks the anonymous chain of a `jump {` / `goto {` chain binding
   * (the kernel's NFT_CHAIN_BINDING; nft names it `__chainN`): the printer lists it inline at
   * the verdict that targets it, not as a block of its own. */
  readonly flags?: readonly string[];
  readonly base?: BaseChainSpec;
  readonly rules: readonly Rule[];
}

/** Where a rule was written, when it came from another syntax than its own (iptables-save). */
export interface RuleOrigin {
  readonly format: 'nft' | 'json' | 'iptables';
  readonly text?: string;
}

export interface Rule {
  readonly kind: 'rule';
  readonly span: Span;
  readonly handle?: number;
  readonly comment?: string;
  readonly stmts: readonly Stmt[];
  readonly origin?: RuleOrigin;
}

// ---------------------------------------------------------------------------------------------
// Sets, maps, flowtables, stateful objects

/** `type ipv4_addr . inet_service` (names) or `typeof ip saddr . tcp dport` (expression). */
export type KeyType =
  | { readonly kind: 'type'; readonly names: readonly string[] }
  | { readonly kind: 'typeof'; readonly expr: Expr };

export interface NamedSet {
  readonly kind: 'set';
  readonly span: Span;
  /** `map` when the declaration was a map (has data). */
  readonly isMap: boolean;
  readonly name: string;
  readonly handle?: number;
  readonly key: KeyType;
  /** Map data type: a type, `verdict`, or an object type (`counter`, `quota`, `ct helper`…). */
  readonly data?: KeyType;
  /** `: interval ipv4_addr` in a map declaration. */
  readonly dataInterval?: boolean;
  readonly flags: readonly string[];
  readonly policy?: 'performance' | 'memory';
  readonly size?: number;
  readonly timeout?: string;
  readonly gcInterval?: string;
  readonly autoMerge?: boolean;
  readonly comment?: string;
  /** Set-level statements: `counter`, `limit rate …`, `quota …`, `last`. */
  readonly stmts: readonly Stmt[];
  readonly elements?: readonly SetElement[];
}

export interface Flowtable {
  readonly kind: 'flowtable';
  readonly span: Span;
  readonly name: string;
  readonly handle?: number;
  readonly hook: Hook;
  readonly priority: Priority;
  readonly devices: readonly string[];
  readonly flags: readonly string[];
  readonly counter?: boolean;
}

export type StatefulObject =
  | CounterObject
  | QuotaObject
  | LimitObject
  | CtHelperObject
  | CtTimeoutObject
  | CtExpectationObject
  | SecmarkObject
  | SynproxyObject
  | OpaqueObject;

interface ObjectBase {
  readonly span: Span;
  readonly name: string;
  readonly handle?: number;
  readonly comment?: string;
}

export interface CounterObject extends ObjectBase {
  readonly kind: 'counter-object';
  readonly packets: number;
  readonly bytes: number;
}

export interface QuotaObject extends ObjectBase {
  readonly kind: 'quota-object';
  readonly over: boolean;
  readonly bytes: number;
  readonly used?: number;
}

export interface LimitObject extends ObjectBase {
  readonly kind: 'limit-object';
  readonly limit: LimitStmt;
}

export interface CtHelperObject extends ObjectBase {
  readonly kind: 'ct-helper-object';
  readonly helper: string;
  readonly protocol: string;
  readonly l3proto?: string;
}

export interface CtTimeoutObject extends ObjectBase {
  readonly kind: 'ct-timeout-object';
  readonly protocol: string;
  readonly l3proto?: string;
  /** State name to timeout as written (`122`, `2m3s`). */
  readonly policy: readonly { readonly state: string; readonly timeout: string }[];
}

export interface CtExpectationObject extends ObjectBase {
  readonly kind: 'ct-expectation-object';
  readonly protocol: string;
  readonly dport: number;
  readonly timeout: string;
  readonly size: number;
  readonly l3proto?: string;
}

export interface SecmarkObject extends ObjectBase {
  readonly kind: 'secmark-object';
  readonly context: string;
}

export interface SynproxyObject extends ObjectBase {
  readonly kind: 'synproxy-object';
  readonly mss?: number;
  readonly wscale?: number;
  readonly flags: readonly string[];
}

/** An object type nftsim keeps but does not model (e.g. 1.1.x `tunnel`): its body verbatim. */
export interface OpaqueObject extends ObjectBase {
  readonly kind: 'opaque-object';
  readonly type: string;
  readonly body: readonly string[];
}

// ---------------------------------------------------------------------------------------------
// Expressions

export type Expr =
  | Literal
  | Payload
  | RawPayload
  | Exthdr
  | TcpOption
  | IpOption
  | SctpChunk
  | Meta
  | Ct
  | Fib
  | Rt
  | Socket
  | Osf
  | Ipsec
  | Numgen
  | Hash
  | Binop
  | Relational
  | Prefix
  | Range
  | Concat
  | FlagList
  | SetLiteral
  | SetRef
  | MapLookup
  | Wildcard
  | VerdictExpr
  | ElementExpr;

/** The typed meaning of a literal, once its datatype is known. Integers beyond 2^53 are hex. */
export type Value =
  | { readonly type: 'integer'; readonly n: number }
  | { readonly type: 'bigint'; readonly hex: string }
  | { readonly type: 'ipv4'; readonly addr: string }
  | { readonly type: 'ipv6'; readonly addr: string }
  | { readonly type: 'ether'; readonly addr: string }
  | { readonly type: 'string'; readonly s: string }
  | { readonly type: 'boolean'; readonly b: boolean };

export interface Literal {
  readonly kind: 'literal';
  readonly span: Span;
  /** The spelling in the input, without quotes (`0x00004000`, `cs0`, `ssh`, `eth0`). */
  readonly text: string;
  /** Written in double quotes. */
  readonly quoted?: boolean;
  /** Listed as its bits: nft 1.0.6 prints `0x1f90 [invalid type]` for the values of some keys
   * it cannot type (`ct original proto-dst`, typeof keys of dynamic sets), the key's bytes as one
   * big-endian number. `text` is the number alone. */
  readonly invalidType?: boolean;
  /** The nft datatype name once typed from context (`mark`, `inet_service`, `dscp`…). */
  readonly dtype?: string;
  readonly value?: Value;
}

/** A header field: `ip saddr`, `tcp dport`, `ether type`, `vlan id`, `arp saddr ip`, `th dport`.
 * `inner` is the 1.1.x tunnel prefix (`vxlan ip saddr`). */
export interface Payload {
  readonly kind: 'payload';
  readonly span: Span;
  readonly protocol: string;
  readonly field: string;
  readonly inner?: string;
}

/** `@nh,8,8`: base `ll`, `nh`, `th` or `ih`, offset and length in bits. */
export interface RawPayload {
  readonly kind: 'raw-payload';
  readonly span: Span;
  readonly base: 'll' | 'nh' | 'th' | 'ih';
  readonly offset: number;
  readonly length: number;
}

/** IPv6 extension headers: `hbh nexthdr`, `frag more-fragments`, `srh sid[1]`, `exthdr hbh`
 * (field undefined: existence test). */
export interface Exthdr {
  readonly kind: 'exthdr';
  readonly span: Span;
  readonly header: string;
  readonly field?: string;
  readonly index?: number;
  /** Written with the `exthdr` prefix. */
  readonly prefixed?: boolean;
}

/** `tcp option maxseg size`, `tcp option sack left`, `tcp option @42,16,4`, `tcp option sack-perm`. */
export interface TcpOption {
  readonly kind: 'tcp-option';
  readonly span: Span;
  readonly option: string;
  readonly field?: string;
  readonly index?: number;
}

export interface IpOption {
  readonly kind: 'ip-option';
  readonly span: Span;
  readonly option: string;
  readonly field?: string;
}

export interface SctpChunk {
  readonly kind: 'sctp-chunk';
  readonly span: Span;
  readonly chunk: string;
  readonly field?: string;
}

/** `meta mark`, `iifname` (`qualified` is false when written without `meta`). */
export interface Meta {
  readonly kind: 'meta';
  readonly span: Span;
  readonly key: string;
  readonly qualified: boolean;
}

/** `ct state`, `ct original ip saddr`, `ct reply proto-dst`, `ct count`. */
export interface Ct {
  readonly kind: 'ct';
  readonly span: Span;
  readonly key: string;
  readonly dir?: 'original' | 'reply';
  /** `ip` / `ip6` in `ct original ip saddr`. */
  readonly family?: 'ip' | 'ip6';
}

/** `fib saddr . iif oif`, `fib daddr type`. */
export interface Fib {
  readonly kind: 'fib';
  readonly span: Span;
  readonly flags: readonly string[];
  readonly result: string;
}

export interface Rt {
  readonly kind: 'rt';
  readonly span: Span;
  readonly key: string;
  readonly family?: 'ip' | 'ip6';
}

export interface Socket {
  readonly kind: 'socket';
  readonly span: Span;
  readonly key: string;
  readonly level?: number;
}

export interface Osf {
  readonly kind: 'osf';
  readonly span: Span;
  readonly key: 'name' | 'version';
  readonly ttl?: string;
}

/** `ipsec in reqid`, `ipsec out ip daddr`, `ipsec in spnum 1 ip saddr`. */
export interface Ipsec {
  readonly kind: 'ipsec';
  readonly span: Span;
  readonly dir: 'in' | 'out';
  readonly key: string;
  readonly spnum?: number;
  readonly family?: 'ip' | 'ip6';
}

export interface Numgen {
  readonly kind: 'numgen';
  readonly span: Span;
  readonly mode: 'inc' | 'random';
  readonly mod: number;
  readonly offset?: number;
}

/** `jhash ip saddr . ip daddr mod 2 seed 0xdeadbeef offset 100` or `symhash mod 2`. */
export interface Hash {
  readonly kind: 'hash';
  readonly span: Span;
  readonly type: 'jhash' | 'symhash';
  readonly expr?: Expr;
  readonly mod: number;
  readonly seed?: number;
  readonly offset?: number;
}

/** Bitwise and shift operations. `mark or 0x4000` (iptables-nft xlate words) is `|`. */
export interface Binop {
  readonly kind: 'binop';
  readonly span: Span;
  readonly op: '&' | '|' | '^' | '<<' | '>>';
  readonly left: Expr;
  readonly right: Expr;
  /** Written in parentheses. */
  readonly parens?: boolean;
  /** Written with the operator keyword (`mark or 0x4000`, `mark and 0xfff0ffff`): the xlate text
   * nft splices into listings of iptables-nft tables. The printer writes it back as written
   * (keyword, `meta` qualification and literal spelling) since that is how nft lists it. */
  readonly word?: boolean;
}

/** A comparison. `op` is `implicit` when no operator was written (`tcp dport 22`, `ip saddr
 * @set`, `ct state established,related`: equality, or membership for sets and flag lists).
 * The 1.0.6 bitmask form `tcp flags syn / syn,ack` is `(tcp flags & syn,ack) == syn` with
 * `slash: true` so it prints back the way it came. `exists`/`missing` are boolean literals. */
export interface Relational {
  readonly kind: 'relational';
  readonly span: Span;
  readonly op: 'implicit' | '==' | '!=' | '<' | '>' | '<=' | '>=';
  readonly left: Expr;
  readonly right: Expr;
  readonly slash?: boolean;
}

/** `10.0.0.0/8`, `fe80::/64`, and 1.0.6's mark prefix `0xffffff00/24`. */
export interface Prefix {
  readonly kind: 'prefix';
  readonly span: Span;
  readonly expr: Expr;
  readonly length: number;
}

/** `1-1023`, `10.0.0.1-10.0.0.9`, `"08:00"-"17:00"`. */
export interface Range {
  readonly kind: 'range';
  readonly span: Span;
  readonly low: Expr;
  readonly high: Expr;
}

/** `ip saddr . tcp dport`, `1.1.1.1 . 22`. */
export interface Concat {
  readonly kind: 'concat';
  readonly span: Span;
  readonly parts: readonly Expr[];
}

/** A comma list without braces: `established,related`, `syn,ack`. Used for bitmask types. */
export interface FlagList {
  readonly kind: 'flag-list';
  readonly span: Span;
  readonly items: readonly Expr[];
}

/** An anonymous set `{ 22, 80 }` or, with `data` on its elements, an anonymous map. */
export interface SetLiteral {
  readonly kind: 'set';
  readonly span: Span;
  readonly elements: readonly ElementExpr[];
}

/** One element of a set literal or of a named set's `elements = { }`. */
export interface ElementExpr {
  readonly kind: 'element';
  readonly span: Span;
  readonly key: Expr;
  readonly data?: Expr;
  readonly timeout?: string;
  readonly expires?: string;
  readonly comment?: string;
  /** Per-element statements: `counter packets 0 bytes 0`, `limit rate 1/second`, `quota …`. */
  readonly stmts?: readonly Stmt[];
}

/** An element of a named set's `elements = { }`: the same node as in a set literal. */
export type SetElement = ElementExpr;

/** `@name`: a named set or map. */
export interface SetRef {
  readonly kind: 'set-ref';
  readonly span: Span;
  readonly name: string;
}

/** `key map { … }` / `key map @m` (data) or `key vmap { … }` (verdicts). */
export interface MapLookup {
  readonly kind: 'map';
  readonly span: Span;
  readonly key: Expr;
  readonly map: SetLiteral | SetRef;
  readonly vmap: boolean;
}

/** `*`: the catch-all element. */
export interface Wildcard {
  readonly kind: 'wildcard';
  readonly span: Span;
}

/** A verdict as a value: in verdict maps and as map data. */
export interface VerdictExpr {
  readonly kind: 'verdict';
  readonly span: Span;
  readonly verdict: VerdictName;
  readonly target?: string;
}

export type VerdictName = 'accept' | 'drop' | 'continue' | 'return' | 'jump' | 'goto' | 'queue';

// ---------------------------------------------------------------------------------------------
// Statements

export type Stmt =
  | MatchStmt
  | VerdictStmt
  | VmapStmt
  | CounterStmt
  | LogStmt
  | LimitStmt
  | QuotaStmt
  | LastStmt
  | CtCountStmt
  | MetaSetStmt
  | CtSetStmt
  | PayloadSetStmt
  | OptionResetStmt
  | NatStmt
  | TproxyStmt
  | RejectStmt
  | NotrackStmt
  | DupStmt
  | FwdStmt
  | QueueStmt
  | SetOpStmt
  | SynproxyStmt
  | FlowOffloadStmt
  | ObjRefStmt
  | XtStmt
  | XtExtensionStmt
  | UnsupportedStmt;

export interface MatchStmt {
  readonly kind: 'match';
  readonly span: Span;
  readonly expr: Relational;
}

export interface VerdictStmt {
  readonly kind: 'verdict';
  readonly span: Span;
  readonly verdict: VerdictName;
  readonly target?: string;
}

/** `tcp dport vmap @ports`, `iif vmap { "lo" : accept }`. */
export interface VmapStmt {
  readonly kind: 'vmap';
  readonly span: Span;
  readonly key: Expr;
  readonly map: SetLiteral | SetRef;
}

export interface CounterStmt {
  readonly kind: 'counter';
  readonly span: Span;
  readonly packets?: number;
  readonly bytes?: number;
}

export interface LogStmt {
  readonly kind: 'log';
  readonly span: Span;
  readonly prefix?: string;
  readonly group?: number;
  readonly snaplen?: number;
  readonly queueThreshold?: number;
  readonly level?: string;
  /** As written after `flags`: `tcp sequence,options`, `ip options`, `ether`, `all`. */
  readonly flags: readonly string[];
}

export interface LimitStmt {
  readonly kind: 'limit';
  readonly span: Span;
  readonly over: boolean;
  readonly rate: number;
  /** `packets` or a byte unit (`bytes`, `kbytes`, `mbytes`). */
  readonly unit: string;
  readonly per: 'second' | 'minute' | 'hour' | 'day' | 'week';
  readonly burst?: number;
  readonly burstUnit?: string;
}

export interface QuotaStmt {
  readonly kind: 'quota';
  readonly span: Span;
  readonly over: boolean;
  readonly amount: number;
  readonly unit: string;
  readonly used?: number;
  readonly usedUnit?: string;
}

export interface LastStmt {
  readonly kind: 'last';
  readonly span: Span;
  /** `never` or a time; undefined when written as bare `last`. */
  readonly used?: string;
}

/** `meta mark set 0x1`, `mark set mark or 0x4000`, `meta nftrace set 1`. */
export interface MetaSetStmt {
  readonly kind: 'meta-set';
  readonly span: Span;
  readonly key: string;
  readonly qualified: boolean;
  readonly value: Expr;
}

/** `ct mark set meta mark`, `ct zone set 2`, `ct original zone set 1`, `ct label set 127`. */
export interface CtSetStmt {
  readonly kind: 'ct-set';
  readonly span: Span;
  readonly key: string;
  readonly dir?: 'original' | 'reply';
  readonly value: Expr;
}

/** `ip daddr set 10.0.0.1`, `tcp option maxseg size set 1360`, `ip dscp set cs1`. */
export interface PayloadSetStmt {
  readonly kind: 'payload-set';
  readonly span: Span;
  readonly target: Payload | RawPayload | Exthdr | TcpOption;
  readonly value: Expr;
}

/** `reset tcp option maxseg`. */
export interface OptionResetStmt {
  readonly kind: 'option-reset';
  readonly span: Span;
  readonly target: TcpOption;
}

/** `dnat ip to 10.0.0.1:80`, `snat prefix to …`, `masquerade to :1024-2048 random`,
 * `redirect to :3128`. `addr` and `port` may be ranges, maps or any expression. */
export interface NatStmt {
  readonly kind: 'nat';
  readonly span: Span;
  readonly type: 'snat' | 'dnat' | 'masquerade' | 'redirect';
  readonly family?: 'ip' | 'ip6';
  /** `snat ip prefix to …`, `dnat ip addr . port to …`. */
  readonly form?: 'prefix' | 'addr . port';
  readonly addr?: Expr;
  readonly port?: Expr;
  readonly flags: readonly string[];
}

export interface TproxyStmt {
  readonly kind: 'tproxy';
  readonly span: Span;
  readonly family?: 'ip' | 'ip6';
  readonly addr?: Expr;
  readonly port?: Expr;
}

/** `reject`, `reject with icmp host-unreachable`, `reject with tcp reset`, `reject with icmpx
 * admin-prohibited`, and iptables-nft's `reject with icmp type host-prohibited`. */
export interface RejectStmt {
  readonly kind: 'reject';
  readonly span: Span;
  readonly with?: 'icmp' | 'icmpv6' | 'icmpx' | 'tcp reset';
  readonly code?: string;
  /** The `type` keyword iptables-nft writes before the code. */
  readonly typeKeyword?: boolean;
}

export interface NotrackStmt {
  readonly kind: 'notrack';
  readonly span: Span;
}

export interface DupStmt {
  readonly kind: 'dup';
  readonly span: Span;
  readonly family?: 'ip' | 'ip6';
  readonly addr?: Expr;
  readonly device?: Expr;
}

export interface FwdStmt {
  readonly kind: 'fwd';
  readonly span: Span;
  readonly family?: 'ip' | 'ip6';
  readonly addr?: Expr;
  readonly device: Expr;
}

/** `queue`, `queue num 3 bypass`, `queue flags bypass,fanout to 1-42`. */
export interface QueueStmt {
  readonly kind: 'queue';
  readonly span: Span;
  readonly num?: Expr;
  readonly flags: readonly string[];
}

/** `add @s { ip saddr limit rate 10/second }`, `update @m { ip saddr : 0x1 }`, `delete @s {…}`. */
export interface SetOpStmt {
  readonly kind: 'set-op';
  readonly span: Span;
  readonly op: 'add' | 'update' | 'delete';
  readonly set: string;
  readonly element: ElementExpr;
  /** `meter NAME size N { … }`: an update of a set the statement makes itself (listed nowhere
   * else). */
  readonly meter?: { readonly size?: number };
}

/** `ct count [over] N` (nft_connlimit): the connections counted by the statement, or by the set
 * element it belongs to. */
export interface CtCountStmt {
  readonly kind: 'ct-count';
  readonly span: Span;
  readonly count: number;
  readonly over: boolean;
}

export interface SynproxyStmt {
  readonly kind: 'synproxy';
  readonly span: Span;
  readonly mss?: number;
  readonly wscale?: number;
  readonly flags: readonly string[];
}

/** `flow add @ft` (also written `flow offload @ft`). */
export interface FlowOffloadStmt {
  readonly kind: 'flow-offload';
  readonly span: Span;
  readonly flowtable: string;
}

/** References to named stateful objects: `counter name "c"`, `quota name ip saddr map @q`,
 * `limit name …`, `ct helper set "ftp"`, `ct timeout set "t"`, `ct expectation set "e"`,
 * `synproxy name …`, `meta secmark set "s"`, `tunnel name …`. */
export interface ObjRefStmt {
  readonly kind: 'objref';
  readonly span: Span;
  readonly type:
    | 'counter'
    | 'quota'
    | 'limit'
    | 'ct helper'
    | 'ct timeout'
    | 'ct expectation'
    | 'synproxy'
    | 'secmark'
    | 'tunnel';
  readonly name: Expr;
}

/** What iptables-nft leaves in an nft listing: `xt match "recent"` / `xt target NAME`, or the
 * blank an xt match with no translation prints as (`name` undefined, `blank` true). */
export interface XtStmt {
  readonly kind: 'xt';
  readonly span: Span;
  readonly type: 'match' | 'target' | 'watcher';
  readonly name?: string;
  readonly blank?: boolean;
}

/** An iptables match or target lowered from an iptables-save dump that has no nft expression
 * with the same meaning (`-m recent`, `-m set`, `-m physdev`, `-m socket`, `-j CHECKSUM`…, and
 * `--ctstate` mixing SNAT/DNAT with states): the extension's options as the iptables parser typed
 * them, so the simulator can give it its exact xt semantics. nft 1.0.6 lists such a rule as
 * `xt match NAME` / `xt target NAME`, and so does the printer. */
export interface XtExtensionStmt {
  readonly kind: 'xt-extension';
  readonly span: Span;
  readonly type: 'match' | 'target';
  readonly name: string;
  readonly options: readonly XtOption[];
}

/** One option of an XtExtensionStmt: canonical long name (`rcheck`, `match-set`), `!` before it,
 * its arguments as written and their typed value (see xt-option.ts). */
export interface XtOption {
  readonly name: string;
  readonly negated: boolean;
  readonly args: readonly string[];
  readonly value: XtOptionValue;
}

/** A statement the parser recognised but nftsim does not model; kept verbatim and reported. */
export interface UnsupportedStmt {
  readonly kind: 'unsupported';
  readonly span: Span;
  readonly text: string;
  /** Known to be a test of the packet (a match): the simulator assumes it does not match. */
  readonly test?: true;
}
