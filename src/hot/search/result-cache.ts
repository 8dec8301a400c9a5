// In-process cache of serialised search results, keyed by namespace + route + canonical
// query. Invalidation is by namespace version: every applied write publishes its namespace
// on a Redis channel, every thread (and node) bumps its local version of that namespace,
// and entries made under an older version are dead. Entries also expire after `ttlMs`, the
// bound on staleness should an invalidation message be lost (the subscriber's reconnects
// clear everything, too).
//
// Bounded by the bytes it holds (this thread's share of RESULT_CACHE_MB, a process total):
// each entry's key and strings at their length plus a string header, its body at the
// byteLength of the buffer it keeps alive, and the objects around them at a constant
// measured with bench/overheads.ts (docs/decisions/memory-budgets.md);
// the admission doorkeeper's keys are counted too.
import type { Headers } from '../http/types.js';
import { SingleFlight } from './single-flight.js';
import { Oldest } from '../domain/oldest.js';

export interface CachedResult {
  body: Buffer;
  /** response headers that belong to this result (Link, Deprecation, ...) */
  headers: Headers;
  /** strong ETag of the result (body and headers): answers If-None-Match without the search */
  etag: string;
}

type Entry<V> = V & {
  ns: string;
  version: number;
  expires: number;
  /** when it was stored */
  at: number;
  /** what sizeOf() said when it was stored */
  bytes: number;
};

/**
 * Measured in resident memory (bench/overheads.ts): an entry apart from its key's and
 * strings' characters and its body's buffer: the entry object, the Buffer object and its
 * backing store, the headers array, its slot in the Map, and the heap's slack around them.
 * RSS grew ~1,580 B an entry over 400,000 empty pages (heapUsed: ~980 B), of which ~140 are
 * its strings: rounded up.
 */
export const ENTRY_OVERHEAD = 1536;
/** a doorkeeper key apart from its characters: its Map slot and the heap number beside it */
export const SEEN_OVERHEAD = 64;
/** a string's header (its characters: one byte each, keys and headers are ASCII) */
const STRING_HEADER = 24;
/** A string's bytes on the heap: its characters and its header, rounded up to words. */
export const stringBytes = (s: string) => (STRING_HEADER + s.length + 7) & ~7;

/**
 * Memory a serialised result keeps alive: its body's whole buffer (a slice of a shared pool
 * slab keeps the slab: search.ts stores bodies in buffers of their own), its strings.
 */
export function resultBytes(v: CachedResult): number {
  let n = v.body.buffer.byteLength + stringBytes(v.etag);
  for (const [k, x] of v.headers) n += stringBytes(k) + stringBytes(x);
  return n;
}

/**
 * `b` in a buffer of its own, exactly its size (a slice of a pool slab would keep the slab
 * alive); `copy`: always a copy (`b` is scratch memory that will be reused).
 */
export function ownBuffer(b: Buffer, copy = false): Buffer {
  if (!copy && b.byteOffset === 0 && b.byteLength === b.buffer.byteLength) return b;
  const out = Buffer.allocUnsafeSlow(b.byteLength);
  out.set(b);
  return out;
}

/** V: what an entry holds (a serialised result by default). */
export class ResultCache<V extends object = CachedResult> {
  private entries = new Map<string, Entry<V>>();
  private readonly oldest = new Oldest(this.entries);
  private versions = new Map<string, number>();
  /** bumped by clear(): entries of namespaces never invalidated before die too */
  private epoch = 0;
  hits = 0;
  misses = 0;
  /** misses of one key (and version) share one computation */
  readonly flights = new SingleFlight<V>();
  /** sum of the stored entries' sizes */
  private stored = 0;
  /** keys asked once (admitOnSecond), with when: a doorkeeper, emptied when it reaches maxEntries or 1/16 of maxBytes */
  private seenOnce = new Map<string, number>();
  private seenBytes = 0;
  /**
   * How long an entry stays, lately (ms): a moving average over insertions of the age of
   * the entry each one evicted, or of the TTL when it evicted none. Under churn (a cache
   * full of pages asked for once) it falls far below the TTL.
   */
  lifetimeMs: number;

  /**
   * Bounded both by entries and by bytes (pages of 100 documents weigh ~30 KB each: 10,000
   * of them would be 300 MB a thread); the oldest insertions go first.
   */
  constructor(
    readonly maxEntries: number,
    readonly ttlMs: number,
    readonly maxBytes = Number.POSITIVE_INFINITY,
    readonly sizeOf: (v: V) => number = (v) => resultBytes(v as unknown as CachedResult),
    private readonly clock: () => number = Date.now,
  ) {
    this.lifetimeMs = ttlMs;
  }

  /** bytes held: the entries and the doorkeeper's keys */
  get bytes(): number {
    return this.stored + this.seenBytes;
  }

  private drop(key: string, e: Entry<V>): void {
    this.entries.delete(key);
    this.stored -= e.bytes;
  }

  /** Take the version before reading Redis; store with it (a write in between wins). */
  version(ns: string): number {
    return this.epoch * 1e9 + (this.versions.get(ns) ?? 0);
  }

  /** `countMiss` false: a look-up that is retried under another key when it misses */
  get(key: string, ns: string, countMiss = true): V | null {
    const e = this.entries.get(key);
    if (!e || e.version !== this.version(ns) || e.expires < this.clock()) {
      if (e) this.drop(key, e);
      if (countMiss) this.misses++;
      return null;
    }
    this.hits++;
    return e;
  }

  set(key: string, ns: string, version: number, value: V, ttlMs = this.ttlMs): void {
    if (this.maxEntries === 0 || version !== this.version(ns)) return;
    const bytes = ENTRY_OVERHEAD + stringBytes(key) + this.sizeOf(value);
    if (bytes > this.maxBytes) return; // larger than the whole cache: not worth evicting for
    const old = this.entries.get(key);
    if (old) this.drop(key, old);
    // evict the oldest insertions: cheap, and hot keys are re-inserted on their next miss
    const now = this.clock();
    let age = this.ttlMs;
    while (this.entries.size > 0 && (this.entries.size >= this.maxEntries || this.bytes + bytes > this.maxBytes)) {
      const k = this.oldest.next()!;
      const e = this.entries.get(k)!;
      age = Math.min(age, now - e.at);
      this.drop(k, e);
    }
    this.lifetimeMs += (age - this.lifetimeMs) / 64;
    this.entries.set(key, { ...value, ns, version, expires: now + Math.min(ttlMs, this.ttlMs), at: now, bytes } as Entry<V>);
    this.stored += bytes;
  }

  /**
   * Whether to store a result that only a repeat would use: true on a key's second miss, when
   * it came within an entry's recent lifetime of the first. A page after a cursor is rarely
   * asked twice (a client walks on), so keeping every one costs an eviction, a retained 30 KB
   * buffer and GC per request for nothing; and when pages are asked at random (every cursor
   * of a large set, say) a key's repeats come slower than entries are evicted: storing it
   * would be a copy for an entry gone before its next request.
   */
  admitOnSecond(key: string): boolean {
    const now = this.clock();
    const first = this.seenOnce.get(key);
    if (first !== undefined) {
      this.seenOnce.delete(key);
      this.seenBytes -= SEEN_OVERHEAD + stringBytes(key);
      if (now - first <= this.lifetimeMs) return true;
    }
    const size = SEEN_OVERHEAD + stringBytes(key);
    if (this.seenOnce.size >= this.maxEntries || this.seenBytes + size > this.maxBytes / 16) this.clearSeen();
    this.seenOnce.set(key, now);
    this.seenBytes += size;
    return false;
  }

  invalidate(ns: string): void {
    this.versions.set(ns, (this.versions.get(ns) ?? 0) + 1);
  }

  private clearSeen(): void {
    this.seenOnce.clear();
    this.seenBytes = 0;
  }

  clear(): void {
    this.epoch++;
    this.clearSeen();
    this.oldest.clear(); // the map too (domain/oldest.ts)
    this.stored = 0;
  }

  get size(): number {
    return this.entries.size;
  }
}
