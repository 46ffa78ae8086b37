/** RFC 5952 text, as inet_ntop prints it (nft prints IPv6 addresses with inet_ntop). */
export function formatIpv6(groups: readonly number[]): string {
  // inet_ntop writes ::ffff:a.b.c.d and ::a.b.c.d (IPv4-mapped / compatible) with a dotted tail.
  const isV4Tail =
    groups.slice(0, 5).every((g) => g === 0) &&
    (groups[5] === 0xffff || (groups[5] === 0 && (groups[6] ?? 0) !== 0));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (isV4Tail) {
    const g6 = groups[6] ?? 0;
    const g7 = groups[7] ?? 0;
    const v4 = `${g6 >> 8}.${g6 & 0xff}.${g7 >> 8}.${g7 & 0xff}`;
    return groups[5] === 0xffff ? `::ffff:${v4}` : `::${v4}`;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}
