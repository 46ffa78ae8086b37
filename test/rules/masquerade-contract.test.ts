import { describe, expect, it } from 'vitest';
import { masqueradeContract } from '../../src/rules/masquerade-contract.js';
import { lintCode, testRule } from './rule-tester.js';
import { KUBE, NETBIRD, other } from './mark-fixtures.js';

// kube-proxy's iptables contracts (accept in KUBE-FORWARD, masquerade in KUBE-POSTROUTING) and a
// masked CONNMARK restore in mangle FORWARD that copies the ct mark over the low 16 bits.
const KUBE_IPT_RESTORE = [
  '*mangle',
  ':FORWARD ACCEPT [0:0]',
  '-A FORWARD -j CONNMARK --restore-mark --nfmask 0xffff --ctmask 0xffff',
  'COMMIT',
  '*filter',
  ':FORWARD ACCEPT [0:0]',
  ':KUBE-FORWARD - [0:0]',
  '-A FORWARD -j KUBE-FORWARD',
  '-A KUBE-FORWARD -m mark --mark 0x4000/0x4000 -j ACCEPT',
  'COMMIT',
  '*nat',
  ':PREROUTING ACCEPT [0:0]',
  ':POSTROUTING ACCEPT [0:0]',
  ':KUBE-MARK-MASQ - [0:0]',
  ':KUBE-POSTROUTING - [0:0]',
  '-A PREROUTING -j KUBE-MARK-MASQ',
  '-A POSTROUTING -j KUBE-POSTROUTING',
  '-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000',
  '-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN',
  '-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000',
  '-A KUBE-POSTROUTING -j MASQUERADE --random-fully',
  'COMMIT',
  '',
].join('\n');
// Calico carries its accept bit from mangle prerouting to filter forward and clears its own bits.
const CALICO = [
  '*mangle',
  ':PREROUTING ACCEPT [0:0]',
  ':cali-PREROUTING - [0:0]',
  '-A PREROUTING -j cali-PREROUTING',
  '-A cali-PREROUTING -j MARK --set-xmark 0x10000/0x10000',
  'COMMIT',
  '*filter',
  ':FORWARD ACCEPT [0:0]',
  ':cali-FORWARD - [0:0]',
  '-A FORWARD -j cali-FORWARD',
  '-A cali-FORWARD -j MARK --set-xmark 0x0/0xe0000',
  '-A cali-FORWARD -m mark --mark 0x10000/0x10000 -j ACCEPT',
  'COMMIT',
  '',
].join('\n');
const MASQ_LINE = 16;

testRule(masqueradeContract, {
  valid: [
    { name: 'kube-proxy alone (its own xor after the test)', code: KUBE },
    { name: 'Netbird alone', code: NETBIRD },
    { name: 'Calico alone, clearing its own bits between set and test', code: CALICO, format: 'iptables' },
    { name: 'a clear before the bit is set', code: other('prerouting', 'mangle', 'meta mark set 0x0') },
    { name: 'a clear after the masquerade', code: other('postrouting', 'srcnat + 10', 'meta mark set 0x0') },
    { name: 'a clear of other bits in between', code: other('forward', 'filter', 'meta mark set mark and 0xfffeffff') },
    { name: 'an ip6 table never meets the ip contract', code: `${KUBE}table ip6 agent {\n\tchain c {\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tmeta mark set 0x1\n\t}\n}\n` },
    { name: 'a write at the same priority as the set (order undefined: priority-tie)', code: other('prerouting', 'dstnat', 'meta mark set 0x1') },
  ],
  invalid: [
    {
      name: 'a masked clear at mangle postrouting (the NodePort incident)',
      code: other('postrouting', 'mangle', 'meta mark & 0x00000020 == 0x00000020 meta mark set mark and 0xffffbfff'),
      errors: [{ messageId: 'cleared', line: MASQ_LINE, column: 3, related: 3, message: 'kube-proxy sets 0x4000 in ip nat KUBE-MARK-MASQ for this masquerade in ip nat KUBE-POSTROUTING, but ip agent c clears it in between: the masquerade does not happen (forward path: prerouting → postrouting)' }],
    },
    {
      name: 'an xor in an inet table at forward',
      code: `${KUBE}table inet agent {\n\tchain c {\n\t\ttype filter hook forward priority 0; policy accept;\n\t\tmeta mark set meta mark ^ 0x4000\n\t}\n}\n`,
      errors: [{ messageId: 'toggled', line: MASQ_LINE, column: 3, message: 'but inet agent c toggles it off in between: the masquerade does not happen (forward path: prerouting → forward → postrouting)' }],
    },
    {
      name: 'a full-word set at forward',
      code: other('forward', 'filter', 'meta mark set 0x1bd20'),
      errors: [{ messageId: 'overwritten', line: MASQ_LINE, column: 3, message: 'but ip agent c sets the whole packet mark to 0x1bd20 in between' }],
    },
    {
      name: "kube-proxy's OR into the mark Netbird compares whole",
      code: NETBIRD + KUBE,
      errors: [{ messageId: 'changed', line: 8, column: 24, related: 3, message: 'netbird sets the packet mark to 0x1bd21 in ip netbird pre and compares all of it for this masquerade in ip netbird post, but kube-proxy makes it 0x1fd21 in between' }],
    },
    {
      name: 'a copy from the ct mark in between',
      code: other('forward', 'filter', 'meta mark set ct mark'),
      errors: [{ messageId: 'mayOverwrite', line: MASQ_LINE, column: 3, message: 'but ip agent c copies a value from elsewhere over it in between: whether the masquerade happens depends on that value' }],
    },
    {
      name: 'a masked CONNMARK restore before both of kube-proxy\'s contracts (accept in forward, masquerade in postrouting)',
      code: KUBE_IPT_RESTORE,
      format: 'iptables',
      errors: [
        { messageId: 'mayOverwrite', line: 9, column: 46, related: 3, message: 'kube-proxy sets 0x4000 in ip nat KUBE-MARK-MASQ for this accept in ip filter KUBE-FORWARD, but ip mangle FORWARD copies' },
        { messageId: 'mayOverwrite', line: 21, column: 21, related: 3, message: 'for this masquerade in ip nat KUBE-POSTROUTING, but ip mangle FORWARD copies' },
      ],
    },
  ],
});

describe('masquerade-contract severities', () => {
  it.each([
    ['a known clear is an error', other('forward', 'filter', 'meta mark set mark and 0xffffbfff'), 'error'],
    ['an unknown value copied over the bit is a warning', other('forward', 'filter', 'meta mark set ct mark'), 'warning'],
  ])('%s', (_, code, severity) => {
    expect(lintCode(masqueradeContract, { name: '', code }).map((f) => f.severity)).toEqual([severity]);
  });

  it('names the related places: set, cleared, tested', () => {
    const [finding] = lintCode(masqueradeContract, { name: '', code: other('postrouting', 'mangle', 'meta mark set mark and 0xffffbfff') });
    expect(finding!.related.map((r) => `${r.location.line} ${r.message}`)).toEqual(['7 kube-proxy sets 0x4000 here', '22 ip agent c clears it here', '14 kube-proxy tests it here']);
  });
});
