// Upgrading to another index format (INDEX_FORMAT in src/hot/domain/keys.ts): a server that
// finds a live generation built in the old format (sorted sets, marker `ver`) must not read
// it as its own. It treats it as not indexed, rebuilds from PostgreSQL as after a loss of
// Redis, serves PostgreSQL's answers, and drops the old generation's keys.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Keys, PRODUCTION } from '../../src/hot/domain/keys.js';
import { serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { seedServices, suiteRedis } from '../helpers/test-data.js';
import { allPages } from '../helpers/checks.js';
import { freshDatabase } from '../helpers/database.js';

t.test('a live generation of the old format is rebuilt, never read', async (t) => {
  const db = await freshDatabase();
  const prefix = 'tfmt' + randomBytes(4).toString('hex') + ':';
  const keys = new Keys(prefix);
  t.teardown(() => db.drop());
  const redis = suiteRedis(t, { REDIS_KEY_PREFIX: prefix });
  await seedServices(db.url, 30);
  const old = 'old0000000';
  const base = keys.base(PRODUCTION, old);
  // what a format-1 server left: the live pointer, its marker `ver`, sorted sets, a document
  // PostgreSQL does not have
  await redis.set(keys.gen(), old);
  await redis.set(base + 'ver', '9');
  for (const set of ['all', 'c:seeded']) await redis.zadd(base + set, 1, '1', 2, '2');
  await redis.hset(base + 'docs', '1', '{"id":"stale-1"}', '2', '{"id":"stale-2"}');
  await redis.hset(base + 'ids', 'stale-1', '1', 'stale-2', '2');

  const s = await serve(t, { databaseUrl: db.url, redisKeyPrefix: prefix });
  await waitFor('ready', async () => (await s.req('/readyz')).status === 200, 60_000, 50);
  const gen = await redis.get(keys.gen());
  t.not(gen, old, 'a new generation is live');
  const { pages } = await allPages(s, '/services?capability=seeded&limit=7');
  const ids = pages.flat();
  t.equal(ids.length, 30, 'every service of PostgreSQL, once');
  t.notOk(ids.some((id) => id.startsWith('stale')), 'nothing of the old generation is served');
  t.equal((await s.req('/services/stale-1')).status, 404);
  // dropped by a SCAN of the whole keyspace: slow on a big shared Redis, hence the long wait
  const oldKeys = ['ver', 'all', 'c:seeded', 'docs', 'ids'].map((k) => base + k);
  await waitFor('the old generation is dropped', async () => (await redis.exists(...oldKeys)) === 0, 120_000, 200);
  t.equal(await redis.type(keys.ver(PRODUCTION, gen!)), 'string', 'the new generation has its marker of this format');
  t.equal(await redis.type(keys.all(PRODUCTION, gen!)), 'hash', 'and bucketed sets');
});
