// The oldest keys of a Map or Set (insertion order), one at a time, for the bounded maps that
// evict their oldest entry. `map.keys().next()` starts a new walk at the table's first slot
// and steps over every entry deleted since V8 last rebuilt the table; a map that evicts its
// oldest entry at each insertion has up to half its table deleted at the front, so each
// eviction cost O(size): 24 µs an eviction at 40,000 entries, 54 µs at 100,000 (a fleet of
// 100,000 leased services over the heartbeat token memory read 68-118 µs of server CPU a
// heartbeat against 11 µs for 1,000). One iterator kept across evictions passes each deleted
// slot once: 0.19-0.31 µs at any of those sizes (docs/decisions/evicting-the-oldest.md).
//
// V8's Map and Set iterators are live: they follow the table when it is rebuilt or cleared,
// skip entries deleted after them and reach entries added after them (ECMA-262 Map.prototype
// .forEach semantics). So every key returned must leave the map (deleted, or deleted and set
// again, which puts it last) before the next call: a key returned and kept would be passed over
// until the walk starts again. And a kept iterator holds the table it walks: after `clear()`
// the old table, with every key and value it held, stays reachable until the walk moves on,
// so an owner clears its map through clear() here, which forgets the walk too (a cache of
// 64 MB cleared and filled again would otherwise hold 128 MB until its next eviction).
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
