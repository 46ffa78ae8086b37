import { describe, expect, it } from 'vitest';
import { formatRuleset } from '../../src/model/format-ruleset.js';
import { parseNftJson } from '../../src/parser/json/parse-nft-json.js';
import { corpusFiles, firstDifference, HAVE_CORPUS, readCorpusFile } from './corpus-helpers.js';

// What nft 1.0.6's JSON (src/json.c at v1.0.6) does not carry, so no reader can print it back.
const TYPEOF = 'typeof: set_dtype_json writes the key\'s datatype names only ("typeof ip saddr" reads as "type ipv4_addr"; a typeof integer key such as @ih,32,32 then prints in decimal, not hex)';
const DEVICES = 'chain devices: chain_print_json writes "dev" only from the parse-time device list, which a listing read from the kernel does not have';
const COMMENT = 'table and chain comments: table_print_json and chain_print_json write none';
const AUTO_MERGE = 'auto-merge: set_print_json does not write it';
const DYNAMIC = '`flags dynamic` on a set no rule adds to (or a map) and whose elements prove nothing: set_print_json does not write it';
const ELEMENT_STMTS = 'element statements after the first: set_elem_expr_json writes one ("TODO: only one statement per element"); the rest come from the set\'s declaration, without their counter values';

/** Each listing the JSON cannot reproduce, and why. */
const JSON_LIMITS: Readonly<Record<string, string>> = {
  'cache/dumps/0005_cache_chain_flush.nft': DYNAMIC,
  'cache/dumps/0006_cache_table_flush.nft': DYNAMIC,
  'chains/dumps/0021prio_0.nft': DEVICES,
  'chains/dumps/0042chain_variable_0.nft': DEVICES,
  'chains/dumps/0043chain_ingress_0.nft': DEVICES,
  'chains/dumps/netdev_chain_dormant_autoremove.nft': DEVICES,
  'chains/dumps/netdev_chain_name_based_hook_0.nft': DEVICES,
  'listing/dumps/0015dynamic_0.nft': DYNAMIC,
  'maps/dumps/0012map_concat_0.nft': TYPEOF,
  'maps/dumps/0017_map_variable_0.nft': TYPEOF,
  'maps/dumps/delete_element.nft': TYPEOF,
  'maps/dumps/delete_element_catchall.nft': TYPEOF,
  'maps/dumps/map_catchall_delete_undo.nft': TYPEOF,
  'maps/dumps/nat_addr_port.nft': TYPEOF,
  'maps/dumps/typeof_integer_0.nft': TYPEOF,
  'maps/dumps/typeof_maps_0.nft': TYPEOF,
  'maps/dumps/typeof_maps_add_delete.nft': TYPEOF,
  'maps/dumps/typeof_maps_concat_update_0.nft': `${TYPEOF}; also ${DYNAMIC}`,
  'maps/dumps/typeof_maps_update_0.nft': TYPEOF,
  'maps/dumps/typeof_raw_0.nft': TYPEOF,
  'maps/dumps/vmap_unary.nft': TYPEOF,
  'nft-f/dumps/0025empty_dynset_0.nft': `${DYNAMIC}; also ${ELEMENT_STMTS}`,
  'nft-f/dumps/sample-ruleset.nft': `${AUTO_MERGE}; also ${DYNAMIC}`,
  'optionals/dumps/comments_chain_0.nft': COMMENT,
  'optionals/dumps/comments_table_0.nft': COMMENT,
  'packetpath/dumps/set_match_nomatch_bitmap.nft': TYPEOF,
  'sets/dumps/0038meter_list_0.nft': DYNAMIC,
  'sets/dumps/0048set_counters_0.nft': TYPEOF,
  'sets/dumps/0049set_define_0.nft': AUTO_MERGE,
  'sets/dumps/0052overlap_0.nft': AUTO_MERGE,
  'sets/dumps/0060set_multistmt_0.nft': ELEMENT_STMTS,
  'sets/dumps/0062set_connlimit_0.nft': DYNAMIC,
  'sets/dumps/0069interval_merge_0.nft': AUTO_MERGE,
  'sets/dumps/0070stacked_l2_headers.nft': TYPEOF,
  'sets/dumps/interval_size.nft': TYPEOF,
  'sets/dumps/set_element_timeout_updates.nft': TYPEOF,
  'sets/dumps/typeof_raw_0.nft': TYPEOF,
  'sets/dumps/typeof_sets_1.nft': TYPEOF,
};

// A model read from `nft -j list ruleset` (numbers, no spelling) must print exactly like
// nft 1.0.6's own listing of the same ruleset, except where the JSON lacks what the listing says.
describe.runIf(HAVE_CORPUS)('formatRuleset of nft 1.0.6 JSON listings', () => {
  it('prints every canonical listing byte-identically, except those the JSON cannot say (339 of 377)', () => {
    const files = corpusFiles('canonical-json', '.json');
    const unexplained: string[] = [];
    const differing = new Set<string>();
    for (const [rel, json] of files) {
      const path = rel.replace(/\.json$/, '.nft');
      const expected = readCorpusFile(`canonical/${path}`);
      const actual = formatRuleset(parseNftJson(json, { file: rel }).ruleset);
      if (actual === expected) continue;
      differing.add(path);
      if (!(path in JSON_LIMITS)) unexplained.push(`${path}: ${firstDifference(expected, actual)}`);
    }
    const identical = files.length - differing.size;
    console.log(`JSON → listing: ${identical}/${files.length} identical`);
    expect(files.length).toBe(377);
    expect(unexplained).toEqual([]);
    // A listed file that now prints right must leave the list, so the list stays true.
    expect(Object.keys(JSON_LIMITS).filter((path) => !differing.has(path))).toEqual([]);
    expect(identical).toBeGreaterThanOrEqual(339);
  });
});
