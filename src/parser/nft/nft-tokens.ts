import { createToken, Lexer, type IToken, type TokenType } from 'chevrotain';

// Tokens of the nft text syntax (`nft list ruleset` output of nft 1.0.x/1.1.x and `nft -f` input).
//
// Keywords are contextual in nft (a chain may be called `input`, `filter` or `last`), so the lexer
// produces one `Identifier` token for every bare word and `retypeKeywords` then re-tags the words
// the grammar branches on. Every keyword type is in the `Name` category, so wherever the grammar
// expects a name, any keyword is accepted. This also keeps the lexer to a handful of patterns
// instead of hundreds of keyword regexes (a 17 MB listing is ~3.4M tokens).

/** Any bare word: an identifier or a keyword. */
export const Name = createToken({ name: 'Name', pattern: Lexer.NA });
/** Keywords that start a statement (so a payload head before them is a value: `meta l4proto tcp
 * counter`). */
export const StmtStart = createToken({ name: 'StmtStart', pattern: Lexer.NA });
/** Keywords that start a block property line (`type filter hook input …`, `size 10`). */
export const PropStart = createToken({ name: 'PropStart', pattern: Lexer.NA });
/** Families (`table ip`, `dnat ip to`, `ct original ip saddr`). */
export const FamilyKw = createToken({ name: 'FamilyKw', pattern: Lexer.NA });
/** Heads of expressions that read packet or metadata fields (`ip saddr`, `meta mark`, `ct state`). */
export const SelectorHead = createToken({ name: 'SelectorHead', pattern: Lexer.NA });
/** Relational operators written as words (`ne`, `eq`…). */
export const RelWord = createToken({ name: 'RelWord', pattern: Lexer.NA });
/** Protocol heads of payload and extension-header expressions (`tcp dport`, `frag id`). */
export const PayloadHead = createToken({ name: 'PayloadHead', pattern: Lexer.NA });
/** Meta keys nft accepts without `meta` (`iifname`, `mark`): src/parser_bison.y
 * `meta_key_unqualified`. */
export const BareMeta = createToken({ name: 'BareMeta', pattern: Lexer.NA });

export const Newline = createToken({ name: 'Newline', pattern: /\r?\n/, line_breaks: true });
export const Whitespace = createToken({ name: 'Whitespace', pattern: /[ \t\r\f\v]+/, group: Lexer.SKIPPED });
/** `# handle 5`, `# count 1`, `#!/usr/sbin/nft -f`, `# Warning: …`: kept aside so the builder can
 * read handles, never seen by the parser. */
export const Comment = createToken({ name: 'Comment', pattern: /#[^\n]*/, group: 'comments' });

// Strings are printed raw by nft (no escaping: `comment "say "hi"\there"`), so a closing quote
// only counts when a delimiter follows it; after `comment`, the string runs to the last quote
// that ends the line (before an optional `# handle N`).
const STRING_FOLLOWERS = new Set([' ', '\t', '\r', '\n', ',', ';', '}', ')', ']', ':', '-', '.', '#', '{', '/']);

function isLineEndAfter(text: string, pos: number): boolean {
  for (let i = pos; i < text.length; i++) {
    const c = text[i];
    if (c === '\n' || c === '#') return true;
    if (c !== ' ' && c !== '\t' && c !== '\r') return false;
  }
  return true;
}

function matchString(text: string, offset: number, tokens: IToken[]): RegExpExecArray | null {
  if (text.charCodeAt(offset) !== 34 /* " */) return null;
  let lineEnd = text.indexOf('\n', offset);
  if (lineEnd < 0) lineEnd = text.length;
  const prev = tokens[tokens.length - 1];
  if (prev !== undefined && prev.image === 'comment') {
    let last = text.lastIndexOf('"', lineEnd - 1);
    while (last > offset) {
      if (isLineEndAfter(text, last + 1)) return [text.slice(offset, last + 1)] as unknown as RegExpExecArray;
      last = text.lastIndexOf('"', last - 1);
    }
  }
  let first = -1;
  let close = text.indexOf('"', offset + 1);
  while (close >= 0 && close < lineEnd) {
    if (first < 0) first = close;
    const next = text[close + 1];
    if (next === undefined || STRING_FOLLOWERS.has(next)) {
      return [text.slice(offset, close + 1)] as unknown as RegExpExecArray;
    }
    close = text.indexOf('"', close + 1);
  }
  return first < 0 ? null : ([text.slice(offset, first + 1)] as unknown as RegExpExecArray);
}

export const StringLit = createToken({
  name: 'StringLit',
  pattern: { exec: matchString },
  line_breaks: false,
  start_chars_hint: ['"'],
});

function isHex(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);
}

// IPv6 addresses, MACs and tc handles (`fe80::1`, `::ffff:1.2.3.4`, `00:0f:54:0c:11:04`,
// `1:1234`, `cafe:beef`): hex groups joined by colons. A dot before the first colon means an
// IPv4 address with a port (`10.0.0.1:80`), which is not this token.
function matchHexColon(text: string, offset: number): RegExpExecArray | null {
  const c0 = text.charCodeAt(offset);
  if (c0 === 58 /* : */) {
    if (text.charCodeAt(offset + 1) !== 58) return null;
  } else if (!isHex(c0)) {
    return null;
  }
  let i = offset;
  let colons = 0;
  let sawDot = false;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 58) {
      if (sawDot) break;
      colons++;
    } else if (c === 46 /* . */) {
      if (colons === 0) return null;
      sawDot = true;
    } else if (!isHex(c)) {
      break;
    }
  }
  if (colons === 0) return null;
  let end = i;
  const after = text.charCodeAt(i);
  // A word runs on (`dead:beefy`, `aaaa:::accept`): the address, if any, ends at the last colon.
  if ((after >= 103 && after <= 122) || (after >= 71 && after <= 90) || after === 95) {
    end = text.lastIndexOf(':', i);
    if (text.lastIndexOf(':', end - 1) < offset) return null;
  }
  // A trailing single colon belongs to what follows (`ff:ff :` never happens, but `1.2.3.4:` does).
  if (text.charCodeAt(end - 1) === 58 && text.charCodeAt(end - 2) !== 58) end--;
  if (text.charCodeAt(end - 1) === 46) end--;
  // Nothing left (`::8al`): an empty match would make the lexer loop forever at this offset.
  if (end <= offset) return null;
  return [text.slice(offset, end)] as unknown as RegExpExecArray;
}

const HEX_START = '0123456789abcdefABCDEF:'.split('');

export const HexColon = createToken({
  name: 'HexColon',
  pattern: { exec: matchHexColon },
  line_breaks: false,
  start_chars_hint: HEX_START,
});
export const IPv4 = createToken({ name: 'IPv4', pattern: /\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}/ });
/** Digit-led words: `22`, `0x00004000`, `1h30m`, `8021q`, `59m59s984ms`. */
export const NumberLit = createToken({ name: 'NumberLit', pattern: /\d\w*/ });
// nft's scanner.l `string`: a slash belongs to a word (kube-proxy's nftables mode names its chains
// `service-ULMVA6XW-ns1/svc1/tcp/p80`, and nft lists them unquoted); but not the byte unit of a
// limit rate (`mbytes/second`), which the grammar reads as unit, slash, time unit.
export const Identifier = createToken({
  name: 'Identifier',
  pattern: /[kmg]?bytes(?=\/)|[A-Za-z_][\w\-./]*\*?/,
  categories: [Name],
});
export const Variable = createToken({ name: 'Variable', pattern: /\$[\w\-.]+/ });

export const LBrace = createToken({ name: 'LBrace', pattern: '{' });
export const RBrace = createToken({ name: 'RBrace', pattern: '}' });
export const LParen = createToken({ name: 'LParen', pattern: '(' });
export const RParen = createToken({ name: 'RParen', pattern: ')' });
export const LBracket = createToken({ name: 'LBracket', pattern: '[' });
export const RBracket = createToken({ name: 'RBracket', pattern: ']' });
export const Semicolon = createToken({ name: 'Semicolon', pattern: ';' });
export const Comma = createToken({ name: 'Comma', pattern: ',' });
export const Colon = createToken({ name: 'Colon', pattern: ':' });
export const Dot = createToken({ name: 'Dot', pattern: '.' });
export const At = createToken({ name: 'At', pattern: '@' });
export const Star = createToken({ name: 'Star', pattern: '*' });
export const Slash = createToken({ name: 'Slash', pattern: '/' });
export const Minus = createToken({ name: 'Minus', pattern: '-' });
export const Plus = createToken({ name: 'Plus', pattern: '+' });
export const EqEq = createToken({ name: 'EqEq', pattern: '==' });
export const NotEq = createToken({ name: 'NotEq', pattern: '!=' });
export const LtEq = createToken({ name: 'LtEq', pattern: '<=' });
export const GtEq = createToken({ name: 'GtEq', pattern: '>=' });
export const Shl = createToken({ name: 'Shl', pattern: '<<' });
export const Shr = createToken({ name: 'Shr', pattern: '>>' });
export const Lt = createToken({ name: 'Lt', pattern: '<' });
export const Gt = createToken({ name: 'Gt', pattern: '>' });
export const Assign = createToken({ name: 'Assign', pattern: '=' });
export const Bang = createToken({ name: 'Bang', pattern: '!' });
export const Amp = createToken({ name: 'Amp', pattern: '&' });
export const Pipe = createToken({ name: 'Pipe', pattern: '|' });
export const Caret = createToken({ name: 'Caret', pattern: '^' });

// Keywords and the categories each belongs to besides `Name`. Sources: nftables src/scanner.l
// and src/parser_bison.y (v1.0.6, v1.1.x); only words the grammar branches on are listed.
const KEYWORD_CATEGORIES: Readonly<Record<string, readonly TokenType[]>> = {
  // block headers and commands
  table: [], chain: [], set: [], map: [], flowtable: [], element: [], rule: [], ruleset: [],
  secmark: [], synproxy: [StmtStart], tunnel: [StmtStart, SelectorHead], helper: [], expectation: [],
  define: [], redefine: [], undefine: [], include: [], flush: [], add: [StmtStart], create: [],
  insert: [], delete: [StmtStart], replace: [], destroy: [], update: [StmtStart], meter: [StmtStart], handle: [],
  position: [], index: [],
  // block properties
  type: [PropStart], typeof: [PropStart], hook: [PropStart], device: [PropStart],
  devices: [PropStart], priority: [PropStart], policy: [PropStart], flags: [PropStart],
  size: [PropStart], elements: [PropStart], timeout: [PropStart], 'gc-interval': [PropStart],
  'auto-merge': [PropStart], comment: [PropStart, StmtStart], packets: [PropStart],
  bytes: [PropStart], over: [PropStart], until: [PropStart], rate: [PropStart],
  protocol: [PropStart], l3proto: [PropStart], dport: [PropStart], mss: [PropStart],
  wscale: [PropStart], timestamp: [PropStart], 'sack-perm': [PropStart], used: [],
  interval: [], expires: [], burst: [],
  // statements
  accept: [StmtStart], drop: [StmtStart], continue: [StmtStart], return: [StmtStart],
  jump: [StmtStart], goto: [StmtStart], queue: [StmtStart], counter: [StmtStart],
  log: [StmtStart], limit: [StmtStart], quota: [StmtStart], last: [StmtStart],
  reject: [StmtStart], notrack: [StmtStart], dup: [StmtStart], fwd: [StmtStart],
  snat: [StmtStart], dnat: [StmtStart], masquerade: [StmtStart], redirect: [StmtStart],
  tproxy: [StmtStart], flow: [StmtStart], xt: [StmtStart], reset: [StmtStart],
  vmap: [], to: [], with: [], prefix: [], group: [], snaplen: [], 'queue-threshold': [],
  level: [], name: [], num: [], bypass: [], fanout: [], random: [], 'fully-random': [],
  persistent: [], addr: [], port: [], offload: [],
  // expressions
  ip: [FamilyKw, SelectorHead, PayloadHead], ip6: [FamilyKw, SelectorHead, PayloadHead], inet: [FamilyKw],
  arp: [FamilyKw, SelectorHead, PayloadHead], bridge: [FamilyKw], netdev: [FamilyKw],
  tcp: [SelectorHead, PayloadHead], udp: [SelectorHead, PayloadHead], udplite: [SelectorHead, PayloadHead], icmp: [SelectorHead, PayloadHead],
  icmpv6: [SelectorHead, PayloadHead], igmp: [SelectorHead, PayloadHead], ether: [SelectorHead, PayloadHead], vlan: [SelectorHead, PayloadHead],
  sctp: [SelectorHead, PayloadHead], dccp: [SelectorHead, PayloadHead], ah: [SelectorHead, PayloadHead], esp: [SelectorHead, PayloadHead],
  comp: [SelectorHead, PayloadHead], th: [SelectorHead, PayloadHead], gre: [SelectorHead, PayloadHead], gretap: [SelectorHead, PayloadHead],
  vxlan: [SelectorHead, PayloadHead], geneve: [SelectorHead, PayloadHead], hbh: [SelectorHead, PayloadHead], frag: [SelectorHead, PayloadHead],
  dst: [SelectorHead, PayloadHead], mh: [SelectorHead, PayloadHead], srh: [SelectorHead, PayloadHead], rt: [SelectorHead],
  rt0: [SelectorHead, PayloadHead], rt2: [SelectorHead, PayloadHead], exthdr: [SelectorHead], meta: [SelectorHead],
  ct: [SelectorHead], fib: [SelectorHead], socket: [SelectorHead], osf: [SelectorHead],
  ipsec: [SelectorHead], numgen: [SelectorHead], jhash: [SelectorHead], symhash: [SelectorHead],
  iif: [SelectorHead, BareMeta], oif: [SelectorHead, BareMeta], iifname: [SelectorHead, BareMeta], oifname: [SelectorHead, BareMeta],
  iifgroup: [SelectorHead, BareMeta], oifgroup: [SelectorHead, BareMeta], iiftype: [SelectorHead, BareMeta],
  oiftype: [SelectorHead, BareMeta], mark: [SelectorHead, BareMeta], skuid: [SelectorHead, BareMeta], skgid: [SelectorHead, BareMeta],
  nftrace: [SelectorHead, BareMeta], rtclassid: [SelectorHead, BareMeta], pkttype: [SelectorHead, BareMeta], cpu: [SelectorHead, BareMeta],
  cgroup: [SelectorHead, BareMeta], time: [SelectorHead, BareMeta], day: [SelectorHead, BareMeta],
  hour: [SelectorHead, BareMeta], ibriport: [SelectorHead, BareMeta], obriport: [SelectorHead, BareMeta],
  option: [], chunk: [], original: [], reply: [], in: [], out: [], spnum: [], ttl: [], mod: [],
  seed: [], offset: [], count: [], exists: [], missing: [],
  and: [], or: [], xor: [], lshift: [], rshift: [],
  eq: [RelWord], ne: [RelWord], lt: [RelWord], gt: [RelWord], le: [RelWord], ge: [RelWord],
};

/** Keyword token types by word. */
export const KW: Readonly<Record<string, TokenType>> = Object.fromEntries(
  Object.entries(KEYWORD_CATEGORIES).map(([word, cats]) => [
    word,
    createToken({ name: `Kw_${word}`, pattern: Lexer.NA, categories: [Name, ...cats] }),
  ]),
);

// Header fields, keys and values that are not keywords but fill every line of a listing
// (nftables src/proto.c, src/meta.c, src/ct.c templates; kube-proxy and iptables-nft output).
const COMMON_WORDS = [
  'saddr', 'daddr', 'sport', 'l4proto', 'nexthdr', 'state', 'status', 'length', 'code', 'id',
  'hoplimit', 'dscp', 'ecn', 'checksum', 'sequence', 'ackseq', 'window', 'new', 'established',
  'related', 'invalid', 'untracked', 'local', 'unicast', 'multicast', 'broadcast', 'lo', 'syn',
  'ack', 'fin', 'rst', 'echo-request', 'echo-reply', 'nfproto', 'ipv4', 'ipv6', 'iptables',
];

/** Every keyword and common word: its one shared string (token images are fresh copies, and a
 * 17 MB listing has ~2M of them, many kept in the model) and its keyword type, if any. */
const WORDS = new Map<string, { readonly text: string; readonly type?: TokenType }>([
  ...COMMON_WORDS.map((w) => [w, { text: w }] as const),
  ...Object.entries(KW).map(([w, type]) => [w, { text: w, type }] as const),
]);

// Order matters: the first pattern that matches wins, so addresses come before numbers and
// two-character operators before their one-character prefixes.
const LEXED_TOKENS: TokenType[] = [
  Newline, Whitespace, Comment, StringLit, HexColon, IPv4, NumberLit, Identifier, Variable,
  LBrace, RBrace, LParen, RParen, LBracket, RBracket, Semicolon, Comma, Colon, Dot, At, Star,
  Slash, Minus, Plus, EqEq, NotEq, LtEq, GtEq, Shl, Shr, Lt, Gt, Assign, Bang, Amp, Pipe, Caret,
];

/** Every token type the parser knows (lexed ones, categories and keywords). */
export const ALL_TOKENS: TokenType[] = [
  Name, StmtStart, PropStart, FamilyKw, SelectorHead, RelWord, PayloadHead, BareMeta, ...LEXED_TOKENS, ...Object.values(KW),
];

// `ensureOptimizations`: Chevrotain fails loudly instead of silently trying every pattern at
// every position. (Offset-only tracking was measured: its tokens lack `endOffset`, which the CST
// locations need, and it saved only ~2% of lexing time.)
export const nftLexer = new Lexer(LEXED_TOKENS, {
  positionTracking: 'full',
  ensureOptimizations: true,
});

/** Re-tags identifier tokens that are keywords, and gives known words their shared string (in
 * place). */
export function retypeKeywords(tokens: IToken[]): void {
  for (const token of tokens) {
    if (token.tokenType !== Identifier) continue;
    const word = WORDS.get(token.image);
    if (word === undefined) continue;
    token.image = word.text;
    if (word.type) {
      token.tokenType = word.type;
      token.tokenTypeIdx = word.type.tokenTypeIdx as number;
    }
  }
}
