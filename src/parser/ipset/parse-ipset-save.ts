// `ipset save` output (what `ipset restore` reads): a `create NAME TYPE OPTIONS…` line per set,
// then an `add NAME ELEMENT OPTIONS…` line per element. Read line by line as ipset restore does
// (ipset/src/ipset.c restore: one command per line, `#` lines are comments), each line split into
// words by one Chevrotain lexer, where a double-quoted word (a comment) may hold blanks.

import { Lexer, createToken, type IToken } from 'chevrotain';
import type { Span } from '../../model/ast.js';
import { datatypeSymbols, readIptablesIcmpType } from '../../model/datatypes.js';
import type { Diagnostic } from '../../model/diagnostic.js';
import { IPSET_TYPES, type IpSet, type IpSetDimension, type IpSetElement, type IpSetPart } from '../../model/ipset.js';
import { LineIndex } from '../../model/line-index.js';
import { parseAddress, parseCidr } from '../../sim/address.js';

const Word = createToken({ name: 'Word', pattern: /(?:[^\s"]+|"(?:[^"\\]|\\.)*")+/ });
const Blank = createToken({ name: 'Blank', pattern: /[ \t\r\f\v]+/, group: Lexer.SKIPPED });
const lexer = new Lexer([Blank, Word], { positionTracking: 'onlyOffset', ensureOptimizations: false });

export interface IpsetParseResult {
  readonly ipsets: readonly IpSet[];
  readonly diagnostics: readonly Diagnostic[];
}

/** Element options ipset prints after an element (the extensions of its set), each with its
 * number of arguments; `nomatch` alone changes what the element means. */
const ELEMENT_OPTIONS: ReadonlyMap<string, number> = new Map([
  ['timeout', 1], ['packets', 1], ['bytes', 1], ['comment', 1], ['skbmark', 1], ['skbprio', 1],
  ['skbqueue', 1], ['nomatch', 0], ['before', 1], ['after', 1],
]);

// The protocols of a port part by name (`tcp:80`, `gre:0`): /etc/protocols as nft reads it, and
// ipset's `icmpv6`.
const PROTOCOLS: ReadonlyMap<string, number> = new Map([...datatypeSymbols('inet_proto').map(([name, value]) => [name, Number(value)] as const), ['icmpv6', 58]]);
const ICMP = 1;
const ICMPV6 = 58;
/** Protocols whose port part is a port (ip_set_getport.c get_port). */
const PORTED = new Set([6, 17, 132, 136]);

/** Reads an `ipset save` dump. Never throws on bad input: a line it cannot read is an error
 * naming its place, and the line is left out of the model. */
export function parseIpsetSave(text: string, file = '<input>'): IpsetParseResult {
  const lines = new LineIndex(text);
  const diagnostics: Diagnostic[] = [];
  const sets = new Map<string, { set: IpSet; elements: IpSetElement[] }>();
  const span = (start: number, end: number): Span => {
    const line = lines.lineOf(start);
    return { file, start, end, line: line + 1, column: start - lines.startOf(line) + 1 };
  };
  const fail = (message: string, start: number, end: number): void => {
    diagnostics.push({ severity: 'error', code: 'syntax', message, span: span(start, end) });
  };
  let lineStart = 0;
  while (lineStart <= text.length) {
    const newline = text.indexOf('\n', lineStart);
    const lineEnd = newline < 0 ? text.length : newline;
    const line = text.slice(lineStart, lineEnd);
    const { tokens, errors } = lexer.tokenize(line);
    const words = tokens.map((t: IToken) => ({ text: t.image, start: lineStart + t.startOffset, end: lineStart + t.startOffset + t.image.length }));
    const at = lineStart;
    lineStart = lineEnd + 1;
    if (errors.length > 0) {
      const e = errors[0]!;
      fail('an unterminated double quote', at + e.offset, at + e.offset + e.length);
      continue;
    }
    const [command, name, third] = words;
    if (!command || command.text.startsWith('#')) continue;
    if (command.text === 'Name:') {
      fail('this is `ipset list` output: nftsim reads `ipset save` (or `ipset list -o save`)', command.start, command.end);
      break;
    }
    if (command.text !== 'create' && command.text !== 'add') {
      fail(`expected "create" or "add" (the commands ipset save prints), not "${command.text}"`, command.start, command.end);
      continue;
    }
    if (!name || !third) {
      fail(`"${command.text}" needs a set name and ${command.text === 'create' ? 'a type' : 'an element'}`, command.start, (name ?? command).end);
      continue;
    }
    if (command.text === 'create') {
      if (sets.has(name.text)) {
        fail(`set ${name.text} is created twice`, name.start, name.end);
        continue;
      }
      const created = readCreate(name.text, third, words.slice(3), span(command.start, words[words.length - 1]!.end), fail);
      if (created) sets.set(name.text, { set: created, elements: [] });
      continue;
    }
    const known = sets.get(name.text);
    if (!known) {
      fail(`set ${name.text} is not created before this line`, name.start, name.end);
      continue;
    }
    // A list:set holds sets created before it adds them, and no list:set (list_set_uadt:
    // IPSET_ERR_LOOP).
    if (known.set.type === 'list:set') {
      const member = sets.get(third.text)?.set;
      if (!member || member.type === 'list:set') {
        fail(member ? `list:set ${name.text} cannot hold list:set ${third.text}` : `set ${third.text} is not created before this line`, third.start, third.end);
        continue;
      }
    }
    const element = readElement(known.set, third, words.slice(3), span(third.start, third.end), fail);
    if (element) known.elements.push(element);
  }
  const ipsets = [...sets.values()].map(({ set, elements }) => ({ ...set, elements }));
  return { ipsets, diagnostics };
}

type Word = { readonly text: string; readonly start: number; readonly end: number };
type Fail = (message: string, start: number, end: number) => void;

function readCreate(name: string, type: Word, options: readonly Word[], at: Span, fail: Fail): IpSet | undefined {
  if (!IPSET_TYPES.has(type.text)) {
    fail(`unknown set type "${type.text}" (ipset(8) lists ${[...IPSET_TYPES.keys()].join(', ')})`, type.start, type.end);
    return undefined;
  }
  // bitmap:port, hash:mac and list:set serve both families (NFPROTO_UNSPEC).
  let family: IpSet['family'] = type.text === 'bitmap:port' || type.text === 'hash:mac' || type.text === 'list:set' ? undefined : 'inet';
  // The family first, wherever it stands: the masks are read in it.
  const familyAt = options.findIndex((o) => o.text === 'family');
  if (familyAt >= 0) {
    const value = options[familyAt + 1];
    if (value?.text !== 'inet' && value?.text !== 'inet6') {
      fail('expected "inet" or "inet6" after "family"', options[familyAt]!.start, (value ?? options[familyAt]!).end);
      return undefined;
    }
    family = value.text;
  }
  let netmask: number | undefined;
  let bitmask: string | undefined;
  for (let i = 0; i < options.length; i++) {
    const option = options[i]!;
    const value = options[i + 1];
    if (option.text === 'netmask') {
      const bits = Number(value?.text);
      if (!value || !/^\d+$/.test(value.text) || bits < 1 || bits > (family === 'inet6' ? 128 : 32)) {
        fail('expected a prefix length after "netmask"', option.start, (value ?? option).end);
        return undefined;
      }
      netmask = bits;
      i++;
    } else if (option.text === 'bitmask') {
      // ipset 7.17 / Linux 6.1: an address mask, not necessarily a prefix.
      if (value === undefined || parseAddress(value.text)?.family !== (family === 'inet6' ? 'ip6' : 'ip')) {
        fail('expected an address of the set\'s family after "bitmask"', option.start, (value ?? option).end);
        return undefined;
      }
      bitmask = value.text;
      i++;
    }
  }
  const masks = { ...(netmask !== undefined && { netmask }), ...(bitmask !== undefined && { bitmask }) };
  return { kind: 'ipset', span: at, name, type: type.text, family, ...masks, options: options.map((o) => o.text), elements: [] };
}

function readElement(set: IpSet, word: Word, options: readonly Word[], at: Span, fail: Fail): IpSetElement | undefined {
  const dimensions = IPSET_TYPES.get(set.type)!;
  const texts = dimensions.length === 1 ? [word.text] : word.text.split(',');
  if (texts.length !== dimensions.length) {
    fail(`a ${set.type} element has ${dimensions.length} parts separated by ",": ${dimensions.join(',')}`, word.start, word.end);
    return undefined;
  }
  const parts: IpSetPart[] = [];
  for (let i = 0; i < texts.length; i++) {
    const part = readPart(dimensions[i]!, texts[i]!, set);
    if (typeof part === 'string') {
      fail(`${part} in element "${word.text}" of ${set.type} set ${set.name}`, word.start, word.end);
      return undefined;
    }
    parts.push(part);
  }
  let nomatch = false;
  for (let i = 0; i < options.length; i++) {
    const option = options[i]!;
    const count = ELEMENT_OPTIONS.get(option.text);
    if (count === undefined) {
      fail(`unknown element option "${option.text}"`, option.start, option.end);
      return undefined;
    }
    if (option.text === 'nomatch') nomatch = true;
    i += count;
  }
  return { span: at, text: word.text, parts, nomatch };
}

/** One part of an element; a string says what is wrong with it. */
function readPart(dimension: IpSetDimension, text: string, set: IpSet): IpSetPart | string {
  switch (dimension) {
    case 'ip':
    case 'net': {
      const cidr = parseCidr(text);
      const family = set.family === 'inet6' ? 'ip6' : 'ip';
      if (!cidr && text.includes('-')) return `"${text}" is a range, which \`ipset save\` lists element by element`;
      if (!cidr || cidr.family !== family) return `"${text}" is not an ${family === 'ip' ? 'IPv4' : 'IPv6'} address${dimension === 'net' ? ' or network' : ''}`;
      // A network given to a netmask set is stored as the netmask's network, or its own when
      // wider (hash_ip4_uadt).
      const prefix = dimension === 'ip' && set.netmask !== undefined ? Math.min(set.netmask, cidr.prefix) : cidr.prefix;
      return { kind: 'address', family, address: text.split('/')[0]!, prefix };
    }
    case 'port':
      return set.type === 'bitmap:port' ? readBarePort(text) : readProtocolPort(text, set.family === 'inet6' ? ICMPV6 : ICMP);
    case 'mark': {
      const value = Number(text);
      return /^(0x[0-9a-f]+|\d+)$/i.test(text) && value <= 0xffffffff ? { kind: 'mark', value } : `"${text}" is not a mark`;
    }
    case 'mac':
    case 'iface':
    case 'set':
      return { kind: 'name', name: text };
  }
}

function readBarePort(text: string): IpSetPart | string {
  const port = Number(text);
  return /^\d+$/.test(text) && port <= 0xffff ? { kind: 'port', protocol: -1, port } : `"${text}" is not a port`;
}

/** `tcp:80`, `80` (TCP), `icmp:echo-request` or `icmp:8/0`, `gre:0`. */
function readProtocolPort(text: string, icmpOfFamily: number): IpSetPart | string {
  const colon = text.indexOf(':');
  const protocolText = colon < 0 ? 'tcp' : text.slice(0, colon);
  const portText = colon < 0 ? text : text.slice(colon + 1);
  const protocol = /^\d+$/.test(protocolText) ? Number(protocolText) : PROTOCOLS.get(protocolText);
  if (protocol === undefined || protocol > 255) return `unknown protocol "${protocolText}"`;
  if (protocol === ICMP || protocol === ICMPV6) {
    if (protocol !== icmpOfFamily) return `${protocolText} in a set of the other family`;
    const icmp = readIptablesIcmpType(portText, protocol === ICMP ? 'ip' : 'ip6');
    if (!icmp) return `"${portText}" is not an ICMP type`;
    return { kind: 'port', protocol, port: (icmp.type << 8) | (icmp.code ?? 0) };
  }
  const port = Number(portText);
  if (/^\d+-\d+$/.test(portText)) return `"${portText}" is a range of ports, which \`ipset save\` lists port by port`;
  if (!/^\d+$/.test(portText) || port > 0xffff) return `"${portText}" is not a port`;
  if (!PORTED.has(protocol) && port !== 0) return `protocol ${protocolText} has no ports: its port part is 0`;
  return { kind: 'port', protocol, port };
}

