// An import's backlog, covered by one rebuild instead of the sweeper (docs/decisions/import.md).
// `registry import` writes PostgreSQL only: each chunk leaves one index-only outbox row for its
// services (migration 0017), which a server's sweeper applies a state at a time. A backlog that
// is large against the registry is indexed sooner by a rebuild, which reads every service once
// and covers those rows (covered.ts). Before each sweep a server asks here: while such a
// backlog is still growing (an import is running) the sweeper leaves the index-only rows
// alone; once no import has written for QUIET_MS, one server rebuilds (the rebuild lock) and
// the live generation serves reads meanwhile.
import type { Logger } from 'pino';
import type { TierConfig } from '../config.js';
import type { Keys } from '../domain/keys.js';
import type { Pool } from '../pg/pool.js';
import type { RedisClient } from '../redis/client.js';
import { OUTBOX_ROW_WRITES } from '../registry/index.js';
import { rebuildIndex } from './rebuild.js';

/** no index-only row written for this long: the import is over (its chunks come a few a second) */
export const QUIET_MS = 3000;
/** a backlog held this long is rebuilt even while rows still come (imports without end) */
export const HOLD_MAX_MS = 600_000;
/**
 * A rebuild reads every service, about 14 times faster than the sweeper applies one (1M in
 * ~15 s against 100,000 in ~20 s: docs/decisions/import.md): it goes first when the backlog is
 * at least this fraction of the registry.
 */
export const REBUILD_SHARE = 0.1;
/** after a rebuild over the backlog failed, the sweeper applies it this long before a rebuild is tried again */
export const FAILED_SWEEP_MS = 60_000;
/** rows of the backlog read a check (a chunk's row stands for up to 2,000 writes) */
const ROWS_MAX = 100_000;

// the backlog past the last rebuild's outbox ids ($1), its oldest and newest row's age (ms)
const BACKLOG = `
SELECT coalesce(sum(o.w), 0)::float8 AS writes,
       coalesce(extract(epoch FROM now() - min(o.created_at)) * 1000, 0)::float8 AS oldest_ms,
       coalesce((SELECT extract(epoch FROM now() - created_at) * 1000 FROM outbox WHERE index_only ORDER BY id DESC LIMIT 1), 0)::float8 AS newest_ms
  FROM (SELECT ${OUTBOX_ROW_WRITES} AS w, created_at FROM outbox WHERE index_only AND id > $1 ORDER BY id LIMIT ${ROWS_MAX}) o`;
// the registry's size by the planner's estimate (-1 when never analysed: then the backlog counts)
const SERVICES = `SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'services'::regclass`;

export interface Backlog {
  writes: number;
  oldestMs: number;
  newestMs: number;
  services: number;
}

/** What a sweep does with the backlog: apply it, hold it (an import still writes), or rebuild. */
export type BacklogVerdict = 'sweep' | 'hold' | 'rebuild';

/** The rule, apart from its reads (unit-tested): `minWrites` 0 never rebuilds. */
export function verdict(b: Backlog, minWrites: number): BacklogVerdict {
  if (minWrites <= 0 || b.writes < minWrites || b.writes < REBUILD_SHARE * Math.max(b.services, b.writes)) return 'sweep';
  return b.newestMs >= QUIET_MS || b.oldestMs >= HOLD_MAX_MS ? 'rebuild' : 'hold';
}

/** ImportBacklog's knobs: the lease clock a rebuild reseeds with, and (tests) the rebuild itself */
export interface BacklogOptions {
  now?: () => number;
  rebuild?: typeof rebuildIndex;
}

export class ImportBacklog {
  private rebuilding: Promise<void> | null = null;
  /** when the last rebuild over the backlog failed (performance.now()) */
  private failedAt = -Infinity;

  constructor(
    private readonly pool: Pool,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly tiers: TierConfig,
    private readonly log: Logger,
    /** OUTBOX_REBUILD_BACKLOG: the fewest writes a rebuild covers instead of the sweeper (0: never) */
    private readonly minWrites: number,
    private readonly opts: BacklogOptions = {},
  ) {}

  /** The backlog past the live generation's rebuild; the registry's size only when it is large (else -1). */
  async read(): Promise<Backlog> {
    const covered = Number((await this.redis.get(this.keys.outboxCovered())) ?? 0) || 0;
    const r = (await this.pool.query<{ writes: number; oldest_ms: number; newest_ms: number }>(BACKLOG, [covered])).rows[0]!;
    const services = r.writes >= this.minWrites ? (await this.pool.query<{ n: number }>(SERVICES)).rows[0]!.n : -1;
    return { writes: r.writes, oldestMs: r.oldest_ms, newestMs: r.newest_ms, services };
  }

  /**
   * Before a sweep: whether the sweeper leaves the index-only rows alone (true: a rebuild
   * runs or follows). Starts the rebuild when the backlog is due; a failure to read it sweeps,
   * and so does a failed rebuild, for FAILED_SWEEP_MS (Redis refusing a rebuild's writes
   * would refuse it again at once).
   */
  async hold(): Promise<boolean> {
    if (this.minWrites <= 0) return false;
    if (this.rebuilding) return true;
    if (performance.now() - this.failedAt < FAILED_SWEEP_MS) return false;
    const b = await this.read();
    const v = verdict(b, this.minWrites);
    if (v === 'rebuild') this.rebuilding = this.rebuild(b).finally(() => (this.rebuilding = null));
    return v !== 'sweep';
  }

  /** the rebuild under way, if any (tests) */
  get running(): Promise<void> | null {
    return this.rebuilding;
  }

  private async rebuild(b: Backlog): Promise<void> {
    this.log.info({ writes: b.writes, services: b.services }, 'an import left a backlog of index writes; rebuilding the index to cover it (the live generation serves reads meanwhile)');
    try {
      const r = await (this.opts.rebuild ?? rebuildIndex)(this.pool, this.redis, this.keys, this.tiers, { now: this.opts.now ?? Date.now });
      // null: another thread or server holds the lock, and covers the same rows
      if (r) this.log.info({ gen: r.gen, services: r.services, ms: r.ms, covered: r.outboxCovered }, 'index rebuilt over the import backlog');
    } catch (err) {
      this.failedAt = performance.now();
      this.log.warn({ err: String(err) }, `the rebuild over the import backlog failed; the sweeper applies it for ${FAILED_SWEEP_MS / 1000} s, then a rebuild is tried again`);
    }
  }
}
