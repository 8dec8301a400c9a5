// The near cache's sets: this thread's copy of the index sets it searched (sorted
// Float64Arrays of seqs, on SharedArrayBuffers so the worker pool reads them without a copy),
// loaded from Redis on first use, with the empty ones in a pool of their own, what this
// thread knows of each namespace (the deltas received, its own writes awaited: near-state.ts)
// and the version check (checkVersions). NearCache (near.ts) is these sets with the documents on
// top: it follows the deltas, holds the documents and evicts to the budget, so the hot
// paths (setNow, set) call straight into the part they need.
import { applyTo, EMPTY, EmptySets, held, lostDelta, materialise, sizeOf, type Loader, type NsState, type SetEntry } from './state.js';
import { nextUnused, Oldest } from '../../domain/oldest.js';

export abstract class NearSets {
  protected sets = new Map<string, SetEntry>();
  /** the oldest sets first, for eviction with a second chance for one read since (domain/oldest.ts) */
  private readonly oldestSet = new Oldest(this.sets);
  /** empty sets (filters that match nothing): at most EMPTY_MAX, counting their own bytes */
  protected empty = new EmptySets();
  /** what this thread knows of each namespace, by base */
  protected states = new Map<string, NsState>();
  private loading = new Map<string, Promise<SetEntry | null>>();
  /** bumped by clear(): loads and fetches that began before it keep nothing */
  protected cleared = 0;
  /** bytes of the sets held (the documents count their own) */
  protected setBytes = 0;
  readonly stats = { setHits: 0, setMisses: 0, docHits: 0, docMisses: 0, deltas: 0, resets: 0, stale: 0, emptyHits: 0, wholePages: 0, wholeMisses: 0 };

  /** deltas are flowing: a subscription to them is confirmed (search/invalidation.ts) */
  private live = false;

  constructor(readonly maxBytes: number) {}

  /** times clear() dropped everything (the warmer warms again after one) */
  get clears(): number {
    return this.cleared;
  }

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  /** Whether searches may be answered from here: on, and following deltas. */
  get usable(): boolean {
    return this.live && this.maxBytes > 0;
  }

  /** The delta subscription is gone: answer nothing from here until resume() after clear(). */
  pause(): void {
    this.live = false;
  }

  resume(): void {
    this.live = true;
  }

  protected state(base: string): NsState {
    let s = this.states.get(base);
    if (!s) {
      s = { latest: 0, required: 0, epoch: 0, resets: 0, minLoaded: Number.POSITIVE_INFINITY, log: [], behind: 0 };
      this.states.set(base, s);
    }
    return s;
  }

  /** This thread applied a write that made `base` version `ver`. */
  require(base: string, ver: number): void {
    if (!this.enabled) return;
    const s = this.state(base);
    if (ver > s.required) s.required = ver;
  }

  /** Whether this thread's view of `base` includes its own writes (if not: ask Redis). */
  fresh(base: string): boolean {
    const s = this.states.get(base);
    return !s || s.latest >= s.required;
  }

  epoch(base: string): number {
    return this.states.get(base)?.epoch ?? 0;
  }

  /**
   * The sorted seqs of one set of `base` if this thread holds it now (null: not held; the
   * caller takes set() instead). The same validity test as set()'s hit: a set held is
   * consistent with every delta this thread received (they are applied as they arrive), so
   * reading it synchronously needs nothing more.
   */
  setNow(base: string, suffix: string): Float64Array | null {
    const key = base + suffix;
    const hit = this.sets.get(key);
    if (!hit || hit.resets !== (this.states.get(base)?.resets ?? 0)) return this.emptyNow(base, key);
    this.stats.setHits++;
    // a second chance at eviction (NearCache.evict), not a move to the end: a delete and a set
    // on every hit shrank and regrew the map's table, an allocation a page in the old space
    hit.used = true;
    return materialise(hit);
  }

  /**
   * Count these sets of `base` again (their bytes changed: a bitmap was built for one, or an
   * overlay was merged into its array), and evict to the budget.
   */
  account(base: string, suffixes: readonly string[]): void {
    for (const suffix of suffixes) {
      const e = this.sets.get(base + suffix);
      if (!e) continue;
      const before = e.bytes;
      e.bytes = sizeOf(base + suffix, e);
      this.setBytes += e.bytes - before;
    }
    this.evict();
  }

  /** The empty array when `key` is a held empty set (a hit), else null. */
  private emptyNow(base: string, key: string): Float64Array | null {
    const a = this.empty.get(key, this.states.get(base)?.resets ?? 0);
    if (a) this.stats.emptyHits++;
    return a;
  }

  /**
   * The sorted seqs of one set of `base` (key = base + suffix), from memory or loaded.
   * Null: the namespace is not indexed (the caller lets the Redis path answer).
   */
  async set(base: string, suffix: string, load: Loader): Promise<Float64Array | null> {
    const key = base + suffix;
    const hit = this.sets.get(key);
    if (hit && hit.resets === (this.states.get(base)?.resets ?? 0)) {
      this.stats.setHits++;
      hit.used = true; // (a second chance at eviction: setNow)
      return materialise(hit);
    }
    if (hit) this.dropSet(key, hit);
    else {
      const none = this.emptyNow(base, key);
      if (none) return none;
    }
    this.stats.setMisses++;
    let p = this.loading.get(key);
    if (!p) {
      p = this.load(base, key, suffix, load).finally(() => this.loading.delete(key));
      this.loading.set(key, p);
    }
    const e = await p;
    return e ? materialise(e) : null;
  }

  private async load(base: string, key: string, suffix: string, load: Loader): Promise<SetEntry | null> {
    const resets = this.state(base).resets;
    const cleared = this.cleared;
    const r = await load(suffix);
    if (!r) return null;
    const s = this.state(base);
    const e: SetEntry = { arr: r.members, overlay: new Map(), loadedVer: r.ver, resets: s.resets, bytes: 0, used: false };
    let keep = s.resets === resets && this.cleared === cleared;
    if (s.latest === 0) s.minLoaded = Math.min(s.minLoaded, r.ver);
    else if (r.ver < s.latest) {
      // deltas it misses arrived while it loaded: replay them from the log, if it has them all
      const from = s.log.findIndex((d) => d.ver === r.ver + 1);
      if (from < 0) keep = false;
      else for (const d of s.log.slice(from)) applyTo(e, suffix, d);
    }
    const old = this.sets.get(key);
    if (keep && !e.arr.length && !e.overlay.size) {
      // a filter that matches nothing: no set entry, a key in the pool of empty ones
      if (old) this.dropSet(key, old);
      this.empty.keep(key, e.resets);
      this.evict();
      e.arr = EMPTY;
      return e;
    }
    e.bytes = sizeOf(key, e);
    if (!keep || e.bytes > this.maxBytes) return e; // usable for this search only
    this.empty.drop(key);
    if (old) this.dropSet(key, old);
    this.sets.set(key, e);
    this.setBytes += e.bytes;
    this.evict();
    return e;
  }

  /** Out until within budget, oldest first with a second chance (CLOCK) (NearCache.evict: documents first, then sets, empty sets last). */
  protected abstract evict(): void;

  /** Drop the oldest set not read since the hand last passed it (one read since goes to the end: CLOCK); false when none is held. */
  protected evictOneSet(): boolean {
    const k = nextUnused(this.oldestSet, this.sets);
    if (k === undefined) return false;
    this.dropSet(k, this.sets.get(k)!);
    return true;
  }

  protected dropSet(key: string, e: SetEntry): void {
    if (this.sets.get(key) !== e) return;
    this.sets.delete(key);
    this.setBytes -= e.bytes;
  }

  /**
   * The version check (NEAR_CHECK_MS): a lost delta is found by the next one only, and a lost
   * *final* delta of a namespace (no write follows it) never. So compare the version each
   * namespace's copy is consistent with to Redis's `ver`: a copy found behind at one check and
   * still behind that version at the next (a delta in flight arrives within milliseconds; a
   * check period is far longer) lost a delta, and everything of the namespace is dropped, to
   * reload on next use. Returns the namespaces dropped; `stale` hears each one's base. `read`
   * gets the marker (`Keys.verAt`) of each base (null: not indexed, e.g. a retired generation:
   * nothing to compare).
   */
  async checkVersions(read: (bases: string[]) => Promise<(number | null)[]>, stale?: (base: string) => void): Promise<number> {
    const bases: string[] = [];
    for (const [base, s] of this.states) if (Number.isFinite(held(s))) bases.push(base);
    if (!bases.length) return 0;
    const cleared = this.cleared;
    const got = await read(bases);
    if (this.cleared !== cleared) return 0; // everything was dropped meanwhile
    let dropped = 0;
    for (let i = 0; i < bases.length; i++) {
      const r = got[i];
      const s = this.states.get(bases[i]!);
      if (r === null || r === undefined || !s || !lostDelta(s, r)) continue;
      this.stats.stale++;
      dropped++;
      stale?.(bases[i]!);
    }
    return dropped;
  }

  /** Forget every set and what this thread knows of each namespace (NearCache.clear: the documents too). */
  clear(): void {
    this.cleared++;
    this.oldestSet.clear(); // the map too (domain/oldest.ts)
    this.empty.clear();
    this.states.clear();
    this.setBytes = 0;
  }

  get setCount(): number {
    return this.sets.size;
  }

  /** empty sets held (at most EMPTY_MAX) */
  get emptyCount(): number {
    return this.empty.size;
  }
}
