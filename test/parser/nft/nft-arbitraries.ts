import fc from 'fast-check';
import type {
  BaseChainSpec,
  Chain,
  Expr,
  Family,
  Hook,
  Literal,
  Relational,
  Rule,
  Ruleset,
  Span,
  Stmt,
  Table,
} from '../../../src/model/ast.js';

// Arbitraries for models that the canonical printer can print and the nft parser can read back.
// Literals are generated in their canonical spelling (marks as 0x%08x, decimal ports), so that
// a round trip must give back the same model, spelling included.

const span: Span = { file: '<generated>', start: 0, end: 0, line: 1, column: 1 };

const name = fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9_-]{0,11}$/);

const lit = (text: string, quoted?: boolean): Literal =>
  quoted ? { kind: 'literal', span, text, quoted } : { kind: 'literal', span, text };

const ipv4 = fc.ipV4().map((a) => lit(a));
const port = fc.integer({ min: 0, max: 65535 }).map((p) => lit(String(p)));
const mark = fc
  .oneof(fc.integer({ min: 0, max: 0xffff }), fc.constantFrom(0x4000, 0x8000, 0x1bd20, 0xff0000, 0xffffffff))
  .map((m) => lit(`0x${m.toString(16).padStart(8, '0')}`));

const rel = (left: Expr, right: Expr, op: Relational['op'] = 'implicit'): Stmt => ({
  kind: 'match',
  span,
  expr: { kind: 'relational', span, op, left, right },
});

const payload = (protocol: string, field: string): Expr => ({ kind: 'payload', span, protocol, field });
const meta = (key: string, qualified: boolean): Expr => ({ kind: 'meta', span, key, qualified });

/** Distinct values in increasing order, as nft lists the elements of a set. */
function sortedSet(values: readonly number[], toLiteral: (n: number) => Literal): Expr {
  const sorted = [...new Set(values)].sort((a, b) => a - b);
  return { kind: 'set', span, elements: sorted.map((n) => ({ kind: 'element', span, key: toLiteral(n) })) };
}

const addressMatch = fc
  .record({
    field: fc.constantFrom('saddr', 'daddr'),
    op: fc.constantFrom<Relational['op']>('implicit', '!='),
    right: fc.oneof(
      ipv4,
      fc
        .tuple(fc.ipV4(), fc.integer({ min: 8, max: 31 }))
        .map(([a, len]): Expr => ({ kind: 'prefix', span, expr: lit(networkOf(a, len)), length: len })),
    ),
  })
  .map(({ field, op, right }) => rel(payload('ip', field), right, op));

const portMatch = fc
  .record({
    protocol: fc.constantFrom('tcp', 'udp'),
    field: fc.constantFrom('sport', 'dport'),
    op: fc.constantFrom<Relational['op']>('implicit', '!='),
    right: fc.oneof(
      port,
      fc
        .tuple(fc.integer({ min: 0, max: 30000 }), fc.integer({ min: 1, max: 30000 }))
        .map(([low, width]): Expr => ({ kind: 'range', span, low: lit(String(low)), high: lit(String(low + width)) })),
      fc.uniqueArray(fc.integer({ min: 0, max: 65535 }), { minLength: 2, maxLength: 5 }).map((ps) => sortedSet(ps, (p) => lit(String(p)))),
    ),
  })
  .map(({ protocol, field, op, right }) => rel(payload(protocol, field), right, op));

const ifnameMatch = fc
  .record({ key: fc.constantFrom('iifname', 'oifname'), op: fc.constantFrom<Relational['op']>('implicit', '!='), dev: fc.constantFrom('eth0', 'wt0', 'cni0', 'lo', 'veth*') })
  .map(({ key, op, dev }) => rel(meta(key, false), lit(dev, true), op));

const markMatch = fc.oneof(
  mark.map((m) => rel(meta('mark', true), m)),
  fc.tuple(mark, mark).map(([mask, value]) =>
    rel({ kind: 'binop', span, op: '&', left: meta('mark', true), right: mask }, value, '=='),
  ),
);

const ctStateMatch = fc
  .subarray(['invalid', 'established', 'related', 'new', 'untracked'], { minLength: 1 })
  .map((states): Stmt => {
    const items = states.map((s) => lit(s));
    return rel({ kind: 'ct', span, key: 'state' }, items.length === 1 ? items[0]! : { kind: 'flag-list', span, items });
  });

const matchStmt = fc.oneof(addressMatch, portMatch, ifnameMatch, markMatch, ctStateMatch);

const actionStmt = fc.oneof(
  fc.record({ packets: fc.nat(1000), bytes: fc.nat(100000) }).map(({ packets, bytes }): Stmt => ({ kind: 'counter', span, packets, bytes })),
  mark.map((m): Stmt => ({ kind: 'meta-set', span, key: 'mark', qualified: true, value: m })),
  mark.map((m): Stmt => ({
    kind: 'meta-set',
    span,
    key: 'mark',
    qualified: true,
    value: { kind: 'binop', span, op: '|', left: meta('mark', true), right: m },
  })),
  fc.constant<Stmt>({ kind: 'ct-set', span, key: 'mark', value: meta('mark', true) }),
  fc.stringMatching(/^[A-Za-z0-9 :-]{1,20}$/).map((prefix): Stmt => ({ kind: 'log', span, prefix, flags: [] })),
);

/** A rule's final statement; `targets` are the chains a jump may name. */
function verdictStmt(targets: readonly string[], nat: boolean): fc.Arbitrary<Stmt> {
  const simple = fc.constantFrom<Stmt>(
    { kind: 'verdict', span, verdict: 'accept' },
    { kind: 'verdict', span, verdict: 'drop' },
    { kind: 'verdict', span, verdict: 'return' },
  );
  const options: fc.Arbitrary<Stmt>[] = [simple];
  if (targets.length > 0) {
    options.push(
      fc.record({ verdict: fc.constantFrom<'jump' | 'goto'>('jump', 'goto'), target: fc.constantFrom(...targets) }).map(
        ({ verdict, target }): Stmt => ({ kind: 'verdict', span, verdict, target }),
      ),
    );
  }
  if (nat) {
    options.push(
      fc.record({ addr: ipv4, port: fc.option(port, { nil: undefined }) }).map(
        ({ addr, port: p }): Stmt => ({ kind: 'nat', span, type: 'dnat', addr, ...(p && { port: p }), flags: [] }),
      ),
      fc.subarray(['random', 'fully-random', 'persistent']).map((flags): Stmt => ({ kind: 'nat', span, type: 'masquerade', flags })),
    );
  }
  return fc.oneof(...options);
}

function ruleArb(targets: readonly string[], nat: boolean): fc.Arbitrary<Rule> {
  return fc
    .record({
      matches: fc.array(matchStmt, { maxLength: 3 }),
      actions: fc.array(actionStmt, { maxLength: 2 }),
      verdict: fc.option(verdictStmt(targets, nat), { nil: undefined }),
      comment: fc.option(fc.stringMatching(/^[a-z0-9 /:.-]{1,30}$/), { nil: undefined }),
    })
    .filter(({ matches, actions, verdict }) => matches.length + actions.length + (verdict ? 1 : 0) > 0)
    .map(({ matches, actions, verdict, comment }): Rule => ({
      kind: 'rule',
      span,
      stmts: [...matches, ...actions, ...(verdict ? [verdict] : [])],
      ...(comment !== undefined && { comment }),
    }));
}

const BASE_HOOKS: readonly { type: 'filter' | 'nat'; hook: Hook; priority: number }[] = [
  { type: 'filter', hook: 'input', priority: 0 },
  { type: 'filter', hook: 'forward', priority: 0 },
  { type: 'filter', hook: 'output', priority: 0 },
  { type: 'filter', hook: 'prerouting', priority: -150 },
  { type: 'nat', hook: 'prerouting', priority: -100 },
  { type: 'nat', hook: 'postrouting', priority: 100 },
];

const PRIORITY_NAMES: Readonly<Record<number, string>> = { 0: 'filter', [-150]: 'mangle', [-100]: 'dstnat', 100: 'srcnat' };

const baseSpec = fc
  .record({ base: fc.constantFrom(...BASE_HOOKS), policy: fc.constantFrom<'accept' | 'drop'>('accept', 'drop') })
  .map(({ base, policy }): BaseChainSpec => ({
    type: base.type,
    hook: base.hook,
    priority: { span, name: PRIORITY_NAMES[base.priority]!, offset: 0, value: base.priority },
    policy,
    devices: [],
  }));

const tableArb = (family: Family): fc.Arbitrary<Table> =>
  fc
    .record({
      name,
      chainNames: fc.uniqueArray(name, { minLength: 1, maxLength: 4 }),
      bases: fc.array(fc.option(baseSpec, { nil: undefined }), { minLength: 4, maxLength: 4 }),
    })
    .chain(({ name: tableName, chainNames, bases }) =>
      fc
        .tuple(
          ...chainNames.map((chainName, i) => {
            const base = bases[i];
            const targets = chainNames.filter((c, j) => c !== chainName && !bases[j]);
            return fc.array(ruleArb(targets, base?.type === 'nat'), { maxLength: 4 }).map(
              (rules): Chain => ({ kind: 'chain', span, name: chainName, ...(base && { base }), rules }),
            );
          }),
        )
        .map(
          (chains): Table => ({
            kind: 'table',
            span,
            family,
            name: tableName,
            flags: [],
            objects: [],
            sets: [],
            flowtables: [],
            chains,
          }),
        ),
    );

export const rulesetArb: fc.Arbitrary<Ruleset> = fc
  .array(fc.constantFrom<Family>('ip', 'inet'), { minLength: 1, maxLength: 3 })
  .chain((families) => fc.tuple(...families.map(tableArb)))
  .map((tables) => ({
    kind: 'ruleset' as const,
    // nft merges tables of the same family and name; keep them distinct.
    tables: tables.filter((t, i) => tables.findIndex((u) => u.family === t.family && u.name === t.name) === i),
  }));

function networkOf(address: string, length: number): string {
  const n = address.split('.').reduce((acc, octet) => acc * 256 + Number(octet), 0);
  const masked = length === 0 ? 0 : Math.floor(n / 2 ** (32 - length)) * 2 ** (32 - length);
  return [24, 16, 8, 0].map((shift) => Math.floor(masked / 2 ** shift) % 256).join('.');
}
