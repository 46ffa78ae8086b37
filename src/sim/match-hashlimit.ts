// iptables' hashlimit (xt_hashlimit.c hashlimit_mt_common): a token bucket per key, the key made of
// the packet's fields `--hashlimit-mode` names (source and destination address cut to
// `--hashlimit-srcmask` / `--hashlimit-dstmask`, source and destination port), in the table
// `--hashlimit-name` names, which every rule of that name shares, with the settings of the first.
// A new key's bucket holds `--hashlimit-burst` packets (5 by default: rateinfo_init); a packet
// within it takes one and is within the limit (`--hashlimit-upto` matches, `--hashlimit-above`
// does not), one beyond it takes nothing. As for nft's limit (limit-and-quota.ts) the run has no
// clock: a bucket does not refill between its packets. Byte rates and `--hashlimit-rate-match`
// are not modelled.

import type { XtExtensionStmt } from '../model/ast.js';
import { familyBits, prefixMask } from './address.js';
import { L4_NUMBERS } from './packet.js';
import { NotModelled, type SimContext } from './sim-context.js';
import { memoByObject } from './memo-by-object.js';
import type { HookIndex } from './pipeline.js';

/** XT_HASHLIMIT_BURST. */
const DEFAULT_BURST = 5;

/** Protocols whose ports a key reads (hashlimit_init_dst get_ports); others give port 0. */
const PORTED = new Set([L4_NUMBERS.tcp, L4_NUMBERS.udp, L4_NUMBERS.udplite, L4_NUMBERS.sctp, L4_NUMBERS.dccp]);

/** What a hashlimit rule says: its sense, and the table settings (used only by the rule that
 * creates the table of its name). */
interface HashlimitRule {
  readonly above: boolean;
  readonly name: string;
  readonly burst: number;
  readonly modes: readonly string[];
  readonly srcmask: number | undefined;
  readonly dstmask: number | undefined;
}

function readRule(stmt: XtExtensionStmt): HashlimitRule {
  let above: boolean | undefined;
  let burst = DEFAULT_BURST;
  let modes: readonly string[] = [];
  let name: string | undefined;
  let srcmask: number | undefined;
  let dstmask: number | undefined;
  for (const o of stmt.options) {
    const v = o.value;
    if (o.name === 'hashlimit-upto' || o.name === 'hashlimit-above') {
      if (v.type !== 'rate') throw new NotModelled(`iptables match hashlimit --${o.name} ${o.args.join(' ')} (a byte rate)`);
      above = (o.name === 'hashlimit-above') !== o.negated;
    } else if (o.name === 'hashlimit-burst' && v.type === 'string' && /^\d+$/.test(v.s)) burst = Number(v.s);
    else if (o.name === 'hashlimit-mode' && v.type === 'names') modes = v.names;
    else if (o.name === 'hashlimit-name' && v.type === 'string') name = v.s;
    else if (o.name === 'hashlimit-srcmask' && v.type === 'number') srcmask = v.n;
    else if (o.name === 'hashlimit-dstmask' && v.type === 'number') dstmask = v.n;
    // The table's size and expiry change nothing the run sees.
    else if (!o.name.startsWith('hashlimit-htable-')) throw new NotModelled(`iptables match hashlimit --${o.name}`);
  }
  if (above === undefined || name === undefined) throw new NotModelled('iptables match hashlimit without a rate or a name');
  return { above, name, burst, modes, srcmask, dstmask };
}

/** readRule, undefined for a rule nftsim does not model (which says so when a packet meets it). */
function readableRule(stmt: XtExtensionStmt): HashlimitRule | undefined {
  try {
    return readRule(stmt);
  } catch (error) {
    if (error instanceof NotModelled) return undefined;
    throw error;
  }
}

/** The settings of the table a rule's name gives, by family: those of the first rule of that
 * name in the ruleset, which created it (htable_find_get finds it for the later ones; only
 * their sense is their own). */
const creatorsOf = memoByObject((index: HookIndex): ReadonlyMap<string, HashlimitRule> => {
  const creators = new Map<string, HashlimitRule>();
  const tables = [...new Set([...index.byHook.values()].flat().map((r) => r.table))];
  for (const table of tables) {
    for (const chain of table.chains) {
      for (const rule of chain.rules) {
        for (const stmt of rule.stmts) {
          if (stmt.kind !== 'xt-extension' || stmt.name !== 'hashlimit') continue;
          const read = readableRule(stmt);
          const key = read && `${table.family}/${read.name}`;
          if (read && key && !creators.has(key)) creators.set(key, read);
        }
      }
    }
  }
  return creators;
});

export function matchHashlimit(stmt: XtExtensionStmt, ctx: SimContext): boolean {
  const rule = readRule(stmt);
  const table = creatorsOf(ctx.index).get(`${ctx.table.family}/${rule.name}`) ?? rule;
  const bits = familyBits(ctx.family);
  const p = ctx.pkt;
  const parts: (string | number | bigint)[] = [rule.name, ctx.family];
  for (const mode of table.modes) {
    if (mode === 'srcip') parts.push(p.src.n & prefixMask(bits, table.srcmask ?? bits));
    else if (mode === 'dstip') parts.push(p.dst.n & prefixMask(bits, table.dstmask ?? bits));
    else if (mode === 'srcport' || mode === 'dstport') {
      const port = PORTED.has(p.l4proto) ? (mode === 'srcport' ? p.sport : p.dport) : 0;
      if (typeof port !== 'number') throw new NotModelled(`iptables match hashlimit of a port NAT picked at random (${String(port)})`);
      parts.push(`${mode}${port}`);
    } else throw new NotModelled(`iptables match hashlimit --hashlimit-mode ${mode}`);
  }
  const key = parts.join('/');
  const buckets = (ctx.dynamicSets.get(BUCKETS)?.[0] as Readonly<Record<string, number>> | undefined) ?? {};
  const used = buckets[key] ?? 0;
  const within = used < table.burst;
  if (within) ctx.dynamicSets.set(BUCKETS, [{ ...buckets, [key]: used + 1 }]);
  return within !== rule.above;
}

/** Where the run's dynamic state keeps what each bucket gave out, by key (a new record at each
 * change). */
const BUCKETS = { name: 'hashlimit' };
