import { describe, expect, it } from 'vitest';
import { LOCAL, simulateOne } from './helpers.js';

// Dynamic sets and the stateful statements of set elements (nft_dynset.c nft_dynset_eval and
// nft_dynset_new, nft_lookup.c nft_lookup_eval, nft_set_elem_update_expr), each fact checked on
// Linux 6.18 by the rows of test/kernel/differential-expressions.test.ts named in the comments.
// The packet is LOCAL, from 192.0.2.99; a rule sets mark 1 when it gets that far.

function markAfter(set: string, rules: string): string {
  const text = `table inet t {\n\t${set}\n\tchain c {\n\t\ttype filter hook input priority 0;\n\t\t${rules}\n\t}\n}\n`;
  const o = simulateOne(text, LOCAL);
  expect(o.trace.filter((e) => e.kind === 'unsupported')).toEqual([]);
  return o.mark;
}

const DYNAMIC = 'set d { type ipv4_addr; flags dynamic; }';

describe('dynamic sets', () => {
  it.each([
    // 'delete @set of a static element': delete takes the set's own element out.
    ['delete takes a static element out', 'set d { type ipv4_addr; flags dynamic; elements = { 192.0.2.99 } }', 'delete @d { ip saddr }\n\t\tip saddr != @d meta mark set 1', '0x00000001'],
    ['add, then delete, leaves nothing', DYNAMIC, 'add @d { ip saddr }\n\t\tdelete @d { ip saddr }\n\t\tip saddr != @d meta mark set 1', '0x00000001'],
    // 'add @set to a full set': a new element beyond `size` breaks the rule.
    ['add to a full set breaks the rule', 'set d { type ipv4_addr; size 1; flags dynamic; elements = { 10.0.0.1 } }', 'add @d { ip saddr } meta mark set 1', '0x00000000'],
    // 'a deleted element holds its slot for the rest of the packet': the delete only marks it dead.
    ['a deleted element keeps its slot for the packet', 'set d { type ipv4_addr; size 1; flags dynamic; elements = { 192.0.2.99 } }', 'delete @d { ip saddr }\n\t\tadd @d { ip saddr } meta mark set 1', '0x00000000'],
    ['add of an element a full set has goes on', 'set d { type ipv4_addr; size 1; flags dynamic; elements = { 192.0.2.99 } }', 'add @d { ip saddr } meta mark set 1', '0x00000001'],
    // 'dynamic map: add then map lookup', 'dynamic map with data from the packet': the element
    // keeps the data the dynset loaded.
    ['a dynamic map keeps its constant data', 'map m { typeof ip saddr : meta mark; flags dynamic; }', 'add @m { ip saddr : 0x5 }\n\t\tmeta mark set ip saddr map @m', '0x00000005'],
    ['a dynamic map keeps the data the packet gave', 'map m { typeof ip saddr : meta mark; flags dynamic; }', 'add @m { ip saddr : tcp dport }\n\t\tmeta mark set ip saddr map @m', '0x00000016'],
    // nft types a constant key as the set's key (corpus maps/dumps/typeof_maps_add_delete.nft),
    // which nft 1.0.6 lists as its bits: 192.0.2.99 is 0xc0000263.
    ['a constant key is a key of the set', 'map m { typeof ip saddr : meta mark; flags dynamic; }', 'add @m { 192.0.2.99 : 0x5 }\n\t\tmeta mark set ip saddr map @m', '0x00000005'],
    ['a constant key listed as its bits', 'map m { typeof ip saddr : meta mark; flags dynamic; }', 'add @m { 0xc0000263 [invalid type] : 0x5 }\n\t\tmeta mark set ip saddr map @m', '0x00000005'],
  ])('%s', (_, set, rules, mark) => {
    expect(markAfter(set, rules)).toBe(mark);
  });
});

describe('stateful statements of set elements', () => {
  it.each([
    // 'add @set with limit over (meter)': the new element's limit runs at once; within it,
    // `over` breaks the rule.
    ['a dynset runs the limit it gives the element', DYNAMIC, 'add @d { ip saddr limit rate over 1/hour burst 5 packets } meta mark set 1', '0x00000000'],
    ['a limit the packet is within passes', DYNAMIC, 'add @d { ip saddr limit rate 1/hour burst 5 packets } meta mark set 1', '0x00000001'],
    // 'add @set with quota below the packet': a 40-byte packet is over a 10-byte quota.
    ['a quota the packet exceeds breaks the rule', DYNAMIC, 'add @d { ip saddr quota 10 bytes } meta mark set 1', '0x00000000'],
    // 'not-inverted dynset with limit under …': a lookup runs the found element's statements.
    ['a lookup runs the statements of the element it finds', DYNAMIC, 'add @d { ip saddr limit rate over 1/hour burst 5 packets }\n\t\tip saddr @d meta mark set 1', '0x00000000'],
    // 'an inverted lookup does not run the found element's limit'.
    ['an inverted lookup that finds the element breaks before them', DYNAMIC, 'add @d { ip saddr limit rate 1/hour burst 2 packets }\n\t\tip saddr != @d meta mark set 2\n\t\tip saddr @d meta mark set 1', '0x00000001'],
    // 'set-level quota on a static element, …', 'set-level limit over, dynset add': the set's
    // statements are every element's.
    ['a static element has the set-level quota', 'set s { type ipv4_addr; quota 10 bytes; elements = { 192.0.2.99 } }', 'ip saddr @s meta mark set 1', '0x00000000'],
    ['an added element has the set-level limit', 'set d { type ipv4_addr; flags dynamic; limit rate over 1/hour burst 5 packets; }', 'add @d { ip saddr } meta mark set 1', '0x00000000'],
    ['the dynset and a later lookup draw on the element\'s one bucket', DYNAMIC, 'add @d { ip saddr limit rate 1/hour burst 1 packets }\n\t\tip saddr @d meta mark set 1', '0x00000000'],
  ])('%s', (_, set, rules, mark) => {
    expect(markAfter(set, rules)).toBe(mark);
  });
});
