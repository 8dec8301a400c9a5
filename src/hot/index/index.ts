// The Redis index: which generation is live, and the read operations of the hot path. A
// search page is built by the page pipeline's stages (pipeline/plan.ts names them), from the
// near cache, Redis or the worker pool; the methods here choose the source and run them.
// Reads return pre-serialised documents; nothing here parses one (the device query, which
// expands profiles into bindings, does so in routes/search.ts).
import { ApiError } from '../domain/errors.js';
import type { DimensionFilters } from '../domain/dimensions.js';
import { filterSuffixes, Keys, PRODUCTION } from '../domain/keys.js';
import { isRedisUnavailable } from '../ops/outage.js';
import type { RedisClient } from '../redis/client.js';
import type { IntersectPool } from '../../workers/pool.js';
import { decodeBuckets } from '../../workers/buckets.js';
import { newSeqArray, type NearCache } from './near.js';
import { digested, type Doc } from '../domain/digest.js';
import { nearLoadReply, NOT_INDEXED, replacementsReply, searchPage, serviceReply, type ReplacementsReply, type SearchPage, type ServiceRow } from '../redis/replies.js';
import { cursorOf, lastSeq } from './pipeline/plan.js';
import { FetchedSets, heldSets, nearSets } from './pipeline/sets.js';
import { heavyPool, intersectDense } from './pipeline/intersect.js';
import { joinPage, NULL_DOC, type PageBody } from './pipeline/join.js';

export type { PageBody } from './pipeline/join.js';

/** What search.lua's planner hands the pool path: the page's sets at the version it read. */
interface HeavyPage {
  version: string;
  verKey: string;
  /** the filter sets' keys */
  sets: string[];
  docsKey: string;
}

/** The dimension fields of Filters (domain/dimensions.ts). */
export type FilterSets = DimensionFilters;

export interface Page {
  seqs: string[];
  docs: string[];
  more: boolean;
  /** seq to continue after, "" when none */
  last: string;
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
  /** the pool path's sets, read from Redis by this thread (pipeline/sets.ts) */
  private readonly fetched = new FetchedSets();

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

  /** sets the pool path holds (read from Redis by this thread for its workers) */
  get fetchedSets(): number {
    return this.fetched.size;
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
   * namespace not indexed): the Redis path answers then, as before. `joined`: the page as
   * its body (searchBody), else as its documents (search).
   */
  private async nearPage(ns: string, f: FilterSets, after: string, limit: number, signal: AbortSignal | undefined, joined: boolean): Promise<{ seqs: Float64Array; docs: Doc[]; more: boolean; body?: Buffer; digests?: Uint8Array } | null> {
    const near = this.near;
    const gen = this.gen;
    if (!near?.usable || !gen || !this.serving()) return null;
    const k = this.keys;
    const base = k.base(ns, gen);
    if (!near.fresh(base)) return null;
    // plan
    const suffixes = filterSuffixes(f);
    // sets: a pure read, a replica may answer it (a load older than the deltas this thread
    // already has is brought up to date from its log, or refused: near-sets.ts)
    const verKey = k.ver(ns, gen);
    const sets = await nearSets(near, base, suffixes, async (suffix) => {
      const r = nearLoadReply(await this.read((c) => c.nearLoadBuffer(verKey, base + suffix)));
      return r && { ver: r.ver, members: decodeBuckets(r.buckets, newSeqArray) };
    });
    if (!sets) return null;
    const epoch = near.epoch(base);
    if (!near.fresh(base)) return null;
    // intersect: heavy in the pool, over the same shared memory (no copy, no Redis), unless its queue is full
    const from = cursorOf(after);
    const pool = heavyPool(sets, this.intersectPool, this.heavyThreshold);
    const dense = pool ? null : intersectDense(sets, from, limit + 1);
    if (dense?.built) near.account(base, suffixes); // a bitmap is held with its set: counted
    const hits = dense ? dense.hits : await pool!.intersect(sets, from, limit + 1, signal);
    const more = hits.length > limit;
    const seqs = more ? hits.subarray(0, limit) : hits;
    // join: the documents from memory, the missing ones fetched (and kept)
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
    // plan, sets (held now), intersect (inline), join (from the chunks)
    const suffixes = filterSuffixes(f);
    const sets = heldSets(near, base, suffixes);
    if (!sets) return null;
    const dense = heavyPool(sets, this.intersectPool, this.heavyThreshold) ? null : intersectDense(sets, cursorOf(after), limit + 1);
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
   * The Redis source: search.lua runs the sets, intersect and document stages for one page in
   * one atomic call (`buffers`: its seqs and documents as Buffers). When its planner finds
   * every set large (-2) the reply carries no page: the pool path computes it instead
   * (poolPage), at the namespace version the planner read.
   */
  private async runSearch<T extends string | Buffer>(ns: string, f: FilterSets, after: string, limit: number, buffers: boolean): Promise<{ page: SearchPage<T> & { heavy: false } } | { page: null; heavy: HeavyPage }> {
    const gen = this.liveGen();
    const k = this.keys;
    const sets = this.filterKeys(ns, gen, f);
    const args = [2 + sets.length, k.ver(ns, gen), k.docs(ns, gen), ...sets, after, limit, this.intersectPool ? this.heavyThreshold : 0];
    const run = () => this.read(async (r) => searchPage<T>(await (buffers ? r.searchBuffer(...args) : r.search(...args))));
    const r = await this.retryNamespace(ns, await run(), run);
    if (r === NOT_INDEXED) throw notIndexed();
    if (!r.heavy) return { page: r };
    // (the script hands over only when it was given a threshold, i.e. with a pool)
    return { page: null, heavy: { version: r.version, verKey: k.ver(ns, gen), sets, docsKey: k.docs(ns, gen) } };
  }

  /**
   * The pool source: the sets of a heavy page from this thread's FetchedSets (read from Redis
   * on a miss, at the version the planner read or later: one read at another version is read
   * again next time), intersected in a worker (which decodes the ones just read), and the
   * page's documents fetched here. Workers open no connection of their own.
   */
  private async poolPage(h: HeavyPage, after: string, limit: number, signal?: AbortSignal): Promise<{ seqs: Float64Array; docs: Buffer[]; more: boolean }> {
    const pool = this.intersectPool!;
    const held = this.fetched.get(h.sets, h.version);
    const missing: string[] = [];
    for (let i = 0; i < held.length; i++) if (!held[i]) missing.push(h.sets[i]!);
    const raw: [string, Buffer][][] = [];
    const vers: string[] = [];
    for (const r of await Promise.all(missing.map((key) => this.read(async (c) => nearLoadReply(await c.nearLoadBuffer(h.verKey, key)))))) {
      if (!r) throw notIndexed(); // the generation went away since the planner read it
      raw.push(r.buckets);
      vers.push(String(r.ver));
    }
    const sets = held.filter((a): a is Float64Array => a !== null);
    const { hits, decoded } = missing.length
      ? await pool.intersectFetched({ sets, raw, after: cursorOf(after), max: limit + 1 }, signal)
      : { hits: await pool.intersect(sets, cursorOf(after), limit + 1, signal), decoded: [] };
    for (let i = 0; i < decoded.length; i++) this.fetched.keep(missing[i]!, vers[i]!, decoded[i]!);
    const more = hits.length > limit;
    const seqs = more ? hits.subarray(0, limit) : hits;
    const got = seqs.length ? await this.redis.hmgetBuffer(h.docsKey, ...Array.from(seqs, String)) : [];
    return { seqs, docs: got.map((d) => d ?? NULL_DOC), more };
  }

  /** One page of a search; `after` is an exclusive seq bound ("" for the start). */
  async search(ns: string, f: FilterSets, after: string, limit: number, signal?: AbortSignal): Promise<Page> {
    const near = await this.nearPage(ns, f, after, limit, signal, false);
    if (near) {
      const seqs = Array.from(near.seqs, String);
      return { seqs, docs: near.docs.map((d) => d.buf.toString()), more: near.more, last: lastSeq(near.seqs) };
    }
    const r = await this.runSearch<string>(ns, f, after, limit, false);
    if (!r.page) {
      const p = await this.poolPage(r.heavy, after, limit, signal);
      return { seqs: Array.from(p.seqs, String), docs: p.docs.map(String), more: p.more, last: lastSeq(p.seqs) };
    }
    const { seqs, docs, more, last } = r.page;
    return { seqs, docs: docs.map(String), more, last };
  }

  /**
   * One page of a search as the bytes of its JSON array, with its documents' digests: the
   * documents come as bytes (from memory, Redis or fetched for the pool) and are joined,
   * never parsed or re-encoded here. Every source gives the same digests for the same
   * documents, so the page's ETag (pageEtag) does not depend on which one answered.
   */
  async searchBody(ns: string, f: FilterSets, after: string, limit: number, signal?: AbortSignal): Promise<PageBody> {
    const near = await this.nearPage(ns, f, after, limit, signal, true);
    if (near?.body) return { body: near.body, more: near.more, last: lastSeq(near.seqs), digests: near.digests! };
    if (near) return joinPage(near.docs, near.more, lastSeq(near.seqs));
    const r = await this.runSearch<Buffer>(ns, f, after, limit, true);
    if (!r.page) {
      const p = await this.poolPage(r.heavy, after, limit, signal);
      return joinPage(p.docs.map(digested), p.more, lastSeq(p.seqs));
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
