// The batch routes (issue 22): POST /sandbox/{uuid}/services/batch and
// POST /admin/api/services/batch register 1-1000 services all or nothing, answer them in
// order, name the index of the first invalid entry, have their own body limit, and (the
// sandbox one) count one request per service against the rate limit, refusing the whole
// batch when the window has no room for all of it. Plus hostile batches (fast-check): no
// 5xx, and nothing written unless the answer is 201.
import t from 'tap';
import fc from 'fast-check';
import { parseServiceCreate } from '../../src/hot/domain/validation.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { serviceBody } from '../helpers/arbitraries.js';
import { nearService } from '../helpers/hostile.js';
import { createSandbox, type TestServer, serve } from '../helpers/server.js';
import type { Svc } from '../helpers/svc.js';
import { ADMIN_KEY } from '../helpers/env.js';


async function count(s: TestServer, ns: string): Promise<number> {
  const r = await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM services WHERE ns = $1', [ns]);
  return Number(r.rows[0]!.n);
}

const svc = (i: number, extra: Record<string, unknown> = {}) => ({ endpoint: `https://b${i}.example.com/`, capabilities: ['batch', `n${i}`], ...extra });

t.test('admin batch: 201 in order, every service readable, indexed and in the change feed', async (t) => {
  const s = await serve(t);
  const body = { services: [svc(0), svc(1, { deprecated: true, sunset_date: '2031-01-02', iot: { deviceClasses: ['meter'], protocols: ['mqtt'] } }), svc(2, { properties: { region: 'eu' } })] };
  const r = await s.admin('POST', '/admin/api/services/batch', body);
  t.equal(r.status, 201);
  const out = ((await r.json()) as { services: Svc[] }).services;
  t.same(out.map((x) => x.endpoint), body.services.map((x) => x.endpoint), 'answered in the order sent');
  t.equal(new Set(out.map((x) => x.id)).size, 3, 'three distinct ids');
  for (const x of out) {
    const g = await s.req(`/services/${x.id}`);
    t.equal(g.status, 200, `${x.id} is readable`);
    t.same(await g.json(), x, 'and served as the batch answered it');
  }
  const dep = await s.req(`/services/${out[1]!.id}`);
  t.match(dep.headers.get('deprecation') ?? '', /^@\d+$/, 'a deprecated entry has its Deprecation header');
  const found = (await (await s.req('/services?capability=batch')).json()) as Svc[];
  t.same(found.map((x) => x.id).sort(), out.map((x) => x.id).sort(), 'the index has all three');
  const ev = await s.app.pg.query<{ service_id: string; type: string }>("SELECT service_id, type FROM change_events WHERE type = 'service.created' ORDER BY id");
  t.same(ev.rows.map((x) => x.service_id), out.map((x) => x.id), 'one change event each, in the order of the batch');
  const pg = await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM services s JOIN service_capabilities c ON c.service_id = s.id');
  t.equal(Number(pg.rows[0]!.n), 6, 'their capabilities are stored');
});

t.test('one invalid entry: 400 naming its index, nothing written', async (t) => {
  const s = await serve(t);
  const bad = [svc(0), svc(1), { endpoint: 'ftp://x.example.com', capability: 'a' }, { endpoint: 'nope' }];
  const r = await s.admin('POST', '/admin/api/services/batch', { services: bad });
  t.equal(r.status, 400);
  const e = (await r.json()) as { error: { code: string; message: string } };
  t.equal(e.error.code, 'VALIDATION_FAILED');
  t.match(e.error.message, /^\/services\/2\b/, 'the message names index 2, the first invalid one');
  const r2 = await s.admin('POST', '/admin/api/services/batch', { services: [svc(0), { endpoint: 'https://x.example.com' }] });
  t.match(((await r2.json()) as { error: { message: string } }).error.message, /^\/services\/1\b/, 'a schema error names its index too');
  for (const b of [{ services: [] }, { services: Array.from({ length: 1001 }, (_, i) => svc(i)) }, { services: svc(0) }, [svc(0)], { services: [svc(0)], more: 1 }]) {
    t.equal((await s.admin('POST', '/admin/api/services/batch', b)).status, 400, `400 for ${JSON.stringify(b).slice(0, 60)}`);
  }
  t.equal(await count(s, PRODUCTION), 0, 'nothing written');
});

t.test('the batch routes have their own body limit', async (t) => {
  const s = await serve(t, { env: { MAX_BATCH_BODY_BYTES: String(200 * 1024) } });
  // ~100 KiB: over MAX_BODY_BYTES (64 KiB), under the batch limit
  const big = { services: Array.from({ length: 400 }, (_, i) => svc(i, { properties: { note: 'x'.repeat(180) } })) };
  t.ok(JSON.stringify(big).length > 64 * 1024);
  const r = await s.admin('POST', '/admin/api/services/batch', big);
  t.equal(r.status, 201, 'a batch over 64 KiB is accepted');
  t.equal(((await r.json()) as { services: Svc[] }).services.length, 400);
  t.equal(await count(s, PRODUCTION), 400);
  const huge = { services: Array.from({ length: 1000 }, (_, i) => svc(i, { properties: { note: 'x'.repeat(200) } })) };
  t.equal((await s.admin('POST', '/admin/api/services/batch', huge)).status, 413, 'over MAX_BATCH_BODY_BYTES: 413');
  t.equal(await count(s, PRODUCTION), 400, 'nothing more written');
  t.equal((await s.admin('POST', '/admin/api/services', { endpoint: 'https://a.example.com', capability: 'a', properties: { n: 'x'.repeat(200) }, z: 'y'.repeat(70_000) })).status, 413, 'the single route keeps MAX_BODY_BYTES');
});

t.test('sandbox batch: one request per service; 429 and nothing written when the window has no room for all', async (t) => {
  const s = await serve(t, { env: { TIERS: 'free=60' } });
  const sb = await createSandbox(s);
  const post = (n: number, key = sb.apiKey) =>
    s.req(`/sandbox/${sb.uuid}/services/batch`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ services: Array.from({ length: n }, (_, i) => svc(i)) }) });
  t.equal((await post(3, 'nope_sb_x')).status, 401, 'a wrong key: 401');
  const a = await post(50);
  t.equal(a.status, 201, '50 of 60');
  const ids = ((await a.clone().json()) as { services: Svc[] }).services.map((x) => x.id);
  t.match(a.headers.get('ratelimit') ?? '', /r=10;/, 'ten requests left in the window');
  const b = await post(11);
  t.equal(b.status, 429, '11 more do not fit');
  t.ok(Number(b.headers.get('retry-after')) >= 1, 'with Retry-After');
  t.match(((await b.json()) as { error: { message: string } }).error.message, /11 requests/);
  t.equal(await count(s, sb.uuid), 50, 'nothing of the refused batch was written');
  const c = await post(10);
  t.equal(c.status, 201, 'ten more fit exactly');
  ids.push(...((await c.json()) as { services: Svc[] }).services.map((x) => x.id));
  t.equal(await count(s, sb.uuid), 60);
  t.equal((await post(1)).status, 429, 'the window is full');
  // (the window is full: asked of the index itself, not through the rate-limited API)
  const indexed = await Promise.all(ids.map((id) => s.app.index.getService(sb.uuid, id)));
  t.equal(indexed.filter((x) => x !== null).length, 60, 'all sixty are indexed');
});

t.test('an invalid sandbox batch counts as one request', async (t) => {
  const s = await serve(t, { env: { TIERS: 'free=60' } });
  const sb = await createSandbox(s);
  const r = await s.req(`/sandbox/${sb.uuid}/services/batch`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ services: [svc(0), { endpoint: 'x' }] }) });
  t.equal(r.status, 400);
  t.match(r.headers.get('ratelimit') ?? '', /r=59;/, 'one request counted');
});

t.test('hostile batches: never a 5xx; 201 exactly when every entry is valid, and then all of them are written; otherwise none', async (t) => {
  const s = await serve(t, { env: { TIERS: 'free=1000000' } });
  const sb = await createSandbox(s);
  const entry = fc.oneof(serviceBody as fc.Arbitrary<unknown>, nearService(fc.jsonValue({ maxDepth: 3 })), fc.jsonValue({ maxDepth: 3 }));
  const batch = fc.oneof(
    { weight: 4, arbitrary: fc.array(entry, { minLength: 1, maxLength: 8 }).map((services) => ({ services }) as unknown) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  );
  const firstInvalid = (b: unknown): number | null => {
    const list = (b as { services: unknown[] }).services;
    for (let i = 0; i < list.length; i++) {
      try {
        parseServiceCreate(list[i]);
      } catch {
        return i;
      }
    }
    return null;
  };
  let created = 0;
  await fc.assert(
    fc.asyncProperty(batch, fc.boolean(), async (b, admin) => {
      const ns = admin ? PRODUCTION : sb.uuid;
      const before = await count(s, ns);
      const r = admin
        ? await s.admin('POST', '/admin/api/services/batch', b)
        : await s.req(`/sandbox/${sb.uuid}/services/batch`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(b) });
      const text = await r.text();
      if (r.status >= 500) throw new Error(`${r.status} ${text.slice(0, 300)}`);
      const after = await count(s, ns);
      const shaped = !!b && typeof b === 'object' && !Array.isArray(b) && Object.keys(b).length === 1 && Array.isArray((b as { services?: unknown }).services);
      const bad = shaped ? firstInvalid(b) : -1;
      if (r.status === 201) {
        if (bad !== null) throw new Error(`201 for a batch with an invalid entry ${bad}`);
        const n = (b as { services: unknown[] }).services.length;
        if (after - before !== n || (JSON.parse(text) as { services: unknown[] }).services.length !== n) throw new Error('201 without every service written');
        created += n;
      } else {
        if (r.status !== 400) throw new Error(`unexpected ${r.status} ${text.slice(0, 200)}`);
        if (after !== before) throw new Error(`${r.status} but ${after - before} services written`);
        const msg = (JSON.parse(text) as { error: { message: string } }).error.message;
        if (bad !== null && bad >= 0 && !msg.startsWith(`/services/${bad}`)) throw new Error(`400 "${msg}" does not name index ${bad}`);
      }
    }),
    { numRuns: 150 },
  );
  t.ok(created > 0, `${created} services registered by valid batches among the hostile ones`);
});

t.test('another method on …/services/batch is a 405 with Allow: POST, before its body is looked at (not the service route\'s answer to an id "batch")', async (t) => {
  const s = await serve(t);
  const sb = await createSandbox(s, 'Batch Methods');
  const cases: [string, Record<string, string>][] = [
    [`/sandbox/${sb.uuid}/services/batch`, { authorization: `Bearer ${sb.apiKey}` }],
    ['/admin/api/services/batch', { authorization: `Bearer ${ADMIN_KEY}` }],
  ];
  for (const [path, auth] of cases) {
    for (const method of ['PATCH', 'DELETE']) {
      const r = await s.req(path, { method, headers: { ...auth, 'content-type': 'text/plain' }, body: method === 'PATCH' ? '[[[' : undefined });
      t.equal(r.status, 405, `${method} ${path}`);
      t.equal(r.headers.get('allow'), 'POST', 'Allow names the one method');
      t.equal(((await r.json()) as { error: { code: string } }).error.code, 'METHOD_NOT_ALLOWED');
    }
  }
  const svcRoute = await s.req(`/sandbox/${sb.uuid}/services/not-a-service`, { method: 'PATCH', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'text/plain' }, body: '{}' });
  t.equal(svcRoute.status, 415, 'the service route itself still checks its body type first');
});
