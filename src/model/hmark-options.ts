// The options of iptables' HMARK target as libxt_HMARK.c reads them into struct xt_hmark_info:
// the lowering refuses what iptables or the kernel refuses (lower-iptables.ts), the simulator
// hashes with what they set (src/sim/xt-hmark.ts).

import type { XtOption } from './ast.js';

/** struct xt_hmark_info as libxt_HMARK.c fills it; the port masks and sets in host order. */
export interface HmarkInfo {
  srcMask: bigint;
  dstMask: bigint;
  sportMask: number;
  dportMask: number;
  sportSet: number;
  dportSet: number;
  protoMask: number;
  rnd: number;
  mod: number;
  offset: number;
  ct: boolean;
}

/** hmark_parse: the `--hmark-tuple` words, each matched as a prefix, case aside, in this order
 * (`s` is src, `sp` sport). */
const TUPLE_WORDS = ['ct', 'src', 'dst', 'sport', 'dport', 'proto', 'spi'] as const;

/** What the options seen set, for the checks after them (HMARK_check, hmark_tg_check). */
interface Seen {
  tuple: boolean;
  spiMask: boolean;
  portMask: boolean;
  spiSet: boolean;
  portSet: boolean;
}

type Setter = (info: HmarkInfo, seen: Seen, n: number, prefix: (length: number) => bigint) => void;

/** What each numeric option sets (libxt_HMARK.c HMARK_opts). The SPI's mask and value share the
 * ports' word (union hmark_ports), its high half the source port's. */
const OPTION_SETTERS: Readonly<Record<string, Setter>> = {
  'hmark-src-prefix': (info, seen, n, prefix) => void ((info.srcMask = prefix(n)), (seen.tuple = true)),
  'hmark-dst-prefix': (info, seen, n, prefix) => void ((info.dstMask = prefix(n)), (seen.tuple = true)),
  'hmark-sport-mask': (info, seen, n) => void ((info.sportMask = n & 0xffff), (seen.tuple = seen.portMask = true)),
  'hmark-dport-mask': (info, seen, n) => void ((info.dportMask = n & 0xffff), (seen.tuple = seen.portMask = true)),
  'hmark-spi-mask': (info, seen, n) => void (([info.sportMask, info.dportMask] = [n >>> 16, n & 0xffff]), (seen.tuple = seen.spiMask = true)),
  'hmark-sport': (info, seen, n) => void ((info.sportSet = n & 0xffff), (seen.portSet = true)),
  'hmark-dport': (info, seen, n) => void ((info.dportSet = n & 0xffff), (seen.portSet = true)),
  'hmark-spi': (info, seen, n) => void (([info.sportSet, info.dportSet] = [n >>> 16, n & 0xffff]), (seen.spiSet = true)),
  'hmark-proto-mask': (info, seen, n) => void ((info.protoMask = n & 0xffff), (seen.tuple = true)),
  'hmark-rnd': (info, _seen, n) => void (info.rnd = n >>> 0),
  'hmark-mod': (info, _seen, n) => void (info.mod = n >>> 0),
  'hmark-offset': (info, _seen, n) => void (info.offset = n >>> 0),
};

/** What each `--hmark-tuple` word sets (hmark_parse): its masks all-ones, or ct mode. */
const TUPLE_SETTERS: Readonly<Record<(typeof TUPLE_WORDS)[number], (info: HmarkInfo, seen: Seen, all: bigint) => void>> = {
  ct: (info) => void (info.ct = true),
  src: (info, _seen, all) => void (info.srcMask = all),
  dst: (info, _seen, all) => void (info.dstMask = all),
  sport: (info, seen) => void ((info.sportMask = 0xffff), (seen.portMask = true)),
  dport: (info, seen) => void ((info.dportMask = 0xffff), (seen.portMask = true)),
  proto: (info) => void (info.protoMask = 0xffff),
  spi: (info, seen) => void (([info.sportMask, info.dportMask] = [0xffff, 0xffff]), (seen.spiMask = true)),
};

/** The options in order, as libxt_HMARK.c applies them (a later one overrides what an earlier
 * one set of the same mask), for addresses of `bits`; or what iptables or the kernel says when
 * it refuses them (checked with iptables-nft 1.8.9 on Linux 6.18). */
export function readHmarkOptions(options: readonly XtOption[], bits: number): HmarkInfo | string {
  const all = (1n << BigInt(bits)) - 1n;
  const prefix = (length: number): bigint => (length >= bits ? all : all ^ (all >> BigInt(length)));
  const info: HmarkInfo = { srcMask: 0n, dstMask: 0n, sportMask: 0, dportMask: 0, sportSet: 0, dportSet: 0, protoMask: 0, rnd: 0, mod: 0, offset: 0, ct: false };
  const seen: Seen = { tuple: false, spiMask: false, portMask: false, spiSet: false, portSet: false };
  let rnd = false;
  let mod = false;
  for (const o of options) {
    if (o.name === 'hmark-tuple' && o.value.type === 'string') {
      seen.tuple = true;
      for (const word of o.value.s.split(',')) {
        const lower = word.toLowerCase();
        const name = lower === '' ? undefined : TUPLE_WORDS.find((w) => w.startsWith(lower));
        if (!name) return '"--hmark-tuple" requires a list of types with no spaces, e.g. src,dst,sport,dport,proto';
        TUPLE_SETTERS[name](info, seen, all);
      }
      continue;
    }
    const setter = OPTION_SETTERS[o.name];
    if (o.value.type !== 'number' || !setter) return `--${o.name} '${o.args.join(' ')}' is not an option HMARK reads`;
    if (o.name === 'hmark-mod' && o.value.n === 0) return 'bad value for option "--hmark-mod", or out of range (1-4294967295)';
    rnd ||= o.name === 'hmark-rnd';
    mod ||= o.name === 'hmark-mod';
    setter(info, seen, o.value.n, prefix);
  }
  // HMARK_check, then the kernel's hmark_tg_check (EINVAL).
  if (!mod) return '--hmark-mod is mandatory';
  if (!rnd) return '--hmark-rnd is mandatory';
  if (seen.spiMask && seen.portMask) return 'you cannot use --hmark-spi-mask and --hmark-?port-mask,at the same time';
  if (!seen.tuple) return 'you have to specify --hmark-tuple at least';
  if (seen.spiSet && seen.portSet) return '--hmark-spi and --hmark-sport or --hmark-dport cannot be combined (the kernel refuses the rule)';
  return info;
}
