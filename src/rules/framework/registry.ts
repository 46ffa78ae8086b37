// Every lint rule, in the order their findings are documented. One file per rule in src/rules;
// test/rules/registry.test.ts keeps this list, the files, the docs pages and the tests in step.

import { dropPolicyWithoutEstablished } from '../drop-policy-without-established.js';
import { iptablesNftIncompatible } from '../iptables-nft-incompatible.js';
import { jumpLoop } from '../jump-loop.js';
import { markBitCollision } from '../mark-bit-collision.js';
import { masqueradeContract } from '../masquerade-contract.js';
import { natOutsideNatChain } from '../nat-outside-nat-chain.js';
import { priorityTie } from '../priority-tie.js';
import { undefinedReference } from '../undefined-reference.js';
import { unreachableRule } from '../unreachable-rule.js';
import type { LintRule } from './lint-rule.js';

export const LINT_RULES: readonly LintRule[] = [
  markBitCollision,
  masqueradeContract,
  iptablesNftIncompatible,
  undefinedReference,
  jumpLoop,
  priorityTie,
  natOutsideNatChain,
  dropPolicyWithoutEstablished,
  unreachableRule,
];
