// Writes against what PostgreSQL itself commits (issue 22), in one run on one PostgreSQL:
//   pgbench  64 clients, prepared, a transaction of two INSERTs (a ~300-byte row and an
//            outbox row): the database's own rate for a write of that shape
//   w16/w64  POST /admin/api/services, 16 and 64 writers (autocannon connections)
//   wb       POST /admin/api/services/batch, batches of 1,000, 4 writers
// each with p50/p99 latency, the rate as a ratio of pgbench's tps, and the CPU the server
// process and the PostgreSQL server (postmaster and every backend) spent per write, from
// /proc/<pid>/stat deltas. The server is the real one (dist/src/hot/main.js, WORKERS=1,
// fresh database, its own Redis key prefix); the load comes from this process.
//
//   node dist/bench/writes.js [--duration 5] [--rounds 1] [--skip pgbench,w16,w64,wb] [--perf DIR]
//
// Also per write: the CPU of this process (autocannon: is the load generator the bound?)
// and of Redis (REDIS_PIDFILE, default .local/redis/redis.pid). --perf DIR: a system-wide
// `perf record -g` for the length of each w/wb row into DIR/<row>.data (PostgreSQL's
// profile: perf report --comm postgres); BENCH_SERVER_CPU_PROF=DIR: the server's
// --cpu-prof (bench/procs.ts).
//
// DATABASE_URL and REDIS_URL from .local/env.sh. PostgreSQL's pid from its postmaster.pid
// (PG_PIDFILE, default .local/pg/data/postmaster.pid): this machine runs other PostgreSQL
// servers, so its processes are told apart by parent pid. Prints a Markdown table.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { pgCpu } from './pg-cpu.js';
import { topStatements, type Statement } from './pg-statements.js';
import { jiffies, TICK } from './proc-stat.js';
import { freePort, spawnNode, waitFor200 } from './procs.js';

const argv = process.argv.slice(2);
const arg = (name: string, def: string) => {
  const i = argv.indexOf('--' + name);
  return i >= 0 ? argv[i + 1]! : def;
};
const DURATION = Number(arg('duration', '5'));
const ROUNDS = Number(arg('rounds', '1'));
const SKIP = new Set(arg('skip', '').split(',').filter(Boolean));
const PERF = arg('perf', '');
const ADMIN = 'bench-admin-key-0123456789abcdef';

/** a registration of the bench's shape: ~210 bytes of body, a ~300-byte stored document */
const BODY = JSON.stringify({
  endpoint: 'https://svc-bench.example.com/api/v1/orders',
  capabilities: ['cap.0001', 'cap.0042', 'cap.0107'],
  properties: { region: 'eu-west-3', tier: 'gold', owner: 'team-0123', version: 'v12', env: 'prod' },
});
const BATCH = JSON.stringify({ services: Array.from({ length: 1000 }, () => JSON.parse(BODY) as unknown) });
const ROW = 'x'.repeat(300);

interface Row {
  name: string;
  writers: number;
  /** writes (services) per second */
  rate: number;
  p50: number | null;
  p99: number | null;
  nodeMsPerWrite: number | null;
  pgMsPerWrite: number;
  /** this process (the load generator) and Redis, CPU ms per write */
  benchMsPerWrite: number | null;
  redisMsPerWrite: number | null;
  load: string;
  errors: number;
}

function pgbenchBin(): string {
  const dirs = readdirSync('/usr/lib/postgresql').sort().reverse();
  for (const v of dirs) {
    const p = `/usr/lib/postgresql/${v}/bin/pgbench`;
    try {
      readFileSync(p);
      return p;
    } catch {
      /* next */
    }
  }
  throw new Error('pgbench not found under /usr/lib/postgresql/*/bin (Debian package postgresql)');
}

async function runPgbench(url: string, postmaster: number): Promise<Row> {
  const u = new URL(url);
  const dir = mkdtempSync(join(tmpdir(), 'pgb-'));
  const script = join(dir, 'two-inserts.sql');
  writeFileSync(
    script,
    `BEGIN;\nINSERT INTO pgb_services (id, ns, body) VALUES (gen_random_uuid()::text, 'production', '${ROW}');\nINSERT INTO pgb_outbox (ns, service_id) VALUES ('production', 'x');\nEND;\n`,
  );
  const env = { ...process.env, PGHOST: u.hostname, PGPORT: u.port || '5432', PGUSER: decodeURIComponent(u.username) || 'postgres', PGDATABASE: u.pathname.slice(1) };
  const load = loadavg().map((x) => x.toFixed(2)).join(' ');
  const cpu = pgCpu(postmaster);
  let pgSecs: number | null = null;
  const out = await new Promise<string>((resolve, reject) => {
    // -T counts the 64 connections' start-up too (seconds on a loaded machine; its tps
    // leaves that out): the run is long enough to leave DURATION seconds of transactions
    const p = spawn(pgbenchBin(), ['-n', '-M', 'prepared', '-c', '64', '-j', '2', '-T', String(DURATION + 5), '-r', '-f', script], { env });
    let text = '';
    p.stdout.on('data', (d: Buffer) => (text += d.toString()));
    p.stderr.on('data', (d: Buffer) => (text += d.toString()));
    // sample the backends' CPU just before they exit with pgbench
    const t = setTimeout(() => (pgSecs = cpu.stop()), (DURATION + 5) * 1000 - 100);
    p.on('exit', (code) => {
      clearTimeout(t);
      if (pgSecs === null) pgSecs = cpu.stop();
      if (code === 0) resolve(text);
      else reject(new Error(`pgbench exited ${code}: ${text}`));
    });
  });
  const tps = Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? 'NaN');
  if (Number.isNaN(tps)) console.error('pgbench said:\n' + out);
  const lat = Number(/latency average = ([\d.]+) ms/.exec(out)?.[1] ?? 'NaN');
  const done = Number(/number of transactions actually processed: (\d+)/.exec(out)?.[1] ?? '0');
  return { name: 'pgbench', writers: 64, rate: tps, p50: null, p99: null, nodeMsPerWrite: null, pgMsPerWrite: ((pgSecs ?? 0) * 1000) / Math.max(1, done), benchMsPerWrite: null, redisMsPerWrite: null, load: `${load}; avg ${lat} ms`, errors: 0 };
}
async function runCannon(name: string, url: string, writers: number, body: string, perRequest: number, server: number, postmaster: number, redis = 0): Promise<Row> {
  const load = loadavg().map((x) => x.toFixed(2)).join(' ');
  const n0 = jiffies(server);
  const r0 = redis ? jiffies(redis) : 0;
  const b0 = process.cpuUsage();
  const cpu = pgCpu(postmaster);
  const perf = PERF && name !== 'warm' ? spawn('perf', ['record', '-a', '-g', '-F', '499', '-o', join(PERF, `${name}.data`), '--', 'sleep', String(DURATION)], { stdio: 'ignore' }) : null;
  const r = await autocannon({
    url,
    method: 'POST',
    connections: writers,
    pipelining: 1,
    duration: DURATION,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body,
    timeout: 30,
  });
  const pgS = cpu.stop();
  const nodeS = (jiffies(server) - n0) / TICK;
  const redisS = redis ? (jiffies(redis) - r0) / TICK : null;
  const b = process.cpuUsage(b0);
  if (perf) await new Promise((resolve) => (perf.exitCode !== null ? resolve(null) : perf.once('exit', resolve)));
  const ok = r['2xx'];
  const writes = ok * perRequest;
  return {
    name,
    writers,
    rate: writes / DURATION,
    p50: r.latency.p50,
    p99: r.latency.p99,
    nodeMsPerWrite: (nodeS * 1000) / Math.max(1, writes),
    pgMsPerWrite: (pgS * 1000) / Math.max(1, writes),
    benchMsPerWrite: (b.user + b.system) / 1000 / Math.max(1, writes),
    redisMsPerWrite: redisS === null ? null : (redisS * 1000) / Math.max(1, writes),
    load,
    errors: r.non2xx + r.errors + r.timeouts,
  };
}

async function main(): Promise<void> {
  const base = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!base || !redisUrl) throw new Error('DATABASE_URL and REDIS_URL must be set (source .local/env.sh)');
  const pidfile = process.env.PG_PIDFILE ?? '.local/pg/data/postmaster.pid';
  const postmaster = Number(readFileSync(pidfile, 'utf8').split('\n', 1)[0]);
  let redisPid = 0;
  try {
    redisPid = Number(readFileSync(process.env.REDIS_PIDFILE ?? '.local/redis/redis.pid', 'utf8').trim());
  } catch {
    /* not ours to measure */
  }
  const db = 'bench_writes_' + randomBytes(4).toString('hex');
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${db}`);
  const u = new URL(base);
  u.pathname = '/' + db;
  const url = u.toString();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('CREATE TABLE pgb_services (id text PRIMARY KEY, ns text NOT NULL, body text NOT NULL)');
  await c.query('CREATE TABLE pgb_outbox (id bigserial PRIMARY KEY, ns text NOT NULL, service_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
  // PostgreSQL's time per statement of the w row, when pg_stat_statements is loaded (scripts/services.sh)
  // (the extension can be created where it is installed but not preloaded: then its first
  // call fails, and the bench goes on without the statement table)
  const pgss = await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements').then(() => c.query('SELECT pg_stat_statements_reset()')).then(
    () => c,
    async () => {
      await c.end();
      return null;
    },
  );
  const port = await freePort();
  const server = spawnNode(
    'dist/src/hot/main.js',
    [],
    { PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: '0', WORKERS: '1', ADMIN_API_KEY: ADMIN, DATABASE_URL: url, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `bw${randomBytes(3).toString('hex')}:`, LOG_LEVEL: 'warn' },
    null,
    join(tmpdir(), `bench-writes-${port}.log`),
  );
  const rows: Row[] = [];
  const statements: Statement[] = [];
  try {
    await waitFor200(`http://127.0.0.1:${port}/readyz`, server, 60_000);
    const pid = server.proc.pid!;
    // warm-up: prepared statements, connections, JIT
    await runCannon('warm', `http://127.0.0.1:${port}/admin/api/services`, 16, BODY, 1, pid, postmaster);
    for (let round = 0; round < ROUNDS; round++) {
      // alternated in one run: the ratio is what this shared machine allows at that moment
      if (!SKIP.has('pgbench')) rows.push(await runPgbench(url, postmaster));
      if (!SKIP.has('w16')) rows.push(await runCannon('w16', `http://127.0.0.1:${port}/admin/api/services`, 16, BODY, 1, pid, postmaster, redisPid));
      if (!SKIP.has('w64')) {
        if (pgss) await pgss.query('SELECT pg_stat_statements_reset()');
        rows.push(await runCannon('w', `http://127.0.0.1:${port}/admin/api/services`, 64, BODY, 1, pid, postmaster, redisPid));
        if (pgss) statements.push(...(await topStatements(pgss, db)));
      }
      if (!SKIP.has('wb')) rows.push(await runCannon('wb', `http://127.0.0.1:${port}/admin/api/services/batch`, 4, BATCH, 1000, pid, postmaster, redisPid));
    }
  } finally {
    await pgss?.end();
    await server.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
  const pgb = rows.filter((r) => r.name === 'pgbench');
  const tps = pgb.length ? pgb.reduce((a, r) => a + r.rate, 0) / pgb.length : NaN;
  const f = (x: number | null, d = 1) => (x === null || Number.isNaN(x) ? '–' : x.toFixed(d));
  console.log(`\nwrites bench: ${DURATION} s per row, ${ROUNDS} round(s), ${new Date().toISOString()}, git ${execFileSync('git', ['rev-parse', '--short', 'HEAD']).toString().trim()}\n`);
  console.log('| row | writers | writes/s | × pgbench tps | p50 ms | p99 ms | Node CPU ms/write | PostgreSQL CPU ms/write | bench (autocannon) CPU ms/write | Redis CPU ms/write | non-2xx+errors | load average at start |');
  console.log('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|');
  for (const r of rows) {
    console.log(`| ${r.name} | ${r.writers} | ${f(r.rate, 0)} | ${f(r.rate / tps, 3)} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.nodeMsPerWrite, 3)} | ${f(r.pgMsPerWrite, 3)} | ${f(r.benchMsPerWrite, 3)} | ${f(r.redisMsPerWrite, 3)} | ${r.errors} | ${r.load} |`);
  }
  if (statements.length) {
    console.log('\nPostgreSQL statements of the w row (pg_stat_statements, top by total time):\n');
    console.log('| statement | calls | total ms | mean ms | rows/call |');
    console.log('|---|--:|--:|--:|--:|');
    for (const x of statements) console.log(`| ${x.query} | ${x.calls} | ${f(x.total, 0)} | ${f(x.mean, 3)} | ${f(x.rows / x.calls, 1)} |`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
