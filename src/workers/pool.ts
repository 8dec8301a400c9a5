// The Piscina pool for heavy intersections: a bounded queue (full -> 503 + Retry-After)
// and cancellation through the client's AbortSignal. Its workers only intersect: the serving
// thread hands them the sets (intersect-task.ts). Constructing it starts nothing; start()
// starts its threads (compose.ts names when), close() ends them.
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Config } from '../hot/config.js';
import { ApiError } from '../hot/domain/errors.js';
import type { FetchedResult, FetchedTask, IntersectTask } from './intersect-task.js';

export class IntersectPool {
  #piscina: Piscina | null = null;

  constructor(readonly cfg: Config) {}

  /** Start the pool's threads (Piscina starts its first one as it is made). */
  start(): void {
    this.#piscina ??= new Piscina({
      filename: fileURLToPath(new URL('./intersect-task.js', import.meta.url)),
      minThreads: 1,
      maxThreads: this.cfg.poolThreads,
      maxQueue: this.cfg.poolMaxQueue,
      idleTimeout: 60_000,
    });
  }

  /** the started pool (a search reaches it only once its thread started: compose.ts) */
  get piscina(): Piscina {
    if (!this.#piscina) throw new Error('the intersection pool is not started');
    return this.#piscina;
  }

  /** Whether a task now would wait in a full queue (then the near cache intersects inline); not started: busy. */
  busy(): boolean {
    return !this.#piscina || this.#piscina.queueSize >= this.cfg.poolMaxQueue;
  }

  /**
   * Intersect sets held on shared memory (SharedArrayBuffer): the worker reads the very same
   * arrays, nothing is copied or fetched. Returns at most `max` seqs greater than `after`.
   */
  async intersect(sets: Float64Array[], after: number, max: number, signal?: AbortSignal): Promise<Float64Array> {
    const task: IntersectTask = { sets, after, max };
    return (await this.exec(task, 'intersectShared', signal)) as Float64Array;
  }

  /** As intersect(), with sets read from Redis still to decode (`raw`): the worker decodes them onto shared memory. */
  async intersectFetched(task: FetchedTask, signal?: AbortSignal): Promise<FetchedResult> {
    return (await this.exec(task, 'intersectFetched', signal)) as FetchedResult;
  }

  private async exec(task: IntersectTask, name: string, signal?: AbortSignal): Promise<unknown> {
    if (this.piscina.queueSize >= this.cfg.poolMaxQueue) {
      throw new ApiError('SEARCH_QUEUE_FULL', [], { 'Retry-After': '1' });
    }
    try {
      return await this.piscina.run(task, { name, signal });
    } catch (err) {
      if (signal?.aborted) throw new ApiError('CLIENT_GONE');
      if (/queue is at limit|Task queue/i.test(String((err as Error)?.message))) {
        throw new ApiError('SEARCH_QUEUE_FULL', [], { 'Retry-After': '1' });
      }
      throw err;
    }
  }

  /** queue depth and utilisation, for metrics */
  stats(): { queue: number; utilization: number; threads: number } {
    const p = this.#piscina;
    return p ? { queue: p.queueSize, utilization: p.utilization, threads: p.threads.length } : { queue: 0, utilization: 0, threads: 0 };
  }

  async close(): Promise<void> {
    const p = this.#piscina;
    this.#piscina = null;
    await p?.destroy();
  }
}

