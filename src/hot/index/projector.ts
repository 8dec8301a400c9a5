// Keeps the Redis index in step with PostgreSQL. Every write commits an outbox row; right
// after COMMIT the writer calls sync(), which reads the committed state and applies it with
// the outbox id as revision (apply-service.lua ignores a state older than the one in place).
// Outbox rows are deleted only once applied, and a sweeper re-applies any row left behind
// (a crash between COMMIT and Redis, or Redis away), so the two never disagree for good.
import type { Keys } from '../domain/keys.js';
import { memberSuffixes } from '../domain/keys.js';
import { headerData, serializeService, type ServiceRecord } from '../domain/service.js';
import type { RedisClient } from '../redis/client.js';
import type { Pool } from '../store/pool.js';
import { loadServices } from '../store/services.js';
import { markNamespace } from './index.js';

export interface OutboxEntry {
  rev: number;
  ns: string;
  id: string;
}

/** `channel`: where to publish the write's delta for near caches ("" none: a generation nobody reads yet) */
export function applyArgs(keys: Keys, gen: string, ns: string, id: string, rev: number, s: ServiceRecord | undefined, channel = ''): (string | number)[] {
  return [
    keys.ver(ns, gen),
    keys.base(ns, gen),
    id,
    rev,
    s ? String(s.seq) : '',
    s ? serializeService(s) : '',
    s ? headerData(s) : '',
    s ? memberSuffixes(s).join('\n') : '',
    s ? s.replacementSeqs.join(',') : '',
    channel,
  ];
}

export class Projector {
  private timer: NodeJS.Timeout | null = null;
  private sweeping = false;
  constructor(
    readonly pool: Pool,
    readonly redis: RedisClient,
    readonly keys: Keys,
    /** called after a batch was applied, with the namespaces it touched */
    private readonly onApplied: (namespaces: Set<string>) => void = () => undefined,
    /** called for each write applied: its namespace base and the version after it (read-your-writes of the near cache) */
    private readonly onVersion: (base: string, ver: number) => void = () => undefined,
  ) {}

  /**
   * Apply committed writes to the index. Returns the entries applied; the others (Redis
   * away, index missing) stay in the outbox for the sweeper.
   */
  async sync(entries: OutboxEntry[]): Promise<OutboxEntry[]> {
    if (!entries.length) return [];
    const states = await loadServices(this.pool, [...new Set(entries.map((e) => e.id))]);
    const live = await this.redis.get(this.keys.gen());
    const building = await this.redis.get(this.keys.building());
    const gens = [live, building].filter((g): g is string => !!g);
    if (!gens.length) return [];
    const done: OutboxEntry[] = [];
    const touched = new Set<string>();
    // a namespace that PostgreSQL has written to exists; a sandbox created while Redis was
    // away lacks its marker in the live generation: create it (never for a missing gen)
    if (live) for (const ns of new Set(entries.map((e) => e.ns))) await markNamespace(this.redis, this.keys, ns, live);
    for (const e of entries) {
      let appliedLive = false;
      for (const gen of gens) {
        // the building generation's deltas too: the switch may come between reading the
        // pointers and this apply, and a silent change to a live generation would leave
        // near caches that loaded it stale (found by test/pg/near-property.test.ts)
        const r = (await this.redis.applyService(...applyArgs(this.keys, gen, e.ns, e.id, e.rev, states.get(e.id), this.keys.invalidationChannel()))) as number;
        // -1: that generation has no such namespace (Redis was emptied): keep the row
        if (gen === live && r !== -1) appliedLive = true;
        // this thread's near cache must not answer from sets older than its own write
        if (r > 0) this.onVersion(this.keys.base(e.ns, gen), r);
      }
      if (appliedLive) {
        done.push(e);
        touched.add(e.ns);
      }
    }
    if (done.length) {
      await this.pool.query('DELETE FROM outbox WHERE id = ANY($1)', [done.map((e) => e.rev)]);
      this.onApplied(touched);
    }
    return done;
  }

  /** Best-effort sync right after a commit; failures are left to the sweeper. */
  async syncQuietly(entries: OutboxEntry[]): Promise<boolean> {
    try {
      return (await this.sync(entries)).length === entries.length;
    } catch {
      return false;
    }
  }

  /** Re-apply outbox rows older than `minAgeMs` (their writer's own sync did not happen). */
  async sweep(minAgeMs = 1000, batch = 500): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    try {
      let total = 0;
      for (;;) {
        const r = await this.pool.query<{ id: string; ns: string; service_id: string }>(
          `SELECT id, ns, service_id FROM outbox WHERE created_at < now() - make_interval(secs => $1) ORDER BY id LIMIT $2`,
          [minAgeMs / 1000, batch],
        );
        if (!r.rows.length) return total;
        const done = await this.sync(r.rows.map((x) => ({ rev: Number(x.id), ns: x.ns, id: x.service_id })));
        total += done.length;
        if (done.length < r.rows.length || r.rows.length < batch) return total;
      }
    } finally {
      this.sweeping = false;
    }
  }

  /** Outbox rows not yet applied (lag, for readiness and metrics). */
  async lag(): Promise<number> {
    const r = await this.pool.query<{ n: string }>('SELECT count(*) AS n FROM outbox');
    return Number(r.rows[0]!.n);
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      this.sweep().catch(() => undefined);
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
