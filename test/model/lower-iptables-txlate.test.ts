// Lowering against iptables-translate: for every iptables/ip6tables pair of the upstream
// `.txlate` files (../shared/corpus/iptables-tests/extensions), the lowered rule prints as the
// nft text iptables-translate 1.8.9 gives, both sides canonicalised through the nft parser and
// printer (so `mark and 0xa` and `meta mark & 0x0000000a` compare equal, and counter values are
// ignored). Every pair that differs is named in DIFFERENCES with its reason, grouped (the kernel
// holds an xt extension, iptables refuses the rule, iptables-translate is wrong, the lowering is
// wrong, not lowered yet); each is asserted to still differ, so a fix prompts an update.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Rule } from '../../src/model/ast.js';
import { formatRule } from '../../src/model/format-ruleset.js';
import { lowerRule } from '../../src/model/lower-iptables.js';
import { parseIptablesSave } from '../../src/parser/iptables/parse-iptables-save.js';
import { parseNftRuleBody } from '../../src/parser/nft/parse-nft.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXTENSIONS = path.resolve(projectRoot, '../shared/corpus/iptables-tests/extensions');
const have = existsSync(EXTENSIONS);
if (!have) console.warn(`${EXTENSIONS} not present: iptables-translate conformance not run`);

interface Pair {
  readonly where: string;
  readonly family: 'ip' | 'ip6';
  readonly command: string;
  readonly expected: string;
}

const COMMAND = /^(ip6?tables)(?:-translate)? (.*)$/;
const NFT = /^nft '(?:add|insert) rule (ip6?) \S+ \S+ ?(.*)'$/;

function readPairs(): Pair[] {
  const pairs: Pair[] = [];
  for (const file of readdirSync(EXTENSIONS).filter((f) => f.endsWith('.txlate')).sort()) {
    const lines = readFileSync(path.join(EXTENSIONS, file), 'utf8').split('\n');
    lines.forEach((line, i) => {
      const command = COMMAND.exec(line);
      const nft = NFT.exec(lines[i + 1] ?? '');
      if (!command || !nft) return;
      pairs.push({ where: `${file}:${i + 1}`, family: command[1] === 'ip6tables' ? 'ip6' : 'ip', command: command[2]!, expected: nft[2]! });
    });
  }
  return pairs;
}

/** The rule of an iptables command line, as a one-rule restore file reads it. */
function lowerCommand(pair: Pair): Rule | undefined {
  const args = pair.command.replace(/(^| )-t \S+/, '').replace(/(^| )-I (\S+)( \d+)?/, '$1-A $2').trim();
  const { dump } = parseIptablesSave(`*filter\n${args}\nCOMMIT\n`, { family: pair.family === 'ip6' ? 'ipv6' : 'ipv4' });
  const rule = dump.tables[0]?.commands[0]?.rule;
  if (!rule) return undefined;
  const command = dump.tables[0]!.commands[0]!;
  return lowerRule(rule, pair.family, command.span, [])[0];
}

/** A rule with the spelling-only details erased: xlate words, counter values. */
function canonical(rule: Rule, family: 'ip' | 'ip6'): string {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (value === null || typeof value !== 'object') return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (k === 'word' || k === 'packets' || k === 'bytes' || k === 'origin') continue;
      out[k] = strip(v);
    }
    return out;
  };
  return spellAsIptablesNft(formatRule(strip(rule) as Rule, {}, family).replace(/\s+/g, ' ').trim());
}

/** Where iptables-translate and what iptables-nft adds (which the lowering follows) differ in
 * spelling only: translate writes `-p` as `ip protocol`, iptables-nft as `meta l4proto`; both
 * leave the protocol implied before a match of its header (translate always, nft's listing
 * before a native tcp/udp match); a native port range from 0 is `<= N`, translated `0-N`. */
function spellAsIptablesNft(text: string): string {
  return text
    .replace(/\bip protocol /g, 'meta l4proto ')
    .replace(/meta l4proto (\S+) (?=(?:.* )?\1 )/, '')
    .replace(/\b(sport|dport) <= (\d+)/g, '$1 0-$2');
}

function expectedRule(pair: Pair): Rule | undefined {
  return parseNftRuleBody(pair.expected).rule;
}

/** Why a pair's lowered rule does not print as iptables-translate's text. */
type Group = 'kernel-holds-xt' | 'iptables-rejects' | 'translate-wrong' | 'lowering-wrong' | 'not-lowered';

const GROUP_REASON: Readonly<Record<Group, string>> = {
  'kernel-holds-xt':
    "iptables-nft keeps this extension as an xt match or target in the kernel (`nft -j list ruleset` shows an xt object); iptables-translate's text is a translation nft cannot hold for iptables-nft",
  'iptables-rejects': 'iptables-nft 1.8.9 refuses the rule, which iptables-translate translates without the checks iptables and the kernel make',
  'translate-wrong': 'iptables-translate is wrong: its text is not what the kernel does for the rule',
  'lowering-wrong': 'the kernel holds the xt match and the lowering does not mean what it does: a bug in src/model/lower-iptables.ts',
  'not-lowered': 'iptables-nft stores native nft expressions that the lowering does not produce yet',
};

interface Difference {
  readonly group: Group;
  readonly reason: string;
  /** `file:line` of the iptables-translate command in the corpus. */
  readonly pairs: readonly string[];
}

// Every pair whose lowered rule differs from iptables-translate's text, with the reason. The
// evidence for each group is the real tools: each rule loaded with iptables-nft/ip6tables-nft
// 1.8.9 into a scratch network namespace and read back with `nft -j list ruleset` (an `xt`
// object there is the kernel holding the xt extension; its absence means native expressions).
const DIFFERENCES: readonly Difference[] = [
  { group: 'kernel-holds-xt', reason: 'xt match ah', pairs: ['libip6t_ah.txlate:10', 'libip6t_ah.txlate:13', 'libip6t_ah.txlate:16', 'libip6t_ah.txlate:19'] },
  { group: 'kernel-holds-xt', reason: 'xt match hbh', pairs: ['libip6t_hbh.txlate:1', 'libip6t_hbh.txlate:4'] },
  { group: 'kernel-holds-xt', reason: 'xt match mh', pairs: ['libip6t_mh.txlate:1', 'libip6t_mh.txlate:4', 'libip6t_mh.txlate:7'] },
  { group: 'kernel-holds-xt', reason: 'xt match rt', pairs: ['libip6t_rt.txlate:1', 'libip6t_rt.txlate:4', 'libip6t_rt.txlate:7', 'libip6t_rt.txlate:10', 'libip6t_rt.txlate:13', 'libip6t_rt.txlate:16', 'libip6t_rt.txlate:19', 'libip6t_rt.txlate:22'] },
  { group: 'kernel-holds-xt', reason: 'xt match esp', pairs: ['libxt_esp.txlate:19'] },
  {
    group: 'kernel-holds-xt',
    reason: 'xt target CONNMARK (the translation also xors before it masks, see libxt_CONNMARK.txlate:7)',
    pairs: ['libxt_CONNMARK.txlate:22'],
  },
  { group: 'kernel-holds-xt', reason: 'xt match conntrack, xt target SYNPROXY', pairs: ['libxt_SYNPROXY.txlate:1'] },
  {
    group: 'kernel-holds-xt',
    reason: 'xt match cluster, xt target MARK',
    pairs: ['libxt_cluster.txlate:1', 'libxt_cluster.txlate:4', 'libxt_cluster.txlate:7', 'libxt_cluster.txlate:10', 'libxt_cluster.txlate:13', 'libxt_cluster.txlate:16', 'libxt_cluster.txlate:19', 'libxt_cluster.txlate:22', 'libxt_cluster.txlate:25'],
  },
  { group: 'kernel-holds-xt', reason: 'xt match connlabel', pairs: ['libxt_connlabel.txlate:1', 'libxt_connlabel.txlate:4'] },
  { group: 'kernel-holds-xt', reason: 'xt match dccp', pairs: ['libxt_dccp.txlate:10', 'libxt_dccp.txlate:13', 'libxt_dccp.txlate:16'] },
  {
    group: 'translate-wrong',
    reason: '--fragres matches a fragment header whose reserved bits are clear (frag_mt6 fails when any is set, the byte or the two in the offset word); the translation tests for `reserved 1`',
    pairs: ['libip6t_frag.txlate:4'],
  },
  {
    group: 'translate-wrong',
    reason: "`!` before --src-group inverts the source group alone (libxt_devgroup.c sets XT_DEVGROUP_INVERT_SRC); the translation negates the destination group's test too",
    pairs: ['libxt_devgroup.txlate:16'],
  },
  { group: 'kernel-holds-xt', reason: 'xt match hashlimit, xt match conntrack', pairs: ['libxt_hashlimit.txlate:1', 'libxt_hashlimit.txlate:4'] },
  { group: 'kernel-holds-xt', reason: 'xt match policy', pairs: ['libxt_policy.txlate:1', 'libxt_policy.txlate:4'] },
  { group: 'kernel-holds-xt', reason: 'xt match rpfilter', pairs: ['libxt_rpfilter.txlate:1', 'libxt_rpfilter.txlate:4', 'libxt_rpfilter.txlate:7'] },
  { group: 'kernel-holds-xt', reason: 'xt match sctp', pairs: ['libxt_sctp.txlate:46', 'libxt_sctp.txlate:49'] },
  { group: 'kernel-holds-xt', reason: 'xt match socket', pairs: ['libxt_socket.txlate:2', 'libxt_socket.txlate:5', 'libxt_socket.txlate:10', 'libxt_socket.txlate:13', 'libxt_socket.txlate:16'] },
  {
    group: 'kernel-holds-xt',
    reason: 'xt match icmp, xt match time, xt target REJECT',
    pairs: ['libxt_time.txlate:1', 'libxt_time.txlate:4', 'libxt_time.txlate:7', 'libxt_time.txlate:10', 'libxt_time.txlate:13', 'libxt_time.txlate:16', 'libxt_time.txlate:19', 'libxt_time.txlate:22', 'libxt_time.txlate:25'],
  },

  { group: 'iptables-rejects', reason: 'mh without `-p mh`: the kernel refuses the rule (RULE_APPEND: Invalid argument)', pairs: ['libip6t_mh.txlate:10'] },
  { group: 'iptables-rejects', reason: '`info-request` is not an icmp type iptables 1.8.9 knows (Unknown ICMP type)', pairs: ['libipt_icmp.txlate:13'] },
  {
    group: 'iptables-rejects',
    reason: 'ecn without `-p tcp`: the kernel refuses the rule; the translation `tcp flags != ecn` is also wrong, the match is "ECE not set", `tcp flags ! ecn`',
    pairs: ['libxt_ecn.txlate:25'],
  },
  { group: 'iptables-rejects', reason: 'ipcomp without `-p ipcomp`: the kernel refuses the rule', pairs: ['libxt_ipcomp.txlate:1', 'libxt_ipcomp.txlate:4'] },
  { group: 'iptables-rejects', reason: 'sctp without `-p sctp`: the kernel refuses the rule', pairs: ['libxt_sctp.txlate:1'] },
  {
    group: 'iptables-rejects',
    reason:
      'TOS outside the mangle table: the kernel refuses the rule; in mangle it is an xt target TOS, and the translation is lossy: TOS rewrites the whole traffic-class byte with its ECN bits (xt_DSCP.c tos_tg6), `ip6 dscp set` only the six DSCP bits',
    pairs: ['libxt_TOS.txlate:1', 'libxt_TOS.txlate:4', 'libxt_TOS.txlate:7', 'libxt_TOS.txlate:10', 'libxt_TOS.txlate:13', 'libxt_TOS.txlate:16', 'libxt_TOS.txlate:19', 'libxt_TOS.txlate:22', 'libxt_TOS.txlate:25'],
  },

  {
    group: 'translate-wrong',
    reason: 'CONNMARK sets ctmark = (ctmark & ~mask) ^ value (xt_connmark.c); the translation xors first, then masks, which clears the value bits under the mask',
    pairs: ['libxt_CONNMARK.txlate:7'],
  },
  {
    group: 'translate-wrong',
    reason: 'iptables-nft stores the tcp flags before the port, in option order; the translation prints the port first',
    pairs: ['libxt_tcp.txlate:19'],
  },
  {
    group: 'translate-wrong',
    reason: 'iptables-nft stores the protocol before the fragment test; the translation prints the fragment test first',
    pairs: ['libxt_tcp.txlate:22'],
  },

  {
    group: 'translate-wrong',
    reason:
      'for a negated full port range iptables-nft stores only `meta l4proto` (checked with the real tools), so the kernel rule matches every packet of the protocol; the translation prints the never-true test legacy iptables means, and the lowering follows the kernel',
    pairs: ['libxt_tcp.txlate:37', 'libxt_udp.txlate:16'],
  },
  { group: 'kernel-holds-xt', reason: 'xt match ah: `--ahlen` has no lowering (only the SPI does), so it stays the xt match the kernel holds', pairs: ['libip6t_ah.txlate:7'] },
  {
    group: 'kernel-holds-xt',
    reason: 'a negated full range (`! --ahspi 0:4294967295`, `! --espspi …`, `! --mh-type 0:255`) never matches in the kernel (spi_match/type_match with invert); no nft test says "never", so it stays the xt match; the translation drops it and would match every packet of the protocol',
    pairs: ['libip6t_ah.txlate:22', 'libipt_ah.txlate:13', 'libxt_esp.txlate:16', 'libxt_esp.txlate:22', 'libip6t_mh.txlate:13'],
  },


];

describe.runIf(have)('lowering matches iptables-translate', () => {
  const pairs = have ? readPairs() : [];
  // Each pair lowered once: what it prints and what iptables-translate printed, canonicalised.
  const results = new Map(
    pairs.map((pair) => {
      const lowered = lowerCommand(pair);
      const expected = expectedRule(pair);
      const got = lowered ? canonical(lowered, pair.family) : '<no rule>';
      const want = expected ? canonical(expected, pair.family) : '<unparsable>';
      return [pair.where, { pair, got, want }] as const;
    }),
  );
  const classified = DIFFERENCES.flatMap((d) => d.pairs.map((where) => ({ where, group: d.group, reason: d.reason })));
  const differing = new Set(classified.map((c) => c.where));

  it('reads the iptables and ip6tables pairs of the corpus', () => {
    expect(pairs.length).toBeGreaterThan(300);
  });

  it('classifies each pair at most once', () => {
    expect(classified.length).toBe(differing.size);
  });

  it.each(classified.map((c) => [c.where, results.get(c.where)?.pair.command ?? '?', c.group, c.reason, c] as const))(
    'differs: %s `%s` (%s: %s)',
    (where, _command, _group, _reason, c) => {
      const result = results.get(where);
      expect(result, `pair ${where} not in the corpus`).toBeDefined();
      // When this fails the lowering now prints the translated text: remove the entry.
      expect(result!.got, `${where} now matches iptables-translate: drop it from DIFFERENCES (${c.group})`).not.toBe(result!.want);
    },
  );

  it('prints the translated nft text for every other pair', () => {
    const failures = [...results.values()]
      .filter((r) => !differing.has(r.pair.where) && r.got !== r.want)
      .map((r) => `${r.pair.where}: ${r.pair.command}\n    want ${r.want}\n    got  ${r.got}`);
    const counts = Object.keys(GROUP_REASON).map((g) => `${classified.filter((c) => c.group === g).length} ${g}`);
    console.log(`iptables-translate pairs: ${results.size - differing.size - failures.length}/${results.size} lowered to the translated text; ${counts.join(', ')}`);
    if (process.env.TXLATE_VERBOSE) {
      for (const [group, reason] of Object.entries(GROUP_REASON)) {
        console.log(`${group}: ${reason}`);
        for (const c of classified.filter((x) => x.group === group)) console.log(`  ${c.where} ${results.get(c.where)?.pair.command ?? '?'}\n    ${c.reason}`);
      }
    }
    expect(failures, 'pairs that differ from iptables-translate without a reason in DIFFERENCES').toEqual([]);
  });
});
