// Times one index rebuild of a generated data set and says where its CPU went: the
// rebuilding Node process (this one), the Redis server and PostgreSQL (every process of
// the data set's database), in CPU seconds from /proc/<pid>/stat.
// Builds into a key prefix of its own (`rbcpu<name>:`) and drops it afterwards, so the
// bench's index of the same data set stays valid. Linux only (/proc).
//
//   node dist/bench/rebuild-cpu.js --services 200000 [--keep]
//   node --cpu-prof --cpu-prof-dir=.local/prof dist/bench/rebuild-cpu.js --services 200000
import pg from 'pg';
import { loadConfig } from '../src/hot/config.js';
import { Keys } from '../src/hot/domain/keys.js';
import { dropGeneration, rebuildIndex } from '../src/hot/reindex/rebuild.js';
import { createRedis } from '../src/hot/redis/client.js';
import { createPool } from '../src/hot/pg/pool.js';
import { sizedSpec, QUICK } from './dataset.js';
import { databaseUrl } from './load.js';
import { BENCH_TIERS } from './generate.js';
import { loadAverage } from './cpu.js';
import { jiffies, TICK } from './proc-stat.js';

/** CPU seconds of `pid` (utime + stime, all its threads); 0 when it is gone. */
const cpuOf = (pid: number): number => jiffies(pid) / TICK;

/**
 * CPU of the PostgreSQL backends serving the data set's database (the rebuild is all that
 * uses it), found in pg_stat_activity; a backend ends with its connection, so the last
 * value seen of every pid counts.
 */
class PgCpu {
  private readonly start = new Map<number, number>();
  private readonly last = new Map<number, number>();
  constructor(
    private readonly admin: pg.Client,
    private readonly db: string,
  ) {}
  async sample(): Promise<void> {
    const r = await this.admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [this.db]);
    for (const { pid } of r.rows) {
      const v = cpuOf(pid);
      if (!this.start.has(pid)) this.start.set(pid, v);
      if (v) this.last.set(pid, v);
    }
  }
  total(): number {
    let s = 0;
    for (const [p, v] of this.last) s += v - (this.start.get(p) ?? 0);
    return s;
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const n = argv.indexOf('--services');
  const spec = argv.includes('--quick') ? QUICK : sizedSpec(n >= 0 ? Number(argv[n + 1]) : 100_000);
  const base = loadConfig();
  const db = spec.name === 'full' ? 'registry_bench' : spec.name === 'quick' ? 'registry_bench_quick' : 'registry_bench_' + spec.name;
  const cfg = loadConfig({ DATABASE_URL: databaseUrl(base.databaseUrl, db), REDIS_URL: base.redisUrl, REDIS_KEY_PREFIX: `rbcpu${spec.name}:`, TIERS: BENCH_TIERS });
  const pool = createPool(cfg.databaseUrl, 4, { statementMs: 0, queryMs: 0 });
  const redis = createRedis(cfg);
  const keys = new Keys(cfg.redisKeyPrefix);
  try {
    const info = await redis.info('server');
    const redisPid = Number(/process_id:(\d+)/.exec(info)![1]);
    const admin = new pg.Client({ connectionString: base.databaseUrl });
    await admin.connect();
    // drop what an interrupted earlier run left
    await redis.del(keys.rebuildLock(), keys.building());
    const old = await redis.get(keys.gen());
    if (old) await dropGeneration(redis, keys, old);
    await redis.del(keys.gen());
    // the pool's backends exist before the clock starts: their CPU so far is not counted
    await Promise.all([1, 2, 3, 4].map(() => pool.query('SELECT 1')));
    const pgCpu = new PgCpu(admin, db);
    await pgCpu.sample();
    const r0 = cpuOf(redisPid);
    const self0 = process.cpuUsage();
    const timer = setInterval(() => void pgCpu.sample().catch(() => undefined), 500);
    const r = await rebuildIndex(pool, redis, keys, cfg.tiers);
    clearInterval(timer);
    await pgCpu.sample();
    await admin.end();
    if (!r) throw new Error('rebuild lock held');
    const self = process.cpuUsage(self0);
    const row = {
      services: r.services,
      wallS: r.ms / 1000,
      nodeCpuS: (self.user + self.system) / 1e6,
      redisCpuS: cpuOf(redisPid) - r0,
      pgCpuS: pgCpu.total(),
      load: loadAverage(),
    };
    console.log(JSON.stringify(row));
    console.log(
      `${r.services} services: ${row.wallS.toFixed(1)} s wall; CPU node ${row.nodeCpuS.toFixed(1)} s (${((row.nodeCpuS / r.services) * 1e6).toFixed(1)} µs/svc), ` +
        `redis ${row.redisCpuS.toFixed(1)} s, postgres ${row.pgCpuS.toFixed(1)} s; load ${row.load}`,
    );
    if (!argv.includes('--keep')) {
      await r.retired;
      await dropGeneration(redis, keys, r.gen);
      await redis.del(keys.gen());
    }
  } finally {
    redis.disconnect();
    await pool.end();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
