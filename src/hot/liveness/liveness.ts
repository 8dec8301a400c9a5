// Leases and heartbeats of one serving thread (contract "Liveness"). A heartbeat is one
// entry of a batched Lua call (heartbeat-2.lua through heartbeat-batch.ts) that checks the
// token's hash against the lease record in Redis and renews the deadline: no PostgreSQL, no
// document, no cache touched. Only a heartbeat
// that changes the status writes, through the normal write path (liveness/store.ts setHealth,
// then the projector, which also carries the new lease state to Redis: lease-apply-2.lua).
import type { Keys } from '../domain/keys.js';
import type { IndexState, LeaseSync, Projector } from '../registry/index.js';
import { countHeartbeat, countTransition } from './metrics.js';
import type { RedisClient } from '../redis/client.js';
import type { ScriptLine } from '../redis/script-line.js';
import { loadLease, renewVersion, setHealth } from './store.js';
import type { Pool } from '../pg/pool.js';
import { HeartbeatBatch, type BeatDone, type BeatIdentity } from './heartbeat-batch.js';
import { applyLease, leaseOf } from './redis-lease.js';

export type HeartbeatResult = 'renewed' | 'changed' | 'unauthorized' | 'unavailable';

export interface LivenessOptions {
  /** the clock of deadlines (ms); tests inject one and never sleep through a ttl */
  now?: () => number;
  /** whether the index (and so every lease) is complete in Redis: a lease missing then is no lease */
  indexReady?: () => boolean;
  /** a lean connection for the heartbeat calls (redis/script-line.ts; started and closed by the caller) */
  line?: ScriptLine | null;
}

export class Liveness implements LeaseSync {
  readonly now: () => number;
  private readonly indexReady: () => boolean;
  /** this thread's heartbeats of the current event-loop turn, one script call per shard */
  readonly batch: HeartbeatBatch;

  constructor(
    readonly pool: Pool,
    readonly redis: RedisClient,
    readonly keys: Keys,
    readonly projector: Projector,
    o: LivenessOptions = {},
  ) {
    this.now = o.now ?? Date.now;
    this.indexReady = o.indexReady ?? (() => true);
    this.batch = new HeartbeatBatch(redis, keys, this.now, o.line ?? null);
    // every state the projector applies brings its lease in Redis in line (applyState)
    projector.attach(this);
  }

  /** The projector's lease sync (LeaseSync): the lease of a state it applied to the index. */
  applyState(id: string, st: IndexState): Promise<number> {
    return applyLease(this.redis, this.keys, id, st.ns, st.version, leaseOf(st.record), this.now());
  }

  /**
   * One heartbeat of service `id` in `ns` with a token whose sha256 is `tokenHash` (hex).
   * `admit` (sandboxes: the rate limit) runs before anything changes; it throws to refuse.
   * A token this thread has not seen accepted (`known` false) is checked first, so a forged
   * one never uses up the sandbox's quota; a known one is admitted, then checked and renewed
   * in one call (a token rotated since counts once against the limit before its 401).
   */
  async heartbeat(ns: string, id: string, tokenHash: string, want: 'passing' | 'critical', admit?: () => Promise<unknown>, known = false): Promise<HeartbeatResult> {
    const w = want === 'passing' ? 'p' : 'c';
    let r = admit && !known ? await this.batch.beatAsync(ns, id, tokenHash, w, true) : 0;
    if (r >= 0) {
      if (admit) await admit();
      r = await this.batch.beatAsync(ns, id, tokenHash, w, false);
    }
    return this.settle(ns, id, want, r);
  }

  /**
   * Whether `tokenHash` is the token of service `id`'s lease, asked before a heartbeat's body
   * is read: one check-only line of the turn's batch, renewing and counting nothing.
   */
  async verify(ns: string, id: string, tokenHash: string): Promise<'verified' | 'unauthorized' | 'unavailable'> {
    const r = await this.batch.beatAsync(ns, id, tokenHash, 'p', true);
    if (r === -1 && !this.indexReady()) return 'unavailable';
    if (r >= 0) return 'verified';
    countHeartbeat('refused');
    return 'unauthorized';
  }

  /**
   * heartbeat() of an admitted request with a token this thread knows (`k`, the token
   * memory's entry; its rate limit already counted, or none), by callback: the common case,
   * one batch entry and no promise unless the status changes. `done` gets the result, or the
   * error (a Redis or PostgreSQL failure).
   */
  renew(k: BeatIdentity, want: 'passing' | 'critical', done: (r: HeartbeatResult, err?: unknown) => void): void {
    const answered: BeatDone = (r, err) => {
      if (err !== undefined) return done('unavailable', err);
      if (r === 0) {
        countHeartbeat('renewed');
        return done('renewed');
      }
      this.settle(k.ns, k.id, want, r).then(done, (e: unknown) => done('unavailable', e));
    };
    if (want === 'passing') this.batch.beatKnown(k, answered);
    else this.batch.beat(k.ns, k.id, k.hash, 'c', false, answered);
  }

  /** What a heartbeat-2.lua answer `r` means, after the durable write it asks for (1). */
  private async settle(ns: string, id: string, want: 'passing' | 'critical', r: number): Promise<HeartbeatResult> {
    if (r === -1 && !this.indexReady()) return 'unavailable';
    if (r < 0) {
      countHeartbeat('refused');
      return 'unauthorized';
    }
    if (r === 0) {
      countHeartbeat('renewed');
      return 'renewed';
    }
    // the status changes: a durable write first, then the projector (index and lease)
    const now = this.now();
    const wr = await setHealth(this.pool, ns, id, want, now);
    if (wr) {
      // the state the write returned, applied without reading it again
      await this.projector.applyCommitted([wr]);
      countTransition(want, 'heartbeat');
    } else {
      // PostgreSQL already has that status: Redis is ahead of it. Passing there while the
      // lease here is critical is the sweeper's expiry not durable yet (or never: its commit
      // failed), already visible in the index: a new version revokes it durably (the
      // expiry, made from the old one, then commits nothing) and its apply puts index and
      // lease back (sweeper.ts). Otherwise make the lease agree with PostgreSQL again.
      const renewed = want === 'passing' ? await renewVersion(this.pool, ns, id, want) : null;
      if (renewed) await this.projector.syncQuietly([renewed]);
      else {
        const row = await loadLease(this.pool, id);
        if (row) await applyLease(this.redis, this.keys, id, row.ns, row.version, row, now);
      }
    }
    countHeartbeat('transition');
    return 'changed';
  }
}
