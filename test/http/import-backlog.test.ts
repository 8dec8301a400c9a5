// `registry import` writes PostgreSQL only; a running server indexes what it wrote. A backlog
// that is large against the registry is held from the sweeper while the import still writes,
// then covered by one rebuild once the import has been quiet for QUIET_MS (reindex/backlog.ts);
// a small one is swept as before. Real PostgreSQL, Redis, server thread and CLI.
import t, { type Test } from 'tap';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { bulkUpsert, type BulkRow } from '../../src/hot/writes/index.js';
import { ImportBacklog } from '../../src/hot/reindex/index.js';
import { QUIET_MS, verdict } from '../../src/hot/reindex/backlog.js';
import { cli } from '../helpers/cli.js';
import { applyHook, registerProduction, serve, type StartOptions, type TestServer } from '../helpers/server.js';
import { outboxDrained, sleep } from '../helpers/wait.js';

const rows = (from: number, n: number): BulkRow[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `bk-${String(from + i).padStart(5, '0')}`,
    input: { endpoint: `https://bk${from + i}.example.com/`, capabilities: ['backlog'], properties: { batch: String(from) }, iot: null, deprecated: false, locked: false, sunsetDate: null },
  }));

/** A server with one production service registered and applied, and the generation it serves. */
async function started(t: Test, opts: StartOptions): Promise<{ s: TestServer; gen0: string | null }> {
  const s = await serve(t, opts);
  await registerProduction(s, { endpoint: 'https://first.example.com/', capabilities: ['backlog'] });
  await s.app.projector.flushAcks();
  return { s, gen0: await s.app.index.refreshGen() };
}

const silent = { info: () => undefined, warn: () => undefined } as unknown as ConstructorParameters<typeof ImportBacklog>[4];

t.test('the rule', async (t) => {
  const b = { writes: 1000, oldestMs: 10, newestMs: 10, services: 5000 };
  t.equal(verdict(b, 500), 'hold', 'large, a fifth of the registry, still written to: held');
  t.equal(verdict({ ...b, newestMs: QUIET_MS }, 500), 'rebuild', 'quiet: rebuilt');
  t.equal(verdict({ ...b, oldestMs: 600_000 }, 500), 'rebuild', 'held ten minutes: rebuilt even while written to');
  t.equal(verdict({ ...b, newestMs: QUIET_MS }, 1001), 'sweep', 'below OUTBOX_REBUILD_BACKLOG: swept');
  t.equal(verdict({ ...b, newestMs: QUIET_MS, services: 20_000 }, 500), 'sweep', 'under a tenth of the registry: swept');
  t.equal(verdict({ ...b, newestMs: QUIET_MS, services: -1 }, 500), 'rebuild', 'a table never analysed counts as the backlog');
  t.equal(verdict({ ...b, newestMs: QUIET_MS }, 0), 'sweep', '0: never');
});

t.test('held while written to, rebuilt once quiet, counted past the rows it covered', async (t) => {
  const { s, gen0 } = await started(t, { env: { OUTBOX_SWEEP_MS: '600000' } });
  const backlog = new ImportBacklog(s.app.pg, s.app.redis, s.app.keys, s.app.cfg.tiers, silent, 500);
  for (const from of [0, 400, 800]) t.match(await bulkUpsert(s.app.pg, PRODUCTION, rows(from, 400)), { created: 400, indexOnly: 400 });
  t.match(await backlog.read(), { writes: 1200 }, 'three chunk rows: 1,200 writes');
  t.equal(await backlog.hold(), true, 'just written: held');
  t.equal(backlog.running, null, 'and no rebuild yet');
  t.equal(await s.app.index.refreshGen(), gen0);
  await s.app.pg.query("UPDATE outbox SET created_at = created_at - interval '10 s'");
  t.equal(await backlog.hold(), true, 'quiet: held, a rebuild started');
  t.ok(backlog.running, 'the rebuild runs');
  t.equal(await backlog.hold(), true, 'held while it runs');
  await backlog.running;
  const gen1 = await s.app.index.refreshGen();
  t.not(gen1, gen0, 'a new generation is live');
  t.equal(await s.app.redis.get(s.app.keys.outboxCovered()) !== null, true, 'the rows it covered are marked');
  t.match(await backlog.read(), { writes: 0 }, 'nothing past them');
  t.same((await s.app.pg.query('SELECT id FROM outbox')).rows, [], 'the covered rows are dropped');
  t.match(await s.app.index.getService(PRODUCTION, 'bk-01042'), { doc: /bk1042\.example\.com/ }, 'served from the rebuilt generation');
  t.equal(await backlog.hold(), false, 'then the sweeper sweeps');
  // a small import into the registry of 1,201: swept, not rebuilt
  await s.app.pg.query('ANALYZE services');
  t.match(await bulkUpsert(s.app.pg, PRODUCTION, rows(2000, 100)), { indexOnly: 100 });
  await s.app.pg.query("UPDATE outbox SET created_at = created_at - interval '10 s'");
  t.equal(await new ImportBacklog(s.app.pg, s.app.redis, s.app.keys, s.app.cfg.tiers, silent, 50).hold(), false, 'a twelfth of the registry: the sweeper applies it');
});

t.test('a failed rebuild leaves the backlog to the sweeper for a while', async (t) => {
  const { s } = await started(t, { env: { OUTBOX_SWEEP_MS: '600000' } });
  let tries = 0;
  const failing = () => {
    tries++;
    return Promise.reject(new Error('Redis refused the page'));
  };
  const backlog = new ImportBacklog(s.app.pg, s.app.redis, s.app.keys, s.app.cfg.tiers, silent, 500, { rebuild: failing });
  for (const from of [0, 400]) await bulkUpsert(s.app.pg, PRODUCTION, rows(from, 400));
  await s.app.pg.query("UPDATE outbox SET created_at = created_at - interval '10 s'");
  t.equal(await backlog.hold(), true, 'due: a rebuild is tried');
  await backlog.running;
  t.equal(tries, 1);
  t.equal(await backlog.hold(), false, 'it failed: the sweeper applies the backlog');
  t.equal(tries, 1, 'and no rebuild is tried again at once');
  t.equal(await s.app.projector.sweep(0, 500, () => backlog.hold()), 800, 'the sweep applies every write');
  t.match(await s.app.index.getService(PRODUCTION, 'bk-00642'), { doc: /bk642\.example\.com/ });
});

t.test("the server's sweeper leaves a large import to one rebuild", async (t) => {
  const hook = applyHook();
  // a chunk (300) is already a backlog (250): held from the first chunk on, however long the
  // CLI takes to the next one (with 500, a first chunk older than the sweeper's 1 s before the
  // second committed, on a loaded machine, was swept, as it should be)
  const { s, gen0 } = await started(t, { env: { OUTBOX_SWEEP_MS: '100', OUTBOX_REBUILD_BACKLOG: '250' }, hooks: hook.hooks });
  const synced: string[] = [];
  hook.set(async (ids) => void synced.push(...ids));
  const lines = rows(0, 900).map((r) => JSON.stringify({ id: r.id, endpoint: r.input.endpoint, capabilities: r.input.capabilities, properties: r.input.properties }));
  const im = await cli(['import', '-', '--batch', '300'], { DATABASE_URL: s.cfg.databaseUrl, REDIS_KEY_PREFIX: s.cfg.redisKeyPrefix }, lines.join('\n') + '\n');
  t.equal(im.code, 0, im.err);
  t.match(im.err, /900 created/);
  t.match(im.err, /index: 900 writes wait in the outbox/, 'the CLI says who indexes them');
  t.notMatch(im.err, /index rebuilt/, 'and does not rebuild');
  await outboxDrained(s.app.pg);
  t.same((await s.app.pg.query('SELECT id FROM outbox')).rows, [], 'the backlog is gone');
  t.not(await s.app.index.refreshGen(), gen0, 'covered by a rebuild');
  t.same(synced.filter((id) => id.startsWith('bk-')), [], 'the sweeper applied none of it (it would have within a second)');
  const found = (await (await s.req('/services?capability=backlog&limit=1000')).json()) as { id: string }[];
  t.equal(found.length, 901, 'every service is found');
});

t.test('a sweep under way asks again: what grew into a large backlog behind it is left to the rebuild', async (t) => {
  const hook = applyHook();
  const { s, gen0 } = await started(t, { env: { OUTBOX_SWEEP_MS: '100', OUTBOX_REBUILD_BACKLOG: '700' }, hooks: hook.hooks });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let entered!: () => void;
  const inSweep = new Promise<void>((r) => (entered = r));
  const synced: string[] = [];
  hook.set(async (ids) => {
    synced.push(...ids);
    entered();
    await gate;
  });
  const aged = () => s.app.pg.query("UPDATE outbox SET created_at = created_at - interval '10 s'");
  // two chunks of 300, under the 700 that make a backlog: one sweep takes them, the first a
  // sync of its own (600 writes are more than a sync's 500), the second in the same sweep after it
  for (const from of [0, 300]) await bulkUpsert(s.app.pg, PRODUCTION, rows(from, 300));
  await aged(); // both old enough for the sweeper at once
  await inSweep;
  // while the first chunk's sync is held, an import's chunks pile up behind it, and go quiet:
  // the second chunk and these two make 900 writes, a backlog the sweep finds when it asks again
  for (const from of [600, 900]) await bulkUpsert(s.app.pg, PRODUCTION, rows(from, 300));
  await aged();
  await sleep(1100);
  release();
  await outboxDrained(s.app.pg);
  t.same((await s.app.pg.query('SELECT id FROM outbox')).rows, [], 'the backlog is gone');
  t.ok(synced.includes('bk-00000'), 'the first chunk was swept');
  t.same(synced.filter((id) => id >= 'bk-00300'), [], 'the sweep that held it left the second chunk and the later ones to the rebuild');
  t.not(await s.app.index.refreshGen(), gen0, 'covered by a rebuild');
  for (const batch of ['0', '300', '600', '900']) {
    const res = await s.req(`/services?capability=backlog&limit=1000&property=batch:${batch}`);
    t.equal(res.status, 200, `batch ${batch}: answered`);
    const found = (await res.json()) as { id: string }[];
    t.equal(found.length, 300, `the chunk from ${batch}: every service is found`);
  }
});
