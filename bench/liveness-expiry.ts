// The expiry part of the liveness bench (bench/liveness.ts): N leased services seeded in one
// statement and a rebuild, one sweeper until all are critical, and how late each expiry
// became visible in the index and durable in PostgreSQL; registration loops meanwhile say
// whether the mass expiry starves ordinary writes. Also Redis bytes per lease and the RSS
// this process kept.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { TestServer } from '../test/helpers/server.js';
import { LEASE_SHARDS } from '../src/hot/domain/keys.js';
import { rebuildIndex } from '../src/hot/reindex/rebuild.js';
import { backfillIndexText } from '../src/hot/reindex/index-text.js';
import { LeaseSweeper } from '../src/hot/liveness/sweeper.js';
import { loadAverage, redisCpuS } from './cpu.js';

/** The part's flags (bench/liveness.ts says what each means). */
export interface ExpirySettings {
  /** leased services that stop heartbeating (--services) */
  services: number;
  /** their ttl, seconds (--ttl) */
  ttl: number;
  /** --writers */
  writers: number;
  /** --profile */
  profile: boolean;
  /** --first-page; undefined: the sweeper's default */
  firstPage: number | undefined;
}

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

export async function expiry(s: TestServer, o: ExpirySettings): Promise<void> {
  const { services: N, ttl: TTL, writers: WRITERS, profile: PROFILE, firstPage } = o;
  const redisCpu = () => redisCpuS(s.app.redis);
  const gc = () => (globalThis as { gc?: () => void }).gc?.();
  gc();
  const rss0 = process.memoryUsage().rss;
  const t0 = Date.now();
  await s.app.pg.query(
    `INSERT INTO services (id, ns, endpoint, ttl, health_status, hb_token_hash)
     SELECT 'lv' || lpad(g::text, 14, '0'), 'production', 'https://lv' || g || '.example.com', $2, 'passing', sha256(g::text::bytea)
       FROM generate_series(1, $1) g`,
    [N, TTL],
  );
  // the index text every write path stores with the row (the migrator backfills older rows)
  await backfillIndexText(s.app.pg);
  const r = await rebuildIndex(s.app.pg, s.app.redis, s.app.keys, s.cfg.tiers);
  if (!r) throw new Error('rebuild lock taken');
  await s.app.index.refreshGen();
  const seeded = Date.now();
  let bytes = 0;
  let first = Infinity;
  let last = 0;
  for (let i = 0; i < LEASE_SHARDS; i++) {
    bytes += Number(await s.app.redis.memory('USAGE', s.app.keys.leases(i), 'SAMPLES', '0')) + Number(await s.app.redis.memory('USAGE', s.app.keys.deadlines(i), 'SAMPLES', '0'));
    first = Math.min(first, Number((await s.app.redis.zrange(s.app.keys.deadlines(i), 0, 0, 'WITHSCORES'))[1] ?? Infinity));
    last = Math.max(last, Number((await s.app.redis.zrange(s.app.keys.deadlines(i), -1, -1, 'WITHSCORES'))[1] ?? 0));
  }
  console.log(`seeded ${N} leases (ttl ${TTL} s) in ${seeded - t0} ms (insert + rebuild); deadlines spread over ${last - first} ms; Redis ${(bytes / (N + 1)).toFixed(0)} bytes per leased service (lease hashes + deadline sets)`);
  const lags: number[] = [];
  const durable: number[] = [];
  const passes: { ms: number; flipped: number; late: number }[] = [];
  await s.app.sweeper.stop();
  // registrations through the same server (its event loop also runs the sweeper)
  let wrote = 0;
  const writes = async (until: () => boolean): Promise<number[]> => {
    const lat: number[] = [];
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (!until()) {
          const t = performance.now();
          const r = await s.admin('POST', '/admin/api/services', { endpoint: `https://bench-w${wrote++}.example.com`, capability: 'bench-write' });
          await r.arrayBuffer();
          if (r.status !== 201) throw new Error(`registration during the expiry: ${r.status}`);
          lat.push(performance.now() - t);
        }
      }),
    );
    return lat.sort((a, b) => a - b);
  };
  const idleUntil = Math.min(first - 500, Date.now() + 3000);
  const idle = await writes(() => Date.now() >= idleUntil);
  while (Date.now() < first - 250) await new Promise((ok) => setTimeout(ok, 50));
  const sweeper = new LeaseSweeper(s.app.pg, s.app.redis, s.app.keys, s.app.projector, s.app.log, { intervalMs: 250, lockMs: 1500, batch: s.cfg.leaseSweepBatch, parallel: s.cfg.leaseSweepParallel, now: Date.now, onExpired: (ms) => lags.push(ms), onDurable: (ms) => durable.push(ms), onPass: (p) => passes.push(p), firstPage });
  const cpu0 = { node: process.cpuUsage(), redis: await redisCpu() };
  if (PROFILE) await s.app.pg.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements').then(() => s.app.pg.query('SELECT pg_stat_statements_reset()')).catch(() => undefined);
  // event-loop delay over the window: a pass that starts late because the loop was busy shows here
  const eld = monitorEventLoopDelay({ resolution: 10 });
  eld.enable();
  sweeper.start();
  const deadline = last + 90_000;
  let visibleAt = 0;
  let done = false;
  const busy = writes(() => done);
  while ((lags.length < N || durable.length < N) && Date.now() < deadline) {
    await new Promise((ok) => setTimeout(ok, 50));
    if (!visibleAt && lags.length >= N) {
      visibleAt = Date.now();
      eld.disable();
    }
  }
  const drained = Date.now();
  done = true;
  const during = await busy;
  await sweeper.stop();
  lags.sort((a, b) => a - b);
  durable.sort((a, b) => a - b);
  console.log(`expiries: ${lags.length} visible, ${durable.length} durable of ${N} (LEASE_SWEEP_BATCH ${s.cfg.leaseSweepBatch}, first page ${firstPage ?? 'default'}, LEASE_SWEEP_PARALLEL ${s.cfg.leaseSweepParallel}, ${WRITERS} registration loops)`);
  console.log(`  visible (index: documents, healthy=true) − deadline: p50 ${pct(lags, 50)} ms, p99 ${pct(lags, 99)} ms, max ${lags[lags.length - 1]} ms; all visible ${visibleAt - first} ms after the first deadline`);
  console.log(`  durable (PostgreSQL + change feed, applied) − deadline: p50 ${pct(durable, 50)} ms, p99 ${pct(durable, 99)} ms, max ${durable[durable.length - 1]} ms; all durable ${drained - first} ms after the first deadline (${Math.round(N / ((drained - first) / 1000))} expiries/s)`);
  const ms = (x: number) => x.toFixed(1);
  {
    // per pass that flipped: how long it took, how many it flipped, how late it started (its oldest flip's deadline → its start)
    const q = (k: 'ms' | 'flipped' | 'late') => passes.map((p) => p[k]).sort((a, b) => a - b);
    const f = (k: 'ms' | 'flipped' | 'late') => `p50 ${ms(pct(q(k), 50))}, p99 ${ms(pct(q(k), 99))}, max ${ms(q(k)[passes.length - 1] ?? 0)}`;
    console.log(`  event-loop delay until all visible: p50 ${ms(eld.percentile(50) / 1e6)}, p99 ${ms(eld.percentile(99) / 1e6)}, max ${ms(eld.max / 1e6)} ms`);
    console.log(`  flip passes: ${passes.length}; duration ms ${f('ms')}; leases flipped ${f('flipped')}; start − oldest deadline ms ${f('late')}`);
  }
  if (PROFILE) {
    const node = process.cpuUsage(cpu0.node);
    console.log(`  CPU over the expiry (${((drained - first) / 1000).toFixed(1)} s from the first deadline): this process ${((node.user + node.system) / 1e6).toFixed(1)} s, Redis ${((await redisCpu()) - cpu0.redis).toFixed(1)} s`);
    const top = await s.app.pg
      .query<{ q: string; calls: string; total: number; mean: number }>("SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS q, calls::text, total_exec_time AS total, mean_exec_time AS mean FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time DESC LIMIT 8")
      .catch(() => null);
    for (const r of top?.rows ?? []) console.log(`  pg ${r.total.toFixed(0)} ms in ${r.calls} calls (${r.mean.toFixed(2)} ms each): ${r.q}`);
  }
  console.log(`  registrations before the expiry: ${idle.length}, p50 ${ms(pct(idle, 50))} ms, p99 ${ms(pct(idle, 99))} ms; during it: ${during.length}, p50 ${ms(pct(during, 50))} ms, p99 ${ms(pct(during, 99))} ms, max ${ms(during[during.length - 1] ?? 0)} ms (load ${loadAverage()})`);
  await s.app.projector.flushAcks();
  gc();
  const rss1 = process.memoryUsage().rss;
  console.log(`RSS of the serving process (in-process server, after gc): +${((rss1 - rss0) / 1e6).toFixed(1)} MB for ${N} leased services = ${((rss1 - rss0) / N).toFixed(0)} B each (the lease itself lives in Redis; this is what the process kept)`);
}
