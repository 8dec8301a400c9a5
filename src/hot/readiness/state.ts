// The readiness state of a serving thread. Its one writer is this class: the readiness
// watcher (lifecycle.ts) reports what each round saw and when a rebuild starts and ends, the
// HTTP server reports that it began to drain, the Consul catalog that PostgreSQL answered it;
// everything else only reads. `ready` and `reads` are derived here, in one place, from the rest.

/** Where discovery reads are answered from: the index, PostgreSQL (the fallback), or nowhere (503). */
export type ReadSource = 'index' | 'postgres' | 'none';

export class AppState {
  #ready = false;
  #shuttingDown = false;
  #rebuilding = false;
  #pgUp = false;
  #redisUp = false;

  /** `fallback`: reads go to PostgreSQL while the index is away (FALLBACK_PG_CONNECTIONS > 0) */
  constructor(readonly fallback = false) {}

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

  /** Consul catalog answers PostgreSQL gave because the index could not, and how many of them the index has caught up with */
  #catalogFromPg = 0;
  #catalogCovered = 0;

  /**
   * A Consul catalog answer is about to be read from PostgreSQL because the index could not
   * give it: its X-Consul-Index counts writes and tombstone revisions the index may not have
   * (docs/decisions/consul-index.md), so until the index caught up (the watcher: tombstones
   * raised, the outage's outbox rows applied) the catalog stays on PostgreSQL
   * (catalogCatchingUp), whether or not a watcher round saw Redis away.
   */
  catalogFromPostgres(): void {
    this.#catalogFromPg++;
  }
  get catalogCatchingUp(): boolean {
    return this.#catalogFromPg > this.#catalogCovered;
  }
  /** the answers counted so far: what a raise starting now catches up with */
  get catalogAnswers(): number {
    return this.#catalogFromPg;
  }
  /** the index caught up with the answers counted at `through` (or the watcher gave up waiting: one step back is its cost) */
  catalogCaughtUp(through: number): void {
    if (through > this.#catalogCovered) this.#catalogCovered = through;
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
