// ipsets back as the `ipset save` lines they were read from (fmt prints them after the nft
// listing).

import type { IpSet } from './ipset.js';

/** `create` and `add` lines, one set after the other; empty for none. */
export function formatIpsetSave(ipsets: readonly IpSet[]): string {
  return ipsets
    .flatMap((set) => [
      `create ${set.name} ${set.type}${set.options.length > 0 ? ` ${set.options.join(' ')}` : ''}`,
      ...set.elements.map((e) => `add ${set.name} ${e.text}${e.nomatch ? ' nomatch' : ''}`),
    ])
    .map((line) => `${line}\n`)
    .join('');
}

/** Text as nft comments, under a heading saying what it is: the listing before it stays one
 * `nft -f` can load. */
export function commentedOut(save: string): string {
  if (save === '') return '';
  return `# ipsets (ipset save)\n${save.replace(/^/gm, '# ').replace(/# $/, '')}`;
}
