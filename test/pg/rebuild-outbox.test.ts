// A rebuild drops the index-only outbox rows it covered (reindex/covered.ts): those committed
// before it started, and only those. A row whose transaction was open at the start (an id
// allocated before a committed one's, committed during the rebuild), a row written during it,
// and a row that is not index-only (a lease already in Redis: the rebuild does not cover it)
// stay for the sweeper. Real PostgreSQL and Redis, no server (its sweeper would apply rows
// meanwhile). And the operator's path that left 10,000,000 rows behind: `import
// --no-reindex`, then `reindex`; an import's change to a lease in Redis keeps its row.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import pg from 'pg';
import { rebuildIndex, UNHEARD_GRACE_MS } from '../../src/hot/reindex/rebuild.js';
import { loadConfig } from '../../src/hot/config.js';
import { createRedis } from '../../src/hot/redis/client.js';
import { Keys } from '../../src/hot/domain/keys.js';
import { createPool } from '../../src/hot/pg/pool.js';
import { demoService, prng } from '../../src/admin/seed.js';
import { serviceObject } from '../../src/hot/domain/service.js';
import { freshDatabase } from '../helpers/database.js';
import { baseEnv } from '../helpers/env.js';
import { dropRedisPrefix, seedServices } from '../helpers/test-data.js';
import { cli } from '../helpers/cli.js';

const outboxIds = async (pool: pg.Pool | ReturnType<typeof createPool>) => (await pool.query<{ id: string }>('SELECT id FROM outbox ORDER BY id')).rows.map((r) => Number(r.id));

t.test('a rebuild drops the outbox rows committed before it started, and no other', async (t) => {
  const db = await freshDatabase();
  const pool = createPool(db.url, 4);
  const cfg = loadConfig({ ...baseEnv(), DATABASE_URL: db.url });
  const prefix = 'trbo' + randomBytes(4).toString('hex') + ':';
  const redis = createRedis({ ...cfg, redisKeyPrefix: prefix });
  const open = new pg.Client({ connectionString: db.url });
  await open.connect();
  t.teardown(async () => {
    await open.end().catch(() => undefined);
    redis.disconnect();
    await dropRedisPrefix(cfg.redisUrl, prefix);
    await pool.end();
    await db.drop();
  });
  await seedServices(db.url, 35);
  await pool.query("INSERT INTO outbox (ns, service_id, index_only) SELECT 'production', id, true FROM services WHERE id < 'seed00000035'");
  // a row of many services, as an import writes (migration 0017): it counts as each of them
  await pool.query("INSERT INTO outbox (ns, service_id, service_ids, index_only) SELECT 'production', '', array_agg(id), true FROM services WHERE id < 'seed00000006'");
  // a writer's transaction open across the rebuild's start, with an id older than a row
  // committed before the start
  await open.query('BEGIN');
  const late = Number((await open.query<{ id: string }>("INSERT INTO outbox (ns, service_id, index_only) VALUES ('production', 'seed00000001', true) RETURNING id")).rows[0]!.id);
  await pool.query("INSERT INTO outbox (ns, service_id, index_only) VALUES ('production', 'seed00000035', true)");
  // a write whose apply changes more than the index
  const lease = Number((await pool.query<{ id: string }>("INSERT INTO outbox (ns, service_id) VALUES ('production', 'seed00000003') RETURNING id")).rows[0]!.id);
  const before = await outboxIds(pool);
  t.equal(before.length, 37);
  t.ok(late < Math.max(...before), 'the open one holds an id below a committed one');
  let during = 0;
  const r = await rebuildIndex(pool, redis, new Keys(prefix), cfg.tiers, {
    pageSize: 10,
    onProgress: async (n) => {
      if (n !== 10) return;
      await open.query('COMMIT'); // committed after the start
      during = Number((await pool.query<{ id: string }>("INSERT INTO outbox (ns, service_id, index_only) VALUES ('production', 'seed00000002', true) RETURNING id")).rows[0]!.id);
    },
  });
  t.ok(r, 'the rebuild ran');
  t.ok(during > 0, 'a row was written during the rebuild');
  t.equal(r!.outboxCovered, 40, 'the index-only rows committed before it: dropped, counted in writes (35 rows of one service, one of five)');
  t.same(await outboxIds(pool), [late, lease, during], 'the one open at its start, the one not index-only and the one written during it: kept');
  t.ok(late < lease && lease < during);
  // the next rebuild covers the two index-only ones
  const again = await rebuildIndex(pool, redis, new Keys(prefix), cfg.tiers);
  t.equal(again!.outboxCovered, 2);
  t.equal(again!.graceMs, UNHEARD_GRACE_MS, 'no server subscribed to the switch: the previous generation goes after the short grace');
  t.same(await outboxIds(pool), [lease]);
  await again!.retired;
  await r!.retired;
});

t.test('import --no-reindex, then reindex: the import\'s outbox rows are gone', async (t) => {
  const db = await freshDatabase();
  const pool = createPool(db.url, 2);
  const prefix = 'trbo' + randomBytes(4).toString('hex') + ':';
  t.teardown(async () => {
    await dropRedisPrefix(loadConfig(baseEnv()).redisUrl, prefix);
    await pool.end();
    await db.drop();
  });
  const r = prng(9);
  let lines = '';
  for (let i = 0; i < 120; i++) lines += JSON.stringify({ ...serviceObject({ id: `rbo-${i}`, ns: 'production', seq: 0, ...demoService(r, i), deprecated: false, deprecatedAt: null, replacementSeqs: [] }), replacements: [] }) + '\n';
  const env = { DATABASE_URL: db.url, REDIS_KEY_PREFIX: prefix };
  const im = await cli(['import', '-', '--batch', '50', '--no-reindex'], env, lines);
  t.equal(im.code, 0, im.err);
  t.same((await pool.query<{ n: number }>('SELECT cardinality(service_ids) AS n FROM outbox ORDER BY id')).rows.map((r) => r.n).sort(), [20, 50, 50], 'one outbox row per chunk (in the order they committed), naming its services, left for a rebuild');
  const re = await cli(['reindex'], env);
  t.equal(re.code, 0, re.err);
  t.match(re.err, /index rebuilt: 120 services.*; 120 outbox writes it covered dropped/);
  t.same(await outboxIds(pool), [], 'nothing left for the sweepers to apply again');
  // and an import that rebuilds leaves none either
  const again = await cli(['import', '-', '--batch', '50', '--reindex'], env, lines.replaceAll('"rbo-', '"rbo2-'));
  t.equal(again.code, 0, again.err);
  t.same(await outboxIds(pool), []);
  // leases: new ones are seeded by the rebuild (covered); a change to one already in Redis is not
  const leased = (ttl: number) => lines.split('\n').slice(0, 3).map((l) => JSON.stringify({ ...JSON.parse(l), ttl })).join('\n') + '\n';
  const first = await cli(['import', '-', '--batch', '50', '--reindex'], env, leased(30));
  t.equal(first.code, 0, first.err);
  t.same(await outboxIds(pool), [], 'new leases: seeded by the rebuild, their rows dropped');
  const changed = await cli(['import', '-', '--batch', '50', '--reindex'], env, leased(60));
  t.equal(changed.code, 0, changed.err);
  t.match(changed.err, /3 updated/);
  t.notMatch(changed.err, /index rebuilt/, 'nothing a rebuild covers was written: no rebuild');
  t.same((await pool.query<{ service_id: string; index_only: boolean }>('SELECT service_id, index_only FROM outbox ORDER BY service_id')).rows, ['rbo-0', 'rbo-1', 'rbo-2'].map((service_id) => ({ service_id, index_only: false })), 'leases in Redis changed: their rows stay for the sweeper');
});
