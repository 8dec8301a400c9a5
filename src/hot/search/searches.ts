// The Redis index's searches, the read operations of the hot path (which generation is live,
// and the calls that are not searches: live-index.ts). A search page is built by the page
// pipeline's stages (pipeline/plan.ts names them), from the near cache, Redis or the worker
// pool; the methods here choose the source and run them.
// Reads return pre-serialised documents; nothing here parses one (the device query, which
// expands profiles into bindings, does so in search/answer.ts). While the index cannot answer
// (Redis away, the index missing or rebuilt), the same reads come from PostgreSQL (the
// fallback room, with the same documents: one page, one body, one ETag whichever answered).
import type { RedisClient } from '../redis/client.js';
import type { IntersectPool } from '../../workers/pool.js';
import { decodeBuckets } from '../../workers/buckets.js';
import type { NearCache } from './near/near-cache.js';
import { newSeqArray } from './near/state.js';
import { worthWhole } from './near/results.js';
import { digested, type Doc } from '../domain/digest.js';
import { filterSuffixes, type Keys } from '../domain/keys.js';
import { NOT_INDEXED, searchPage, type SearchPage } from '../redis/replies.js';
import { LiveIndex, notIndexed, type FilterSets } from './live-index.js';
import { cursorOf, lastSeq } from './pipeline/plan.js';
import { DEFAULT_LOAD_BOUNDS, FetchedSets, heldSets, loadSet, type LoadBounds, nearSets } from './pipeline/sets.js';
import { heavyPool, intersectDense } from './pipeline/intersect.js';
import { joinPage, NULL_DOC, type PageBody } from './pipeline/join.js';
import type { ServiceRow } from '../redis/replies.js';
import { either, type Fallback } from './fallback.js';
import type { Replacements } from './live-index.js';
import { decodeDocBuffer } from '../domain/doc-codec.js';

export type { PageBody } from './pipeline/join.js';

/** What search.lua's planner hands the pool path: the page's sets at the version it read. */
interface HeavyPage {
  version: string;
  verKey: string;
  /** the filter sets' keys */
  sets: string[];
  docsKey: string;
}

export interface Page {
  seqs: string[];
  docs: string[];
  more: boolean;
  /** seq to continue after, "" when none */
  last: string;
}

export class Index extends LiveIndex {
  /** the pool path's sets, read from Redis by this thread (pipeline/sets.ts) */
  private readonly fetched = new FetchedSets();

  constructor(
    redis: RedisClient,
    keys: Keys,
    /** heavy intersections go to this pool (null: always intersect in Redis) */
    readonly intersectPool: IntersectPool | null = null,
    /** smallest-set size above which an intersection is heavy (docs/decisions/page-pipeline.md) */
    readonly heavyThreshold = 0,
    /** read-only replicas for pure reads (LiveIndex) */
    replicas: RedisClient[] = [],
    /** this thread's near cache of sets and documents (null: every search asks Redis) */
    readonly near: NearCache | null = null,
    /**
     * Whether the near cache may answer: false while readiness says the index or its
     * backends are unusable, so that an outage answers 503 as before (docs/decisions/near-cache.md)
     * rather than pages that cannot include the writes acknowledged meanwhile
     */
    readonly serving: () => boolean = () => true,
    /**
     * Reads from PostgreSQL (null: none, an index that cannot answer is a 503) and when to
     * take them without asking Redis first (readiness says the index is away)
     */
    readonly fallback: Fallback | null = null,
    /** how sets are read from Redis (NEAR_LOAD_WHOLE_MEMBERS, NEAR_LOAD_SLICE_BUCKETS) */
    readonly loadBounds: LoadBounds = DEFAULT_LOAD_BOUNDS,
  ) {
    super(redis, keys, replicas);
  }

  /** sets the pool path holds (read from Redis by this thread for its workers) */
  get fetchedSets(): number {
    return this.fetched.size;
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
    const sets = await nearSets(near, base, suffixes, this.nearLoader(k.ver(ns, gen), base));
    if (!sets) return null;
    const epoch = near.epoch(base);
    if (!near.fresh(base)) return null;
    // intersect: heavy in the pool, over the same shared memory (no copy, no Redis), unless its
    // queue is full
    const from = cursorOf(after);
    const pool = heavyPool(sets, this.intersectPool, this.heavyThreshold);
    const dense = pool ? null : intersectDense(sets, from, limit + 1);
    if (dense?.built) near.account(base, suffixes); // a bitmap is held with its set: counted
    const hits = dense ? dense.hits : await pool!.intersect(sets, from, limit + 1, signal);
    const more = hits.length > limit;
    const seqs = more ? hits.subarray(0, limit) : hits;
    // join: the documents from memory, the missing ones fetched (and kept)
    const docsKey = k.docs(ns, gen);
    const fetch = (missing: ArrayLike<number>) => this.documentsOf(docsKey, missing);
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

  /** How the near cache loads a set of `base` (its version key `verKey`) from Redis. */
  nearLoader(verKey: string, base: string): (suffix: string) => Promise<{ ver: number; members: Float64Array } | null> {
    return (suffix) => this.loadSet(verKey, base + suffix).then((r) => r && { ver: r.ver, members: decodeBuckets(r.buckets, newSeqArray) });
  }

  /** One set from Redis in slices (pipeline/sets.ts loadSet); a pure read, a replica may answer each. */
  private loadSet(verKey: string, key: string): ReturnType<typeof loadSet> {
    return loadSet((from) => this.read((c) => c.nearLoadBuffer(verKey, key, from, this.loadBounds.slice, this.loadBounds.whole)));
  }

  /** The plain bytes of the documents of `seqs` from Redis (null: not there): decoded from their stored form. */
  async documentsOf(docsKey: string, seqs: ArrayLike<number>): Promise<(Buffer | null)[]> {
    return (await this.redis.hmgetBuffer(docsKey, ...Array.from(seqs, String))).map((b) => b && decodeDocBuffer(b));
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
    if (!sets || heavyPool(sets, this.intersectPool, this.heavyThreshold)) return null;
    // several sets, or one sparse one: a page of the query's whole answer when it is asked again and again
    const whole = worthWhole(sets) ? near.resultPage(base, suffixes, sets, cursorOf(after), limit) : null;
    if (whole && 'missing' in whole) near.prefetch(base, whole, (m) => this.documentsOf(this.keys.docs(ns, gen), m));
    else if (whole) return whole;
    const dense = intersectDense(sets, cursorOf(after), limit + 1);
    if (dense.built) near.account(base, suffixes); // a bitmap is held with its set: counted
    const hits = dense.hits;
    const more = hits.length > limit;
    const seqs = more ? hits.subarray(0, limit) : hits;
    const page = near.joinNow(base, seqs);
    if (!page) return null;
    return { body: page.body, more, last: lastSeq(seqs), digests: page.digests };
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
    for (const r of await Promise.all(missing.map((key) => this.loadSet(h.verKey, key)))) {
      if (!r) throw notIndexed(); // the generation went away since the planner read it
      raw.push(r.buckets);
      vers.push(r.same ? String(r.ver) : ''); // slices at several versions: used for this page only
    }
    const sets = held.filter((a): a is Float64Array => a !== null);
    const { hits, decoded } = missing.length
      ? await pool.intersectFetched({ sets, raw, after: cursorOf(after), max: limit + 1 }, signal)
      : { hits: await pool.intersect(sets, cursorOf(after), limit + 1, signal), decoded: [] };
    for (let i = 0; i < decoded.length; i++) if (vers[i]) this.fetched.keep(missing[i]!, vers[i]!, decoded[i]!);
    const more = hits.length > limit;
    const seqs = more ? hits.subarray(0, limit) : hits;
    const got = seqs.length ? await this.documentsOf(h.docsKey, seqs) : [];
    return { seqs, docs: got.map((d) => d ?? NULL_DOC), more };
  }

  /** One page of a search; `after` is an exclusive seq bound ("" for the start). */
  search(ns: string, f: FilterSets, after: string, limit: number, signal?: AbortSignal): Promise<Page> {
    return either(
      this.fallback,
      () => this.indexSearch(ns, f, after, limit, signal),
      async (pg) => {
        const p = await pg.page(ns, f, after, limit);
        return { seqs: p.seqs, docs: p.docs.map(String), more: p.more, last: p.last };
      },
    );
  }

  private async indexSearch(ns: string, f: FilterSets, after: string, limit: number, signal?: AbortSignal): Promise<Page> {
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
  searchBody(ns: string, f: FilterSets, after: string, limit: number, signal?: AbortSignal): Promise<PageBody> {
    return either(
      this.fallback,
      () => this.indexSearchBody(ns, f, after, limit, signal),
      async (pg) => {
        const p = await pg.page(ns, f, after, limit);
        return joinPage(p.docs.map(digested), p.more, p.last);
      },
    );
  }

  private async indexSearchBody(ns: string, f: FilterSets, after: string, limit: number, signal?: AbortSignal): Promise<PageBody> {
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

  override getService(ns: string, id: string): Promise<ServiceRow | null> {
    return either(this.fallback, () => super.getService(ns, id), (pg) => pg.service(ns, id));
  }

  /** From PostgreSQL: a MISS stored now (the route keeps an in-process copy as for Redis's). */
  override replacements(ns: string, id: string, ttlSeconds: number): Promise<Replacements | null> {
    return either(
      this.fallback,
      () => super.replacements(ns, id, ttlSeconds),
      async (pg) => {
        const r = await pg.replacements(ns, id);
        return r && { status: 'MISS' as const, storedAt: Date.now(), ...r };
      },
    );
  }
}
