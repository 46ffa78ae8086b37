import { CstParser, EOF, tokenMatcher, type CstNode, type DSLMethodOpts, type IOrAlt, type IToken, type OrMethodOpts, type ParserMethod, type TokenType } from 'chevrotain';
import {
  ALL_TOKENS, Amp, Assign, At, Bang, BareMeta, Caret, Colon, Comma, Dot, EqEq, FamilyKw, Gt, GtEq,
  HexColon, IPv4, KW, LBrace, LBracket, LParen, Lt, LtEq, Minus, Name, Newline, NotEq, NumberLit,
  PayloadHead, Pipe, Plus, PropStart, RBrace, RBracket, RelWord, RParen, Semicolon, Shl, Shr, Slash,
  Star, StmtStart, StringLit, Variable,
} from './nft-tokens.js';

// The nft grammar as a FLAT list of items: a block header (`table ip nat {`, `chain X {`), a
// closing `}`, a block property line (`type filter hook input priority 0`), a rule, a command, a
// `define` or an `include`, and the separators between them. Nesting is tracked by the CST→AST
// builder, not by grammar recursion, so a 300k-rule chain stays a flat MANY and a listing can be
// parsed in chunks of lines. No embedded actions: this file only shapes the CST.
//
// Contextual keywords: every keyword is in the `Name` category. Where a word could be a selector
// head or a value (`meta l4proto tcp` vs `tcp dport`), GATEs look at the next token; the
// grammar is LL(k) with ordered alternatives and no backtracking.

type LA = (k: number) => IToken;

const OBJECT_WORDS = new Set([
  'table', 'chain', 'set', 'map', 'flowtable', 'counter', 'quota', 'limit', 'secmark', 'synproxy',
  'tunnel', 'ct', 'rule', 'element', 'ruleset',
]);
const BLOCK_WORDS = new Set(['chain', 'set', 'map', 'flowtable', 'counter', 'quota', 'limit', 'secmark', 'synproxy', 'tunnel']);
const CT_OBJECTS = new Set(['helper', 'timeout', 'expectation']);
const COMMAND_VERBS = new Set(['add', 'create', 'insert', 'replace', 'delete', 'destroy', 'flush']);
/** Payload heads that may prefix an inner header (1.1.x `vxlan ip saddr`). */
const TUNNEL_HEADS = new Set(['vxlan', 'geneve', 'gre', 'gretap']);
const LOG_OPTIONS = new Set(['prefix', 'group', 'snaplen', 'queue-threshold', 'level', 'flags']);
const BURST_UNITS = new Set(['packets', 'bytes', 'kbytes', 'mbytes']);
/** Words after a selector that are never one of its fields. */
const NOT_FIELDS = new Set(['exists', 'missing', 'set', 'map', 'vmap', 'and', 'or', 'xor', 'lshift', 'rshift', 'eq', 'ne', 'lt', 'gt', 'le', 'ge']);

function isNameLike(t: IToken): boolean {
  return tokenMatcher(t, Name) || tokenMatcher(t, NumberLit) || tokenMatcher(t, StringLit) || tokenMatcher(t, Variable);
}

/** 1-based lookahead index of the `{` that opens a block when the item starting at LA(1) is a
 * block header (`table ip t {`, `ct helper h {`, `add chain ip t c {`), else 0. Shared by the
 * grammar's GATE and the item splitter used for error recovery. */
export function blockBraceAt(la: LA): number {
  const first = la(1).image;
  const isBrace = (k: number): boolean => tokenMatcher(la(k), LBrace);
  if (first === 'table') {
    if (isNameLike(la(2)) && isBrace(3)) return 3;
    if (tokenMatcher(la(2), FamilyKw) && isNameLike(la(3)) && isBrace(4)) return 4;
    return 0;
  }
  if (BLOCK_WORDS.has(first)) return isNameLike(la(2)) && isBrace(3) ? 3 : 0;
  if (first === 'ct') return CT_OBJECTS.has(la(2).image) && isNameLike(la(3)) && isBrace(4) ? 4 : 0;
  if ((first === 'add' || first === 'create') && OBJECT_WORDS.has(la(2).image) && la(2).image !== 'rule' && la(2).image !== 'element') {
    for (let k = 3; k <= 8; k++) {
      if (isBrace(k)) return k;
      if (!isNameLike(la(k))) return 0;
    }
  }
  return 0;
}

function isCommandStart(la: LA): boolean {
  return COMMAND_VERBS.has(la(1).image) && OBJECT_WORDS.has(la(2).image);
}

const PATH_STOP = new Set(['handle', 'position', 'index']);

/** True right after `jump {` / `goto {`: the rule ends there and an anonymous chain begins. */
export function opensBinding(la: LA): boolean {
  return tokenMatcher(la(0), LBrace) && (la(-1).image === 'jump' || la(-1).image === 'goto');
}

function isRuleEnd(t: IToken): boolean {
  return tokenMatcher(t, Newline) || tokenMatcher(t, Semicolon) || tokenMatcher(t, RBrace) || t.tokenType === EOF;
}

/** A word that can follow a selector head as its field (`tcp dport`, not `tcp counter`). */
function isFieldWord(t: IToken): boolean {
  return tokenMatcher(t, Name) && !tokenMatcher(t, StmtStart) && !NOT_FIELDS.has(t.image);
}

function isSelectorStart(la: LA): boolean {
  const t = la(1);
  if (tokenMatcher(t, BareMeta)) return true;
  switch (t.image) {
    case 'meta':
    case 'ct':
    case 'fib':
    case 'rt':
    case 'socket':
    case 'osf':
    case 'ipsec':
    case 'numgen':
    case 'jhash':
    case 'symhash':
    case 'exthdr':
    case 'tunnel':
      return tokenMatcher(t, Name) && tokenMatcher(la(2), Name);
    default:
      return tokenMatcher(t, PayloadHead) && isFieldWord(la(2));
  }
}

// Options of the hottest SUBRULE/CONSUME calls, made once rather than on every call.
const OPERAND_FULL = { ARGS: [true] as [boolean], LABEL: 'operands' };
const OPERAND_VALUE = { ARGS: [false] as [boolean], LABEL: 'operands' };
const OP = { LABEL: 'ops' };
const LHS = { ARGS: [true, false] as [boolean, boolean], LABEL: 'lhs' };
const RHS_VALUE = { ARGS: [false, true] as [boolean, boolean], LABEL: 'value' };
const RHS_MASK = { ARGS: [false, true] as [boolean, boolean], LABEL: 'mask' };
const REL_OP = { LABEL: 'op' };

export class NftParser extends CstParser {
  /** `validate`: run Chevrotain's grammar checks (duplicate occurrence indices, left recursion,
   * unreachable alternatives…). They cost ~0.3 s at every start, so the shared instance skips
   * them and a test builds a validated instance instead (test/parser/nft/nft-grammar.test.ts). */
  constructor({ validate = false }: { validate?: boolean } = {}) {
    super(ALL_TOKENS, { maxLookahead: 1, recoveryEnabled: false, nodeLocationTracking: 'onlyOffset', skipValidations: !validate });
    this.performSelfAnalysis();
  }

  private la: LA = (k) => this.LA(k);
  /** Alternatives of the hot ORs, built once: Chevrotain otherwise re-creates every closure on
   * every call (its documented "cache arrays of alternatives" optimisation). */
  private c: Record<string, IOrAlt<unknown>[] | OrMethodOpts<unknown>> = {};
  private atomFull = false;

  /** RULE for rules with arguments (Chevrotain's CstParser typings only declare `() => void`). */
  private argRule<A extends unknown[]>(name: string, impl: (...args: A) => void): ParserMethod<A, CstNode> {
    return this.RULE(name, impl as unknown as () => void) as unknown as ParserMethod<A, CstNode>;
  }

  /** A name where nft expects one: any word (keywords included), a number-led word, a quoted
   * string or a variable. */
  nameTok = this.RULE('nameTok', () => {
    this.OR(this.c.nameTok ??= [
      { ALT: () => this.CONSUME(Name) },
      { ALT: () => this.CONSUME(NumberLit) },
      { ALT: () => this.CONSUME(StringLit) },
      { ALT: () => this.CONSUME(Variable) },
    ]);
  });

  items = this.RULE('items', () => {
    this.MANY(() => this.SUBRULE(this.item));
  });

  item = this.RULE('item', () => {
    this.OR(this.c.item ??= {
      IGNORE_AMBIGUITIES: true,
      MAX_LOOKAHEAD: 1,
      DEF: [
        { ALT: () => this.CONSUME(Newline, { LABEL: 'sep' }) },
        { ALT: () => this.CONSUME(Semicolon, { LABEL: 'sep' }) },
        { ALT: () => this.CONSUME(RBrace, { LABEL: 'close' }) },
        { GATE: () => blockBraceAt(this.la) > 0 && !isCommandStart(this.la), ALT: () => this.SUBRULE(this.blockHeader) },
        { GATE: () => isCommandStart(this.la), ALT: () => this.SUBRULE(this.command) },
        { GATE: () => this.la(1).image === 'flush' && this.la(2).image === 'ruleset', ALT: () => this.SUBRULE1(this.command) },
        { GATE: () => this.isPropertyStart(), ALT: () => this.SUBRULE(this.property) },
        { ALT: () => this.SUBRULE(this.define) },
        { ALT: () => this.SUBRULE(this.include) },
        { ALT: () => this.SUBRULE(this.rule) },
      ],
    });
  });

  private isPropertyStart(): boolean {
    const t = this.la(1);
    return tokenMatcher(t, PropStart) || tokenMatcher(t, StringLit) || tokenMatcher(t, NumberLit);
  }

  blockHeader = this.RULE('blockHeader', () => {
    this.OR({ IGNORE_AMBIGUITIES: true, DEF: [
      {
        ALT: () => {
          this.CONSUME(KW.table!, { LABEL: 'kind' });
          this.OPTION({
            GATE: () => isNameLike(this.la(2)),
            DEF: () => this.CONSUME(FamilyKw, { LABEL: 'family' }),
          });
          this.SUBRULE(this.nameTok, { LABEL: 'name' });
        },
      },
      {
        ALT: () => {
          this.CONSUME(KW.ct!, { LABEL: 'kind' });
          this.CONSUME(Name, { LABEL: 'ctKind' });
          this.SUBRULE1(this.nameTok, { LABEL: 'name' });
        },
      },
      {
        ALT: () => {
          this.CONSUME1(Name, { LABEL: 'kind' });
          this.SUBRULE2(this.nameTok, { LABEL: 'name' });
        },
      },
    ] });
    this.CONSUME(LBrace);
  });

  /** `[family] table [name]`: a family keyword followed by a name is the family (as in nft). */
  objectPath = this.argRule('objectPath', (names: number) => {
    this.OPTION({
      GATE: () => tokenMatcher(this.la(1), FamilyKw) && isNameLike(this.la(2)),
      DEF: () => this.CONSUME(FamilyKw, { LABEL: 'family' }),
    });
    this.SUBRULE(this.nameTok, { LABEL: 'names' });
    this.OPTION1({
      GATE: () => names > 1 && isNameLike(this.la(1)) && !PATH_STOP.has(this.la(1).image),
      DEF: () => this.SUBRULE1(this.nameTok, { LABEL: 'names' }),
    });
  });

  command = this.RULE('command', () => {
    this.CONSUME(Name, { LABEL: 'verb' });
    this.OR({
      MAX_LOOKAHEAD: 1,
      IGNORE_AMBIGUITIES: true,
      DEF: [
        {
          ALT: () => {
            this.CONSUME(KW.ruleset!, { LABEL: 'object' });
            this.OPTION(() => this.CONSUME(FamilyKw, { LABEL: 'family' }));
          },
        },
        {
          ALT: () => {
            this.CONSUME(KW.rule!, { LABEL: 'object' });
            this.SUBRULE(this.objectPath, { ARGS: [2] });
            this.OPTION1(() => {
              this.OR1([
                { ALT: () => this.CONSUME(KW.handle!, { LABEL: 'where' }) },
                { ALT: () => this.CONSUME(KW.position!, { LABEL: 'where' }) },
                { ALT: () => this.CONSUME(KW.index!, { LABEL: 'where' }) },
              ]);
              this.CONSUME(NumberLit, { LABEL: 'whereNum' });
            });
            this.MANY({ GATE: () => !isRuleEnd(this.la(1)), DEF: () => this.SUBRULE(this.statement) });
          },
        },
        {
          ALT: () => {
            this.CONSUME(KW.element!, { LABEL: 'object' });
            this.SUBRULE1(this.objectPath, { ARGS: [2] });
            this.SUBRULE(this.setLiteral);
          },
        },
        {
          ALT: () => {
            this.CONSUME(KW.ct!, { LABEL: 'object' });
            this.CONSUME1(Name, { LABEL: 'ctKind' });
            this.SUBRULE2(this.objectPath, { ARGS: [2] });
            this.OPTION2(() => this.CONSUME(LBrace, { LABEL: 'open' }));
          },
        },
        {
          ALT: () => {
            this.CONSUME2(Name, { LABEL: 'object' });
            this.SUBRULE3(this.objectPath, { ARGS: [2] });
            this.OPTION3(() => {
              this.CONSUME1(KW.handle!, { LABEL: 'where' });
              this.CONSUME1(NumberLit, { LABEL: 'whereNum' });
            });
            this.OPTION4(() => this.CONSUME1(LBrace, { LABEL: 'open' }));
          },
        },
      ],
    });
  });

  define = this.RULE('define', () => {
    this.OR([
      { ALT: () => this.CONSUME(KW.define!, { LABEL: 'verb' }) },
      { ALT: () => this.CONSUME(KW.redefine!, { LABEL: 'verb' }) },
      { ALT: () => this.CONSUME(KW.undefine!, { LABEL: 'verb' }) },
    ]);
    this.CONSUME(Name, { LABEL: 'name' });
    this.OPTION(() => {
      this.CONSUME(Assign);
      this.SUBRULE(this.expr, { ARGS: [true, true] });
    });
  });

  include = this.RULE('include', () => {
    this.CONSUME(KW.include!);
    this.CONSUME(StringLit, { LABEL: 'path' });
  });

  // ------------------------------------------------------------------------------------------
  // Block properties

  property = this.RULE('property', () => {
    this.AT_LEAST_ONE({ GATE: () => !isRuleEnd(this.la(1)), DEF: () => this.SUBRULE(this.clause) });
  });

  clause = this.RULE('clause', () => {
    this.OR({
      IGNORE_AMBIGUITIES: true,
      MAX_LOOKAHEAD: 1,
      DEF: [
        {
          ALT: () => {
            this.CONSUME(KW.type!, { LABEL: 'key' });
            this.SUBRULE(this.typeWords, { LABEL: 'keyType' });
            this.OPTION(() => {
              this.CONSUME(Colon);
              this.OPTION1(() => this.CONSUME(KW.interval!, { LABEL: 'interval' }));
              this.SUBRULE1(this.typeWords, { LABEL: 'dataType' });
            });
          },
        },
        {
          ALT: () => {
            this.CONSUME(KW.typeof!, { LABEL: 'key' });
            this.SUBRULE(this.expr, { ARGS: [true, false], LABEL: 'keyExpr' });
            this.OPTION2(() => {
              this.CONSUME1(Colon);
              this.OPTION3(() => this.CONSUME1(KW.interval!, { LABEL: 'interval' }));
              this.SUBRULE1(this.expr, { ARGS: [true, false], LABEL: 'dataExpr' });
            });
          },
        },
        {
          ALT: () => {
            this.CONSUME(KW.priority!, { LABEL: 'key' });
            this.SUBRULE(this.prioSpec);
          },
        },
        {
          ALT: () => {
            this.CONSUME(KW.devices!, { LABEL: 'key' });
            this.CONSUME(Assign);
            this.SUBRULE(this.atom, { ARGS: [false], LABEL: 'value' });
          },
        },
        {
          ALT: () => {
            this.CONSUME(KW.elements!, { LABEL: 'key' });
            this.CONSUME1(Assign);
            this.SUBRULE1(this.atom, { ARGS: [false], LABEL: 'value' });
          },
        },
        {
          ALT: () => {
            this.CONSUME(KW.policy!, { LABEL: 'key' });
            this.OR1([
              {
                ALT: () => {
                  this.CONSUME2(Assign);
                  this.SUBRULE(this.setLiteral, { LABEL: 'policyMap' });
                },
              },
              { ALT: () => this.SUBRULE(this.nameTok, { LABEL: 'word' }) },
            ]);
          },
        },
        {
          ALT: () => {
            this.CONSUME(KW.flags!, { LABEL: 'key' });
            this.SUBRULE1(this.nameTok, { LABEL: 'words' });
            this.MANY(() => {
              this.CONSUME(Comma);
              this.SUBRULE2(this.nameTok, { LABEL: 'words' });
            });
          },
        },
        { ALT: () => this.SUBRULE(this.limitRate) },
        { ALT: () => this.SUBRULE(this.quotaAmount) },
        {
          ALT: () => {
            this.OR2([
              { ALT: () => this.CONSUME(KW['auto-merge']!, { LABEL: 'key' }) },
              { ALT: () => this.CONSUME(KW.timestamp!, { LABEL: 'key' }) },
              { ALT: () => this.CONSUME(KW['sack-perm']!, { LABEL: 'key' }) },
            ]);
          },
        },
        { ALT: () => this.CONSUME1(StringLit, { LABEL: 'context' }) },
        {
          // hook, device, size, timeout, gc-interval, comment, packets, bytes, protocol,
          // l3proto, dport, mss, wscale: a keyword and one value.
          ALT: () => {
            this.CONSUME(PropStart, { LABEL: 'key' });
            this.SUBRULE2(this.atom, { ARGS: [false], LABEL: 'value' });
          },
        },
      ],
    });
  });

  typeWords = this.RULE('typeWords', () => {
    this.SUBRULE(this.nameTok, { LABEL: 'words' });
    this.OPTION({ GATE: () => this.la(0).image === 'ct', DEF: () => this.SUBRULE2(this.nameTok, { LABEL: 'words' }) });
    this.MANY(() => {
      this.CONSUME(Dot);
      this.SUBRULE1(this.nameTok, { LABEL: 'words' });
    });
  });

  /** `filter`, `filter - 10`, `mangle + 5`, `-300`, `100`, `$PRIO`. */
  prioSpec = this.RULE('prioSpec', () => {
    this.OR([
      {
        ALT: () => {
          this.OPTION(() => this.CONSUME(Minus, { LABEL: 'negative' }));
          this.CONSUME(NumberLit, { LABEL: 'number' });
        },
      },
      {
        ALT: () => {
          this.OR1([
            { ALT: () => this.CONSUME(Name, { LABEL: 'name' }) },
            { ALT: () => this.CONSUME(Variable, { LABEL: 'name' }) },
          ]);
          this.OPTION1(() => {
            this.OR2([
              { ALT: () => this.CONSUME(Plus, { LABEL: 'sign' }) },
              { ALT: () => this.CONSUME1(Minus, { LABEL: 'sign' }) },
            ]);
            this.CONSUME1(NumberLit, { LABEL: 'offset' });
          });
        },
      },
    ]);
  });

  // ------------------------------------------------------------------------------------------
  // Rules and statements

  rule = this.RULE('rule', () => {
    this.AT_LEAST_ONE({ GATE: () => !isRuleEnd(this.la(1)) && !opensBinding(this.la), DEF: () => this.SUBRULE(this.statement) });
  });

  // Every statement goes through this OR, so it has no GATEs: with one, Chevrotain collects the
  // gates into a new array and tries the alternatives one by one on every call, instead of one
  // table lookup on the first token. `ct count over N` is read as an expression statement (the
  // builder tells it apart); `tunnel` starts a rule of its own.
  statement = this.RULE('statement', () => {
    this.OR(this.c.statement ??= {
      IGNORE_AMBIGUITIES: true,
      MAX_LOOKAHEAD: 1,
      DEF: [
        { ALT: () => this.SUBRULE(this.verdictStmt) },
        { ALT: () => this.SUBRULE(this.counterStmt) },
        { ALT: () => this.SUBRULE(this.logStmt) },
        { ALT: () => this.SUBRULE(this.limitStmt) },
        { ALT: () => this.SUBRULE(this.quotaStmt) },
        { ALT: () => this.SUBRULE(this.lastStmt) },
        { ALT: () => this.SUBRULE(this.rejectStmt) },
        { ALT: () => this.CONSUME(KW.notrack!, { LABEL: 'notrack' }) },
        { ALT: () => this.SUBRULE(this.dupStmt) },
        { ALT: () => this.SUBRULE(this.natStmt) },
        { ALT: () => this.SUBRULE(this.tproxyStmt) },
        { ALT: () => this.SUBRULE(this.queueStmt) },
        { ALT: () => this.SUBRULE(this.synproxyStmt) },
        { ALT: () => this.SUBRULE(this.flowStmt) },
        { ALT: () => this.SUBRULE(this.xtStmt) },
        { ALT: () => this.SUBRULE(this.setOpStmt) },
        { ALT: () => this.SUBRULE(this.meterStmt) },
        { ALT: () => this.SUBRULE(this.resetStmt) },
        { ALT: () => this.SUBRULE(this.commentStmt) },
        { ALT: () => this.SUBRULE(this.tunnelStmt) },
        { ALT: () => this.SUBRULE(this.exprStmt) },
      ],
    });
  });

  verdictStmt = this.RULE('verdictStmt', () => {
    this.OR(this.c.verdictStmt ??= [
      { ALT: () => this.CONSUME(KW.accept!, { LABEL: 'verdict' }) },
      { ALT: () => this.CONSUME(KW.drop!, { LABEL: 'verdict' }) },
      { ALT: () => this.CONSUME(KW.continue!, { LABEL: 'verdict' }) },
      { ALT: () => this.CONSUME(KW.return!, { LABEL: 'verdict' }) },
      {
        ALT: () => {
          this.OR1([
            { ALT: () => this.CONSUME(KW.jump!, { LABEL: 'verdict' }) },
            { ALT: () => this.CONSUME(KW.goto!, { LABEL: 'verdict' }) },
          ]);
          this.OR2([
            { ALT: () => this.SUBRULE(this.nameTok, { LABEL: 'target' }) },
            // 1.1.x chain binding: `jump {` opens an anonymous chain, closed by its own `}`.
            { ALT: () => this.CONSUME(LBrace, { LABEL: 'anon' }) },
          ]);
        },
      },
    ]);
  });

  counterStmt = this.RULE('counterStmt', () => {
    this.CONSUME(KW.counter!);
    this.OPTION(() => {
      this.OR([
        {
          ALT: () => {
            this.CONSUME(KW.name!);
            this.SUBRULE(this.expr, { ARGS: [true, false], LABEL: 'ref' });
          },
        },
        {
          // `packets N bytes M`, in either order on input.
          ALT: () => {
            this.AT_LEAST_ONE(() => {
              this.OR1([
                {
                  ALT: () => {
                    this.CONSUME(KW.packets!);
                    this.CONSUME(NumberLit, { LABEL: 'packets' });
                  },
                },
                {
                  ALT: () => {
                    this.CONSUME(KW.bytes!);
                    this.CONSUME1(NumberLit, { LABEL: 'bytes' });
                  },
                },
              ]);
            });
          },
        },
      ]);
    });
  });

  logStmt = this.RULE('logStmt', () => {
    this.CONSUME(KW.log!);
    this.MANY({
      GATE: () => LOG_OPTIONS.has(this.la(1).image),
      DEF: () => {
        this.CONSUME(Name, { LABEL: 'option' });
        this.OR({ IGNORE_AMBIGUITIES: true, MAX_LOOKAHEAD: 1, DEF: [
          {
            GATE: () => this.la(0).image === 'flags',
            ALT: () => {
              this.CONSUME1(Name, { LABEL: 'flagWords' });
              this.OPTION({
                GATE: () =>
                  (this.la(0).image === 'ip' || this.la(0).image === 'tcp') &&
                  isFieldWord(this.la(1)) && !LOG_OPTIONS.has(this.la(1).image),
                DEF: () => this.CONSUME2(Name, { LABEL: 'flagWords' }),
              });
              this.MANY1(() => {
                this.CONSUME(Comma, { LABEL: 'flagWords' });
                this.CONSUME3(Name, { LABEL: 'flagWords' });
              });
            },
          },
          { ALT: () => this.SUBRULE(this.atom, { ARGS: [false], LABEL: 'values' }) },
        ] });
      },
    });
  });

  /** `rate [over] 10/second [burst 5 packets]`, `rate 1 kbytes/second`. */
  limitRate = this.RULE('limitRate', () => {
    this.CONSUME(KW.rate!, { LABEL: 'key' });
    this.OPTION(() => {
      this.OR([
        { ALT: () => this.CONSUME(KW.over!, { LABEL: 'over' }) },
        { ALT: () => this.CONSUME(KW.until!, { LABEL: 'until' }) },
      ]);
    });
    this.CONSUME(NumberLit, { LABEL: 'rate' });
    this.OPTION1(() => this.CONSUME(Name, { LABEL: 'unit' }));
    this.CONSUME(Slash);
    this.CONSUME1(Name, { LABEL: 'per' });
    this.OPTION2(() => {
      this.CONSUME(KW.burst!);
      this.CONSUME1(NumberLit, { LABEL: 'burst' });
      this.OPTION3({ GATE: () => BURST_UNITS.has(this.la(1).image), DEF: () => this.CONSUME2(Name, { LABEL: 'burstUnit' }) });
    });
  });

  limitStmt = this.RULE('limitStmt', () => {
    this.CONSUME(KW.limit!);
    this.OR([
      {
        ALT: () => {
          this.CONSUME(KW.name!);
          this.SUBRULE(this.expr, { ARGS: [true, false], LABEL: 'ref' });
        },
      },
      { ALT: () => this.SUBRULE(this.limitRate) },
    ]);
  });

  /** `[over] 500 bytes [used 10 kbytes]`. */
  quotaAmount = this.RULE('quotaAmount', () => {
    this.OPTION(() => {
      this.OR([
        { ALT: () => this.CONSUME(KW.over!, { LABEL: 'over' }) },
        { ALT: () => this.CONSUME(KW.until!, { LABEL: 'until' }) },
      ]);
    });
    this.CONSUME(NumberLit, { LABEL: 'amount' });
    this.CONSUME(Name, { LABEL: 'unit' });
    this.OPTION1(() => {
      this.CONSUME(KW.used!);
      this.CONSUME1(NumberLit, { LABEL: 'used' });
      this.CONSUME1(Name, { LABEL: 'usedUnit' });
    });
  });

  quotaStmt = this.RULE('quotaStmt', () => {
    this.CONSUME(KW.quota!);
    this.OR([
      {
        ALT: () => {
          this.CONSUME(KW.name!);
          this.SUBRULE(this.expr, { ARGS: [true, false], LABEL: 'ref' });
        },
      },
      { ALT: () => this.SUBRULE(this.quotaAmount) },
    ]);
  });

  lastStmt = this.RULE('lastStmt', () => {
    this.CONSUME(KW.last!);
    this.OPTION(() => {
      this.CONSUME(KW.used!);
      this.SUBRULE(this.atom, { ARGS: [false], LABEL: 'used' });
    });
  });

  rejectStmt = this.RULE('rejectStmt', () => {
    this.CONSUME(KW.reject!);
    this.OPTION(() => {
      this.CONSUME(KW.with!);
      this.CONSUME(Name, { LABEL: 'with' });
      this.OPTION1({ GATE: () => this.la(1).image === 'type' && !isRuleEnd(this.la(2)), DEF: () => this.CONSUME(KW.type!, { LABEL: 'typeKw' }) });
      this.OPTION2({
        GATE: () => !isRuleEnd(this.la(1)) && !tokenMatcher(this.la(1), StmtStart) || this.la(1).image === 'reset',
        DEF: () => this.SUBRULE(this.atom, { ARGS: [false], LABEL: 'code' }),
      });
    });
  });

  dupStmt = this.RULE('dupStmt', () => {
    this.OR([
      { ALT: () => this.CONSUME(KW.dup!, { LABEL: 'kind' }) },
      { ALT: () => this.CONSUME(KW.fwd!, { LABEL: 'kind' }) },
    ]);
    this.OPTION(() => this.CONSUME(FamilyKw, { LABEL: 'family' }));
    this.CONSUME(KW.to!);
    this.SUBRULE(this.expr, { ARGS: [true, false], LABEL: 'addr' });
    this.OPTION1(() => {
      this.CONSUME(KW.device!);
      this.SUBRULE1(this.expr, { ARGS: [true, false], LABEL: 'device' });
    });
  });

  /** `to addr[:port]` or `to :port` (NAT, tproxy). */
  natTarget = this.RULE('natTarget', () => {
    this.CONSUME(KW.to!);
    this.OPTION({ GATE: () => !tokenMatcher(this.la(1), Colon), DEF: () => this.SUBRULE(this.expr, { ARGS: [true, false], LABEL: 'addr' }) });
    this.OPTION1(() => {
      this.CONSUME(Colon);
      this.SUBRULE1(this.expr, { ARGS: [true, false], LABEL: 'port' });
    });
  });

  natStmt = this.RULE('natStmt', () => {
    this.OR([
      { ALT: () => this.CONSUME(KW.snat!, { LABEL: 'kind' }) },
      { ALT: () => this.CONSUME(KW.dnat!, { LABEL: 'kind' }) },
      { ALT: () => this.CONSUME(KW.masquerade!, { LABEL: 'kind' }) },
      { ALT: () => this.CONSUME(KW.redirect!, { LABEL: 'kind' }) },
    ]);
    this.OPTION(() => this.CONSUME(FamilyKw, { LABEL: 'family' }));
    this.OPTION1(() => {
      this.OR1([
        { ALT: () => this.CONSUME(KW.prefix!, { LABEL: 'prefix' }) },
        {
          ALT: () => {
            this.CONSUME(KW.addr!, { LABEL: 'addrPort' });
            this.CONSUME(Dot);
            this.CONSUME(KW.port!);
          },
        },
      ]);
    });
    this.OPTION2(() => this.SUBRULE(this.natTarget));
    this.MANY(() => {
      this.OR2([
        { ALT: () => this.CONSUME(KW.random!, { LABEL: 'flags' }) },
        { ALT: () => this.CONSUME(KW['fully-random']!, { LABEL: 'flags' }) },
        { ALT: () => this.CONSUME(KW.persistent!, { LABEL: 'flags' }) },
        { ALT: () => this.CONSUME(Comma) },
      ]);
    });
  });

  tproxyStmt = this.RULE('tproxyStmt', () => {
    this.CONSUME(KW.tproxy!);
    this.OPTION(() => this.CONSUME(FamilyKw, { LABEL: 'family' }));
    this.SUBRULE(this.natTarget);
  });

  queueStmt = this.RULE('queueStmt', () => {
    this.CONSUME(KW.queue!);
    this.MANY(() => {
      this.OR([
        {
          ALT: () => {
            this.CONSUME(KW.flags!);
            this.CONSUME(Name, { LABEL: 'flags' });
            this.MANY1(() => {
              this.CONSUME(Comma);
              this.CONSUME1(Name, { LABEL: 'flags' });
            });
          },
        },
        {
          ALT: () => {
            this.OR1([
              { ALT: () => this.CONSUME(KW.num!) },
              { ALT: () => this.CONSUME(KW.to!) },
            ]);
            this.SUBRULE(this.expr, { ARGS: [true, false], LABEL: 'num' });
          },
        },
        { ALT: () => this.CONSUME(KW.bypass!, { LABEL: 'flags' }) },
        { ALT: () => this.CONSUME(KW.fanout!, { LABEL: 'flags' }) },
        { ALT: () => this.CONSUME1(Comma) },
      ]);
    });
  });

  synproxyStmt = this.RULE('synproxyStmt', () => {
    this.CONSUME(KW.synproxy!);
    this.OR([
      {
        ALT: () => {
          this.CONSUME(KW.name!);
          this.SUBRULE(this.expr, { ARGS: [true, false], LABEL: 'ref' });
        },
      },
      {
        ALT: () => {
          this.MANY(() => {
            this.OR1([
              {
                ALT: () => {
                  this.CONSUME(KW.mss!, { LABEL: 'option' });
                  this.CONSUME(NumberLit, { LABEL: 'mss' });
                },
              },
              {
                ALT: () => {
                  this.CONSUME(KW.wscale!, { LABEL: 'option' });
                  this.CONSUME1(NumberLit, { LABEL: 'wscale' });
                },
              },
              { ALT: () => this.CONSUME(KW.timestamp!, { LABEL: 'flags' }) },
              { ALT: () => this.CONSUME(KW['sack-perm']!, { LABEL: 'flags' }) },
            ]);
          });
        },
      },
    ]);
  });

  flowStmt = this.RULE('flowStmt', () => {
    this.CONSUME(KW.flow!);
    this.CONSUME(Name, { LABEL: 'op' });
    this.CONSUME(At);
    this.SUBRULE(this.nameTok, { LABEL: 'name' });
  });

  xtStmt = this.RULE('xtStmt', () => {
    this.CONSUME(KW.xt!);
    this.CONSUME(Name, { LABEL: 'type' });
    this.SUBRULE(this.nameTok, { LABEL: 'name' });
  });

  setOpStmt = this.RULE('setOpStmt', () => {
    this.OR([
      { ALT: () => this.CONSUME(KW.add!, { LABEL: 'op' }) },
      { ALT: () => this.CONSUME(KW.update!, { LABEL: 'op' }) },
      { ALT: () => this.CONSUME(KW.delete!, { LABEL: 'op' }) },
    ]);
    this.CONSUME(At);
    this.SUBRULE(this.nameTok, { LABEL: 'name' });
    this.CONSUME(LBrace);
    this.SUBRULE(this.element, { ARGS: [true] });
    this.CONSUME(RBrace);
  });

  /** `meter NAME [size N] { KEY STATEMENTS }`, as nft 1.0.x lists an update of a set it made for
   * the rule. */
  meterStmt = this.RULE('meterStmt', () => {
    this.CONSUME(KW.meter!);
    this.SUBRULE(this.nameTok, { LABEL: 'name' });
    this.OPTION(() => {
      this.CONSUME(KW.size!);
      this.CONSUME(NumberLit, { LABEL: 'size' });
    });
    this.CONSUME(LBrace);
    this.SUBRULE(this.element, { ARGS: [true] });
    this.CONSUME(RBrace);
  });

  /** `ct count [over] N` among a set element's statements. */
  ctCountStmt = this.RULE('ctCountStmt', () => {
    this.CONSUME(KW.ct!);
    this.CONSUME(KW.count!);
    this.OPTION(() => this.CONSUME(KW.over!, { LABEL: 'over' }));
    this.CONSUME(NumberLit, { LABEL: 'count' });
  });

  resetStmt = this.RULE('resetStmt', () => {
    this.CONSUME(KW.reset!);
    this.SUBRULE(this.payloadSel);
  });

  commentStmt = this.RULE('commentStmt', () => {
    this.CONSUME(KW.comment!);
    this.CONSUME(StringLit, { LABEL: 'text' });
  });

  private relOpAlts(): IOrAlt<unknown>[] {
    return [EqEq, NotEq, LtEq, GtEq, Lt, Gt, Bang, RelWord].map((op) => ({ ALT: () => this.CONSUME(op, REL_OP) }));
  }

  /** `tunnel name EXPR` (an object reference) or 1.1.x tunnel metadata (`tunnel path exists`),
   * which nftsim keeps as unsupported. */
  tunnelStmt = this.RULE('tunnelStmt', () => {
    this.CONSUME(KW.tunnel!);
    // `name` is also a word: the object reference wins, as in nft.
    this.OR({ IGNORE_AMBIGUITIES: true, DEF: [
      {
        ALT: () => {
          this.CONSUME(KW.name!);
          this.SUBRULE(this.expr, { ARGS: [true, false], LABEL: 'ref' });
        },
      },
      {
        ALT: () => {
          this.CONSUME(Name, { LABEL: 'key' });
          this.OPTION(() => this.OR1(this.c.relOp ??= this.relOpAlts()));
          this.SUBRULE1(this.expr, { ARGS: [false, true], LABEL: 'value' });
        },
      },
    ] });
  });

  /** A match (`tcp dport 22`, `ct mark & 0xff == 0x1`), a mangle (`meta mark set 0x1`) or a
   * verdict-map lookup (`tcp dport vmap @ports`). */
  exprStmt = this.RULE('exprStmt', () => {
    this.SUBRULE(this.expr, LHS);
    this.OR(this.c.exprStmt ??= {
      IGNORE_AMBIGUITIES: true,
      MAX_LOOKAHEAD: 1,
      DEF: [
        {
          ALT: () => {
            this.CONSUME(KW.set!, { LABEL: 'set' });
            this.SUBRULE1(this.expr, { ARGS: [true, true], LABEL: 'value' });
          },
        },
        {
          ALT: () => {
            this.CONSUME(KW.vmap!, { LABEL: 'vmap' });
            this.SUBRULE(this.mapTarget);
          },
        },
        {
          // `ct count over N` (connlimit; `ct count N` reads as a relational).
          ALT: () => {
            this.CONSUME(KW.over!, { LABEL: 'over' });
            this.CONSUME(NumberLit, { LABEL: 'count' });
          },
        },
        {
          // A relational: values only on the right, with flag lists and the 1.0.x bitmask form
          // `syn / syn,ack`. Inline rather than sub-rules: this is every match statement.
          ALT: () => {
            this.OPTION(() => this.OR1(this.c.relOp ??= this.relOpAlts()));
            this.SUBRULE2(this.expr, RHS_VALUE);
            this.OPTION1(() => {
              this.CONSUME(Slash);
              this.SUBRULE3(this.expr, RHS_MASK);
            });
          },
        },
      ],
    });
  });

  // ------------------------------------------------------------------------------------------
  // Expressions. `full` allows selectors (`ip saddr`) as operands; relational right-hand sides
  // and set elements are values only, so a keyword there is a symbol (`meta l4proto tcp`).

  /** One expression as a flat list of operands and the operators between them, in source order:
   * `/` + length (prefix), `-` (range), `|` `^` `&` `<<` `>>` and their words, `.` (concat),
   * `map` + target, and `,` (flag list, when `comma`). The builder applies nft's precedence in
   * that order, tightest first (src/parser_bison.y: prefix_rhs_expr, range_rhs_expr, shift_expr …
   * concat_expr, map_expr, list_rhs_expr). One rule instead of one per level: an operand used to
   * cost six nested rule calls and CST nodes, and this is the parser's hottest path. */
  expr = this.argRule('expr', (full: boolean, comma: boolean) => {
    // The cached closures below read the mode from fields; saved and restored around the body
    // because an operand may hold a nested expression (`(a | b)`, `[…]`).
    const outerFull = this.exprFull;
    const outerComma = this.exprComma;
    this.exprFull = full;
    this.exprComma = comma;
    this.SUBRULE(this.atom, full ? OPERAND_FULL : OPERAND_VALUE);
    this.MANY(this.exprMany ??= { GATE: () => this.continuesExpr(), DEF: () => this.OR1(this.c.exprOps ??= this.exprOpAlts()) });
    this.exprFull = outerFull;
    this.exprComma = outerComma;
  });

  private exprMany: DSLMethodOpts<unknown> | undefined;
  private exprFull = true;
  private exprComma = false;

  /** After an operand: `,` only in comma mode, `/` only before a prefix length (else it is the
   * `value / mask` of a relational right-hand side). nft lists a prefix without spaces
   * (`10.0.0.0/8`) and a mask with them, which may be numbers too (`ct status 0x100 /
   * 0x80,0x100`): a spaced `/ N,` is a mask. */
  private continuesExpr(): boolean {
    const t = this.LA(1);
    if (tokenMatcher(t, Comma)) return this.exprComma;
    if (tokenMatcher(t, Slash)) {
      if (!tokenMatcher(this.LA(2), NumberLit)) return false;
      return t.startOffset === this.LA(0).endOffset! + 1 || !tokenMatcher(this.LA(3), Comma);
    }
    return true;
  }

  private exprOpAlts(): IOrAlt<unknown>[] {
    const binary = [Minus, Dot, Comma, Pipe, KW.or!, Caret, KW.xor!, Amp, KW.and!, Shl, Shr, KW.lshift!, KW.rshift!].map((op) => ({
      ALT: () => this.CONSUME(op, OP),
    }));
    return [
      {
        ALT: () => {
          this.CONSUME(Slash, OP);
          this.CONSUME(NumberLit, { LABEL: 'lengths' });
        },
      },
      {
        ALT: () => {
          this.CONSUME(KW.map!, OP);
          this.SUBRULE(this.mapTarget, { LABEL: 'targets' });
        },
      },
      {
        ALT: () => {
          this.OR2(binary);
          this.SUBRULE1(this.atom, this.exprFull ? OPERAND_FULL : OPERAND_VALUE);
        },
      },
    ];
  }

  mapTarget = this.RULE('mapTarget', () => {
    this.OR([
      { ALT: () => this.SUBRULE(this.setLiteral) },
      {
        ALT: () => {
          this.CONSUME(At);
          this.SUBRULE(this.nameTok, { LABEL: 'ref' });
        },
      },
      { ALT: () => this.CONSUME(Variable, { LABEL: 'variable' }) },
    ]);
  });

  atom = this.argRule('atom', (full: boolean) => {
    // The cached alternatives below read the mode from a field, not from this call's argument.
    this.atomFull = full;
    const la = this.la;
    this.OR(this.c.atom ??= {
      IGNORE_AMBIGUITIES: true,
      MAX_LOOKAHEAD: 1,
      DEF: [
        { GATE: () => this.atomFull && isSelectorStart(la), ALT: () => this.SUBRULE(this.selector) },
        {
          GATE: () => tokenMatcher(la(3), Comma),
          ALT: () => this.SUBRULE(this.rawPayload),
        },
        {
          ALT: () => {
            this.CONSUME(At);
            this.SUBRULE(this.nameTok, { LABEL: 'setRef' });
          },
        },
        { ALT: () => this.SUBRULE(this.setLiteral) },
        {
          ALT: () => {
            this.CONSUME(LParen);
            this.SUBRULE(this.expr, { ARGS: [this.atomFull, false], LABEL: 'paren' });
            this.CONSUME(RParen);
          },
        },
        {
          ALT: () => {
            this.CONSUME(LBracket);
            this.SUBRULE1(this.expr, { ARGS: [this.atomFull, false], LABEL: 'bracket' });
            this.CONSUME(RBracket);
          },
        },
        {
          ALT: () => {
            this.OR1([
              { ALT: () => this.CONSUME(KW.jump!, { LABEL: 'verdict' }) },
              { ALT: () => this.CONSUME(KW.goto!, { LABEL: 'verdict' }) },
            ]);
            this.SUBRULE1(this.nameTok, { LABEL: 'target' });
          },
        },
        {
          ALT: () => {
            this.CONSUME(Minus, { LABEL: 'negative' });
            this.CONSUME(NumberLit, { LABEL: 'literal' });
          },
        },
        {
          ALT: () => {
            this.CONSUME1(NumberLit, { LABEL: 'literal' });
            // nft 1.0.6 lists the values of some keys it cannot type as `0x1f90 [invalid type]`.
            this.OPTION({
              GATE: () => this.LA(2).image === 'invalid',
              DEF: () => {
                this.CONSUME1(LBracket, { LABEL: 'invalidType' });
                this.MANY(() => this.CONSUME2(Name));
                this.CONSUME1(RBracket);
              },
            });
          },
        },
        { ALT: () => this.CONSUME(IPv4, { LABEL: 'literal' }) },
        { ALT: () => this.CONSUME(HexColon, { LABEL: 'literal' }) },
        { ALT: () => this.CONSUME(StringLit, { LABEL: 'literal' }) },
        { ALT: () => this.CONSUME(Variable, { LABEL: 'variable' }) },
        { ALT: () => this.CONSUME(Star, { LABEL: 'wildcard' }) },
        { ALT: () => this.CONSUME(Name, { LABEL: 'literal' }) },
      ],
    });
  });

  rawPayload = this.RULE('rawPayload', () => {
    this.CONSUME(At);
    this.OR([
      { ALT: () => this.CONSUME(Name, { LABEL: 'base' }) },
      { ALT: () => this.CONSUME2(NumberLit, { LABEL: 'base' }) },
    ]);
    this.CONSUME(Comma);
    this.CONSUME(NumberLit, { LABEL: 'offset' });
    this.CONSUME1(Comma);
    this.CONSUME1(NumberLit, { LABEL: 'length' });
  });

  /** `{ a, b }`: commas and newlines anywhere between elements. */
  setLiteral = this.RULE('setLiteral', () => {
    this.CONSUME(LBrace);
    this.MANY(() => {
      this.OR(this.c.setLiteral ??= [
        { ALT: () => this.CONSUME(Newline) },
        { ALT: () => this.CONSUME(Comma) },
        { ALT: () => this.SUBRULE(this.element, { ARGS: [false] }) },
      ]);
    });
    this.CONSUME(RBrace);
  });

  element = this.argRule('element', (full: boolean) => {
    this.SUBRULE(this.expr, { ARGS: [full, false], LABEL: 'key' });
    this.MANY(() => this.SUBRULE(this.elementOption, { LABEL: 'keyOptions' }));
    this.OPTION(() => {
      this.CONSUME(Colon);
      this.SUBRULE1(this.expr, { ARGS: [full, false], LABEL: 'data' });
      this.MANY1(() => this.SUBRULE1(this.elementOption, { LABEL: 'dataOptions' }));
    });
  });

  elementOption = this.RULE('elementOption', () => {
    this.OR(this.c.elementOption ??= [
      {
        ALT: () => {
          this.OR1([
            { ALT: () => this.CONSUME(KW.timeout!, { LABEL: 'key' }) },
            { ALT: () => this.CONSUME(KW.expires!, { LABEL: 'key' }) },
            { ALT: () => this.CONSUME(KW.comment!, { LABEL: 'key' }) },
          ]);
          this.SUBRULE(this.atom, { ARGS: [false], LABEL: 'value' });
        },
      },
      { ALT: () => this.SUBRULE(this.counterStmt) },
      { ALT: () => this.SUBRULE(this.limitStmt) },
      { ALT: () => this.SUBRULE(this.quotaStmt) },
      { ALT: () => this.SUBRULE(this.lastStmt) },
      { ALT: () => this.SUBRULE(this.ctCountStmt) },
    ]);
  });

  // ------------------------------------------------------------------------------------------
  // Selectors

  selector = this.RULE('selector', () => {
    this.OR(this.c.selector ??= [
      { ALT: () => this.SUBRULE(this.payloadSel) },
      { ALT: () => this.CONSUME(BareMeta, { LABEL: 'bareMeta' }) },
      {
        ALT: () => {
          this.CONSUME(KW.meta!, { LABEL: 'head' });
          this.CONSUME(Name, { LABEL: 'key' });
        },
      },
      { ALT: () => this.SUBRULE(this.ctSel) },
      {
        ALT: () => {
          this.CONSUME(KW.fib!, { LABEL: 'head' });
          this.CONSUME1(Name, { LABEL: 'flags' });
          this.MANY(() => {
            this.CONSUME(Dot);
            this.CONSUME2(Name, { LABEL: 'flags' });
          });
          this.CONSUME3(Name, { LABEL: 'key' });
        },
      },
      {
        ALT: () => {
          this.CONSUME(KW.rt!, { LABEL: 'head' });
          this.OPTION({
            GATE: () => tokenMatcher(this.la(1), FamilyKw) && isFieldWord(this.la(2)),
            DEF: () => this.CONSUME(FamilyKw, { LABEL: 'family' }),
          });
          this.CONSUME4(Name, { LABEL: 'key' });
          this.OPTION1(() => this.SUBRULE(this.index));
        },
      },
      {
        ALT: () => {
          this.CONSUME(KW.socket!, { LABEL: 'head' });
          this.CONSUME5(Name, { LABEL: 'key' });
          this.OPTION2(() => {
            this.CONSUME(KW.level!);
            this.CONSUME(NumberLit, { LABEL: 'level' });
          });
        },
      },
      {
        ALT: () => {
          this.CONSUME(KW.osf!, { LABEL: 'head' });
          this.OPTION3(() => {
            this.CONSUME(KW.ttl!);
            this.CONSUME6(Name, { LABEL: 'ttl' });
          });
          this.CONSUME7(Name, { LABEL: 'key' });
        },
      },
      {
        ALT: () => {
          this.CONSUME(KW.ipsec!, { LABEL: 'head' });
          this.CONSUME8(Name, { LABEL: 'dir' });
          this.OPTION4(() => {
            this.CONSUME(KW.spnum!);
            this.CONSUME1(NumberLit, { LABEL: 'spnum' });
          });
          this.OPTION5({
            GATE: () => tokenMatcher(this.la(1), FamilyKw) && isFieldWord(this.la(2)),
            DEF: () => this.CONSUME1(FamilyKw, { LABEL: 'family' }),
          });
          this.CONSUME9(Name, { LABEL: 'key' });
        },
      },
      { ALT: () => this.SUBRULE(this.hashSel) },
      {
        // 1.1.x tunnel metadata (`tunnel path exists`, `tunnel id 10`).
        ALT: () => {
          this.CONSUME(KW.tunnel!, { LABEL: 'head' });
          this.consume(10, Name, { LABEL: 'key' });
        },
      },
      {
        ALT: () => {
          this.CONSUME(KW.exthdr!, { LABEL: 'head' });
          this.SUBRULE(this.nameTok, { LABEL: 'exthdr' });
          this.OPTION6({ GATE: () => isFieldWord(this.la(1)), DEF: () => this.SUBRULE1(this.nameTok, { LABEL: 'key' }) });
        },
      },
    ]);
  });

  index = this.RULE('index', () => {
    this.CONSUME(LBracket);
    this.CONSUME(NumberLit, { LABEL: 'index' });
    this.CONSUME(RBracket);
  });

  ctSel = this.RULE('ctSel', () => {
    this.CONSUME(KW.ct!);
    this.OPTION(() => {
      this.OR([
        { ALT: () => this.CONSUME(KW.original!, { LABEL: 'dir' }) },
        { ALT: () => this.CONSUME(KW.reply!, { LABEL: 'dir' }) },
      ]);
    });
    this.OPTION1({
      GATE: () => tokenMatcher(this.la(1), FamilyKw) && isFieldWord(this.la(2)),
      DEF: () => this.CONSUME(FamilyKw, { LABEL: 'family' }),
    });
    this.CONSUME(Name, { LABEL: 'key' });
  });

  /** `numgen inc mod 2 [offset N]`, `jhash EXPR mod 2 [seed N] [offset N]`, `symhash mod 2`. */
  hashSel = this.RULE('hashSel', () => {
    this.OR([
      {
        ALT: () => {
          this.CONSUME(KW.numgen!, { LABEL: 'head' });
          this.CONSUME(Name, { LABEL: 'mode' });
        },
      },
      {
        ALT: () => {
          this.CONSUME(KW.jhash!, { LABEL: 'head' });
          this.SUBRULE(this.expr, { ARGS: [true, false], LABEL: 'expr' });
        },
      },
      { ALT: () => this.CONSUME(KW.symhash!, { LABEL: 'head' }) },
    ]);
    this.CONSUME(KW.mod!);
    this.CONSUME(NumberLit, { LABEL: 'mod' });
    this.MANY(() => {
      this.OR1([
        { ALT: () => this.CONSUME(KW.seed!, { LABEL: 'options' }) },
        { ALT: () => this.CONSUME(KW.offset!, { LABEL: 'options' }) },
      ]);
      this.CONSUME1(NumberLit, { LABEL: 'values' });
    });
  });

  /** `tcp dport`, `vxlan ip saddr`, `tcp option maxseg size`, `arp saddr ip`, `srh sid[1]`. */
  payloadSel = this.RULE('payloadSel', () => {
    this.CONSUME(PayloadHead, { LABEL: 'head' });
    this.OPTION({
      GATE: () => TUNNEL_HEADS.has(this.la(0).image) && tokenMatcher(this.la(1), PayloadHead) && isFieldWord(this.la(2)),
      DEF: () => this.CONSUME1(PayloadHead, { LABEL: 'inner' }),
    });
    this.OR({ IGNORE_AMBIGUITIES: true, MAX_LOOKAHEAD: 1, DEF: [
      {
        GATE: () => this.la(1).image === 'option' || this.la(1).image === 'chunk',
        ALT: () => {
          this.CONSUME(Name, { LABEL: 'sub' });
          this.OR1([
            { GATE: () => tokenMatcher(this.la(1), At), ALT: () => this.SUBRULE(this.rawPayload) },
            { ALT: () => this.SUBRULE(this.nameTok, { LABEL: 'option' }) },
          ]);
          this.OPTION1({ GATE: () => isFieldWord(this.la(1)), DEF: () => this.CONSUME1(Name, { LABEL: 'key' }) });
        },
      },
      {
        ALT: () => {
          this.CONSUME2(Name, { LABEL: 'key' });
          this.OPTION2(() => this.SUBRULE(this.index));
          this.OPTION3({
            GATE: () => (this.la(1).image === 'ip' || this.la(1).image === 'ether') && isArpAddr(this.la),
            DEF: () => this.CONSUME3(Name, { LABEL: 'addrType' }),
          });
        },
      },
    ] });
  });
}

/** `arp saddr ip`: the word after an arp address field says which address. */
function isArpAddr(la: LA): boolean {
  return la(-1).image === 'arp' && (la(0).image === 'saddr' || la(0).image === 'daddr');
}

/** The one parser instance (Chevrotain parsers are built once and reused). */
export const nftParser = new NftParser();

export type { CstNode, TokenType };
export { isRuleEnd };
