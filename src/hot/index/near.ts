// The near cache: this thread's copy of the index sets it searched (sorted Float64Arrays of
// seqs, on SharedArrayBuffers so the worker pool reads them without a copy) and of the
// pre-serialised documents it served (bytes), loaded from Redis on first use and kept
// current key by key: every applied write publishes its delta (apply-service-1.lua: the
// namespace version after it, the service's old seq and set memberships, its new ones),
// and only the sets named there change, only the documents of those seqs are dropped.
//
// Consistency (docs/decisions.md, "Near cache"):
// - A set is loaded atomically with the namespace version `v` it matches (near-load-2.lua)
//   and then follows every delta newer than `v`, in order (deltas are published inside
//   the script that applies the write, so they arrive in the order Redis applied them).
//   A delta that skips a version (a lost message) drops the set: it reloads on next use.
//   Deltas that arrived while the set was loading are replayed from a short log.
// - Documents fetched while a delta of their namespace arrived are not kept (the fetch may
//   have read the state before it); a delta drops the documents of the seqs it names.
// - Read-your-writes on the writing thread: the projector reports the version its write
//   produced (require()); until this thread has received that delta, searches of the
//   namespace go to Redis as before.
// - Bounded by bytes (this thread's share of NEAR_CACHE_MB, a process total), least recently
//   used out, sets and documents alike (documents in chunks of consecutive seqs: near-docs.ts).
//   The bytes are what is allocated: each array's buffer at its byteLength, the key string,
//   and the objects around them at constants measured with bench/overheads.ts
//   (docs/decisions.md, "Memory budgets that hold in resident memory").
// - A set that is empty (a filter value that matches nothing: any string a client makes up)
//   costs no set entry: it is kept in a pool of its own, at most EMPTY_MAX keys, counted in
//   the budget, so a flood of distinct unknown values churns that pool and nothing else.

import { digested, type Doc } from '../domain/digest.js';
import { NearDocs, type Incoming } from './near-docs.js';
import { applyTo, EMPTY, EmptySets, held, LOG_MAX, lostDelta, materialise, parseDelta, sizeOf, type Loader, type NsState, type SetEntry } from './near-state.js';

export type { Doc } from '../domain/digest.js';
export { EMPTY_MAX, EMPTY_OVERHEAD, keyBytes, newSeqArray, SET_OVERHEAD, STRING_HEADER } from './near-state.js';

export class NearCache {
  private sets = new Map<string, SetEntry>();
  /** empty sets (filters that match nothing): at most EMPTY_MAX, counting their own bytes */
  private empty = new EmptySets();
  /** documents, in chunks of consecutive seqs per namespace (near-docs.ts) */
  private docs = new NearDocs();
  /** small integer per namespace base (the documents' namespace key); forgotten with everything in clear() */
  private baseIds = new Map<string, number>();
  /** what this thread knows of each namespace, by base */
  private states = new Map<string, NsState>();
  private loading = new Map<string, Promise<SetEntry | null>>();
  /** bumped by clear(): loads and fetches that began before it keep nothing */
  private cleared = 0;
  /** bytes of the sets held (the documents count their own) */
  private setBytes = 0;
  readonly stats = { setHits: 0, setMisses: 0, docHits: 0, docMisses: 0, deltas: 0, resets: 0, stale: 0, emptyHits: 0 };

  /** deltas are flowing: a subscription to them is confirmed (cache/invalidation.ts) */
  private live = false;

  constructor(readonly maxBytes: number) {}

  /** bytes held, sets (empty ones too) and documents */
  get bytes(): number {
    return this.setBytes + this.empty.bytes + this.docs.bytes;
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

  private state(base: string): NsState {
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

  /** A delta message: a write's "delta\t<base>\t<ver>\t<oldSeq>\t<oldMem>\t<newSeq>\t<newMem>", or an expiry page's "deltas\t…" (near-state.ts parseDelta). */
  onDelta(msg: string): void {
    if (!this.enabled) return;
    const parsed = parseDelta(msg);
    if (!parsed) return;
    const { base, delta: d } = parsed;
    this.stats.deltas++;
    const s = this.state(base);
    if (d.ver <= s.latest) return; // (a duplicate: never expected)
    // a version skipped means a message was lost: nothing of the namespace can be trusted;
    // before the first delta, only sets loaded at versions older than its predecessor can
    // have missed one
    if (s.latest > 0 ? d.ver !== s.latest + 1 : s.minLoaded < d.ver - 1) {
      this.stats.resets++;
      s.resets++;
      s.log = [];
    }
    s.latest = d.ver;
    s.epoch++;
    s.log.push(d);
    if (s.log.length > LOG_MAX) s.log.splice(0, s.log.length - LOG_MAX / 2);
    if (d.oldSeq !== null) this.docs.drop(this.baseId(base), d.oldSeq);
    if (d.newSeq !== null) this.docs.drop(this.baseId(base), d.newSeq);
    if (d.seqs) for (const seq of d.seqs) this.docs.drop(this.baseId(base), seq);
    for (const suffix of new Set([...d.oldMembers, ...d.newMembers])) {
      const key = base + suffix;
      if (this.empty.size) this.empty.drop(key); // it may not be empty now: reloaded on next use
      const e = this.sets.get(key);
      if (!e) continue;
      if (e.resets !== s.resets) this.dropSet(key, e);
      else if (d.ver > e.loadedVer) {
        const before = e.bytes;
        applyTo(e, suffix, d);
        e.bytes = sizeOf(key, e);
        this.setBytes += e.bytes - before;
      }
    }
    this.evict();
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
    this.sets.delete(key); // least recently used goes first: re-insert at the end
    this.sets.set(key, hit);
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
      this.sets.delete(key); // least recently used goes first: re-insert at the end
      this.sets.set(key, hit);
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
    const e: SetEntry = { arr: r.members, overlay: new Map(), loadedVer: r.ver, resets: s.resets, bytes: 0 };
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

  /**
   * Documents of `seqs` (ascending) in that order (null: the namespace no longer has it).
   * Misses are fetched in one call and kept unless a delta of the namespace arrived meanwhile.
   */
  async documents(base: string, seqs: Float64Array, fetch: (seqs: number[]) => Promise<(Buffer | null)[]>): Promise<(Doc | null)[]> {
    const resets = this.states.get(base)?.resets ?? 0;
    const id = this.baseId(base);
    const out: (Doc | null)[] = new Array<Doc | null>(seqs.length).fill(null);
    const missing: number[] = [];
    const at: number[] = [];
    for (let i = 0; i < seqs.length; i++) {
      const d = this.docs.get(id, resets, seqs[i]!);
      if (d) out[i] = d;
      else {
        missing.push(seqs[i]!);
        at.push(i);
      }
    }
    this.stats.docHits += seqs.length - missing.length;
    this.stats.docMisses += missing.length;
    if (!missing.length) return out;
    const { docs } = await this.fetchDocs(base, resets, missing, fetch);
    for (let k = 0; k < missing.length; k++) out[at[k]!] = docs[k] ?? null;
    return out;
  }

  /**
   * Fetch the documents of `missing` (ascending) in one call and digest them; keep the ones
   * there are (null: gone from the namespace) unless a delta of the namespace, a reset or a
   * clear() arrived during the fetch (the fetch may have read the state before it).
   */
  private async fetchDocs(base: string, resets: number, missing: number[], fetch: (seqs: number[]) => Promise<(Buffer | null)[]>): Promise<{ docs: (Doc | null)[]; kept: boolean }> {
    const epoch = this.epoch(base);
    const cleared = this.cleared;
    const got = await fetch(missing);
    const kept = this.epoch(base) === epoch && (this.states.get(base)?.resets ?? 0) === resets && this.cleared === cleared;
    const docs = missing.map((_, k) => {
      const d = got[k];
      return d ? digested(d) : null;
    });
    if (kept) {
      const incoming: Incoming[] = [];
      for (let k = 0; k < missing.length; k++) {
        const doc = docs[k];
        if (doc) incoming.push({ seq: missing[k]!, doc });
      }
      if (incoming.length) {
        this.docs.insert(this.baseId(base), resets, incoming, this.maxBytes);
        this.evict();
      }
    }
    return { docs, kept };
  }

  /**
   * Make every document of `seqs` held: the missing ones fetched in one call and kept. True
   * when all are held now; false when one could not be (gone from the namespace: the others
   * are kept; or a delta arrived during the fetch: nothing fetched is kept). No document
   * object is made for the ones already held (the async page then joins with joinNow(), as
   * the sync one does).
   */
  async fill(base: string, seqs: Float64Array, fetch: (seqs: number[]) => Promise<(Buffer | null)[]>): Promise<boolean> {
    const resets = this.states.get(base)?.resets ?? 0;
    const id = this.baseId(base);
    const missing: number[] = [];
    for (let i = 0; i < seqs.length; i++) if (!this.docs.has(id, resets, seqs[i]!)) missing.push(seqs[i]!);
    this.stats.docHits += seqs.length - missing.length;
    this.stats.docMisses += missing.length;
    if (!missing.length) return true;
    const { docs, kept } = await this.fetchDocs(base, resets, missing, fetch);
    return kept && docs.every((d) => d !== null);
  }

  /**
   * The page of `seqs` (ascending) as its JSON array and its documents' digests (16 bytes
   * each, page order), if this thread holds every document now; null when one is missing:
   * the caller takes documents() instead. Documents held are dropped by the delta of any
   * write to their seq, so a document held is the one the sets held agree with. Both are
   * views of scratch memory, valid until the next call. `count`: as hits (false after
   * fill(), which counted them).
   */
  joinNow(base: string, seqs: Float64Array, count = true): { body: Buffer; digests: Buffer } | null {
    const page = this.docs.join(this.baseId(base), this.states.get(base)?.resets ?? 0, seqs);
    if (page && count) this.stats.docHits += seqs.length;
    return page;
  }

  private baseId(base: string): number {
    let id = this.baseIds.get(base);
    if (id === undefined) {
      if (this.baseIds.size >= 2 ** 20) this.clear(); // (a bound on the map; never expected)
      this.baseIds.set(base, (id = this.baseIds.size));
    }
    return id;
  }

  private dropSet(key: string, e: SetEntry): void {
    if (this.sets.get(key) !== e) return;
    this.sets.delete(key);
    this.setBytes -= e.bytes;
  }

  /** Least recently used out until within budget: documents first (cheap to refetch, many), empty sets last. */
  private evict(): void {
    while (this.bytes > this.maxBytes && this.docs.evictOne());
    while (this.bytes > this.maxBytes && this.sets.size) {
      const [k, e] = this.sets.entries().next().value!;
      this.dropSet(k, e);
    }
    while (this.bytes > this.maxBytes && this.empty.dropOldest());
  }

  /**
   * The version check (NEAR_CHECK_MS): a lost delta is found by the next one only, and a lost
   * *final* delta of a namespace (no write follows it) never. So compare the version each
   * namespace's copy is consistent with to Redis's `ver`: a copy found behind at one check and
   * still behind that version at the next (a delta in flight arrives within milliseconds; a
   * check period is far longer) lost a delta, and everything of the namespace is dropped, to
   * reload on next use. Returns the namespaces dropped. `read` gets the marker (`Keys.verAt`) of each base
   * (null: not indexed, e.g. a retired generation: nothing to compare).
   */
  async checkVersions(read: (bases: string[]) => Promise<(number | null)[]>): Promise<number> {
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
    }
    return dropped;
  }

  /** Forget everything (a generation switch, a lost subscription). */
  clear(): void {
    this.cleared++;
    this.sets.clear();
    this.empty.clear();
    this.docs.clear();
    this.baseIds.clear();
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

  get docCount(): number {
    return this.docs.count;
  }
}
