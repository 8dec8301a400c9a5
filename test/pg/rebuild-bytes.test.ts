// The bulk rebuild writes exactly the bytes the write path writes. The write path serialises
// a service in this process (serializeService, memberSuffixes, headerData: apply-args.ts,
// apply-service.lua) and stores those strings with the state (services.idx_*); the rebuild
// reads the stored strings, or computes them with indexText() for a row found without (the
// migrator fills such rows, but one may be written by hand since: loadIndexPage in
// registry/index-pages.ts; index-page-1.lua). fast-check generates
// services with hostile strings (unicode beyond the BMP, quotes, backslashes, U+2028, DEL,
// maximal lengths, keys that are array indices or "__proto__", IoT or none, deprecation,
// sunset dates, replacements, patches, deletions), writes them through the API, NULLs the
// stored text of some of them (the fallback), dumps every key of the live generation the
// write path produced, rebuilds, and compares with a dump of the rebuilt generation.
import t from 'tap';
import fc from 'fast-check';
import { rebuildIndex } from '../../src/hot/reindex/rebuild.js';
import type { RedisClient } from '../../src/hot/redis/client.js';
import type { Keys } from '../../src/hot/domain/keys.js';
import { type TestServer, serve } from '../helpers/server.js';
import { outboxDrained, waitFor } from '../helpers/wait.js';
import { date, endpoint, iot, serviceBody, token, value } from '../helpers/arbitraries.js';

const scenario = fc.record({
  services: fc.array(serviceBody, { minLength: 1, maxLength: 14 }),
  // [service index, fields to change]
  patches: fc.array(fc.tuple(fc.nat(), fc.record({ endpoint, properties: fc.dictionary(token, value, { maxKeys: 4 }), iot, deprecated: fc.boolean(), sunset_date: date }, { requiredKeys: [] })), { maxLength: 4 }),
  // services whose stored index text is removed, as if written before migration 0004
  unstored: fc.oneof({ arbitrary: fc.constant('none' as const), weight: 1 }, { arbitrary: fc.constant('all' as const), weight: 1 }, { arbitrary: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), weight: 3 }),
  // replacement candidates: [service, candidate] index pairs
  replacements: fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 6 }),
  deleted: fc.array(fc.nat(), { maxLength: 3 }),
  /** the services go to a sandbox instead of production */
  sandbox: fc.boolean(),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never;

/** Every key of a generation with its content, the generation's name cut out of the key. */
async function dump(redis: RedisClient, keys: Keys, gen: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let cursor = '0';
  do {
    // a large COUNT: the shared test Redis may hold hundreds of thousands of other keys
    const [next, batch] = await redis.scan(cursor, 'MATCH', keys.genPattern(gen), 'COUNT', 100_000);
    cursor = next;
    for (const k of batch) {
      const name = k.split(':' + gen + ':').join(':<gen>:');
      // the namespace marker counts the writes applied: it differs, and is not index content
      if (/:<gen>:ver(:[\w.]+)?$/.test(name)) continue;
      const type = await redis.type(k);
      let v: unknown;
      if (type === 'hash') v = Object.entries(await redis.hgetall(k)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      else if (type === 'zset') v = await redis.zrange(k, 0, -1, 'WITHSCORES');
      else if (type === 'set') v = (await redis.smembers(k)).sort();
      else if (type === 'string') v = await redis.get(k);
      else if (type === 'list') v = await redis.lrange(k, 0, -1);
      else v = '<' + type + '>';
      out.set(name, JSON.stringify([type, v]));
    }
  } while (cursor !== '0');
  return out;
}

// In the full suite at a load average of 10+, with a Redis holding ~350,000 other keys, its
// first version (25 runs) took longer than the 120 s per-file limit of package.json. The
// limit guards against hangs, not speed: this file gets 300 s.
t.setTimeout(300_000);

// few runs of many services: each run dumps two generations, and a SCAN walks the whole
// keyspace (~0.5-1 s per dump with the ~350,000 keys other work leaves in the shared Redis)
const RUNS = 10;

t.test('the rebuild writes the bytes the write path writes', async (t) => {
  const s: TestServer = await serve(t, { env: { RESULT_CACHE_ENTRIES: '0', SANDBOX_CREATE_PER_MINUTE: '1000' } });
  await waitFor('the index', async () => (await s.req('/readyz')).status === 200);
  const { redis, keys } = s.app;
  let runs = 0;
  let compared = 0;
  let fallbacks = 0;
  let stored = 0;
  const retiring: Promise<number>[] = [];

  // fast-check's report holds the whole counterexample (up to 14 services of 2,000-character
  // endpoints): thrown as is, it is one line of tens of KB in the TAP stream
  const report = (d: fc.RunDetails<[Scenario]>): void => {
    if (!d.failed) return;
    const err = d.errorInstance instanceof Error ? d.errorInstance.message : String(d.errorInstance);
    // printable ASCII only: the strings compared may hold line separators of any kind
    const ascii = err.slice(0, 2000).replace(/[^\x20-\x7e]/gu, (c) => '\\u{' + c.codePointAt(0)!.toString(16) + '}');
    throw new Error(`run ${d.numRuns} of ${RUNS} failed (seed ${d.seed}, path "${d.counterexamplePath ?? ''}"): ${ascii}`);
  };
  await fc.assert(
    fc.asyncProperty(scenario, async (sc) => {
      runs++;
      let base = '/admin/api/services';
      let auth: Record<string, string> = { authorization: 'Bearer ' + 'test-admin-key-0123456789abcdef' };
      if (sc.sandbox) {
        const r = await s.req('/sandboxes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bytes ' + runs }) });
        if (r.status !== 201) throw new Error('sandbox: ' + r.status + ' ' + (await r.text()));
        const sb = (await r.json()) as { uuid: string; apiKey: string };
        base = `/sandbox/${sb.uuid}/services`;
        auth = { authorization: 'Bearer ' + sb.apiKey };
      }
      const send = (method: string, path: string, body?: unknown) =>
        s.req(path, { method, headers: { ...auth, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      const ids: string[] = [];
      for (const svc of sc.services) {
        const r = await send('POST', base, svc);
        if (r.status !== 201) throw new Error(`register answered ${r.status}: ${await r.text()} for ${JSON.stringify(svc)}`);
        ids.push(((await r.json()) as { id: string }).id);
      }
      for (const [a, b] of sc.replacements) {
        const id = ids[a % ids.length]!;
        const cand = ids[b % ids.length]!;
        if (id === cand) continue;
        const r = await send('POST', `${base}/${id}/replacements`, { serviceId: cand });
        if (r.status !== 201 && r.status !== 409) throw new Error(`replacement answered ${r.status}: ${await r.text()}`);
      }
      for (const [i, ch] of sc.patches) {
        const r = await send('PATCH', `${base}/${ids[i % ids.length]!}`, ch);
        if (r.status !== 200) throw new Error(`patch answered ${r.status}: ${await r.text()} for ${JSON.stringify(ch)}`);
      }
      for (const d of sc.deleted) {
        const r = await send('DELETE', `${base}/${ids[d % ids.length]!}`);
        if (r.status !== 204 && r.status !== 404) throw new Error(`delete answered ${r.status}`);
      }
      // every service is stored with its index text; these lose it and take loadIndexPage's indexText()
      const unstored = sc.unstored === 'none' ? [] : sc.unstored === 'all' ? ids : sc.unstored.map((i) => ids[i % ids.length]!);
      if (unstored.length) {
        await s.app.pg.query('UPDATE services SET idx_doc = NULL, idx_members = NULL, idx_hdr = NULL WHERE id = ANY($1)', [unstored]);
        fallbacks += unstored.length;
      }
      const left = await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM services WHERE id = ANY($1) AND idx_doc IS NOT NULL', [ids]);
      stored += Number(left.rows[0]!.n);
      // every write above was acknowledged after its commit; its index update follows in the
      // same request unless Redis failed it (a busy CI machine), when the sweeper applies the
      // outbox row a second later: compare once every row is applied and gone
      await outboxDrained(s.app.pg);
      const live = (await redis.get(keys.gen()))!;
      const written = await dump(redis, keys, live);
      const r = await rebuildIndex(s.app.pg, redis, keys, s.cfg.tiers);
      if (!r) throw new Error('the rebuild did not run');
      const rebuilt = await dump(redis, keys, r.gen);
      retiring.push(r.retired);
      const diff: string[] = [];
      for (const k of new Set([...written.keys(), ...rebuilt.keys()])) {
        if (written.get(k) !== rebuilt.get(k)) diff.push(`${k}\n  write path: ${written.get(k) ?? '(none)'}\n  rebuild:    ${rebuilt.get(k) ?? '(none)'}`);
      }
      if (diff.length) throw new Error('the rebuilt generation differs:\n' + diff.slice(0, 5).join('\n'));
      compared += written.size;
    }),
    { numRuns: RUNS, endOnFailure: true, reporter: report },
  );
  await Promise.all(retiring);
  t.equal(runs, RUNS, 'every generated scenario ran');
  t.ok(compared > RUNS * 5, `the generations compared hold keys (${compared} key comparisons)`);
  t.ok(stored > 0, `services with stored index text were rebuilt (${stored})`);
  t.ok(fallbacks > 0, `services without it had it computed by the rebuild (${fallbacks})`);
});
