// Rulesets shared by the mark rules' tests (mark-bit-collision, masquerade-contract).

// kube-proxy's contract in nft words: OR 0x4000 in a chain reached from nat prerouting, test it
// in nat postrouting, masquerade only when the bit is still there.
export const KUBE = [
  'table ip nat {',
  '\tchain PREROUTING {',
  '\t\ttype nat hook prerouting priority dstnat; policy accept;',
  '\t\tjump KUBE-MARK-MASQ',
  '\t}',
  '\tchain KUBE-MARK-MASQ {',
  '\t\tmeta mark set mark or 0x4000',
  '\t}',
  '\tchain POSTROUTING {',
  '\t\ttype nat hook postrouting priority srcnat; policy accept;',
  '\t\tjump KUBE-POSTROUTING',
  '\t}',
  '\tchain KUBE-POSTROUTING {',
  '\t\tmeta mark & 0x00004000 != 0x00004000 return',
  '\t\tmeta mark set mark xor 0x4000',
  '\t\tmasquerade fully-random',
  '\t}',
  '}',
  '',
].join('\n');
// Netbird 0.40's full-word mark set at mangle prerouting and compared exactly at nat postrouting.
export const NETBIRD = 'table ip netbird {\n\tchain pre {\n\t\ttype filter hook prerouting priority mangle; policy accept;\n\t\tiifname "wt0" meta mark set 0x0001bd21\n\t}\n\tchain post {\n\t\ttype nat hook postrouting priority srcnat - 1; policy accept;\n\t\tmeta mark 0x0001bd21 masquerade\n\t}\n}\n';
/** kube-proxy's contract plus one rule of another agent at the given hook and priority. */
export const other = (hook: string, priority: string, stmt: string): string =>
  `${KUBE}table ip agent {\n\tchain c {\n\t\ttype filter hook ${hook} priority ${priority}; policy accept;\n\t\t${stmt}\n\t}\n}\n`;
