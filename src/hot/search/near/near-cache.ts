// The near cache (docs/decisions/near-cache.md): this thread's copy of the index sets it searched
// (sorted Float64Arrays of seqs on SharedArrayBuffers, which the pool reads without a copy) and of
// the documents it served (bytes, in chunks: docs.ts), loaded from Redis on first use and kept
// current by the delta every applied write publishes. Why it is never wrong: a set is loaded
// atomically with its namespace version and follows every newer delta in order; a skipped version
// drops it; deltas during a load are replayed from a short log; a fetch that crossed a delta is not
// kept; the writing thread reads Redis until its own delta arrived (require()). Bounded by this
// thread's share of NEAR_CACHE_MB in allocated bytes (docs/decisions/memory-budgets.md), oldest out
// with a second chance for what was read since (CLOCK); empty sets live in a pool of at most
// EMPTY_MAX keys, so made-up filter values churn that pool and nothing else. A query of several
// sets (or one sparse set) paged through again and again is answered from its whole answer, one
// buffer made from what is held and dropped by the namespace's next delta (results.ts).
import { digestBytes, digested, type Doc } from '../../domain/digest.js';
import { NearDocs, type Incoming } from './docs.js';
import { NearResults, resultSize, WHOLE_MAX_DOCS, WHOLE_MAX_SMALLEST, type Missing, type Result, type ResultPage } from './results.js';
import { intersectDense } from '../pipeline/intersect.js';
import { NearSets } from './sets.js';
import { applyTo, LOG_MAX, parseDelta, sizeOf } from './state.js';

/** documents a whole answer's attempt fetches at most (resultPage, prefetch) */
const FILL_MAX = 4096;
/** bytes counted for a document not held yet, while sizing a whole answer against its bound */
const UNSEEN_DOC_BYTES = 256;

/** The near cache: its sets (sets.ts) with the documents on top. */
export class NearCache extends NearSets {
  /** documents, in chunks of consecutive seqs per namespace (docs.ts) */
  private docs = new NearDocs();
  /** small integer per namespace base (the documents' namespace key); forgotten with everything in clear() */
  private baseIds = new Map<string, number>();
  /** whole answers of queries of several sets (or one sparse set), asked for again and again (results.ts) */
  private results: NearResults;
  /** a fetch of documents a whole answer lacks is running (prefetch) */
  private prefetching = false;

  /** `admitAfter`: cold pages of a query before its whole answer is kept (results.ts ADMIT) */
  constructor(maxBytes: number, admitAfter?: number) {
    super(maxBytes);
    this.results = new NearResults(admitAfter);
  }

  /** bytes held, sets (empty ones too), documents and whole answers */
  get bytes(): number {
    return this.setBytes + this.empty.bytes + this.docs.bytes + this.results.bytes;
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
    if (this.results.size) this.results.dropBase(base);
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
    const r = await this.fetchMissing(base, seqs, fetch, true);
    return !r || (r.kept && r.docs.every((d) => d !== null));
  }

  /** fill() for the warmer (warm.ts), counted as neither hits nor misses: the documents it fetched and kept; null when a delta during the fetch kept them out. */
  async warm(base: string, seqs: Float64Array, fetch: (seqs: number[]) => Promise<(Buffer | null)[]>): Promise<number | null> {
    const r = await this.fetchMissing(base, seqs, fetch, false);
    return !r ? 0 : r.kept ? r.docs.filter((d) => d !== null).length : null;
  }

  /** fetchDocs() of the documents of `seqs` not held (counted as hits and misses when `count`); null when every one is held. */
  private async fetchMissing(base: string, seqs: Float64Array, fetch: (seqs: number[]) => Promise<(Buffer | null)[]>, count: boolean): Promise<{ docs: (Doc | null)[]; kept: boolean } | null> {
    const resets = this.states.get(base)?.resets ?? 0;
    const id = this.baseId(base);
    const missing: number[] = [];
    for (let i = 0; i < seqs.length; i++) if (!this.docs.has(id, resets, seqs[i]!)) missing.push(seqs[i]!);
    if (count) this.stats.docHits += seqs.length - missing.length;
    if (count) this.stats.docMisses += missing.length;
    return missing.length ? this.fetchDocs(base, resets, missing, fetch) : null;
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

  /**
   * A page of the whole answer of a query (results.ts worthWhole), if held at this epoch
   * of the namespace; else, at its ADMIT-th cold page, the answer made whole now from `sets`
   * (held, small enough to intersect inline: every match, as bitmaps) and the documents this
   * thread holds (not empty; at most WHOLE_MAX_DOCS, an eighth of the budget, WHOLE_DOCS_PER_S
   * and WHOLE_MAX_HELD), and a page of it. The same bytes, digests,
   * "more" and last seq as a page joined from the chunks. Null otherwise (the caller joins the
   * page), or up to FILL_MAX documents it lacks (prefetch() them).
   */
  resultPage(base: string, suffixes: string[], sets: Float64Array[], after: number, limit: number): ResultPage | Missing | null {
    const key = base + '\0' + suffixes.join('\0');
    const epoch = this.epoch(base);
    let r = this.results.get(key, epoch);
    if (!r) {
      const made = this.makeWhole(key, base, epoch, suffixes, sets);
      if (!made || 'missing' in made) {
        this.stats.wholeMisses++;
        return made;
      }
      r = made;
    }
    this.stats.wholePages++;
    return this.results.page(r, after, limit);
  }

  /** resultPage()'s whole answer when none is held: made and kept now, or the documents it lacks, or null. */
  private makeWhole(key: string, base: string, epoch: number, suffixes: string[], sets: Float64Array[]): Result | Missing | null {
    const smallest = Math.min(...sets.map((a) => a.length));
    if (smallest > WHOLE_MAX_SMALLEST || !this.results.admit(key)) return null;
    const d = intersectDense(sets, -1, smallest + 1);
    if (d.built) this.account(base, suffixes); // a bitmap is held with its set: counted
    // (an empty answer costs nothing to join: not kept)
    if (!d.hits.length || d.hits.length > WHOLE_MAX_DOCS || !this.results.spend(d.hits.length)) return null;
    const r = this.makeResult(key, base, epoch, d.hits);
    if (!r) return null;
    if (Array.isArray(r)) return { key, missing: r };
    this.results.put(r);
    this.evict();
    return this.results.get(key, epoch) === r ? r : null; // (evicted at once: null)
  }

  /** The result of `seqs`; null when over an eighth of the budget; the first documents of it not held. */
  private makeResult(key: string, base: string, epoch: number, seqs: Float64Array): Result | number[] | null {
    const resets = this.states.get(base)?.resets ?? 0;
    const id = this.baseId(base);
    const docs: Doc[] = [];
    const missing: number[] = [];
    let len = 0;
    for (let i = 0; i < seqs.length && missing.length < FILL_MAX; i++) {
      const d = this.docs.get(id, resets, seqs[i]!);
      if (d) docs.push(d);
      else missing.push(seqs[i]!);
      len += (d ? d.buf.length : UNSEEN_DOC_BYTES) + 1;
      if (len > this.maxBytes / 8) return null;
    }
    if (missing.length) return missing;
    const bytes = Buffer.allocUnsafeSlow(len);
    const offs = new Int32Array(docs.length + 1);
    let at = 0;
    for (let i = 0; i < docs.length; i++) {
      offs[i] = at;
      at += docs[i]!.buf.copy(bytes, at);
      bytes[at++] = 0x2c; // ,
    }
    offs[docs.length] = at;
    const r = { key, base, epoch, seqs: seqs.slice(), offs, bytes, digests: digestBytes(docs) };
    return { ...r, size: resultSize(r), used: false };
  }

  /**
   * Fetch and keep the documents a whole answer lacks (resultPage()) in the background, one
   * fetch at a time per thread; once they are held its next cold page tries again. A fetch
   * that failed or crossed a delta is left for a later attempt.
   */
  prefetch(base: string, m: Missing, fetch: (seqs: number[]) => Promise<(Buffer | null)[]>): void {
    if (this.prefetching) return;
    this.prefetching = true;
    this.fill(base, Float64Array.from(m.missing), fetch)
      .then((held) => held && this.results.retryNow(m.key), () => undefined)
      .finally(() => (this.prefetching = false));
  }

  private baseId(base: string): number {
    let id = this.baseIds.get(base);
    if (id === undefined) {
      if (this.baseIds.size >= 2 ** 20) this.clear(); // (a bound on the map; never expected)
      this.baseIds.set(base, (id = this.baseIds.size));
    }
    return id;
  }

  /** Out until within budget, oldest first with a second chance for what was read since: whole answers first (made again from what is held), then documents (cheap to refetch, many), then sets, empty sets last. */
  protected override evict(): void {
    while (this.bytes > this.maxBytes && this.results.evictOne());
    while (this.bytes > this.maxBytes && this.docs.evictOne());
    while (this.bytes > this.maxBytes && this.evictOneSet());
    while (this.bytes > this.maxBytes && this.empty.dropOldest());
  }

  /** Forget everything (a generation switch, a lost subscription). */
  override clear(): void {
    super.clear();
    this.docs.clear();
    this.results.clear();
    this.baseIds.clear();
  }

  get docCount(): number {
    return this.docs.count;
  }

  /** whole answers held (results.ts) */
  get wholeCount(): number {
    return this.results.size;
  }
}
