import type { Span, Stmt } from '../model/ast.js';
import type { LintRule, Report } from './framework/lint-rule.js';
import {
  applyEffect,
  collectMarkOps,
  describeMeetings,
  destroyedBits,
  hex,
  isFullWord,
  meetingsInOrder,
  setBits,
  type MarkOp,
  type MarkSpace,
} from './framework/mark-ops.js';

// "Mark in one chain, act on it in a later hook": kube-proxy ORs 0x4000 in KUBE-MARK-MASQ (nat
// prerouting/output) and masquerades in KUBE-POSTROUTING (nat postrouting) only when the bit is
// still there; Netbird sets 0x1bd21 in its mangle prerouting chain and masquerades in its nat
// postrouting chain only when the whole mark still equals it; Calico carries its accept bit from
// raw/mangle into filter. Every such contract is found from the ruleset itself (a component's
// set and its own later test with a verdict or NAT behind it), and every rule of another
// component that runs in between, in the simulator's hook and priority order across tables and
// families, and can clear or overwrite the bit is reported at the action it defeats. Unlike
// mark-bit-collision, it also reports writes whose value is not known (`meta mark set ct mark`,
// CONNMARK --restore-mark), at a lower severity: they may or may not carry the bit.
export const masqueradeContract: LintRule = {
  id: 'masquerade-contract',
  meta: {
    description: 'A rule that can clear or overwrite the mark bit a component sets in one hook and acts on (masquerade, accept) in a later one.',
    severity: 'error',
    docs: 'docs/rules/masquerade-contract.md',
    messages: {
      cleared: '{{owner}} sets {{bits}} in {{setAt}} for this {{action}} in {{testAt}}, but {{breaker}} clears it in between: the {{action}} does not happen ({{where}})',
      toggled: '{{owner}} sets {{bits}} in {{setAt}} for this {{action}} in {{testAt}}, but {{breaker}} toggles it off in between: the {{action}} does not happen ({{where}})',
      overwritten: '{{owner}} sets {{bits}} in {{setAt}} for this {{action}} in {{testAt}}, but {{breaker}} sets the whole {{mark}} to {{value}} in between: the {{action}} does not happen ({{where}})',
      changed: '{{owner}} sets the {{mark}} to {{value}} in {{setAt}} and compares all of it for this {{action}} in {{testAt}}, but {{breaker}} makes it {{after}} in between: the {{action}} does not happen ({{where}})',
      mayOverwrite: '{{owner}} sets {{bits}} in {{setAt}} for this {{action}} in {{testAt}}, but {{breaker}} copies a value from elsewhere over it in between: whether the {{action}} happens depends on that value ({{where}})',
      setHere: '{{owner}} sets {{bits}} here',
      clearedHere: '{{breaker}} {{verb}} it here',
      testedHere: '{{owner}} tests it here',
    },
  },
  check(context) {
    const { ops } = collectMarkOps(context);
    const reported = new Set<string>();
    for (const contract of findContracts(ops)) {
      for (const breaker of ops) {
        const finding = breakOf(contract, breaker);
        if (!finding) continue;
        const key = `${contract.action.span.file}:${contract.action.span.start}:${breaker.span.file}:${breaker.span.start}`;
        if (reported.has(key)) continue;
        reported.add(key);
        context.report(finding);
      }
    }
  },
};

/** A set, the component's own later test of it, and the verdict or NAT the test guards. */
interface Contract {
  readonly set: MarkOp;
  readonly test: MarkOp;
  /** The bits the test needs; for an exact compare, the whole value. */
  readonly bits: number;
  readonly exact: boolean;
  readonly action: { readonly span: Span; readonly name: string };
}

function findContracts(ops: readonly MarkOp[]): Contract[] {
  const contracts: Contract[] = [];
  for (const set of ops) {
    const value = setBits(set.effect);
    if (value === 0) continue;
    for (const test of ops) {
      if (test.component !== set.component || test.space !== set.space) continue;
      // A bit test that wants the bit set (`mark & 0x4000 == 0x4000`, or `!=` guarding a return),
      // or an exact compare with the whole value set.
      const bits = test.test !== undefined ? value & test.test.mask & test.test.value : isFullWord(set.effect) && test.exact === set.effect.xor ? value : 0;
      if (bits === 0) continue;
      // Set in one hook, acted on in a later one.
      if (!meetingsInOrder([set, test]).some((m) => m.hooks.length > 1)) continue;
      const action = actionOf(test);
      if (action) contracts.push({ set, test, bits: bits >>> 0, exact: test.exact !== undefined, action });
    }
  }
  return contracts;
}

/** The verdict or NAT statement after the test in its rule; when the test guards a `return`
 * (kube-proxy's `mark & 0x4000 != 0x4000 return`), the first NAT statement or accepting or
 * dropping verdict in the rules after it in the chain. */
function actionOf(test: MarkOp): Contract['action'] | undefined {
  const stmts = test.rule.stmts;
  const at = stmts.findIndex((s) => s.span.start === test.span.start);
  for (const stmt of stmts.slice(at + 1)) {
    if (stmt.kind === 'verdict' && (stmt.verdict === 'return' || stmt.verdict === 'continue')) {
      const later = test.chain.rules.slice(test.chain.rules.indexOf(test.rule) + 1).flatMap((r) => r.stmts);
      const guarded = later.find((s) => s.kind === 'nat') ?? later.find((s) => s.kind === 'verdict' && (s.verdict === 'accept' || s.verdict === 'drop'));
      const name = guarded && actionName(guarded);
      return guarded && name !== undefined ? { span: guarded.span, name } : undefined;
    }
    const name = actionName(stmt);
    if (name !== undefined) return { span: stmt.span, name };
  }
  return undefined;
}

function actionName(stmt: Stmt): string | undefined {
  if (stmt.kind === 'nat') return stmt.type;
  if (stmt.kind === 'reject') return 'reject';
  if (stmt.kind !== 'verdict') return undefined;
  return stmt.verdict === 'jump' || stmt.verdict === 'goto' ? `${stmt.verdict} to ${stmt.target ?? '?'}` : stmt.verdict === 'return' || stmt.verdict === 'continue' ? undefined : stmt.verdict;
}

const MARK_NAME: Readonly<Record<MarkSpace, string>> = { meta: 'packet mark', ct: 'conntrack mark' };

/** The finding when `breaker` runs between the contract's set and test and can undo it. */
function breakOf(contract: Contract, breaker: MarkOp): Report | undefined {
  const { set, test, bits, exact, action } = contract;
  const effect = breaker.effect;
  if (effect === undefined || breaker.component === set.component || breaker.space !== set.space) return undefined;
  const destroyed = destroyedBits(effect, bits);
  const value = exact ? set.effect!.xor : bits;
  const after = exact && effect.unknown === 0 ? applyEffect(effect, value) : value;
  const unknown = (effect.unknown & bits) !== 0;
  let messageId: string;
  let verb: string;
  if (exact && after !== value) [messageId, verb] = ['changed', 'changes'];
  else if (!exact && destroyed !== 0) {
    [messageId, verb] = isFullWord(effect) ? ['overwritten', 'overwrites'] : (effect.keep & effect.xor & destroyed) !== 0 ? ['toggled', 'toggles'] : ['cleared', 'clears'];
  } else if (unknown) [messageId, verb] = ['mayOverwrite', 'may overwrite'];
  else return undefined;
  const meetings = meetingsInOrder([set, breaker, test]);
  if (meetings.length === 0) return undefined;
  const owner = set.component;
  const shown = hex(exact ? value : destroyed || bits & effect.unknown);
  return {
    messageId,
    data: {
      owner,
      bits: shown,
      value: messageId === 'overwritten' ? hex(effect.xor) : hex(value),
      after: hex(after),
      mark: MARK_NAME[set.space],
      setAt: set.where,
      testAt: test.where,
      action: action.name,
      breaker: breaker.component,
      where: describeMeetings(meetings),
    },
    span: action.span,
    related: [
      { messageId: 'setHere', data: { owner, bits: shown }, span: set.span },
      { messageId: 'clearedHere', data: { breaker: breaker.component, verb }, span: breaker.span },
      { messageId: 'testedHere', data: { owner }, span: test.span },
    ],
    ...(messageId === 'mayOverwrite' && { severity: 'warning' as const }),
  };
}
