// The readiness state of a serving thread. Its one writer is this class: the readiness
// watcher (lifecycle.ts) reports what each round saw and when a rebuild starts and ends, the
// HTTP server reports that it began to drain, the Consul catalog that PostgreSQL answered it;
// everything else only reads. `ready` and `reads` are derived here, in one place, from the rest.

/** Where discovery reads are answered from: the index, PostgreSQL (the fallback), or nowhere (503). */
export type ReadSource = 'index' | 'postgres' | 'none';

/** the catalog's counters: answers PostgreSQL gave in the index's stead, and those the index caught up with */
const FROM_PG = 0;
const COVERED = 1;

/** Shared memory for AppState's catalog counters: one per process (compose.ts processShared). */
export function catalogBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
}

export class AppState {
  #ready = false;
  #shuttingDown = false;
  #rebuilding = false;
  #pgUp = false;
  #redisUp = false;

  /** the Consul catalog's two counters, shared by the process's threads (catalogBuffer) */
  readonly #catalog: Int32Array;

  /**
   * `fallback`: reads go to PostgreSQL while the index is away (FALLBACK_PG_CONNECTIONS > 0);
   * `catalog`: the process's catalogBuffer (default: this thread's own)
   */
  constructor(
    readonly fallback = false,
    catalog: SharedArrayBuffer = catalogBuffer(),
  ) {
    this.#catalog = new Int32Array(catalog);
  }

  /** the index is live and PostgreSQL answered (since start-up), and the thread is not draining */
  get ready(): boolean {
    return this.#ready;
  }
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }
  get rebuilding(): boolean {
    return this.#rebuilding;
  }
  get pgUp(): boolean {
    return this.#pgUp;
  }
  get redisUp(): boolean {
    return this.#redisUp;
  }

  /**
   * Where reads are answered from, by the watchers' view: the index while it is ready; else
   * PostgreSQL, when there is a fallback and PostgreSQL answers; else nowhere. Draining, none.
   */
  get reads(): ReadSource {
    if (this.#ready) return 'index';
    return this.fallback && this.#pgUp && !this.#shuttingDown ? 'postgres' : 'none';
  }

  /**
   * A round of the readiness watcher: whether each backend answered, whether a complete index
   * generation is live, and whether PostgreSQL has answered since start-up (from then on its
   * outage degrades writes, not reads).
   */
  observed(o: { pgUp: boolean; redisUp: boolean; indexLive: boolean; pgSeen: boolean }): void {
    this.#pgUp = o.pgUp;
    this.#redisUp = o.redisUp;
    this.#ready = !this.#shuttingDown && o.redisUp && o.indexLive && !this.#rebuilding && o.pgSeen;
  }

  /**
   * A Consul catalog answer is about to be read from PostgreSQL because the index could not
   * give it: its X-Consul-Index counts writes and tombstone revisions the index may not have
   * (docs/decisions/consul-index.md), so until the index caught up (a watcher: tombstones
   * raised, the outage's outbox rows applied) the catalog stays on PostgreSQL
   * (catalogCatchingUp) on every thread of the process, whether or not a watcher round saw
   * Redis away: a client that moves to another thread does not see the index step back.
   */
  catalogFromPostgres(): void {
    Atomics.add(this.#catalog, FROM_PG, 1);
  }
  get catalogCatchingUp(): boolean {
    // (differences, not comparisons: the counters may wrap)
    return ((Atomics.load(this.#catalog, FROM_PG) - Atomics.load(this.#catalog, COVERED)) | 0) !== 0;
  }
  /** the answers counted so far: what a raise starting now catches up with */
  get catalogAnswers(): number {
    return Atomics.load(this.#catalog, FROM_PG);
  }
  /** the index caught up with the answers counted at `through` (or a watcher gave up waiting: one step back is its cost) */
  catalogCaughtUp(through: number): void {
    const a = this.#catalog;
    for (let was = Atomics.load(a, COVERED); ((through - was) | 0) > 0; ) {
      const seen = Atomics.compareExchange(a, COVERED, was, through);
      if (seen === was) return;
      was = seen;
    }
  }

  /** a rebuild of the index runs (ready turns true again only at a round after it ended) */
  rebuild(running: boolean): void {
    this.#rebuilding = running;
    if (running) this.#ready = false;
  }

  /** the server began to drain: never ready again */
  shutDown(): void {
    this.#shuttingDown = true;
    this.#ready = false;
  }
}
