// One helper for the diff's multimaps (a key's values in a list).

/** Appends `value` to the list of `key`, making the list on its first value. */
export function pushToList<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
