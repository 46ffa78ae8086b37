// Runs the iptables-nft compatibility matrix against the installed tools in one network
// namespace. A row is one native construct in one built-in chain of one iptables table of one
// family. Rows in different tables or families share a round (packRounds): one `nft -f`
// creates their tables, each holding the built-in chain and the native rule, then iptables-nft
// appends a rule after it; then per row `*-save -t TABLE`, `-S CHAIN`, `-L`, `-C` of the
// appended rule and, when the save is readable, restoring that save (the round trip), with the
// ip and ip6 rows of a round run side by side. Tables of different names or families do not see
// each other, so the rows of a round stay independent.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { iptablesNftChain } from '../../../src/model/iptables-nft-chains.js';
import { MATRIX_FAMILIES, type Construct, type MatrixFamily } from './constructs.js';

const IP_TABLES: Readonly<Record<string, readonly string[]>> = {
  raw: ['PREROUTING', 'OUTPUT'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
  security: ['INPUT', 'FORWARD', 'OUTPUT'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
};

/** The built-in tables and chains of each family's tool (iptables/nft.c v1.8.9: xtables_ipv4
 * for ip and ip6, xtables_arp, xtables_bridge without the 1.8.10 broute table). */
export const TABLE_CHAINS: Readonly<Record<MatrixFamily, Readonly<Record<string, readonly string[]>>>> = {
  ip: IP_TABLES,
  ip6: IP_TABLES,
  arp: { filter: ['INPUT', 'OUTPUT'] },
  bridge: { filter: ['INPUT', 'FORWARD', 'OUTPUT'], nat: ['PREROUTING', 'OUTPUT', 'POSTROUTING'] },
};

export interface MatrixRow {
  readonly key: string;
  readonly construct: Construct;
  readonly family: MatrixFamily;
  readonly table: string;
  readonly chain: string;
  readonly rule: string;
}

/** What the real tools did with a row. */
export interface RealResult {
  /** nft's error when it refused the rule. */
  readonly refused?: string;
  readonly saveStatus: number;
  readonly incompatible: boolean;
  readonly tainted: boolean;
  /** The chain's `-A` lines in the save, and its first `Error:` line. */
  readonly lines: readonly string[];
  readonly error?: string;
  readonly listStatus: number;
  readonly showStatus: number;
  readonly checkStatus: number;
  readonly restoreStatus?: number;
  /** The chain's rules as `nft list` prints them before and after the round trip. */
  readonly before: readonly string[];
  readonly after: readonly string[];
  /** `nft -a list table` of the row's table before the round trip: what nftsim lints. */
  readonly listing: string;
}

/** The source of the rule each tool appends after the native one (ebtables: a MAC address). */
export const SOURCE: Readonly<Record<MatrixFamily, string>> = { ip: '192.0.2.250/32', ip6: '2001:db8::250/128', arp: '192.0.2.250', bridge: '02:00:00:00:02:50' };
const TOOL: Readonly<Record<MatrixFamily, string>> = { ip: 'iptables-nft', ip6: 'ip6tables-nft', arp: 'arptables-nft', bridge: 'ebtables-nft' };
// How each tool is asked: arptables-nft-save has no -t (one table); ebtables has no -S (a
// chain's listing is -L CHAIN) and takes the check as --check (ebtables-nft 1.8.9 misparses -C).
const SAVE: Readonly<Record<MatrixFamily, string>> = { ip: 'iptables-nft-save -t', ip6: 'ip6tables-nft-save -t', arp: 'arpsave', bridge: 'ebtables-nft-save -t' };
const SHOW: Readonly<Record<MatrixFamily, string>> = { ip: '-S', ip6: '-S', arp: '-S', bridge: '-L' };
const LIST: Readonly<Record<MatrixFamily, string>> = { ip: '-L -n', ip6: '-L -n', arp: '-L -n', bridge: '-L' };
const CHECK: Readonly<Record<MatrixFamily, string>> = { ip: '-C', ip6: '-C', arp: '-C', bridge: '--check' };

/** The rows of `constructs`, in each family a construct exists in. `full`: in every table it
 * belongs in; `rotate`: in one of them, the table moving on with each construct so that every
 * table and built-in chain gets its share. The chain rotates with the construct too.
 * `oneFamily` (rotate only): a construct written for several families goes to one of them, in
 * turn, which keeps the default run short. */
export function matrixRows(constructs: readonly Construct[], mode: 'full' | 'rotate', oneFamily = false): MatrixRow[] {
  return constructs.flatMap((construct, index) => {
    const rows: MatrixRow[] = [];
    const families = MATRIX_FAMILIES.filter((family) => construct[family] !== undefined);
    for (const [f, family] of MATRIX_FAMILIES.entries()) {
      const rule = construct[family];
      if (rule === undefined) continue;
      if (mode === 'rotate' && oneFamily && families[index % families.length] !== family) continue;
      const placements: MatrixRow[] = [];
      for (const [table, chains] of Object.entries(TABLE_CHAINS[family])) {
        if (construct.tables && !construct.tables.includes(table)) continue;
        const fits = chains.filter((c) => !construct.hooks || construct.hooks.includes(iptablesNftChain(table, c, family)!.hook));
        const chain = fits[(Math.floor(index / 5) + f) % Math.max(fits.length, 1)];
        if (chain === undefined) continue;
        placements.push({ key: `${family} ${table} ${chain} ${construct.id}`, construct, family, table, chain, rule });
      }
      rows.push(...(mode === 'full' ? placements : placements.slice(((index + 2 * f) % placements.length), ((index + 2 * f) % placements.length) + 1)));
    }
    return rows;
  });
}

/** Rows packed into rounds of at most one row per family and table, in order: a round's rows
 * never see each other, and each round costs one `nft -f` and two listings. */
export function packRounds(rows: readonly MatrixRow[]): MatrixRow[][] {
  const rounds: MatrixRow[][] = [];
  for (const row of rows) {
    const round = rounds.find((r) => !r.some((other) => other.family === row.family && other.table === row.table));
    if (round) round.push(row);
    else rounds.push([row]);
  }
  return rounds;
}

/** The table of a row as nft creates it: the built-in chain exactly as iptables-nft would. */
export function tableScript(row: Pick<MatrixRow, 'family' | 'table' | 'chain' | 'rule' | 'construct'>): string {
  const spec = iptablesNftChain(row.table, row.chain, row.family)!;
  const decl = row.construct.decl?.[row.family] ?? '';
  return (
    `table ${row.family} ${row.table} {\n${decl}\n\tchain ${row.chain} { type ${spec.type} hook ${spec.hook} priority ${spec.priority}; policy accept; }\n}\n` +
    `add rule ${row.family} ${row.table} ${row.chain} ${row.rule}\n`
  );
}

const SLOT = `
arpsave() { arptables-nft-save; }
slot() { id=$1; tool=$2; t=$3; c=$4; src=$5; save=$6; show=$7; check=$8; list=$9
  eval "refused=\\$R_$id"; [ -n "$refused" ] && return
  $save $t >$D/s.$id 2>$D/se.$id; rc=$?
  echo "@@save $id $rc $(grep -c 'is incompatible' $D/s.$id) $(grep -c 'incompatible base-chains' $D/s.$id)"
  grep -E -- "^-A $c( |$)" $D/s.$id | sed "s/^/@@line $id /"
  grep -m1 '^Error' $D/se.$id | sed "s/^/@@err $id /"
  $tool -t $t $show $c >/dev/null 2>&1; echo "@@S $id $?"
  $tool -t $t $list >/dev/null 2>&1; echo "@@L $id $?"
  $tool -t $t $check $c -s $src -j ACCEPT >/dev/null 2>&1; echo "@@C $id $?"
  if [ $rc = 0 ] && grep -q "^[*]$t" $D/s.$id; then $tool-restore <$D/s.$id >/dev/null 2>&1; echo "@@restore $id $?"; fi
}
`;

/** Runs `rounds` in namespace `ns` and returns each row's result by key. */
export function runMatrix(ns: string, rounds: readonly (readonly MatrixRow[])[]): Map<string, RealResult> {
  const dir = mkdtempSync(join(tmpdir(), 'h6-matrix-'));
  try {
    const script: string[] = [`D=${dir}`, SLOT];
    rounds.forEach((rows, r) => {
      if (rows.length === 0) return;
      const ids = rows.map((_, i) => `r${r}_${i}`);
      rows.forEach((row, i) => writeFileSync(join(dir, `${ids[i]}.nft`), tableScript(row)));
      writeFileSync(join(dir, `r${r}.nft`), 'flush ruleset\n' + rows.map(tableScript).join(''));
      script.push(`echo "@@round ${r}"`);
      // One transaction for the round; when nft refuses it, each row alone tells which.
      script.push(
        `if ! nft -f $D/r${r}.nft 2>/dev/null; then nft flush ruleset; ` +
          ids.map((id) => `if ! nft -f $D/${id}.nft 2>$D/e.${id}; then R_${id}=1; echo "@@refused ${id} $(grep -m1 Error $D/e.${id})"; fi; `).join('') +
          'fi',
      );
      // iptables and ip6tables append through one restore each; arptables and ebtables per row.
      for (const family of MATRIX_FAMILIES) {
        const mine = rows.flatMap((row, i) => (row.family === family ? [{ row, id: ids[i]! }] : []));
        if (mine.length === 0) continue;
        if (family === 'ip' || family === 'ip6') {
          const appends = mine.map(({ row, id }) => `[ -z "$R_${id}" ] && printf '*${row.table}\\n-A ${row.chain} -s ${SOURCE[family]} -j ACCEPT\\nCOMMIT\\n'; `).join('');
          script.push(`{ ${appends}true; } | ${TOOL[family]}-restore --noflush || echo "@@append-failed ${r} ${family}"`);
        } else {
          for (const { row, id } of mine) script.push(`[ -z "$R_${id}" ] && { ${TOOL[family]} -t ${row.table} -A ${row.chain} -s ${SOURCE[family]} -j ACCEPT || echo "@@append-failed ${r} ${family}"; }`);
        }
      }
      script.push(`echo "@@listing ${r}"; nft -a list ruleset; echo "@@end"`);
      for (const family of MATRIX_FAMILIES) {
        const calls = rows
          .map((row, i) => (row.family === family ? `slot ${ids[i]} ${TOOL[family]} ${row.table} ${row.chain} ${SOURCE[family]} '${SAVE[family]}' '${SHOW[family]}' ${CHECK[family]} '${LIST[family]}'; ` : ''))
          .join('');
        script.push(`( ${calls}true ) >$D/o.${family} &`);
      }
      script.push(`wait; cat ${MATRIX_FAMILIES.map((f) => `$D/o.${f}`).join(' ')}; rm -f $D/o.*`);
      script.push(`echo "@@after ${r}"; nft list ruleset; echo "@@end"`);
    });
    const run = spawnSync('ip', ['netns', 'exec', ns, 'bash', '-s'], { input: script.join('\n'), encoding: 'utf8', maxBuffer: 1 << 28 });
    if (run.status !== 0) throw new Error(`matrix script failed (${run.status}): ${run.stderr}`);
    return collectResults(run.stdout, rounds);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Partial {
  refused?: string;
  save?: [number, boolean, boolean];
  lines: string[];
  error?: string;
  S?: number;
  L?: number;
  C?: number;
  restore?: number;
}

function collectResults(stdout: string, rounds: readonly (readonly MatrixRow[])[]): Map<string, RealResult> {
  const partial = new Map<string, Partial>();
  const get = (id: string): Partial => {
    let p = partial.get(id);
    if (p === undefined) partial.set(id, (p = { lines: [] }));
    return p;
  };
  const listings = new Map<string, string>();
  let block: { name: string; lines: string[] } | undefined;
  for (const line of stdout.split('\n')) {
    if (block) {
      if (line === '@@end') {
        listings.set(block.name, block.lines.join('\n'));
        block = undefined;
      } else block.lines.push(line);
      continue;
    }
    const m = /^@@(\S+) (\S+) ?(.*)$/.exec(line);
    if (!m) continue;
    const [, tag, id, rest] = m as unknown as [string, string, string, string];
    switch (tag) {
      case 'listing':
      case 'after':
        block = { name: `${tag} ${id}`, lines: [] };
        break;
      case 'refused':
        get(id).refused = rest;
        break;
      case 'save': {
        const [rc, inc, taint] = rest.split(' ').map(Number);
        get(id).save = [rc!, inc! > 0, taint! > 0];
        break;
      }
      case 'line':
        get(id).lines.push(rest);
        break;
      case 'err':
        get(id).error = rest;
        break;
      case 'S':
      case 'L':
      case 'C':
        get(id)[tag] = Number(rest);
        break;
      case 'restore':
        get(id).restore = Number(rest);
        break;
      default:
        break;
    }
  }
  const results = new Map<string, RealResult>();
  rounds.forEach((rows, r) =>
    rows.forEach((row, i) => {
      const p = get(`r${r}_${i}`);
      const before = listings.get(`listing ${r}`) ?? '';
      const after = listings.get(`after ${r}`) ?? '';
      results.set(row.key, {
        ...(p.refused !== undefined && { refused: p.refused }),
        saveStatus: p.save?.[0] ?? -1,
        incompatible: p.save?.[1] ?? false,
        tainted: p.save?.[2] ?? false,
        lines: p.lines,
        ...(p.error !== undefined && { error: p.error }),
        showStatus: p.S ?? -1,
        listStatus: p.L ?? -1,
        checkStatus: p.C ?? -1,
        ...(p.restore !== undefined && { restoreStatus: p.restore }),
        before: chainRules(before, row.family, row.table, row.chain),
        after: chainRules(after, row.family, row.table, row.chain),
        listing: tableBlock(before, row.family, row.table),
      });
    }),
  );
  return results;
}

/** `table F T { … }` out of an `nft list ruleset` listing. */
export function tableBlock(listing: string, family: string, table: string): string {
  const start = listing.indexOf(`table ${family} ${table} {`);
  if (start < 0) return '';
  const end = listing.indexOf('\n}', start);
  return listing.slice(start, end < 0 ? undefined : end + 2) + '\n';
}

/** The rules of one chain in a listing, without handles. */
export function chainRules(listing: string, family: string, table: string, chain: string): string[] {
  const block = tableBlock(listing, family, table);
  const start = block.indexOf(`\tchain ${chain} {`);
  if (start < 0) return [];
  const end = block.indexOf('\n\t}', start);
  return block
    .slice(start, end)
    .split('\n')
    .slice(1)
    .map((l) => l.trim().replace(/\s*# handle \d+$/, ''))
    .filter((l) => l !== '' && !l.startsWith('type '));
}

/** A table variation: base chains nft creates in an iptables table (`body` is the table's
 * content), and the chain `iptables -A` then appends to. */
export interface ChainVariant {
  readonly id: string;
  readonly table: string;
  readonly body: string;
  readonly append: string;
}

export interface ChainResult {
  readonly saveStatus: number;
  readonly incompatible: boolean;
  readonly tainted: boolean;
  readonly appendStatus: number;
  readonly listing: string;
}

/** Each variant alone, per family: `*-save -t TABLE` and `-A CHAIN` after nft created it. */
export function runChainVariants(ns: string, variants: readonly ChainVariant[]): Map<string, ChainResult> {
  const script: string[] = [];
  const keys: string[] = [];
  for (const family of ['ip', 'ip6'] as const) {
    for (const v of variants) {
      const key = `${family} ${v.table} ${v.id}`;
      keys.push(key);
      const tool = TOOL[family];
      script.push(
        `nft flush ruleset; nft -f - <<'EOF'\ntable ${family} ${v.table} {\n${v.body}\n}\nEOF`,
        `echo "@@listing ${keys.length - 1}"; nft -a list ruleset; echo "@@end"`,
        `s=$(${tool}-save -t ${v.table} 2>/dev/null); rc=$?; echo "@@save ${keys.length - 1} $rc $(echo "$s" | grep -c 'is incompatible') $(echo "$s" | grep -c 'incompatible base-chains')"`,
        `${tool} -t ${v.table} -A ${v.append} -s ${SOURCE[family]} -j ACCEPT >/dev/null 2>&1; echo "@@append ${keys.length - 1} $?"`,
      );
    }
  }
  const run = spawnSync('ip', ['netns', 'exec', ns, 'bash', '-s'], { input: script.join('\n'), encoding: 'utf8', maxBuffer: 1 << 26 });
  if (run.status !== 0) throw new Error(`chain variants failed (${run.status}): ${run.stderr}`);
  const listings = new Map<string, string[]>();
  const fields = new Map<string, string[]>();
  let block: string[] | undefined;
  for (const line of run.stdout.split('\n')) {
    if (block) {
      if (line === '@@end') block = undefined;
      else block.push(line);
      continue;
    }
    const m = /^@@(\S+) (\d+) ?(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === 'listing') listings.set(m[2]!, (block = []));
    else fields.set(`${m[1]} ${m[2]}`, m[3]!.split(' '));
  }
  return new Map(
    keys.map((key, i) => {
      const save = fields.get(`save ${i}`) ?? ['-1', '0', '0'];
      return [
        key,
        {
          saveStatus: Number(save[0]),
          incompatible: Number(save[1]) > 0,
          tainted: Number(save[2]) > 0,
          appendStatus: Number(fields.get(`append ${i}`)?.[0] ?? -1),
          listing: (listings.get(String(i)) ?? []).join('\n'),
        },
      ];
    }),
  );
}

/** Rules iptables-nft writes itself (`-A` arguments by table): nft prints some exactly like the
 * native forms the rule flags. */
export const IPTABLES_WRITTEN: readonly (readonly [table: string, args: string])[] = [
  ['filter', '-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT'],
  ['filter', '-A FORWARD -m mark --mark 0x4000/0x4000 -j ACCEPT'],
  ['filter', '-A INPUT -m addrtype --dst-type LOCAL -j ACCEPT'],
  ['filter', '-A INPUT -m comment --comment "kubernetes health" -j ACCEPT'],
  ['filter', '-A INPUT -p tcp -m multiport --dports 22,80 -j ACCEPT'],
  ['filter', '-A INPUT -p tcp -j REJECT --reject-with tcp-reset'],
  ['mangle', '-A PREROUTING -j MARK --set-xmark 0x4000/0x4000'],
  ['nat', '-A POSTROUTING -m mark --mark 0x4000/0x4000 -j MASQUERADE'],
  ['nat', '-A PREROUTING -m addrtype --dst-type LOCAL -j ACCEPT'],
];

export interface WrittenResult {
  /** `nft list ruleset`, `nft -j list ruleset`, and the iptables-nft-save dump per family. */
  readonly listing: string;
  readonly json: string;
  readonly saves: Readonly<Record<'ip' | 'ip6', string>>;
  readonly saveStatus: Readonly<Record<'ip' | 'ip6', number>>;
}

/** IPTABLES_WRITTEN added with iptables-nft and ip6tables-nft (REJECT and addrtype take the
 * family's own options), then listed by nft and saved by iptables-nft. */
export function runIptablesWritten(ns: string): WrittenResult {
  const adds = (['ip', 'ip6'] as const).flatMap((family) =>
    IPTABLES_WRITTEN.map(([table, args]) => `${TOOL[family]} -t ${table} ${args} || echo "@@add-failed ${family} ${table} ${args}" >&2`),
  );
  const script = [
    'nft flush ruleset',
    ...adds,
    'echo "@@listing"; nft list ruleset 2>/dev/null; echo "@@end"',
    'echo "@@json"; nft -j list ruleset 2>/dev/null; echo; echo "@@end"',
    'echo "@@save-ip"; iptables-nft-save; r=$?; echo "@@end"; echo "@@rc-ip $r"',
    'echo "@@save-ip6"; ip6tables-nft-save; r=$?; echo "@@end"; echo "@@rc-ip6 $r"',
  ];
  const run = spawnSync('ip', ['netns', 'exec', ns, 'bash', '-s'], { input: script.join('\n'), encoding: 'utf8' });
  if (run.status !== 0 || run.stderr.includes('@@add-failed')) throw new Error(`iptables-written rules failed: ${run.stderr}`);
  const blocks = new Map<string, string>();
  const re = /^@@(\S+)\n([\s\S]*?)^@@end$/gm;
  for (const m of run.stdout.matchAll(re)) blocks.set(m[1]!, m[2]!);
  const rc = (family: 'ip' | 'ip6') => Number(new RegExp(`^@@rc-${family} (\\d+)$`, 'm').exec(run.stdout)?.[1] ?? -1);
  return {
    listing: blocks.get('listing') ?? '',
    json: blocks.get('json') ?? '',
    saves: { ip: blocks.get('save-ip') ?? '', ip6: blocks.get('save-ip6') ?? '' },
    saveStatus: { ip: rc('ip'), ip6: rc('ip6') },
  };
}
