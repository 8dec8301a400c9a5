// A rebuild at start-up (a Redis without the index): the built server opens its port before
// the rebuild is complete and answers reads from PostgreSQL meanwhile, /readyz 200 saying so;
// once the index is live, the same page comes from it with the same bytes and ETag. The test
// holds the rebuild back with a lock on `replacements` (its page query reads that table; the
// fallback's search does not), so "during the rebuild" is a state, not a moment.
import t from 'tap';
import pg from 'pg';
import { serveProcess } from '../helpers/server-process.js';
import { seedServices, storeIndexText } from '../helpers/test-data.js';
import { waitFor } from '../helpers/wait.js';
import { freshDatabase } from '../helpers/database.js';

t.test('a start-up rebuild: reads from PostgreSQL until it is complete, then the same pages from the index', async (t) => {
  const db = await freshDatabase();
  await seedServices(db.url, 300);
  await storeIndexText(db.url); // the index text the migrator stores for rows seeded by hand
  const lock = new pg.Client({ connectionString: db.url });
  await lock.connect();
  await lock.query('BEGIN');
  await lock.query('LOCK TABLE replacements IN ACCESS EXCLUSIVE MODE');
  t.teardown(async () => {
    await lock.end().catch(() => undefined);
    await db.drop();
  });
  const server = await serveProcess(t, { databaseUrl: db.url, stop: 'SIGKILL', env: { REDIS_CLUSTER_NODES: '', LOG_LEVEL: 'warn' } });
  const readyz = async () => {
    const r = await fetch(server.url + '/readyz');
    return { status: r.status, body: (await r.json()) as { status: string; reads: string; index: boolean } };
  };
  const page = async () => {
    const r = await fetch(server.url + '/services?capability=seeded&limit=1000');
    return { status: r.status, etag: r.headers.get('etag'), body: await r.text() };
  };

  t.match(await readyz(), { status: 200, body: { status: 'degraded', reads: 'postgres', index: false } }, 'listening before the rebuild is complete: 200, reads from PostgreSQL');
  const during = await page();
  t.equal(during.status, 200, 'a search during the rebuild answers 200');
  const ids = (JSON.parse(during.body) as { id: string }[]).map((s) => s.id);
  const expected = (await lock.query<{ id: string }>("SELECT id FROM services WHERE ns = 'production' ORDER BY seq")).rows.map((r) => r.id);
  t.same(ids, expected, '... with every service, in order');
  t.match(await readyz(), { body: { reads: 'postgres', index: false } }, 'the rebuild is still held back');

  await lock.query('ROLLBACK');
  await waitFor('the index is live', async () => (await readyz()).body.reads === 'index', 60_000, 50);
  const after = await page();
  t.equal(after.body, during.body, 'the index answers the same bytes');
  t.equal(after.etag, during.etag, '... and the same ETag');
  t.ok(server.logs.some((l) => l.includes('reads answer from PostgreSQL (the index is being rebuilt)')), 'the log said where reads came from');
});
