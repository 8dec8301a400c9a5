// PostgreSQL unreachable while the server runs: reads keep being served from Redis (and
// /readyz stays 200, reporting postgres:false), writes answer 503 with Retry-After and the
// contract's error body — quickly, never a hang, never a 500 or a stack. Two ways to lose
// it: refused connections (the database went down) and a partition (no answers at all).
// The server reaches the test's own database through a TCP proxy the test can cut.
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/hot/config.js';
import { createSandbox, registerProduction, serve, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startProxy, type ProxyMode } from '../helpers/tcp-proxy.js';
import { ADMIN_KEY, baseEnv } from '../helpers/env.js';

interface Answer {
  status: number;
  body: string;
  headers: Headers;
}

/** A request that must answer within `ms` (the hang detector; not a performance bound). */
async function answer(s: TestServer, path: string, init: RequestInit = {}, ms = 20_000): Promise<Answer> {
  const r = await s.req(path, { ...init, signal: AbortSignal.timeout(ms) });
  return { status: r.status, body: await r.text(), headers: r.headers };
}

const send = (method: string, key: string, body?: unknown): RequestInit => ({
  method,
  headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
  body: body === undefined ? undefined : JSON.stringify(body),
});

t.test('PostgreSQL unreachable: reads go on from Redis, writes answer 503 quickly', async (t) => {
  const proxy = await startProxy(Number(new URL(loadConfig(baseEnv()).databaseUrl).port));
  t.teardown(() => proxy.close());
  const s = await serve(t, { through: { postgres: proxy }, env: { RESULT_CACHE_ENTRIES: '0' } });

  const sb = await createSandbox(s, 'PG Outage');
  const a = await registerProduction(s, { endpoint: 'https://a.example.com', capabilities: ['pg-outage'] });
  const b = await registerProduction(s, { endpoint: 'https://b.example.com', capabilities: ['pg-outage'], deprecated: true });
  t.equal((await s.admin('POST', `/admin/api/services/${b.id}/replacements`, { serviceId: a.id })).status, 201);
  const sbSvc = await answer(s, `/sandbox/${sb.uuid}/services`, send('POST', sb.apiKey, { endpoint: 'https://sb.example.com', capability: 'pg-outage' }));
  t.equal(sbSvc.status, 201);
  const sbId = (JSON.parse(sbSvc.body) as { id: string }).id;
  const keyed = { headers: { authorization: `Bearer ${sb.apiKey}` } };
  const reads: [string, RequestInit, (body: string) => boolean][] = [
    ['/services?capability=pg-outage', {}, (x) => JSON.stringify((JSON.parse(x) as { id: string }[]).map((s) => s.id)) === JSON.stringify([a.id, b.id])],
    [`/services/${a.id}`, {}, (x) => (JSON.parse(x) as { id: string }).id === a.id],
    [`/services/${b.id}/replacements`, {}, (x) => (JSON.parse(x) as { id: string }[])[0]?.id === a.id],
    [`/sandbox/${sb.uuid}/services`, keyed, (x) => (JSON.parse(x) as { id: string }[])[0]?.id === sbId],
    ['/services?capability=pg-outage', keyed, (x) => (JSON.parse(x) as { id: string }[])[0]?.id === sbId],
  ];

  const cut = async (t: Test, mode: ProxyMode) => {
    await proxy.set(mode);
    await waitFor(`${mode}: the server notices`, async () => {
      const r = await answer(s, '/readyz');
      return r.status === 200 && (JSON.parse(r.body) as { postgres: boolean }).postgres === false;
    });
    t.pass(`${mode}: /readyz stays 200 and reports postgres:false`);

    for (const [path, init, ok] of reads) {
      const r = await answer(s, path, init);
      t.equal(r.status, 200, `${mode}: ${path}${init.headers ? ' (keyed)' : ''} is served from Redis`);
      t.ok(r.status === 200 && ok(r.body), `${mode}: ... with the right body`);
    }

    const writes: [string, string, RequestInit][] = [
      ['register', '/admin/api/services', send('POST', ADMIN_KEY, { endpoint: 'https://no.example.com', capability: 'pg-outage' })],
      ['change', `/admin/api/services/${a.id}`, send('PATCH', ADMIN_KEY, { deprecated: true })],
      ['delete', `/admin/api/services/${a.id}`, send('DELETE', ADMIN_KEY)],
      ['add a replacement', `/admin/api/services/${a.id}/replacements`, send('POST', ADMIN_KEY, { serviceId: b.id })],
      ['sandbox register', `/sandbox/${sb.uuid}/services`, send('POST', sb.apiKey, { endpoint: 'https://no.example.com', capability: 'x' })],
      ['sandbox delete', `/sandbox/${sb.uuid}/services/${sbId}`, send('DELETE', sb.apiKey)],
      ['sandbox creation', '/sandboxes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"nope"}' }],
    ];
    const answers = await Promise.all(writes.map(([, path, init]) => answer(s, path, init)));
    writes.forEach(([what], i) => {
      const r = answers[i]!;
      t.equal(r.status, 503, `${mode}: ${what} answers 503`);
      t.ok(Number(r.headers.get('retry-after')) > 0, `${mode}: ... with Retry-After`);
      t.match(JSON.parse(r.body), { error: { code: 'UNAVAILABLE', message: String } }, `${mode}: ... and the error body`);
      t.notMatch(r.body, /\bat \w|\.js:\d|stack/i, `${mode}: ... without a stack`);
    });
    t.equal((await answer(s, '/sandbox/' + sb.uuid + '/dashboard')).status, 503, `${mode}: the dashboard (PostgreSQL data) answers 503`);

    await proxy.set('pass');
    await waitFor(`${mode}: PostgreSQL back`, async () => (JSON.parse((await answer(s, '/readyz')).body) as { postgres: boolean }).postgres);
    // nothing was written by the refused calls
    const again = await answer(s, '/services?capability=pg-outage');
    t.same((JSON.parse(again.body) as { id: string }[]).map((x) => x.id), [a.id, b.id], `${mode}: the refused writes changed nothing`);
    const w = await answer(s, '/admin/api/services', send('POST', ADMIN_KEY, { endpoint: 'https://after.example.com', capability: `after-${mode}` }));
    t.equal(w.status, 201, `${mode}: writes work again`);
    await waitFor(`${mode}: ... and are searchable`, async () => (JSON.parse((await answer(s, `/services?capability=after-${mode}`)).body) as unknown[]).length === 1);
  };

  await t.test('connections refused', (t) => cut(t, 'refuse'));
  await t.test('partition: connections open, no answers', (t) => cut(t, 'blackhole'));
});
