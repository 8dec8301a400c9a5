// Keeps Redis in step with PostgreSQL. Every write commits an outbox row; right after COMMIT
// the writer calls sync(), which reads the committed state together with its revision (the
// service's version, or its tombstone's; a sandbox row's version) in one statement and
// applies both (apply-service-1.lua / apply-sandbox-1.lua ignore a revision older than the one
// in place). Outbox rows are deleted only once applied, and a sweeper re-applies any row
// left behind (a crash between COMMIT and Redis, or Redis away), so the two never disagree
// for good. The rule, and why the revision must come from the same snapshot as the state:
// redis/README.md, "Revisions". The services' states reach Redis through apply-services.ts;
// the records and hooks the projector takes and reports: projector-types.ts.
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Keys } from '../domain/keys.js';
import type { RedisClient } from '../redis/client.js';
import type { Pool } from '../pg/pool.js';
import { loadSandboxMeta, PendingSandboxes, writeSandboxMeta, type SandboxRow } from '../sandboxes/index.js';
import { loadIndexStates, type IndexState } from './state.js';
import type { ServiceText } from './apply-args.js';
import { applyServices } from './apply-services.js';
import { type CommittedEntry, type LeaseSync, type OutboxEntry, OUTBOX_ROW_WRITES, type ProjectorOptions } from './projector-types.js';
import { WriteAppliedEvents } from './write-applied.js';
import { countProjectorFailure } from './metrics.js';

/** A sync that failed after loading its states: carries the revisions it was applying (for the log). */
class SyncFailed extends Error {
  constructor(
    readonly reason: unknown,
    readonly revisions: Map<string, number>,
  ) {
    super(String(reason));
  }
}

const NONE: ReadonlySet<string> = new Set();
/** sweep()'s default: no index-only row is left to a rebuild */
const NO_HOLD = async () => false;
const NO_TEXT: ReadonlyMap<string, ServiceText> = new Map();
/** the most outbox rows lag() reads (registry_outbox_lag): one count a sample, bounded */
const LAG_MAX = 1_000_000;

export class Projector {
  private timer: NodeJS.Timeout | null = null;
  private sweeping = false;
  /** outbox rows applied by applyCommitted(), deleted together by the next ack flush */
  private acks: number[] = [];
  private ackTimer: NodeJS.Timeout | null = null;
  private readonly beforeApply: ((ids: string[]) => Promise<void>) | null;
  private readonly ackMs: number;
  /** whether a sandbox's outbox row (its key hash among it) is waiting: told after each sweep */
  private readonly pendingSandboxes: PendingSandboxes;
  /** liveness's side of an apply, once attached (attach()) */
  private leases: LeaseSync | null = null;
  /** this thread's applied writes, as they reach the index (search/ subscribes) */
  readonly applied = new WriteAppliedEvents();

  constructor(
    readonly pool: Pool,
    readonly redis: RedisClient,
    readonly keys: Keys,
    readonly tiers: Config['tiers'],
    readonly log: Logger,
    /**
     * Replicas serve reads: a write is acknowledged once they have it (WAIT on the
     * connections that wrote it, which must then be the projector's own: replicaWaiter()),
     * or after REDIS_REPLICA_WAIT_MS at most — then a replica may serve the previous state
     * until it catches up (the staleness bound, docs/decisions/read-replicas.md). null: no
     * replicas.
     */
    private readonly replicaWait: (() => Promise<unknown>) | null = null,
    opts: ProjectorOptions = {},
  ) {
    this.beforeApply = opts.beforeApply ?? null;
    this.ackMs = opts.ackMs ?? 20;
    this.pendingSandboxes = opts.pendingSandboxes ?? new PendingSandboxes();
  }

  /** Liveness attaches its side of every apply once, when it is built (liveness/liveness.ts). */
  attach(leases: LeaseSync): void {
    if (this.leases) throw new Error('the projector already has its lease sync');
    this.leases = leases;
  }

  /**
   * Apply committed writes. Returns the entries applied (or found already covered by a
   * newer revision); the others (Redis away, index missing) stay in the outbox for the
   * sweeper. Throws when Redis fails.
   */
  async sync(entries: OutboxEntry[]): Promise<OutboxEntry[]> {
    if (!entries.length) return [];
    const svcIds = [...new Set(entries.filter((e) => e.kind !== 'sandbox').map((e) => e.id))];
    const sbIds = [...new Set(entries.filter((e) => e.kind === 'sandbox').map((e) => e.id))];
    const [states, sandboxes] = await Promise.all([
      svcIds.length ? loadIndexStates(this.pool, svcIds) : new Map<string, IndexState>(),
      sbIds.length ? loadSandboxMeta(this.pool, sbIds) : new Map<string, SandboxRow & { key_hash: Buffer }>(),
    ]);
    return this.apply(entries, svcIds, sbIds, states, sandboxes, false);
  }

  /**
   * Apply writes whose committed state (and revision) their transaction returned: no read
   * of PostgreSQL; their outbox rows are deleted by the next ack flush. Returns whether
   * every one was applied; a failure is logged and counted, and left to the sweeper.
   */
  async applyCommitted(committed: CommittedEntry[]): Promise<boolean> {
    if (!committed.length) return true;
    const entries = committed.map((c) => ({ row: c.row, ns: c.state.ns, id: c.id }));
    try {
      // an id written twice in one group (a delete's listing service deleted by the next
      // write): its newest revision is the one that counts (the revision rule)
      const states = new Map<string, IndexState>();
      const texts = new Map<string, ServiceText>();
      for (const c of committed) {
        const had = states.get(c.id);
        if (had && had.version >= c.state.version) continue;
        states.set(c.id, c.state);
        if (c.text) texts.set(c.id, c.text);
        else texts.delete(c.id);
      }
      const noLease = new Set(committed.filter((c) => c.created && !c.state.record?.lease).map((c) => c.id));
      return (await this.apply(entries, [...states.keys()], [], states, new Map(), true, noLease, texts)).length === entries.length;
    } catch (err) {
      this.failed('write', err, entries);
      return false;
    }
  }

  private async apply(
    entries: OutboxEntry[],
    svcIds: string[],
    sbIds: string[],
    states: Map<string, IndexState>,
    sandboxes: Map<string, SandboxRow & { key_hash: Buffer }>,
    ackLater: boolean,
    noLease: ReadonlySet<string> = NONE,
    texts: ReadonlyMap<string, ServiceText> = NO_TEXT,
  ): Promise<OutboxEntry[]> {
    if (this.beforeApply) await this.beforeApply([...svcIds, ...sbIds]);
    const revisions = new Map<string, number>([...states].map(([id, st]) => [id, st.version]));
    const versions: [string, number][] = [];
    const touched = new Set<string>();
    let unapplied: Set<string> | undefined;
    try {
      const applied = new Set<string>();
      for (const uuid of sbIds) {
        const s = sandboxes.get(uuid);
        // (a sandbox is never deleted; a row that vanished has nothing left to apply)
        if (s) await writeSandboxMeta(this.redis, this.keys, s, this.tiers[s.tier] ?? 0, s.key_hash.toString('hex'));
        applied.add('sandbox:' + uuid);
      }
      if (svcIds.length) await applyServices(this.redis, this.keys, this.log, this.leases, versions, entries, states, applied, touched, noLease, texts);
      // a row is done when every entry of it is (a row of many services: migration 0017)
      const open = new Set(entries.filter((e) => !applied.has((e.kind ?? 'service') + ':' + e.id)).map((e) => e.row));
      const done = open.size ? entries.filter((e) => !open.has(e.row)) : entries;
      if (open.size) unapplied = new Set(entries.filter((e) => open.has(e.row)).map((e) => e.ns));
      if (touched.size && this.replicaWait) await this.replicaWait().catch(() => 0);
      if (done.length) {
        const rows = [...new Set(done.map((e) => e.row))];
        if (ackLater) this.ackLater(rows);
        else await this.pool.query('DELETE FROM outbox WHERE id = ANY($1)', [rows]);
      }
      return done;
    } catch (err) {
      unapplied = new Set(entries.map((e) => e.ns));
      throw new SyncFailed(err, revisions);
    } finally {
      // (before the writes are acknowledged: their callers await this)
      this.applied.publish({ namespaces: touched, versions, unapplied });
    }
  }


  /** Outbox rows another path applied (the lease sweeper's expiries, liveness/expiry.ts): deleted by the next ack flush. */
  ack(rows: number[]): void {
    if (rows.length) this.ackLater(rows);
  }

  private ackLater(rows: number[]): void {
    for (const r of rows) this.acks.push(r);
    this.ackTimer ??= setTimeout(() => void this.flushAcks(), this.ackMs).unref();
  }

  /** Delete the outbox rows of applied writes (one statement); a failure leaves them to the sweeper. */
  async flushAcks(): Promise<void> {
    if (this.ackTimer) clearTimeout(this.ackTimer);
    this.ackTimer = null;
    const rows = this.acks;
    this.acks = [];
    if (rows.length) await this.pool.query('DELETE FROM outbox WHERE id = ANY($1)', [rows]).catch(() => undefined);
  }

  /** Sync right after a commit; a failure is logged and counted, and left to the sweeper. */
  async syncQuietly(entries: OutboxEntry[]): Promise<boolean> {
    try {
      return (await this.sync(entries)).length === entries.length;
    } catch (err) {
      this.failed('write', err, entries);
      return false;
    }
  }

  private failed(stage: 'write' | 'sweep', err: unknown, entries: OutboxEntry[]): void {
    countProjectorFailure(stage);
    const revs = err instanceof SyncFailed ? err.revisions : new Map<string, number>();
    const ids = [...new Set(entries.map((e) => e.id))];
    this.log.warn(
      {
        err: String(err instanceof SyncFailed ? err.reason : err),
        stage,
        serviceIds: ids,
        revisions: ids.map((id) => revs.get(id) ?? null),
        outboxRows: entries.map((e) => e.row),
      },
      'index update failed; the outbox sweeper will retry',
    );
  }

  /**
   * Re-apply outbox rows older than `minAgeMs` (their writer's own sync did not happen), about
   * `batch` writes a sync: a row of many services (migration 0017) is one sync of its own when
   * it holds more. `hold`, asked before the first batch and again each second of a long
   * sweep: whether the index-only rows (an import's) are left to a rebuild
   * (reindex/backlog.ts); a failure to answer sweeps them.
   */
  async sweep(minAgeMs = 1000, batch = 500, hold: () => Promise<boolean> = NO_HOLD): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    let waiting = false;
    try {
      let total = 0;
      let indexOnly = true;
      let asked = -Infinity;
      // each batch from where the last one ended: from the start, it would read again past the
      // rows the batches before it deleted, slower with every batch of a large backlog
      for (let after = 0; ; ) {
        if (performance.now() - asked >= 1000) {
          indexOnly = !(await hold().catch(() => false));
          asked = performance.now();
        }
        const r = await this.pool.query<{ id: string; ns: string; service_id: string; kind: 'service' | 'sandbox'; service_ids: string[] | null }>(
          `SELECT id, ns, service_id, kind, service_ids FROM outbox WHERE id > $3 AND created_at < now() - make_interval(secs => $1) AND (NOT index_only OR $4) ORDER BY id LIMIT $2`,
          [minAgeMs / 1000, batch, after, indexOnly],
        );
        if (!r.rows.length) return total;
        const rows: OutboxEntry[] = [];
        let taken = 0;
        for (const x of r.rows) {
          const ids = x.service_ids ?? [x.service_id];
          if (taken && rows.length + ids.length > batch) break; // the rest from the next read
          for (const id of ids) rows.push({ row: Number(x.id), ns: x.ns, id, kind: x.kind });
          taken++;
        }
        after = Number(r.rows[taken - 1]!.id);
        let done: OutboxEntry[];
        try {
          done = await this.sync(rows);
        } catch (err) {
          // the rows after this batch are unseen: they may hold sandboxes too
          waiting = taken < r.rows.length || r.rows.length === batch || rows.some((e) => e.kind === 'sandbox');
          this.failed('sweep', err, rows);
          return total;
        }
        const applied = new Set(done.map((e) => e.row));
        if (rows.some((e) => e.kind === 'sandbox' && !applied.has(e.row))) waiting = true;
        total += done.length;
        if (done.length < rows.length || (taken === r.rows.length && r.rows.length < batch)) return total;
      }
    } finally {
      this.pendingSandboxes.set(waiting);
      this.sweeping = false;
    }
  }

  /**
   * Writes not yet applied (lag, for metrics): those of the first LAG_MAX outbox rows
   * (OUTBOX_ROW_WRITES); a backlog of millions of rows is not read on every sample.
   */
  async lag(): Promise<number> {
    const r = await this.pool.query<{ n: string }>(`SELECT coalesce(sum(${OUTBOX_ROW_WRITES}), 0) AS n FROM (SELECT service_ids FROM outbox LIMIT ${LAG_MAX}) o`);
    return Number(r.rows[0]!.n);
  }

  /** Sweep every `intervalMs` (`hold`: sweep()'s). */
  start(intervalMs: number, hold: () => Promise<boolean> = NO_HOLD): void {
    this.timer = setInterval(() => {
      this.sweep(1000, 500, hold).catch((err: unknown) => {
        // reading the outbox failed (PostgreSQL away): seen, and tried again next tick
        countProjectorFailure('sweep');
        this.log.warn({ err: String(err), stage: 'sweep' }, 'outbox sweep failed; will retry');
      });
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.ackTimer) clearTimeout(this.ackTimer);
    this.ackTimer = null;
  }
}
