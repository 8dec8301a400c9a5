// The Redis index: which generation is live, and the read operations of the hot path.
// Reads return pre-serialised documents; nothing here parses one (the device query, which
// expands profiles into bindings, does so in routes/search.ts).
import { ApiError } from '../domain/errors.js';
import type { DimensionFilters } from '../domain/dimensions.js';
import { filterSuffixes, Keys, PRODUCTION } from '../domain/keys.js';
import { isRedisUnavailable } from '../ops/outage.js';
import type { RedisClient } from '../redis/client.js';
import type { IntersectPool } from '../../workers/pool.js';
import { bitmapWords, intersectDense } from '../../workers/intersect.js';
import { decodeBuckets } from '../../workers/buckets.js';
import { newSeqArray, type NearCache } from './near.js';
import { digestBytes, digested, type Doc } from '../domain/digest.js';
import { nearLoadReply, NOT_INDEXED, replacementsReply, searchPage, serviceReply, type ReplacementsReply, type SearchPage, type ServiceRow } from '../redis/replies.js';

/** a page for the worker pool to compute */
type PoolTask = Parameters<IntersectPool['run']>[0];

/** The dimension fields of Filters (domain/dimensions.ts). */
export type FilterSets = DimensionFilters;

export interface Page {
  seqs: string[];
  docs: string[];
  more: boolean;
  /** seq to continue after, "" when none */
  last: string;
}

/** One page of a search as the bytes of its JSON array, and its documents' digests (pageEtag). */
export interface PageBody {
  body: Buffer;
  more: boolean;
  /** seq to continue after, "" when none */
  last: string;
  /** the documents' digests in page order, 16 bytes each (domain/digest.ts) */
  digests: Uint8Array;
}

export function notIndexed(): ApiError {
  return new ApiError('INDEX_REBUILDING', [], { 'Retry-After': '2' });
}

/**
 * Create a sandbox's namespace marker in the live generation `gen` unless it has one. The
 * production marker is checked before and after the SET: a FLUSHALL between reading
 * reg:gen and the SET would otherwise resurrect a marker in a dead generation, and a reader
 * still holding that generation would serve the namespace empty. Production's marker is
 * only ever made by a rebuild.
 */
export async function markNamespace(redis: RedisClient, keys: Keys, ns: string, gen: string): Promise<boolean> {
  if (ns === PRODUCTION || !(await redis.exists(keys.ver(PRODUCTION, gen)))) return false;
  const created = (await redis.set(keys.ver(ns, gen), '1', 'NX')) === 'OK';
  if (created && !(await redis.exists(keys.ver(PRODUCTION, gen)))) {
    await redis.del(keys.ver(ns, gen));
    return false;
  }
  return true;
}

/** An entry of the shared public replacements cache, and whether this call hit it. */
export type Replacements = ReplacementsReply;

export class Index {
  /**
   * The live generation; null until known (or after Redis lost it). One writer:
   * refreshGen(), which reads it from Redis (`reg:gen`, set by the rebuild that built it).
   * The readiness watcher, this thread's rebuild and a rebuild announced over pub/sub
   * (compose.ts) all ask for a refresh rather than set it.
   */
  private live: string | null = null;
  private turn = 0;

  constructor(
    readonly redis: RedisClient,
    readonly keys: Keys,
    /** heavy intersections go to this pool (null: always intersect in Redis) */
    readonly intersectPool: IntersectPool | null = null,
    /** smallest-set size above which an intersection is heavy (measured: docs/decisions.md) */
    readonly heavyThreshold = 0,
    /** read-only replicas for pure reads (REDIS_REPLICA_URLS); empty: the primary serves all */
    readonly replicas: RedisClient[] = [],
    /** this thread's near cache of sets and documents (null: every search asks Redis) */
    readonly near: NearCache | null = null,
    /**
     * Whether the near cache may answer: false while readiness says the index or its
     * backends are unusable, so that an outage answers 503 as before (docs/decisions.md)
     * rather than pages that cannot include the writes acknowledged meanwhile
     */
    readonly serving: () => boolean = () => true,
  ) {}

  /**
   * Run a read-only script call on the next replica in turn, or on the primary when there
   * is none. A replica that cannot answer, or that lacks the namespace (-1: it has not
   * replicated a fresh generation or marker yet), hands the call to the primary: a replica
   * only ever adds capacity, never an outage or a 503 of its own.
   */
  private async read<T>(call: (r: RedisClient) => Promise<T>): Promise<T> {
    if (!this.replicas.length) return call(this.redis);
    const r = this.replicas[this.turn++ % this.replicas.length]!;
    try {
      const v = await call(r);
      if (v !== NOT_INDEXED) return v;
    } catch (e) {
      if (!isRedisUnavailable(e)) throw e;
    }
    return call(this.redis);
  }

  get gen(): string | null {
    return this.live;
  }

  /** Re-read the live generation; returns it (null when the index is missing). */
  async refreshGen(): Promise<string | null> {
    this.live = await this.redis.get(this.keys.gen());
    return this.live;
  }

  private liveGen(): string {
    if (!this.gen) throw notIndexed();
    return this.gen;
  }

  filterKeys(ns: string, gen: string, f: FilterSets): string[] {
    const base = this.keys.base(ns, gen);
    return filterSuffixes(f).map((s) => base + s);
  }

  /**
   * One page from this thread's near cache: the sets from memory (loaded on first use),
   * intersected from the cursor, smallest first, stopping at limit + 1; the documents from
   * memory (fetched on a miss). Null when the near cache cannot be sure of the answer (off,
   * this thread's own write not received yet, a write arrived during the page, the
   * namespace not indexed): the Redis path answers then, as before.
   */
  private async nearPage(ns: string, f: FilterSets, after: string, limit: number, signal?: AbortSignal, joined = false): Promise<{ seqs: Float64Array; docs: Doc[]; more: boolean; body?: Buffer; digests?: Uint8Array } | null> {
    const near = this.near;
    const gen = this.gen;
    if (!near?.usable || !gen || !this.serving()) return null;
    const k = this.keys;
    const base = k.base(ns, gen);
    if (!near.fresh(base)) return null;
    const verKey = k.ver(ns, gen);
    const suffixes = filterSuffixes(f);
    const arrays = await Promise.all(
      suffixes.map((suffix) =>
        near.set(base, suffix, async () => {
          // a pure read: a replica may answer it (a load older than the deltas this thread
          // already has is brought up to date from its log, or refused: near.ts)
          const r = nearLoadReply(await this.read((c) => c.nearLoadBuffer(verKey, base + suffix)));
          if (!r) return null;
          return { ver: r.ver, members: decodeBuckets(r.buckets, newSeqArray) };
        }),
      ),
    );
    if (arrays.some((a) => !a)) return null;
    const epoch = near.epoch(base);
    if (!near.fresh(base)) return null;
    const sets = arrays as Float64Array[];
    const from = after === '' ? -1 : Number(after);
    // heavy: in the pool, over the same shared memory (no copy, no Redis), unless its queue is full
    const pool = this.heavyPool(sets);
    const dense = pool ? null : intersectDense(sets, from, limit + 1);
    if (dense?.built) near.account(base, suffixes); // a bitmap is held with its set: counted
    const hits = dense ? dense.hits : await pool!.intersect(sets, from, limit + 1, signal);
    const more = hits.length > limit;
    const seqs = more ? hits.subarray(0, limit) : hits;
    const docsKey = k.docs(ns, gen);
    const fetch = (missing: number[]) => this.redis.hmgetBuffer(docsKey, ...missing.map(String));
    if (joined && (await near.fill(base, seqs, fetch)) && near.epoch(base) === epoch) {
      // every document held and nothing arrived meanwhile: joined as the sync path joins
      // (copied: the scratch is reused by the next page, and this one may be kept)
      const page = near.joinNow(base, seqs, false);
      if (page) return { seqs, docs: [], more, body: Buffer.from(page.body), digests: Uint8Array.from(page.digests) };
    }
    const docs = await near.documents(base, seqs, fetch);
    // a write arrived meanwhile: sets and documents may disagree; Redis answers atomically
    if (near.epoch(base) !== epoch || docs.some((d) => !d)) return null;
    return { seqs, docs: docs as Doc[], more };
  }

  /**
   * nearPage() without a single await, when this thread holds everything the page needs:
   * every set, and every document of the page, and the intersection is one nearPage() would
   * run inline (not in the pool). Null otherwise: the caller takes the async path. Nothing
   * can arrive between its reads (deltas are events of this same thread), so the checks
   * nearPage() repeats after its awaits are not needed here; the ones before them are the same.
   * The body is a view of the near cache's scratch buffer, valid until the next call: write it
   * out (uWS copies what it sends) or copy it before anything else runs.
   */
  nearBodyNow(ns: string, f: FilterSets, after: string, limit: number): PageBody | null {
    const near = this.near;
    const gen = this.gen;
    if (!near?.usable || !gen || !this.serving()) return null;
    const base = this.keys.base(ns, gen);
    if (!near.fresh(base)) return null;
    const suffixes = filterSuffixes(f);
    const sets: Float64Array[] = [];
    for (const suffix of suffixes) {
      const a = near.setNow(base, suffix);
      if (!a) return null;
      sets.push(a);
    }
    const dense = this.heavyPool(sets) ? null : intersectDense(sets, after === '' ? -1 : Number(after), limit + 1);
    if (!dense) return null;
    if (dense.built) near.account(base, suffixes); // a bitmap is held with its set: counted
    const hits = dense.hits;
    const more = hits.length > limit;
    const seqs = more ? hits.subarray(0, limit) : hits;
    const page = near.joinNow(base, seqs);
    if (!page) return null;
    return { body: page.body, more, last: lastSeq(seqs), digests: page.digests };
  }

  /**
   * The worker pool when an intersection of these sets is heavy enough for it (several sets,
   * the smallest above the threshold) and its queue has room; null: intersect inline.
   */
  private heavyPool(sets: Float64Array[]): IntersectPool | null {
    const pool = this.intersectPool;
    if (sets.length < 2 || !pool || this.heavyThreshold <= 0 || pool.busy()) return null;
    for (const a of sets) if (a.length <= this.heavyThreshold) return null;
    // dense sets over a range up to ~1M seqs intersect inline as bitmaps (intersectDense): one
    // AND per 32 seqs, 60-110 µs a page from a random cursor over 1,000,000 (at most ~220 µs,
    // two disjoint sets), where the trip to the pool and back cost more than that at 1M (k2)
    if (sets.every((a) => bitmapWords(a) <= INLINE_BITMAP_WORDS)) return null;
    return pool;
  }

  /**
   * A sandbox created while Redis was away has no namespace marker in a generation that is
   * otherwise complete. Callers only reach a sandbox namespace after its key was verified
   * against PostgreSQL, so it is safe to create the marker and try once more.
   */
  private async retryNamespace<T>(ns: string, r: T, again: () => Promise<T>): Promise<T> {
    if (r !== NOT_INDEXED || ns === PRODUCTION || !this.gen) return r;
    if ((await this.redis.get(this.keys.gen())) !== this.gen) return r;
    if (!(await markNamespace(this.redis, this.keys, ns, this.gen))) return r;
    return again();
  }

  /**
   * Run search.lua for one page (`buffers`: its seqs and documents as Buffers; the script's
   * joined mode is not used: a page's ETag needs each document's digest). When the planner
   * finds every set large (-2) the reply carries no page: `heavy` is the task to run in the
   * worker pool instead.
   */
  private async runSearch<T extends string | Buffer>(ns: string, f: FilterSets, after: string, limit: number, buffers: boolean): Promise<{ page: SearchPage<T> & { heavy: false } } | { page: null; heavy: PoolTask }> {
    const gen = this.liveGen();
    const k = this.keys;
    const sets = this.filterKeys(ns, gen, f);
    const args = [2 + sets.length, k.ver(ns, gen), k.docs(ns, gen), ...sets, after, limit, 0, this.intersectPool ? this.heavyThreshold : 0, 0];
    const run = () => this.read(async (r) => searchPage<T>(await (buffers ? r.searchBuffer(...args) : r.search(...args))));
    const r = await this.retryNamespace(ns, await run(), run);
    if (r === NOT_INDEXED) throw notIndexed();
    if (!r.heavy) return { page: r };
    // (the script hands over only when it was given a threshold, i.e. with a pool)
    return { page: null, heavy: { version: r.version, sets, docsKey: k.docs(ns, gen), after: after === '' ? -1 : Number(after), limit } };
  }

  /** One page of a search; `after` is an exclusive seq bound ("" for the start). */
  async search(ns: string, f: FilterSets, after: string, limit: number, signal?: AbortSignal): Promise<Page> {
    const near = await this.nearPage(ns, f, after, limit, signal);
    if (near) {
      const seqs = Array.from(near.seqs, String);
      return { seqs, docs: near.docs.map((d) => d.buf.toString()), more: near.more, last: lastSeq(near.seqs) };
    }
    const r = await this.runSearch<string>(ns, f, after, limit, false);
    if (!r.page) {
      // the planner in search.lua found every set large: intersect in the worker pool
      const p = await this.intersectPool!.run(r.heavy, signal);
      const seqs = p.seqs.map(String);
      return { seqs, docs: p.docs, more: p.more, last: lastSeq(p.seqs) };
    }
    const { seqs, docs, more, last } = r.page;
    return { seqs, docs: docs.map(String), more, last };
  }

  /**
   * One page of a search as the bytes of its JSON array, with its documents' digests: the
   * documents come as bytes (from memory, Redis or the pool) and are joined, never parsed
   * or re-encoded here. Every path gives the same digests for the same documents, so the
   * page's ETag (pageEtag) does not depend on which one answered.
   */
  async searchBody(ns: string, f: FilterSets, after: string, limit: number, signal?: AbortSignal): Promise<PageBody> {
    const near = await this.nearPage(ns, f, after, limit, signal, true);
    if (near?.body) return { body: near.body, more: near.more, last: lastSeq(near.seqs), digests: near.digests! };
    if (near) return joinPage(near.docs, near.more, lastSeq(near.seqs));
    const r = await this.runSearch<Buffer>(ns, f, after, limit, true);
    if (!r.page) {
      const p = await this.intersectPool!.runBody(r.heavy, signal);
      return { body: p.body, more: p.more, last: lastSeq(p.seqs), digests: p.digests };
    }
    // the documents as Buffers, digested here
    return joinPage(r.page.docs.map(digested), r.page.more, r.page.last);
  }

  async getService(ns: string, id: string): Promise<ServiceRow | null> {
    const gen = this.liveGen();
    const run = () => this.read(async (r) => serviceReply(await r.getService(this.keys.ver(ns, gen), this.keys.base(ns, gen), id)));
    const r = await this.retryNamespace(ns, await run(), run);
    if (r === NOT_INDEXED) throw notIndexed();
    return r;
  }

  async replacements(
    ns: string,
    id: string,
    ttlSeconds: number,
  ): Promise<Replacements | null> {
    const gen = this.liveGen();
    const r = replacementsReply(await this.redis.replacements(this.keys.ver(ns, gen), this.keys.base(ns, gen), id, ttlSeconds, Date.now()));
    if (r === NOT_INDEXED) throw notIndexed();
    return r;
  }

  /** Version counter of a namespace: changes on every applied write. */
  async version(ns: string): Promise<string | null> {
    const gen = this.liveGen();
    return this.redis.get(this.keys.ver(ns, gen));
  }

  /** Mark a namespace as indexed in the live (and any building) generation. */
  async ensureNamespace(ns: string): Promise<void> {
    const gens = [await this.redis.get(this.keys.gen()), await this.redis.get(this.keys.building())];
    for (const g of gens) if (g) await this.redis.set(this.keys.ver(ns, g), '1', 'NX');
  }
}

/** Bitmaps at most this many words (2^15: a range of ~1M seqs) intersect inline, not in the pool. */
const INLINE_BITMAP_WORDS = 2 ** 15;

/** The seq a page's next one continues after: its last, "" for an empty page. */
function lastSeq(seqs: ArrayLike<number>): string {
  return seqs.length ? String(seqs[seqs.length - 1]) : '';
}

/** A page from its documents: their bytes joined into its JSON array, and their digests. */
function joinPage(docs: Doc[], more: boolean, last: string): PageBody {
  return { body: joinDocs(docs), more, last, digests: digestBytes(docs) };
}

/**
 * A page's JSON array from its documents' bytes: one allocation, no decoding. (The
 * synchronous path joins from the near cache's chunks instead: near-docs.ts.)
 */
function joinDocs(docs: Doc[]): Buffer {
  let n = 2 + Math.max(0, docs.length - 1);
  for (const d of docs) n += d.buf.length;
  const out = Buffer.allocUnsafe(n);
  let at = 0;
  out[at++] = 0x5b; // [
  // TypedArray set(), not Buffer copy(): copy() checks its arguments in JS on every call,
  // 6.7 % of a cold page's CPU in a profile (bench/README.md, "Cold path ... with wrk")
  for (let i = 0; i < docs.length; i++) {
    if (i) out[at++] = 0x2c; // ,
    const d = docs[i]!.buf;
    out.set(d, at);
    at += d.length;
  }
  out[at] = 0x5d; // ]
  return out;
}
