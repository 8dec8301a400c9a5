// The fallback is bounded (contract, "Availability": "bounded concurrency and 503 +
// Retry-After beyond it"): a server without Redis, FALLBACK_PG_CONNECTIONS=2 and
// FALLBACK_MAX_QUERIES=3. The test holds a lock every fallback statement waits for, so the
// statements admitted stay in flight: of 10 distinct searches, exactly 3 are admitted (2 on
// PostgreSQL, 1 waiting for a connection) and 7 answer 503 OVERLOADED with Retry-After at
// once; once the lock goes, the 3 answer 200. A statement held past FALLBACK_STATEMENT_MS is
// cancelled by PostgreSQL: 503 with Retry-After, and the next read is served again.
import t from 'tap';
import pg from 'pg';
import { registerProduction, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const a = await serve(t);
const noRedis = { REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: '', RESULT_CACHE_ENTRIES: '0' };
for (let i = 0; i < 12; i++) await registerProduction(a, { endpoint: `https://b${i}.example.com`, capability: 'bounded' });

/** A client holding an ACCESS EXCLUSIVE lock on services until release(): every read of it waits. */
async function lockServices(): Promise<{ release: () => Promise<void>; waiting: () => Promise<number> }> {
  const c = new pg.Client({ connectionString: a.cfg.databaseUrl });
  await c.connect();
  await c.query('BEGIN');
  await c.query('LOCK TABLE services IN ACCESS EXCLUSIVE MODE');
  const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  return {
    release: async () => {
      await c.query('ROLLBACK');
      await c.end();
    },
    // backends waiting for this one's lock (the fallback's statements)
    waiting: async () => {
      const q = await a.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid]);
      return Number(q.rows[0]!.n);
    },
  };
}

t.test('in flight: a fixed number of statements and connections; one more is 503 at once', async (t) => {
  const b = await serve(t, { on: a, env: { ...noRedis, FALLBACK_PG_CONNECTIONS: '2', FALLBACK_MAX_QUERIES: '3' } });
  t.equal((await b.req('/services?capability=bounded&limit=5')).status, 200, 'served from PostgreSQL before the lock');
  const lock = await lockServices();
  // distinct cursors: no two share a computation (single flight) or a cached page
  const answers = Array.from({ length: 10 }, (_, i) => b.req(`/services?after=${i}&capability=bounded&limit=5`).then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() })));
  const settled: { status: number; retryAfter: string | null; body: string }[] = [];
  for (const p of answers) void p.then((x) => settled.push(x));
  await waitFor('the refusals', async () => settled.length === 7);
  await waitFor('two statements on PostgreSQL', async () => (await lock.waiting()) === 2);
  t.ok(settled.every((x) => x.status === 503 && x.retryAfter === '1'), '7 refused with 503 and Retry-After: 1');
  t.match(JSON.parse(settled[0]!.body), { error: { code: 'OVERLOADED' } });
  t.equal(await lock.waiting(), 2, 'never more than FALLBACK_PG_CONNECTIONS on PostgreSQL');
  await lock.release();
  const all = await Promise.all(answers);
  t.equal(all.filter((x) => x.status === 200).length, 3, 'the 3 admitted answer 200 once PostgreSQL can');
  t.equal((await b.req('/services?after=99&capability=bounded&limit=5')).status, 200, 'and the gate is open again');
  const m = await (await b.metrics()).text();
  t.match(m, /registry_fallback_reads_total\{result="refused"\} 7/, 'the refusals are counted');
});

t.test('a statement past FALLBACK_STATEMENT_MS: 503 with Retry-After, then served again', async (t) => {
  const b = await serve(t, { on: a, env: { ...noRedis, FALLBACK_STATEMENT_MS: '300' } });
  const lock = await lockServices();
  // the lock is held until the statement was cancelled: the answer comes before the release
  const r = await b.req('/services?capability=bounded');
  await lock.release();
  t.equal(r.status, 503, 'cancelled by statement_timeout');
  t.ok(Number(r.headers.get('retry-after')) > 0, '... with Retry-After');
  t.match(await r.json(), { error: { code: 'UNAVAILABLE' } });
  t.equal((await b.req('/services?capability=bounded')).status, 200, 'the next read is served');
});

t.test('no fallback (FALLBACK_PG_CONNECTIONS=0): reads answer 503 and /readyz says not ready', async (t) => {
  const b = await serve(t, { on: a, env: { ...noRedis, FALLBACK_PG_CONNECTIONS: '0' } });
  const r = await b.req('/services?capability=bounded');
  t.equal(r.status, 503);
  t.ok(r.headers.get('retry-after'));
  const ready = await b.req('/readyz');
  t.equal(ready.status, 503);
  t.match(await ready.json(), { status: 'not ready', reads: 'none', degraded: ['redis'] });
});
