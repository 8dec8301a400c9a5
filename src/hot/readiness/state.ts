// The readiness state of a serving thread. Its one writer is this class: the readiness
// watcher (lifecycle.ts) reports what each round saw and when a rebuild starts and ends, the
// HTTP server reports that it began to drain; everything else only reads. `ready` is derived
// here, in one place, from the rest.
export class AppState {
  #ready = false;
  #shuttingDown = false;
  #rebuilding = false;
  #pgUp = false;
  #redisUp = false;

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
   * A round of the readiness watcher: whether each backend answered, whether a complete index
   * generation is live, and whether PostgreSQL has answered since start-up (from then on its
   * outage degrades writes, not reads).
   */
  observed(o: { pgUp: boolean; redisUp: boolean; indexLive: boolean; pgSeen: boolean }): void {
    this.#pgUp = o.pgUp;
    this.#redisUp = o.redisUp;
    this.#ready = !this.#shuttingDown && o.redisUp && o.indexLive && !this.#rebuilding && o.pgSeen;
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
