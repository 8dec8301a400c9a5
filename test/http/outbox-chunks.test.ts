// An import's chunk commits one outbox row naming all its services (migration 0017), not a
// row per service. Left to the sweeper (no rebuild: `registry import --no-reindex` with a
// server running), the row stands for each of its services: the sweeper applies every one,
// about `batch` a sync (a row that holds more is a sync of its own, never several rows'
// worth at once), deletes the row only once all of them are applied, and keeps it when Redis
// refuses. Real PostgreSQL, Redis and server thread.
import t from 'tap';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { bulkUpsert, type BulkRow } from '../../src/hot/writes/index.js';
import { applyHook, registerProduction, serve } from '../helpers/server.js';

const rows = (from: number, n: number): BulkRow[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `chunk-${String(from + i).padStart(5, '0')}`,
    input: { endpoint: `https://c${from + i}.example.com/`, capabilities: ['chunked'], properties: { batch: String(from) }, iot: null, deprecated: false, locked: false, sunsetDate: null },
  }));

t.test('the sweeper applies a chunk row as each of its services, a row at a time', async (t) => {
  const hook = applyHook();
  const s = await serve(t, { env: { OUTBOX_SWEEP_MS: '600000' }, hooks: hook.hooks });
  const outbox = async () => (await s.app.pg.query<{ n: number | null; index_only: boolean }>('SELECT cardinality(service_ids) AS n, index_only FROM outbox ORDER BY id')).rows;
  // (a registration first: the index's namespace exists, and its own row is applied at once)
  await registerProduction(s, { endpoint: 'https://first.example.com/', capabilities: ['chunked'] });
  await s.app.projector.flushAcks();
  for (const from of [0, 600]) t.match(await bulkUpsert(s.app.pg, PRODUCTION, rows(from, 600)), { created: 600, indexOnly: 600 });
  // a single write's row after them, left unapplied as a crash would leave it
  const single = rows(5000, 1);
  await bulkUpsert(s.app.pg, PRODUCTION, single);
  await s.app.pg.query("UPDATE outbox SET service_ids = NULL, service_id = $1 WHERE service_ids = ARRAY[$1]::text[]", [single[0]!.id]);
  t.same(await outbox(), [{ n: 600, index_only: true }, { n: 600, index_only: true }, { n: null, index_only: true }], 'a row per chunk, naming its 600 services');
  const ids = [...rows(0, 1200), ...single].map((r) => r.id);
  const indexed = async () => (await Promise.all(ids.map((id) => s.app.index.getService(PRODUCTION, id)))).filter((d) => d !== null).length;
  t.equal(await indexed(), 0, 'nothing applied yet');
  t.equal(await s.app.projector.lag(), 1201, 'the lag counts every service of a row');

  // Redis refuses: the rows stay
  const gen = (await s.app.index.refreshGen())!;
  const broken = s.app.keys.base(PRODUCTION, gen) + 'repl';
  const saved = await s.app.redis.dumpBuffer(broken);
  await s.app.redis.del(broken);
  await s.app.redis.set(broken, 'not a hash'); // WRONGTYPE for the apply script
  t.equal(await s.app.projector.sweep(0, 500), 0, 'nothing applied');
  t.equal((await outbox()).length, 3, 'every row kept');
  await s.app.redis.del(broken);
  if (saved) await s.app.redis.restore(broken, 0, saved);

  const sizes: number[] = [];
  hook.set(async (ids) => void sizes.push(ids.length));
  t.equal(await s.app.projector.sweep(0, 500), 1201, 'every service of every row applied');
  t.same(sizes, [600, 600, 1], 'a row of 600 is a sync of its own: never two rows of them (1,200) at once');
  t.same(await outbox(), [], 'the rows are gone');
  t.equal(await indexed(), 1201, 'and the index has every service');
  t.match(await s.app.index.getService(PRODUCTION, 'chunk-00642'), { doc: /c642\.example\.com/ });
});

t.test('small rows share a sync up to the batch', async (t) => {
  const hook = applyHook();
  const s = await serve(t, { env: { OUTBOX_SWEEP_MS: '600000' }, hooks: hook.hooks });
  await registerProduction(s, { endpoint: 'https://first.example.com/', capabilities: ['chunked'] });
  await s.app.projector.flushAcks();
  for (let from = 0; from < 100; from += 20) await bulkUpsert(s.app.pg, PRODUCTION, rows(from, 20));
  const sizes: number[] = [];
  hook.set(async (ids) => void sizes.push(ids.length));
  t.equal(await s.app.projector.sweep(0, 50), 100);
  t.same(sizes, [40, 40, 20], 'rows of 20 taken while they fit in 50');
  t.equal((await s.app.pg.query('SELECT count(*)::int AS n FROM outbox')).rows[0].n, 0);
  // the row's shape is held by the table (migration 0017): ids only on a service row without its own id
  for (const bad of ["('production', 'chunk-00001', ARRAY['chunk-00002'], 'service')", "('production', '', ARRAY['chunk-00002'], 'sandbox')"]) {
    await t.rejects(s.app.pg.query(`INSERT INTO outbox (ns, service_id, service_ids, kind) VALUES ${bad}`), { code: '23514' }, `refused: ${bad}`);
  }
});
