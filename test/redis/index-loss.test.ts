// Redis loses the index while the server is serving: FLUSHALL, then a restart without
// persistence. The server must notice and rebuild the index from PostgreSQL, never answer a
// search from a half-built index (a 200 is always the whole answer), and afterwards answer
// exactly what PostgreSQL holds. Meanwhile, with the fallback (the default), every search is
// answered 200 from PostgreSQL and /readyz stays 200 saying "degraded" (contract,
// "Availability"); without it (FALLBACK_PG_CONNECTIONS=0), 503 with Retry-After and /readyz
// 503 until the rebuild is complete. Runs against a redis-server of its own, so FLUSHALL
// harms nobody.
import t, { type Test } from 'tap';
import pg from 'pg';
import { createSandbox, registerProduction, type TestServer, serve } from '../helpers/server.js';
import { waitFor, sleep } from '../helpers/wait.js';
import { seedServices, storeIndexText } from '../helpers/test-data.js';
import { redisCommand, startRedis } from '../helpers/redis-server.js';
import { freshDatabase } from '../helpers/database.js';

const SEEDED = 5_000; // enough that a rebuild takes a noticeable moment
const QUERY = '/services?capability=cap3&limit=1000&property=zone:z1'; // canonical: no 302

interface Seen {
  status: number;
  body: string;
  retryAfter: string | null;
}

async function pgIds(url: string, sql: string, params: unknown[] = []): Promise<string[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<{ id: string }>(sql, params)).rows.map((r) => r.id);
  } finally {
    await c.end();
  }
}

/** Every id of a search, following its `next` links. */
async function allPages(s: TestServer, path: string, headers: Record<string, string> = {}): Promise<string[]> {
  const ids: string[] = [];
  let next: string | null = path;
  while (next) {
    const r: Response = await s.req(next, { headers });
    if (r.status !== 200) throw new Error(`${next}: ${r.status} ${await r.text()}`);
    ids.push(...((await r.json()) as { id: string }[]).map((x) => x.id));
    next = /<([^>]+)>; rel="next"/.exec(r.headers.get('link') ?? '')?.[1] ?? null;
  }
  return ids;
}

/** Hammer a few searches until stopped, keeping every answer. */
function readers(s: TestServer, paths: [string, Record<string, string>][]): { stop: () => Promise<Map<string, Seen[]>> } {
  let running = true;
  const seen = new Map<string, Seen[]>(paths.map(([p]) => [p, []]));
  const loops = paths.map(async ([path, headers]) => {
    while (running) {
      const r = await s.req(path, { headers });
      seen.get(path)!.push({ status: r.status, body: await r.text(), retryAfter: r.headers.get('retry-after') });
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return seen;
    },
  };
}

interface Readiness {
  status: string;
  reads: string;
}

const readiness = async (s: TestServer): Promise<{ status: number; body: Readiness }> => {
  const r = await s.req('/readyz');
  return { status: r.status, body: (await r.json()) as Readiness };
};

const lossTest = (fallback: boolean) => async (t: Test) => {
  const redis = await startRedis();
  const db = await freshDatabase();
  t.teardown(async () => {
    await db.drop();
    await redis.kill();
  });
  await seedServices(db.url, SEEDED);
  await storeIndexText(db.url); // seeded straight into the tables: their index text too
  const s = await serve(t, { databaseUrl: db.url, env: {
      ...(fallback ? {} : { FALLBACK_PG_CONNECTIONS: '0' }),
      REDIS_URL: redis.url,
      REDIS_CLUSTER_NODES: '', // this test's own redis-server, even when the suite runs on a cluster
      TIERS: 'free=1000000', // the readers must not meet the rate limit
      // the in-process result cache would answer the watched queries (whole, from before the
      // loss) for its TTL: turned off, every answer comes from the index under test
      RESULT_CACHE_ENTRIES: '0',
    },
  });
  // readiness is re-probed per request (Redis within 1 s): on a loaded machine one probe can
  // miss, so the start-up rebuild's end is waited for, not sampled once
  const readyStatus = await waitFor('ready after the start-up rebuild', async () => {
    const r = await readiness(s);
    return r.body.reads === 'index' ? r.status : null;
  }, 20_000, 100).catch(() => 503);
  t.equal(readyStatus, 200, 'ready after the start-up rebuild');

  const sb = await createSandbox(s, 'Loss Test');
  const auth = { authorization: `Bearer ${sb.apiKey}` };
  for (let i = 0; i < 3; i++) {
    const r = await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: `https://sb${i}.example.com`, capability: 'sb-cap' }) });
    t.equal(r.status, 201);
  }
  const sbPath = `/sandbox/${sb.uuid}/services`;
  const expectProd = await pgIds(db.url, `SELECT s.id FROM services s JOIN service_capabilities c ON c.service_id = s.id JOIN service_properties p ON p.service_id = s.id
     WHERE s.ns = 'production' AND c.capability = 'cap3' AND p.key = 'zone' AND p.value = 'z1' ORDER BY s.seq`);
  const expectSb = await pgIds(db.url, 'SELECT id FROM services WHERE ns = $1 ORDER BY seq', [sb.uuid]);
  t.ok(expectProd.length > 100 && expectProd.length < 1000, 'the watched query fits one page');
  const wholeProd = JSON.stringify(expectProd);
  const wholeSb = JSON.stringify(expectSb);

  const check = async (t: Test, how: string, loseIt: () => Promise<void>) => {
    const before = JSON.stringify(((await (await s.req(QUERY)).json()) as { id: string }[]).map((x) => x.id));
    t.equal(before, wholeProd, `${how}: the search is whole before`);
    const r = readers(s, [
      [QUERY, {}],
      [sbPath, auth],
    ]);
    await sleep(100);
    await loseIt();
    const ready = await readiness(s);
    if (fallback) t.match(ready, { status: 200, body: { status: 'degraded', reads: 'postgres', degraded: ['redis'] } }, `${how}: /readyz stays 200 and says reads come from PostgreSQL, at once`);
    else t.match(ready, { status: 503, body: { status: 'not ready', reads: 'none' } }, `${how}: /readyz answers 503 at once`);
    // a write while the index is missing or being rebuilt is acknowledged and not lost
    const late = await registerProduction(s, { endpoint: 'https://late.example.com', capabilities: [`late-${how}`] });
    if (fallback) t.same(await allPages(s, `/services?capability=late-${how}`), [late.id], `${how}: ... and searchable at once`);
    await waitFor(`${how}: reads from the index again`, async () => (await readiness(s)).body.reads === 'index', 60_000, 50);
    const seen = await r.stop();

    for (const [path, whole] of [
      [QUERY, wholeProd],
      [sbPath, wholeSb],
    ] as const) {
      const answers = seen.get(path)!;
      const bad = answers.filter((a) => !(a.status === 200 || (a.status === 503 && a.retryAfter !== null)));
      t.same(bad.map((a) => `${a.status} ${a.body.slice(0, 80)}`), [], `${how} ${path}: only 200 or 503 with Retry-After`);
      const partial = answers.filter((a) => a.status === 200 && JSON.stringify((JSON.parse(a.body) as { id: string }[]).map((x) => x.id)) !== whole);
      t.equal(partial.length, 0, `${how} ${path}: every 200 is the whole answer (${answers.length} answers, ${answers.filter((a) => a.status === 503).length} were 503)`);
      for (const a of answers.filter((x) => x.status === 503)) {
        t.match(JSON.parse(a.body), { error: { code: 'UNAVAILABLE' } });
        break;
      }
    }
    const refused = [...seen.values()].flat().filter((a) => a.status === 503).length;
    if (fallback) t.equal(refused, 0, `${how}: no search was refused: PostgreSQL answered while the index was missing`);
    else t.ok(seen.get(QUERY)!.some((a) => a.status === 503), `${how}: searches were refused while the index was missing`);

    // afterwards: exactly PostgreSQL's answers
    t.same(await allPages(s, '/services?capability=seeded&limit=1000'), await pgIds(db.url, `SELECT id FROM services WHERE ns = 'production' AND id LIKE 'seed%' ORDER BY seq`), `${how}: every seeded service, in order`);
    t.same(await allPages(s, sbPath, auth), expectSb, `${how}: the sandbox, through its key`);
    await waitFor(`${how}: the late write is searchable`, async () => {
      const ids = await allPages(s, `/services?capability=late-${how}`);
      return ids.length === 1 && ids[0] === late.id;
    });
    const one = await s.req(`/services/${expectProd[0]}`);
    t.equal(one.status, 200, `${how}: /services/{id} answers again`);
  };

  await t.test('FLUSHALL', (t) => check(t, 'flushall', async () => {
    t.equal(await redisCommand(redis.port, 'FLUSHALL'), '+OK');
  }));
  await t.test('restart without persistence', (t) => check(t, 'restart', () => redis.restart()));

  await t.test('a rebuild that died leaves nothing behind', async (t) => {
    // what a SIGKILL mid-rebuild leaves: the building pointer, a partial generation, no lock
    const k = s.app.keys;
    const r = s.app.redis;
    await r.set(k.building(), 'dead000000');
    await r.set(k.ver('production', 'dead000000'), '1');
    await r.hset(k.all('production', 'dead000000'), 'n', 1, 'hi', 0, '0', Buffer.from([0, 1]));
    await waitFor('the dead rebuild is cleaned up', async () => !(await r.exists(k.building(), k.ver('production', 'dead000000'), k.all('production', 'dead000000'))));
    t.pass('building pointer and partial generation dropped once no lock guards them');
    t.equal((await readiness(s)).body.reads, 'index', 'the live index is untouched');
    t.same(await allPages(s, sbPath, auth), expectSb);
  });
};

t.test('the index is rebuilt after Redis loses it, and no search ever sees half of it: PostgreSQL answers meanwhile', lossTest(true));
t.test('... without the fallback: 503 meanwhile', lossTest(false));
