// The Piscina pool for heavy intersections: a bounded queue (full -> 503 + Retry-After)
// and cancellation through the client's AbortSignal.
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Config } from '../hot/config.js';
import { ApiError } from '../hot/domain/errors.js';
import { unpackBody, unpackPage, type IntersectTask } from './intersect-task.js';

export class IntersectPool {
  readonly piscina: Piscina;

  constructor(readonly cfg: Config) {
    this.piscina = new Piscina({
      filename: fileURLToPath(new URL('./intersect-task.js', import.meta.url)),
      minThreads: 1,
      maxThreads: cfg.poolThreads,
      maxQueue: cfg.poolMaxQueue,
      idleTimeout: 60_000,
    });
  }

  /** One page, its documents one string each. */
  async run(task: Omit<IntersectTask, 'redisUrl' | 'clusterNodes' | 'joined'>, signal?: AbortSignal): Promise<{ seqs: number[]; docs: string[]; more: boolean }> {
    return unpackPage(await this.exec({ ...task, joined: false }, signal));
  }

  /** One page as the bytes of its JSON array. */
  async runBody(task: Omit<IntersectTask, 'redisUrl' | 'clusterNodes' | 'joined'>, signal?: AbortSignal): Promise<{ seqs: number[]; body: Buffer; more: boolean; digests: Uint8Array }> {
    return unpackBody(await this.exec({ ...task, joined: true }, signal));
  }

  private async exec(task: Omit<IntersectTask, 'redisUrl' | 'clusterNodes'>, signal?: AbortSignal): Promise<Uint8Array> {
    const full: IntersectTask = { ...task, redisUrl: this.cfg.redisUrl, clusterNodes: this.cfg.redisClusterNodes };
    if (this.piscina.queueSize >= this.cfg.poolMaxQueue) {
      throw new ApiError('OVERLOADED', 'too many heavy searches queued; try again shortly', { 'Retry-After': '1' });
    }
    try {
      return (await this.piscina.run(full, { signal })) as Uint8Array;
    } catch (err) {
      if (signal?.aborted) throw new ApiError('BAD_REQUEST', 'the client went away');
      if (/queue is at limit|Task queue/i.test(String((err as Error)?.message))) {
        throw new ApiError('OVERLOADED', 'too many heavy searches queued; try again shortly', { 'Retry-After': '1' });
      }
      throw err;
    }
  }

  /** Whether a task now would wait in a full queue (then the near cache intersects inline). */
  busy(): boolean {
    return this.piscina.queueSize >= this.cfg.poolMaxQueue;
  }

  /**
   * Intersect sets the near cache holds on shared memory (SharedArrayBuffer): the worker
   * reads the very same arrays, nothing is copied or fetched. Returns at most `max` seqs
   * greater than `after`.
   */
  async intersect(sets: Float64Array[], after: number, max: number, signal?: AbortSignal): Promise<Float64Array> {
    try {
      return (await this.piscina.run({ sets, after, max }, { name: 'intersectShared', signal })) as Float64Array;
    } catch (err) {
      if (signal?.aborted) throw new ApiError('BAD_REQUEST', 'the client went away');
      if (/queue is at limit|Task queue/i.test(String((err as Error)?.message))) {
        throw new ApiError('OVERLOADED', 'too many heavy searches queued; try again shortly', { 'Retry-After': '1' });
      }
      throw err;
    }
  }

  /** queue depth and utilisation, for metrics */
  stats(): { queue: number; utilization: number; threads: number } {
    return { queue: this.piscina.queueSize, utilization: this.piscina.utilization, threads: this.piscina.threads.length };
  }

  close(): Promise<void> {
    return this.piscina.destroy();
  }
}
