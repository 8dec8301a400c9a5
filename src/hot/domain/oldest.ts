// The oldest keys of a Map or Set (insertion order), one at a time, for the bounded maps that
// evict their oldest entry (docs/decisions/evicting-the-oldest.md). A fresh
// `map.keys().next()` steps over every entry deleted since V8 last rebuilt the table, so in a
// full map each eviction cost O(size); one iterator kept across evictions passes each deleted
// slot once. V8's iterators are live (they follow rebuilds and clears), hence two rules: every
// key returned must leave the map before the next call, and an owner clears its map through
// clear() here, which forgets the walk (a kept walk holds the old table and its contents).
interface Keyed<K> {
  keys(): IterableIterator<K>;
  clear(): void;
}

export class Oldest<K> {
  private walk: IterableIterator<K> | null = null;

  constructor(private readonly of: Keyed<K>) {}

  /** Clear the map (or set) and forget the walk, which would hold the old table (see above). */
  clear(): void {
    this.of.clear();
    this.walk = null;
  }

  /** The oldest key, or undefined when there is none. The caller deletes it (see above). */
  next(): K | undefined {
    let r = this.walk?.next();
    if (r === undefined || r.done === true) {
      // a walk that reached the end stays ended (entries added later are not seen): a new one
      this.walk = this.of.keys();
      r = this.walk.next();
    }
    return r.done === true ? undefined : r.value;
  }
}

/**
 * The oldest entry not used since the hand last passed it (CLOCK's second chance): a used one
 * has its `used` mark cleared and is moved to the end (deleted and added again), and the walk
 * goes on; undefined when none is held. `hand` walks `of`. As for next(), the key returned
 * must leave it before the next call. Of a Set, the entry is the key itself.
 */
export function nextUnused<V extends { used: boolean }>(hand: Oldest<V>, of: Set<V>): V | undefined;
export function nextUnused<K, V extends { used: boolean }>(hand: Oldest<K>, of: Map<K, V>): K | undefined;
export function nextUnused<K, V extends { used: boolean }>(hand: Oldest<K>, of: Map<K, V> | Set<V>): K | undefined {
  for (let k = hand.next(); k !== undefined; k = hand.next()) {
    const e = (of instanceof Map ? of.get(k) : k) as V;
    if (!e.used) return k;
    e.used = false;
    of.delete(k as K & V);
    if (of instanceof Map) of.set(k, e);
    else of.add(e);
  }
  return undefined;
}
