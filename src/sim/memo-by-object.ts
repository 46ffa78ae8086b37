// What the simulator works out once per object of the model or of the input (a ruleset's hook
// tables, a host's prefix tables, a set's index) and keeps for as long as that object lives.

/** `build`, called once per key and its result kept while the key lives (a WeakMap). */
export function memoByObject<K extends object, V>(build: (key: K) => V): (key: K) => V {
  const known = new WeakMap<K, V>();
  return (key) => {
    let value = known.get(key);
    if (value === undefined) {
      value = build(key);
      known.set(key, value);
    }
    return value;
  };
}
