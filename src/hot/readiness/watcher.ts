// The readiness watcher of a serving thread: learn the live index generation (and rebuild
// the index from PostgreSQL when Redis has none, or lost it), watch PostgreSQL, and derive
// readiness from both (the outbox sweeper is a part of its own, see compose.ts). The two
// probes run in parallel, each with its own time limit, so one sick server never freezes
// the view of the other; a rebuild runs beside the probes, so a long one does not freeze
// readiness either.
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { type Keys, PRODUCTION } from '../domain/keys.js';
import type { Pool } from '../pg/pool.js';
import type { RedisClient } from '../redis/client.js';
import type { AppState } from './state.js';
import { dropGeneration, dropStaleBuild, raiseCapabilityTombstones, rebuildIndex } from '../reindex/index.js';
import { ifEqualReply } from '../redis/replies.js';
import { lastOutboxRow, outboxWaitsUpTo } from '../registry/index.js';
import { reportReadSource } from './metrics.js';
import type { ReadSource } from './state.js';

/** What the readiness watcher needs of its thread. */
export interface ReadinessContext {
  cfg: Config;
  pg: Pool;
  redis: RedisClient;
  keys: Keys;
  /** the index's live generation, as this thread knows it (search/live-index.ts) */
  index: { readonly gen: string | null; refreshGen(): Promise<string | null> };
  /** the lease clock a rebuild reseeds leases with */
  liveness: { now: () => number };
  log: Logger;
  state: AppState;
}

export interface Watchers {
  /**
   * start the periodic checks; resolves after the first round and the rebuild it started —
   * or, with `openDuringRebuild` (a fallback answers reads meanwhile), without waiting for it
   */
  start(opts?: { openDuringRebuild?: boolean }): Promise<void>;
  stop(): void;
  /** one round of checks now, and the rebuild it starts (tests and start-up use it) */
  tick(): Promise<void>;
}

/** a probe that takes longer than this counts as a failure */
const PROBE_MS = 2000;

/** the longest the return to the index waits for the raise of the capability tombstones */
const RAISE_MS = 10_000;
/**
 * After Redis came back, how long the Consul catalog may stay on PostgreSQL waiting for the
 * outbox to apply the outage's writes (beyond it: one step back of an index, logged)
 */
const CATCH_UP_MS = 60_000;

class NoAnswer extends Error {}

/** A return of the Consul catalog to the index under way: the answers it covers, the outbox's last row then, its deadline. */
interface CatchUp {
  through: number;
  upTo: string | null;
  until: number;
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      t = setTimeout(() => reject(new NoAnswer(`${what} did not answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(t));
}

/**
 * Does the live generation still have its keys? `null` when Redis did not say in time: the
 * caller then goes by the watchers' view (app.state), which has its own, longer bound.
 */
async function indexAlive(app: ReadinessContext, gen: string): Promise<boolean | null> {
  try {
    return (await within(app.redis.exists(app.keys.ver(PRODUCTION, gen)), PROBE_MS / 2, 'Redis')) === 1;
  } catch (e) {
    return e instanceof NoAnswer ? null : false;
  }
}

/**
 * The index check behind GET /readyz, shared: one Redis EXISTS per `reuseMs` per thread,
 * however many probes ask (a flood of /readyz is not a flood of Redis commands; callers
 * meanwhile get the answer under way). A check that finds the marker gone, or Redis
 * refusing, reads "not ready" at once (an index emptied since the last watcher round); a
 * check that Redis is merely slow to answer defers to the watchers (`app.state.redisUp`):
 * one late answer on a loaded machine does not take the node out of its load balancer.
 */
export function readinessProbe(app: ReadinessContext, reuseMs = 100, now: () => number = () => performance.now()): () => Promise<boolean> {
  let last: { at: number; gen: string; alive: Promise<boolean | null> } | null = null;
  return async () => {
    const gen = app.index.gen;
    if (!gen) return false;
    const t = now();
    if (!last || last.gen !== gen || t - last.at >= reuseMs) last = { at: t, gen, alive: indexAlive(app, gen) };
    return (await last.alive) ?? app.state.redisUp;
  };
}

export function createWatchers(app: ReadinessContext, intervalMs = 500): Watchers {
  const s = app.state;
  /** the round under way; callers meanwhile share it */
  let current: Promise<void> | null = null;
  let stopped = false;
  /** PostgreSQL answered at least once: from then on its outage degrades writes only */
  let pgSeen = false;
  let rebuild: Promise<void> | null = null;

  const probePg = async (): Promise<boolean> => {
    try {
      await within(app.pg.query('SELECT 1'), PROBE_MS, 'PostgreSQL');
      return true;
    } catch {
      return false;
    }
  };

  /**
   * The live generation, or null when the index is missing or was emptied under us (its
   * production marker is gone: a FLUSHALL, a restart, an eviction). Throws while Redis is
   * unreachable.
   */
  const probeIndex = async (): Promise<string | null> => {
    const gen = await within(app.index.refreshGen(), PROBE_MS, 'Redis');
    if (!gen) return null;
    if ((await within(app.redis.exists(app.keys.ver(PRODUCTION, gen)), PROBE_MS, 'Redis')) === 1) return gen;
    // broken: drop the live pointer so that a rebuild starts — unless a rebuild switched to
    // a new generation meanwhile (and is dropping the old one we just looked at)
    if (ifEqualReply(await app.redis.delIfEqual(app.keys.gen(), gen), 'del-if-equal')) {
      app.log.warn({ gen }, 'the live index generation lost its keys (Redis emptied?) or is of another index format or member rule; rebuilding');
      // what is left of it (all of it when it was built in another format: INDEX_FORMAT in
      // keys.ts) is dropped like a retired generation; nothing reads it any more
      void dropGeneration(app.redis, app.keys, gen).catch(() => undefined);
    }
    // none now (the pointer just dropped), or the one a rebuild elsewhere switched to
    return app.index.refreshGen();
  };

  /** one log line and one count per change of where reads come from (never one per request) */
  let reads: ReadSource = 'none';
  const noteReads = () => {
    const now = s.reads;
    if (now === reads) return;
    // (starting on the index is no news; starting anywhere else is)
    if (reads !== 'none' || now !== 'index') {
      const why = !s.redisUp ? 'Redis is unreachable' : s.rebuilding ? 'the index is being rebuilt' : 'no index is live';
      if (now === 'index') app.log.warn('reads answer from the index again');
      else if (now === 'postgres') app.log.warn(`reads answer from PostgreSQL (${why}): slower, bounded by FALLBACK_MAX_QUERIES; /readyz reports "degraded"`);
      else app.log.warn(s.shuttingDown ? 'reads end: draining' : `reads answer 503: ${why} and ${s.fallback ? 'PostgreSQL is unreachable' : 'no fallback is configured'}`);
    }
    reportReadSource(now, reads !== 'none' || now !== 'index');
    reads = now;
  };

  const startRebuild = (): Promise<void> => {
    s.rebuild(true);
    noteReads();
    const p = (async () => {
      try {
        app.log.warn(`no search index in Redis; rebuilding it from PostgreSQL (until it is complete, ${s.fallback ? 'the fallback answers reads' : 'searches answer 503'})`);
        const r = await rebuildIndex(app.pg, app.redis, app.keys, app.cfg.tiers, { now: app.liveness.now });
        if (r) {
          app.log.info({ gen: r.gen, services: r.services, sandboxes: r.sandboxes, ms: r.ms }, 'index rebuilt from PostgreSQL');
          // the rebuild made its generation live in Redis (reg:gen): read it from there
          await app.index.refreshGen().catch(() => null); // (else the next round reads it)
        }
      } catch (err) {
        app.log.error({ err: String(err) }, 'index rebuild failed; will retry');
      } finally {
        s.rebuild(false);
        rebuild = null;
      }
    })();
    rebuild = p;
    return p;
  };

  /**
   * Redis back with its data: its capability tombstones raised to the revisions the fallback's
   * Consul answers counted (docs/decisions/consul-index.md) before reads return to it; a pass
   * longer than RAISE_MS goes on alone. A failure costs the Consul clients one step back of
   * the index, not the return. Then the catalog waits for the outbox (caughtUp).
   */
  const raiseTombstones = async (gen: string) => {
    // the catalog's answers from PostgreSQL so far, and the outbox rows of the outage's
    // writes: the pass reads revisions after those answers
    const through = s.catalogAnswers;
    const upTo = await lastRow();
    try {
      await within(raiseCapabilityTombstones(app.pg, app.redis, app.keys, gen), RAISE_MS, 'the raise of the capability tombstones');
    } catch (err) {
      app.log.warn({ err: String(err) }, "could not raise the index's capability tombstones: a Consul index may step back once");
    }
    catchingUp = { through, upTo, until: Date.now() + CATCH_UP_MS };
  };

  /**
   * The catalog returns to the index once the outbox has applied the writes made while it was
   * away (rows up to the one last written then; an import's index-only rows aside), or after
   * CATCH_UP_MS (given up: the catalog is not kept on PostgreSQL for good).
   */
  let catchingUp: CatchUp | null = null;
  const lastRow = () => within(lastOutboxRow(app.pg), PROBE_MS, 'PostgreSQL').catch(() => null);
  const caughtUp = async (c: CatchUp) => {
    // (not read at the return: a later last row waits for a few more, never for fewer)
    c.upTo ??= await lastRow();
    const left = c.upTo === null || (await within(outboxWaitsUpTo(app.pg, c.upTo), PROBE_MS, 'PostgreSQL').catch(() => true));
    if (left && Date.now() < c.until) return;
    if (left) app.log.warn("the outbox has not applied the writes made while the index was away: the Consul catalog answers from the index again, and an index may step back once");
    s.catalogCaughtUp(c.through);
    if (catchingUp === c) catchingUp = null;
  };

  const round = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    current ??= oneRound().finally(() => (current = null));
    return current;
  };

  let first = true;
  const oneRound = async () => {
    const [pgUp, idx] = await Promise.all([
      probePg(),
      probeIndex().then(
        (gen) => ({ up: true, gen }),
        (err: unknown) => {
          // an open connection that answers nothing (a partition) holds every command until
          // its timeout: drop it; while it reconnects, commands fail at once (503)
          if (err instanceof NoAnswer) app.redis.disconnect(true);
          return { up: false, gen: app.index.gen };
        },
      ),
    ]);
    if (!first && pgUp !== s.pgUp) app.log.warn(pgUp ? 'PostgreSQL is reachable again' : 'PostgreSQL is unreachable: writes answer 503, reads go on from Redis');
    if (!first && idx.up !== s.redisUp) app.log.warn(idx.up ? 'Redis is reachable again' : 'Redis is unreachable: writes go on (the outbox keeps them for the index)');
    // Redis reachable again with a live generation (it kept its data) after reads went to
    // PostgreSQL: seen by an earlier round, or only by the Consul catalog (a failure between
    // two rounds sent it to PostgreSQL, which keeps it until the index caught up)
    const back = !first && s.fallback && (!s.redisUp || (s.catalogCatchingUp && !catchingUp)) && idx.up && idx.gen !== null && pgUp;
    first = false;
    pgSeen ||= pgUp;
    if (idx.up && !idx.gen && pgUp && !rebuild && !stopped) void startRebuild().then(round);
    if (idx.up && !rebuild) {
      void dropStaleBuild(app.redis, app.keys).then(
        (gen) => gen && app.log.warn({ gen }, 'dropped the partial index of a rebuild that died'),
        () => undefined,
      );
    }
    if (back) await raiseTombstones(idx.gen!);
    if (catchingUp && idx.up && pgUp) await caughtUp(catchingUp);
    // ready: a complete index generation is live in a reachable Redis, and PostgreSQL has
    // answered (since start-up: a later PostgreSQL outage degrades writes, not reads)
    s.observed({ pgUp, redisUp: idx.up, indexLive: !!idx.gen, pgSeen });
    noteReads();
  };

  let t: NodeJS.Timeout | null = null;
  const watchers: Watchers = {
    async start(opts = {}) {
      t ??= setInterval(() => void round(), intervalMs);
      t.unref();
      if (opts.openDuringRebuild) await round();
      else await watchers.tick();
    },
    stop() {
      stopped = true;
      if (t) clearInterval(t);
    },
    async tick() {
      await round();
      if (rebuild) await rebuild;
      // a round begun before the rebuild ended may have seen no index yet: look again
      while (current) await current;
      await round();
    },
  };
  return watchers;
}
