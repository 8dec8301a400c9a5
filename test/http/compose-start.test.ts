// Constructing a thread opens nothing; start() opens its parts in buildThread()'s named
// order (compose.ts): no Redis connection and no pool thread before start(), both after.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { buildThread } from '../../src/hot/compose.js';
import { loadConfig } from '../../src/hot/config.js';
import { sleep } from '../helpers/wait.js';
import { baseEnv } from '../helpers/env.js';
import { freshDatabase } from '../helpers/database.js';

t.test('buildThread() opens nothing; start() opens the connections and the pool', async (t) => {
  const db = await freshDatabase();
  t.teardown(() => db.drop());
  const cfg = loadConfig({ ...baseEnv(), DATABASE_URL: db.url, REDIS_KEY_PREFIX: 't' + randomBytes(4).toString('hex') + ':', HEAVY_INTERSECTION_THRESHOLD: '100' });
  const thread = buildThread(cfg, 'test', pino({ level: 'silent' }), { port: 0, host: '127.0.0.1', metrics: false });
  const { redis, pg, intersectPool } = thread.app;
  // give a constructor that connects time to show it
  await sleep(200);
  t.equal(redis.status, 'wait', 'the Redis client has not connected');
  t.equal(pg.totalCount, 0, 'no PostgreSQL connection is open');
  t.equal(intersectPool!.stats().threads, 0, 'the pool has no thread');
  t.throws(() => intersectPool!.piscina, /not started/, 'nor a Piscina');
  await thread.start();
  t.teardown(() => thread.stop({ graceMs: 100 }));
  t.equal(redis.status, 'ready', 'after start() the Redis client is connected');
  t.ok(intersectPool!.stats().threads >= 1, 'and the pool has its thread');
  t.equal(thread.parts.map((p) => p.name).indexOf('redis') < thread.parts.map((p) => p.name).indexOf('intersect-pool'), true, 'in the named order');
});
