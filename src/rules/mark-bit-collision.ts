import type { Span } from '../model/ast.js';
import { KNOWN_COMPONENTS, meaningOf } from './facts/known-components.js';
import type { LintContext, LintRule, RelatedReport, Report } from './framework/lint-rule.js';
import {
  applyEffect,
  collectMarkOps,
  describeMeetings,
  destroyedBits,
  hex,
  isFullWord,
  isSingleBit,
  meetingsInOrder,
  setBits,
  writeMask,
  type MarkEffect,
  type MarkOp,
  type MarkOps,
  type MarkSpace,
} from './framework/mark-ops.js';

// The packet mark is one 32-bit word shared by every component on the node (and the conntrack
// mark another). A component that sets a bit in one hook and tests it in a later one (kube-proxy:
// OR 0x4000 in nat prerouting, test it in nat postrouting to masquerade) breaks when anything on
// the way clears the bit: a full-word `meta mark set V`, a masked clear (`mark and 0xffffbfff`)
// or an xor. This is the NodePort masquerade incident of ../shared/DESIGN.md. The five cases are
// those of ../shared/research/marks.md section 1: full-word write over a foreign bit, masked
// clear or xor of foreign bits, exact compare broken by an OR, overlapping masked writers, and a
// tested bit some other writer's value happens to contain. Order of hooks and chains is the
// simulator's (src/rules/framework/mark-ops.ts over src/sim/pipeline.ts).
//
// Sound first: only updates whose effect on the bits is known statically are considered (not
// `meta mark set ct mark`), and only orders the kernel guarantees (a tie in priority is
// priority-tie's business, not a collision). A component's own bits are never a collision.
export const markBitCollision: LintRule = {
  id: 'mark-bit-collision',
  meta: {
    description: "A rule that overwrites, clears or toggles mark bits another component sets and tests, or writes a value another component's test mistakes for its own bit.",
    severity: 'error',
    docs: 'docs/rules/mark-bit-collision.md',
    messages: {
      fullWord: "sets the whole {{mark}} to {{value}}, which clears {{owner}}'s {{what}} {{bits}} between where it is set and where it is tested ({{where}})",
      clears: "{{verb}} {{owner}}'s {{what}} {{bits}} between where it is set and where it is tested ({{where}})",
      exactCompare: '{{verb}} the {{mark}} {{owner}} set to {{value}}, making it {{after}}, before {{owner}} compares the whole mark with {{value}}: the compare fails ({{where}})',
      foreignClear: "{{verb}} {{owner}}'s {{what}} {{bits}}, {{why}} ({{where}})",
      overlappingWriters: "{{verb}} {{bits}} of the {{mark}}, which {{owner}} writes differently: the two masked writes overwrite each other's {{what}} ({{where}})",
      containsTestedBit: "sets the whole {{mark}} to {{value}}, which happens to contain {{owner}}'s {{what}} {{bits}}: {{owner}}'s test takes these packets for its own ({{where}})",
      set: '{{owner}} sets {{bits}} here',
      test: '{{owner}} tests {{bits}} here',
      write: '{{owner}} writes {{bits}} here',
    },
  },
  check(context) {
    const marks = collectMarkOps(context);
    const reported = new Set<string>();
    // One finding per place and component whose bits it breaks, the most specific case first.
    const report = (primary: Span, owner: string, finding: Report): void => {
      const key = `${primary.file}:${primary.start}:${owner}`;
      if (reported.has(key)) return;
      reported.add(key);
      context.report(finding);
    };
    reportBrokenBits(marks.ops, report);
    reportBrokenExactCompares(marks.ops, report);
    reportForeignClears(context, marks, report);
    reportOverlappingWriters(context, marks, report);
    reportContainedTestBits(marks.ops, report);
  },
};

type Reporter = (primary: Span, owner: string, finding: Report) => void;

const MARK_NAME: Readonly<Record<MarkSpace, string>> = { meta: 'packet mark', ct: 'conntrack mark' };

/** "masquerade bit", "bits", "policy bits". */
function describeBits(owner: string, bits: number, space: MarkSpace): string {
  // The registry's meanings are packet-mark bits.
  const meaning = space === 'meta' ? meaningOf(owner, bits) : undefined;
  const noun = isSingleBit(bits) ? 'bit' : 'bits';
  return meaning ? `${meaning} ${noun}` : noun;
}

/** "clears" or "toggles", for the bits an update destroys. */
function verbOf(effect: MarkEffect, bits: number): string {
  return (effect.keep & effect.xor & bits) !== 0 ? 'toggles' : 'clears';
}

const related = (messageId: string, owner: string, bits: number, span: Span): RelatedReport => ({ messageId, data: { owner, bits: hex(bits) }, span });

/** A bit set by one component and tested by it later, destroyed by another in between. */
function reportBrokenBits(ops: readonly MarkOp[], report: Reporter): void {
  const writers = ops.filter((o) => setBits(o.effect) !== 0);
  const tests = ops.filter((o) => o.test !== undefined);
  for (const writer of writers) {
    for (const test of tests) {
      if (test.component !== writer.component || test.space !== writer.space) continue;
      const bits = setBits(writer.effect) & test.test!.mask;
      if (bits === 0) continue;
      for (const clear of ops) {
        if (clear.component === writer.component || clear.space !== writer.space || clear.effect === undefined) continue;
        const destroyed = destroyedBits(clear.effect, bits);
        if (destroyed === 0) continue;
        const meetings = meetingsInOrder([writer, clear, test]);
        if (meetings.length === 0) continue;
        const owner = writer.component;
        report(clear.span, owner, {
          messageId: isFullWord(clear.effect) ? 'fullWord' : 'clears',
          data: {
            mark: MARK_NAME[clear.space],
            value: hex(clear.effect.xor),
            owner,
            what: describeBits(owner, destroyed, clear.space),
            bits: hex(destroyed),
            where: describeMeetings(meetings),
            verb: verbOf(clear.effect, destroyed),
          },
          span: clear.span,
          related: [related('set', owner, destroyed, writer.span), related('test', owner, destroyed, test.span)],
        });
      }
    }
  }
}

/** A whole word set by one component and compared exactly by it later (`meta mark 0x1bd21`),
 * changed in between by another: any bit ORed in, cleared or toggled breaks the compare (the
 * Netbird exact-match readers after kube-proxy's OR of 0x4000, netbird#6022). */
function reportBrokenExactCompares(ops: readonly MarkOp[], report: Reporter): void {
  for (const writer of ops) {
    if (!isFullWord(writer.effect)) continue;
    const value = writer.effect.xor;
    for (const test of ops) {
      if (test.exact !== value || test.component !== writer.component || test.space !== writer.space) continue;
      for (const change of ops) {
        if (change.component === writer.component || change.space !== writer.space || change.effect === undefined || change.effect.unknown !== 0) continue;
        const after = applyEffect(change.effect, value);
        if (after === value) continue;
        const meetings = meetingsInOrder([writer, change, test]);
        if (meetings.length === 0) continue;
        const owner = writer.component;
        report(change.span, owner, {
          messageId: 'exactCompare',
          data: { verb: isFullWord(change.effect) ? 'overwrites' : 'changes', mark: MARK_NAME[change.space], owner, value: hex(value), after: hex(after), where: describeMeetings(meetings) },
          span: change.span,
          related: [related('set', owner, value, writer.span), related('test', owner, value, test.span)],
        });
      }
    }
  }
}

/** A masked clear or xor of bits another component tests but sets outside this ruleset (a socket
 * mark, a BPF program, `ip rule`) or that the configuration declares its own: nothing here shows
 * where they are set, so a clear before any of the owner's tests is enough. */
function reportForeignClears(context: LintContext, marks: MarkOps, report: Reporter): void {
  const setHere = new Map<string, number>();
  for (const op of marks.ops) setHere.set(`${op.component} ${op.space}`, (setHere.get(`${op.component} ${op.space}`) ?? 0) | setBits(op.effect));
  for (const clear of marks.ops) {
    if (clear.effect === undefined || isFullWord(clear.effect)) continue;
    const destroyedAll = destroyedBits(clear.effect, 0xffffffff);
    if (destroyedAll === 0) continue;
    for (const [owner] of marks.usedBits) {
      if (owner === clear.component) continue;
      const outside = ~(setHere.get(`${owner} ${clear.space}`) ?? 0);
      const test = marks.ops.find(
        (t) => t.component === owner && t.space === clear.space && t.test !== undefined && (t.test.mask & destroyedAll & outside) !== 0 && meetingsInOrder([clear, t]).length > 0,
      );
      const declared = clear.space === 'meta' ? (context.ownership.marks[owner] ?? 0) : 0;
      const bits = (destroyedAll & ((test?.test!.mask ?? 0) | declared) & outside) >>> 0;
      if (bits === 0) continue;
      const meetings = meetingsInOrder(test ? [clear, test] : [clear]);
      report(clear.span, owner, {
        messageId: 'foreignClear',
        data: {
          verb: verbOf(clear.effect, bits),
          owner,
          what: describeBits(owner, bits, clear.space),
          bits: hex(bits),
          why: test ? `which ${owner} sets outside this ruleset and tests later` : `which the configuration gives to ${owner}`,
          where: describeMeetings(meetings),
        },
        span: clear.span,
        related: test ? [related('test', owner, bits, test.span)] : [],
      });
    }
  }
}

/** Two components' masked writes (`--set-xmark V/M`, `mark or V`, `mark and ~M`) over the same
 * bits with different results: the later one undoes the earlier. Reported at the write into bits
 * the other owns (it sets them here, or they are its known or declared bits); between two owners,
 * at the later write. */
function reportOverlappingWriters(context: LintContext, marks: MarkOps, report: Reporter): void {
  const masked = marks.ops.filter((o) => o.effect !== undefined && o.effect.unknown === 0 && o.effect.keep !== 0 && writeMask(o.effect) !== 0);
  const owned = (component: string, space: MarkSpace): number => {
    const known = space === 'meta' ? KNOWN_COMPONENTS.find((c) => c.name === component)?.bits.reduce((m, b) => m | b.mask, 0) ?? 0 : 0;
    const declared = space === 'meta' ? (context.ownership.marks[component] ?? 0) : 0;
    return (known | declared | masked.filter((o) => o.component === component && o.space === space).reduce((m, o) => m | setBits(o.effect), 0)) >>> 0;
  };
  for (const [i, a] of masked.entries()) {
    for (const b of masked.slice(i + 1)) {
      if (a.component === b.component || a.space !== b.space) continue;
      const bits = disagreeingBits(a.effect!, b.effect!);
      if (bits === 0) continue;
      const aFirst = meetingsInOrder([a, b]);
      const bFirst = meetingsInOrder([b, a]);
      if (aFirst.length === 0 && bFirst.length === 0) continue;
      const aOwns = (owned(a.component, a.space) & bits) !== 0;
      const bOwns = (owned(b.component, b.space) & bits) !== 0;
      if (!aOwns && !bOwns) continue;
      // The intruder writes into the other's bits; between two owners, the later write.
      const [owner, intruder] = aOwns && bOwns ? (aFirst.length > 0 ? [a, b] : [b, a]) : aOwns ? [a, b] : [b, a];
      const meetings = owner === a ? (aFirst.length > 0 ? aFirst : bFirst) : bFirst.length > 0 ? bFirst : aFirst;
      report(intruder.span, owner.component, {
        messageId: 'overlappingWriters',
        data: {
          verb: (intruder.effect!.keep & intruder.effect!.xor & bits) !== 0 ? 'toggles' : 'writes',
          bits: hex(bits),
          mark: MARK_NAME[intruder.space],
          owner: owner.component,
          what: describeBits(owner.component, bits, intruder.space),
          where: describeMeetings(meetings),
        },
        span: intruder.span,
        related: [related('write', owner.component, bits, owner.span)],
      });
    }
  }
}

/** Bits both updates write, to different results: one forces 1 where the other forces 0, or
 * either toggles. */
function disagreeingBits(a: MarkEffect, b: MarkEffect): number {
  const agree = (~a.keep & ~b.keep & ~(a.xor ^ b.xor)) >>> 0;
  return (writeMask(a) & writeMask(b) & ~agree) >>> 0;
}

/** A full-word value that carries another component's tested bit among others (Netbird's 0x1bd20
 * holds 0x20, wg-quick's 51820 holds kube-proxy's 0x4000 and 0x8000): the owner's test, run
 * later, takes the packet for one it marked itself. */
function reportContainedTestBits(ops: readonly MarkOp[], report: Reporter): void {
  for (const writer of ops) {
    if (!isFullWord(writer.effect)) continue;
    const value = writer.effect.xor;
    for (const test of ops) {
      if (test.test === undefined || test.component === writer.component || test.space !== writer.space) continue;
      const bits = (value & test.test.mask) >>> 0;
      // A value that is just the tested bits is a deliberate flag, not a coincidence.
      if (bits === 0 || (value & ~test.test.mask) === 0) continue;
      const meetings = meetingsInOrder([writer, test]);
      if (meetings.length === 0) continue;
      const owner = test.component;
      report(writer.span, owner, {
        messageId: 'containsTestedBit',
        data: { mark: MARK_NAME[writer.space], value: hex(value), owner, what: describeBits(owner, bits, writer.space), bits: hex(bits), where: describeMeetings(meetings) },
        span: writer.span,
        related: [related('test', owner, bits, test.span)],
      });
    }
  }
}
