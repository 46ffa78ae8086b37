// Prints an iptables rule back as iptables-save text: base matches in iptables-save's order
// (-s -d -i -o -p -f), then the matches and the target with their options as written. Arguments
// are quoted the way xtables_save_string does (libxtables/xtables.c) when they hold anything
// but letters, digits, `_` and `-`, or when they could be read as an option or a negation.
import type { AddressMatch, IptablesCommand, IptablesOption, IptablesRule } from './iptables-ast.js';

const BARE = /^[A-Za-z0-9_.:/,+=@%^*[\]-]+$/;

/** An argument as iptables-restore reads it back (add_param_to_argv). */
export function quoteIptablesArgument(s: string): string {
  if (BARE.test(s) && s[0] !== '-' && s[0] !== '*' && s[0] !== ':' && s[0] !== '[' && s !== 'COMMIT') return s;
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

function formatAddress(flag: string, m: AddressMatch): string {
  return `${m.negated ? '! ' : ''}${flag} ${m.addresses.map((a) => a.text).join(',')}`;
}

function formatOption(o: IptablesOption): string {
  const args = o.args.map((a) => ` ${quoteIptablesArgument(a)}`).join('');
  return `${o.negated ? '! ' : ''}${o.spelling}${args}`;
}

/** The rule spec: everything after `-A CHAIN`. */
export function formatIptablesRule(rule: IptablesRule): string {
  const parts: string[] = [];
  if (rule.onlyFamily !== undefined) parts.push(rule.onlyFamily === 'ipv4' ? '-4' : '-6');
  if (rule.source) parts.push(formatAddress('-s', rule.source));
  if (rule.destination) parts.push(formatAddress('-d', rule.destination));
  for (const [flag, m] of [['-i', rule.inInterface], ['-o', rule.outInterface]] as const) {
    if (m) parts.push(`${m.negated ? '! ' : ''}${flag} ${quoteIptablesArgument(m.name + (m.wildcard ? '+' : ''))}`);
  }
  if (rule.protocol) parts.push(`${rule.protocol.negated ? '! ' : ''}-p ${quoteIptablesArgument(rule.protocol.name)}`);
  if (rule.fragment) parts.push(`${rule.fragment.negated ? '! ' : ''}-f`);
  for (const m of rule.matches) {
    // An implicit match (`-p tcp --dport 22`) is printed the same way, without `-m`.
    if (!m.implicit) parts.push(`-m ${quoteIptablesArgument(m.name)}`);
    for (const o of m.options) parts.push(formatOption(o));
  }
  if (rule.target) {
    parts.push(`${rule.target.jump === 'goto' ? '-g' : '-j'} ${quoteIptablesArgument(rule.target.name)}`);
    for (const o of rule.target.options) parts.push(formatOption(o));
  }
  return parts.join(' ');
}

const OP_FLAGS: Readonly<Record<IptablesCommand['op'], string>> = {
  append: '-A',
  insert: '-I',
  delete: '-D',
  replace: '-R',
  check: '-C',
  'new-chain': '-N',
  'delete-chain': '-X',
  flush: '-F',
  zero: '-Z',
  policy: '-P',
  'rename-chain': '-E',
};

/** A whole command line, with `[p:b]` counters in front as `iptables-save -c` prints them. */
export function formatIptablesCommand(command: IptablesCommand): string {
  const counters = command.rule?.counters;
  const words = [
    ...(counters ? [`[${counters.packets}:${counters.bytes}]`] : []),
    OP_FLAGS[command.op],
    ...(command.chain !== undefined ? [quoteIptablesArgument(command.chain)] : []),
    ...(command.position !== undefined ? [String(command.position)] : []),
    ...(command.policy !== undefined ? [command.policy] : []),
    ...(command.newName !== undefined ? [quoteIptablesArgument(command.newName)] : []),
  ];
  const spec = command.rule ? formatIptablesRule(command.rule) : '';
  return spec === '' ? words.join(' ') : `${words.join(' ')} ${spec}`;
}
