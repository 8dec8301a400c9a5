// GET /metrics on its own listener (METRICS_PORT; the public port answers 404): counters equal the requests served (by route pattern and status), rate-limit
// rejections by tier, replacement and result cache outcomes, and METRICS_ENABLED=false.
import t from 'tap';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { parseProm, sample } from '../helpers/metrics-util.js';

t.test('request counters equal the requests served, by route and status', async (t) => {
  // entries live an hour: on a loaded machine 17 searches may take longer than the default 2 s
  const s = await serve(t, { env: { TIERS: 'free=3,pro=600,enterprise=6000', RESULT_CACHE_TTL_MS: '3600000' } });
  const svc = await registerProduction(s, { endpoint: 'https://m.example.com', capabilities: ['metrics-test'] });
  const N = 17;
  for (let i = 0; i < N; i++) t.equal((await s.req('/services?capability=metrics-test')).status, 200);
  for (let i = 0; i < 5; i++) t.equal((await s.req(`/services/nope${i}`)).status, 404);
  t.equal((await s.req('/services?capability=Metrics-Test')).status, 302);
  for (let i = 0; i < 3; i++) t.equal((await s.req('/no/such/route')).status, 404);

  // replacements: the first call is a MISS, the ones after it HITs
  for (let i = 0; i < 4; i++) t.equal((await s.req(`/services/${svc.id}/replacements`)).status, 200);

  // a free sandbox limited to 3 a minute: 3 admitted, then 429s
  const sb = await createSandbox(s, 'Metrics');
  const auth = { authorization: `Bearer ${sb.apiKey}` };
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await s.req(`/sandbox/${sb.uuid}/services`, { headers: auth })).status);
  t.same(statuses, [200, 200, 200, 429, 429]);

  const r = await s.metrics();
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /^text\/plain/);
  const m = parseProm(await r.text());
  t.equal(sample(m, 'registry_http_requests_total', { route: '/services', method: 'GET', status: '200' }), N);
  t.equal(sample(m, 'registry_http_requests_total', { route: '/services', method: 'GET', status: '302' }), 1);
  t.equal(sample(m, 'registry_http_requests_total', { route: '/services/:id', method: 'GET', status: '404' }), 5);
  t.equal(sample(m, 'registry_http_requests_total', { route: '/*', method: 'GET', status: '404' }), 3);
  t.equal(sample(m, 'registry_http_requests_total', { route: '/services/:id/replacements', method: 'GET', status: '200' }), 4);
  t.equal(sample(m, 'registry_http_requests_total', { route: '/sandbox/:uuid/services', method: 'GET', status: '200' }), 3);
  t.equal(sample(m, 'registry_http_requests_total', { route: '/sandbox/:uuid/services', method: 'GET', status: '429' }), 2);
  t.equal(sample(m, 'registry_http_requests_total', { route: '/admin/api/services', method: 'POST', status: '201' }), 1);
  t.equal(sample(m, 'registry_http_requests_total', { route: '/sandboxes', method: 'POST', status: '201' }), 1);
  // the scrape being answered is not in its own output
  t.equal(sample(m, 'registry_http_requests_total', { route: '/metrics', method: 'GET', status: '200' }), undefined);
  // the latency histogram saw every one of them
  t.equal(sample(m, 'registry_http_request_duration_seconds_count', { route: '/services', method: 'GET' }), N + 1);
  t.equal(sample(m, 'registry_rate_limit_rejections_total', { tier: 'free' }), 2);
  t.equal(sample(m, 'registry_replacements_cache_total', { result: 'miss' }), 1);
  t.equal(sample(m, 'registry_replacements_cache_total', { result: 'hit' }), 3);
  t.equal(sample(m, 'registry_threads_reporting', {}), 1);
  t.equal(sample(m, 'registry_outbox_lag', {}), 0);
  t.equal(sample(m, 'registry_backend_up', { backend: 'postgres' }), 1);
  t.ok(m.has('registry_worker_pool_queue_depth'), 'the pool gauges are exported');
  // result cache: the first /services search and the first sandbox search computed, the rest hit
  t.equal(sample(m, 'registry_result_cache_total', { result: 'miss' }), 2);
  t.equal(sample(m, 'registry_result_cache_total', { result: 'hit' }), N - 1 + 2);
  t.equal(sample(m, 'registry_result_cache_total', { result: 'shared' }), 0);
  t.ok((sample(m, 'registry_result_cache_bytes', {}) ?? 0) > 0, 'the cache reports the bytes it holds');
  // the free sandbox (3 a minute) asks Redis until it is refused once (4 checks); the fifth
  // request is refused locally, none comes from a lease
  t.equal(sample(m, 'registry_rate_limit_checks_total', { source: 'redis' }), 4);
  t.equal(sample(m, 'registry_rate_limit_checks_total', { source: 'local' }), 1);
  t.equal(sample(m, 'registry_rate_limit_checks_total', { source: 'lease' }), 0);
  // the near cache: the searches' one set was loaded once; documents hit after the first
  t.ok((sample(m, 'registry_near_cache_total', { kind: 'set', result: 'miss' }) ?? 0) >= 1, 'near cache misses are exported');
  t.ok(m.has('registry_near_cache_bytes'), 'and its size');

  // the next scrape counts the previous one
  const m2 = parseProm(await (await s.metrics()).text());
  t.equal(sample(m2, 'registry_http_requests_total', { route: '/metrics', method: 'GET', status: '200' }), 1);
  t.equal(sample(m2, 'registry_http_requests_total', { route: '/services', method: 'GET', status: '200' }), N);
});

t.test('the public port does not serve /metrics; the metrics listener serves nothing else', async (t) => {
  const s = await serve(t);
  t.not(s.metricsPort, null);
  t.not(s.metricsPort, s.server.port, 'a port of its own');
  for (const path of ['/metrics', '/metrics/', '/metrics?x=1']) {
    const r = await s.req(path);
    t.equal(r.status, 404, `public ${path}`);
    t.match(await r.json(), { error: { code: 'NOT_FOUND' } });
  }
  const head = await s.req('/metrics', { method: 'HEAD' });
  t.equal(head.status, 404, 'HEAD too');
  t.equal((await s.metrics()).status, 200, 'the metrics listener answers');
  for (const path of ['/', '/services', '/livez', '/admin/']) {
    const r = await s.metrics(path);
    t.equal(r.status, 404, `metrics listener ${path}`);
    t.match(await r.json(), { error: { code: 'NOT_FOUND' } });
  }
  const post = await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`, { method: 'POST' });
  t.equal(post.status, 405);
  t.match(await post.json(), { error: { code: 'METHOD_NOT_ALLOWED' } });
});

t.test('METRICS_ENABLED=false: no metrics listener, and still 404 on the public port', async (t) => {
  const s = await serve(t, { env: { METRICS_ENABLED: 'false' } });
  t.equal(s.metricsPort, null);
  const r = await s.req('/metrics');
  t.equal(r.status, 404);
  t.match(await r.json(), { error: { code: 'NOT_FOUND' } });
});
