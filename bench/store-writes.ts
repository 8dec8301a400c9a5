// The PostgreSQL cost of the write path's store calls alone (no HTTP, no Redis): N
// registrations then N patches of the bench's service shape, one at a time, through
// createService()/patchService() into a fresh database on the server of DATABASE_URL
// (dropped afterwards). Prints the latency per write (p50/p99/mean, ms) and the CPU of the
// PostgreSQL backend per write (from /proc, Linux), so that a change of what a write
// stores can be costed. Run under the bench lock:
//
//   flock /tmp/bench.lock node dist/bench/store-writes.js [--writes 3000]
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { loadConfig } from '../src/hot/config.js';
import { PRODUCTION } from '../src/hot/domain/keys.js';
import { migrate } from '../src/hot/migrate.js';
import { createPool } from '../src/hot/pg/pool.js';
import { patchService } from '../src/hot/writes/patches.js';
import { createService } from '../src/hot/writes/register.js';
import { QUICK, serviceGenerator } from './dataset.js';
import { databaseUrl } from './load.js';
import { procStat, TICK } from './proc-stat.js';

/** CPU seconds of the backend; it must be there (a backend gone would read as none used). */
function cpuOf(pid: number): number {
  const st = procStat(pid);
  if (!st) throw new Error(`/proc/${pid}/stat: the PostgreSQL backend is gone`);
  return st.jiffies / TICK;
}

function stats(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!.toFixed(2);
  return `p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, mean ${(s.reduce((a, b) => a + b, 0) / s.length).toFixed(2)} ms`;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const w = argv.indexOf('--writes');
  const n = w >= 0 ? Number(argv[w + 1]) : 3000;
  const base = loadConfig().databaseUrl;
  const db = 'store_writes_' + randomBytes(4).toString('hex');
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${db}`);
  // one connection: its backend is the one whose CPU is counted
  const pool = createPool(databaseUrl(base, db), 1);
  try {
    await migrate(pool);
    const pid = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const next = serviceGenerator(QUICK);
    const ids: string[] = [];
    for (const kind of ['register', 'patch'] as const) {
      const ms: number[] = [];
      const cpu0 = cpuOf(pid);
      for (let i = 0; i < n; i++) {
        const g = next(`w${i}`);
        const t0 = process.hrtime.bigint();
        if (kind === 'register') {
          const r = await createService(pool, PRODUCTION, { endpoint: g.endpoint, capabilities: g.capabilities, properties: Object.fromEntries(g.properties), iot: g.iot, deprecated: false, locked: false, sunsetDate: null });
          ids.push(r.id);
        } else await patchService(pool, PRODUCTION, ids[i]!, { endpoint: g.endpoint, properties: Object.fromEntries(g.properties), deprecated: i % 2 === 0 });
        ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      const cpu = cpuOf(pid) - cpu0;
      console.log(`${n} × ${kind}: ${stats(ms)}; PostgreSQL backend CPU ${((cpu / n) * 1e6).toFixed(0)} µs per write`);
    }
    const size = await pool.query<{ b: string }>("SELECT pg_table_size('services') AS b");
    console.log(`services table: ${(Number(size.rows[0]!.b) / n).toFixed(0)} bytes per service (after the patches, dead versions included)`);
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
