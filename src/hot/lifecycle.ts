// Background duties of a serving thread: learn the live index generation (and rebuild the
// index from PostgreSQL when Redis has none), watch PostgreSQL, sweep the outbox, and
// derive readiness from all of it.
import { rebuildIndex } from '../admin/reindex.js';
import type { App } from './app.js';

export interface Watchers {
  stop(): void;
  /** one round of checks now (tests and start-up use it) */
  tick(): Promise<void>;
}

export function startWatchers(app: App, intervalMs = 500): Watchers {
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      try {
        await app.pool.query('SELECT 1');
        app.state.pgUp = true;
      } catch {
        app.state.pgUp = false;
      }
      let gen: string | null = null;
      try {
        gen = await app.index.refreshGen();
        app.state.redisUp = true;
      } catch {
        app.state.redisUp = false;
      }
      if (app.state.redisUp && !gen && app.state.pgUp && !app.state.rebuilding) {
        app.state.ready = false;
        app.state.rebuilding = true;
        try {
          const r = await rebuildIndex(app.pool, app.redis, app.keys, app.cfg.tiers);
          if (r) app.log.info({ gen: r.gen, services: r.services, sandboxes: r.sandboxes, ms: r.ms }, 'index rebuilt from PostgreSQL');
          gen = await app.index.refreshGen();
        } catch (err) {
          app.log.error({ err: String(err) }, 'index rebuild failed; will retry');
        } finally {
          app.state.rebuilding = false;
        }
      }
      // readiness: PostgreSQL answers and a complete index generation is live
      app.state.ready = !app.state.shuttingDown && app.state.pgUp && app.state.redisUp && !!gen;
    } finally {
      running = false;
    }
  };
  const t = setInterval(() => void tick(), intervalMs);
  t.unref();
  app.projector.start(app.cfg.outboxSweepMs);
  return {
    stop() {
      clearInterval(t);
      app.projector.stop();
    },
    tick,
  };
}
