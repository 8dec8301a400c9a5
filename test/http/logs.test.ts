// Logs: with ACCESS_LOG on, one JSON line per request (method, route, status, duration),
// and no sandbox key, admin key, cookie, CSRF token or Authorization value anywhere in the
// output, whatever the requests carried. Also the logger's own redaction paths.
import http from 'node:http';
import t from 'tap';
import { createLogger } from '../../src/hot/app.js';
import { loadConfig } from '../../src/hot/config.js';
import { serve } from '../helpers/server.js';
import { openSse } from '../helpers/changes-sse.js';
import { waitFor } from '../helpers/wait.js';
import { ADMIN_KEY, baseEnv } from '../helpers/env.js';
import { LogCapture } from '../helpers/log-capture.js';

t.test('access log: one line per request, no secret in any line', async (t) => {
  const cap = new LogCapture();
  const s = await serve(t, { env: { ACCESS_LOG: 'true', LOG_LEVEL: 'info', CHANGES_POLL_MS: '30' }, logStream: cap });
  const json = { 'content-type': 'application/json' };
  let made = 0;
  const req = async (path: string, init: RequestInit = {}) => {
    made++;
    return s.req(path, init);
  };

  const created = await req('/sandboxes', { method: 'POST', headers: json, body: JSON.stringify({ name: 'Log Test' }) });
  t.equal(created.status, 201);
  const sb = (await created.json()) as { uuid: string; apiKey: string };
  const bearer = { authorization: `Bearer ${sb.apiKey}` };
  t.equal((await req('/services?capability=x', { headers: bearer })).status, 200);
  t.equal((await req(`/sandbox/${sb.uuid}/services`, { headers: bearer })).status, 200);
  t.equal((await req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { ...bearer, ...json }, body: JSON.stringify({ endpoint: 'https://l.example.com', capability: 'log' }) })).status, 201);
  t.equal((await req(`/sandbox/${sb.uuid}/services`, { headers: { authorization: 'Bearer not-a-real-key-but-secret-looking-1234' } })).status, 401);

  const login = await req('/admin/session', { method: 'POST', headers: json, body: JSON.stringify({ apiKey: ADMIN_KEY }) });
  t.equal(login.status, 200);
  const { csrfToken } = (await login.json()) as { csrfToken: string };
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const cookieValue = cookie.split('=')[1]!;
  t.ok(cookieValue.length > 20);
  t.equal((await req('/admin/api/stats', { headers: { cookie } })).status, 200);
  t.equal((await req('/admin/api/services', { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, ...json }, body: JSON.stringify({ endpoint: 'https://a.example.com', capability: 'log' }) })).status, 201);
  t.equal((await req('/admin/session', { method: 'POST', headers: json, body: JSON.stringify({ apiKey: 'wrong-admin-key-0123456789' }) })).status, 401);

  // a change stream with the key, closed by the client
  made++;
  const st = await openSse(s.url + '/services/changes', bearer);
  t.equal(st.status, 200);
  await st.nextComment();
  st.close();

  t.equal((await req('/admin/session', { method: 'DELETE', headers: { cookie, 'x-csrf-token': csrfToken } })).status, 204);

  // wait until every request has its line (the stream's is written when the server sees the abort)
  // (the harness's own read of /openapi.json at start, to check every answer, is not ours)
  const ours = () => cap.lines().filter((l) => l.msg === 'request' && l.path !== '/openapi.json');
  await waitFor('an access line for every request', () => ours().length >= made, 20_000, 20);
  const access = ours();
  t.equal(access.length, made, 'one access line per request');
  t.match(access[0], { level: 30, method: 'POST', route: '/sandboxes', path: '/sandboxes', status: 201, ms: Number });
  t.match(access.find((l) => l.route === '/services/changes'), { method: 'GET', status: 200 });
  t.match(access.find((l) => l.route === '/sandbox/:uuid/services' && l.status === 401), { path: `/sandbox/${sb.uuid}/services` });
  t.ok(access.every((l) => /^(127\.0\.0\.1|(0{1,4}:){5}ffff:7f00:1|::1|[0:]+1|::ffff:127\.0\.0\.1)$/.test(String(l.remote))), 'every line has the client address, GET routes too');

  const secrets = [sb.apiKey, sb.apiKey.split('_sb_')[1]!, ADMIN_KEY, cookieValue, csrfToken, 'not-a-real-key-but-secret-looking-1234', 'wrong-admin-key-0123456789'];
  for (const secret of secrets) t.notOk(cap.text.includes(secret), `no secret in the log (${secret.slice(0, 6)}…)`);
  t.notMatch(cap.text, /Bearer/i, 'no Authorization value');
  t.notMatch(cap.text, /registry_admin=/, 'no cookie');
});

t.test('without ACCESS_LOG there is no access line', async (t) => {
  const cap = new LogCapture();
  const s = await serve(t, { env: { LOG_LEVEL: 'info' }, logStream: cap });
  t.equal((await s.req('/livez')).status, 200);
  t.equal(cap.lines().filter((l) => l.msg === 'request').length, 0);
});

t.test('the logger redacts authorization, cookies and keys wherever they are put', async (t) => {
  const cap = new LogCapture();
  const log = createLogger(loadConfig({ ...baseEnv(), LOG_LEVEL: 'info' }), {}, cap);
  log.info({ authorization: 'Bearer s3cr3t-a', cookie: 'c=s3cr3t-b', apiKey: 's3cr3t-c', req: { headers: { authorization: 'Bearer s3cr3t-d', cookie: 's3cr3t-e' } }, body: { apiKey: 's3cr3t-f', key: 's3cr3t-g' } }, 'x');
  t.notMatch(cap.text, /s3cr3t/);
  t.match(cap.text, /\[redacted\]/);
});

/** GET from a chosen loopback address, with headers; resolves with the status */
function getFrom(url: string, localAddress: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const r = http.get(url, { localAddress, agent: false, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    r.on('error', reject);
  });
}

t.test('discovery stays anonymous: no line about /services/{id} or /replacements names the caller', async (t) => {
  const cap = new LogCapture();
  const s = await serve(t, { env: { ACCESS_LOG: 'true', LOG_LEVEL: 'info', TRUSTED_PROXIES: '127.0.0.1' }, logStream: cap });
  const created = await s.admin('POST', '/admin/api/services', { endpoint: 'https://anon.example.com', capability: 'anon' });
  t.equal(created.status, 201);
  const { id } = (await created.json()) as { id: string };
  t.equal((await s.admin('PATCH', `/admin/api/services/${id}`, { deprecated: true })).status, 200);
  const ua = 'Distinctive-Agent/7.3 (anonymity-probe-5f1c)';
  const direct = '127.0.0.9'; // not a trusted proxy: the connection's address is the client's
  const forwarded = '198.51.100.77'; // through the trusted proxy 127.0.0.1
  const headers = { 'user-agent': ua, 'x-request-probe': 'probe-header-value-93a1', accept: 'application/json' };
  let made = 0;
  for (const path of [`/services/${id}`, `/services/${id}/replacements`, '/services/nope', '/services/nope/replacements']) {
    t.ok([200, 404].includes(await getFrom(s.url + path, direct, headers)), `${path} from ${direct}`);
    t.ok([200, 404].includes(await getFrom(s.url + path, '127.0.0.1', { ...headers, 'x-forwarded-for': forwarded })), `${path} through the proxy`);
    made += 2;
  }
  // the control: a route that does log the address, so the capture sees addresses at all
  t.equal(await getFrom(s.url + '/services?capability=anon', direct, headers), 200);
  made++;
  await waitFor('an access line for every request', () => cap.lines().filter((l) => l.msg === 'request').length >= made + 2, 20_000, 20);
  const access = cap.lines().filter((l) => l.msg === 'request');
  const discovery = access.filter((l) => l.route === '/services/:id' || l.route === '/services/:id/replacements');
  t.equal(discovery.length, 8, 'the discovery requests are logged (method, route, status)');
  t.ok(discovery.every((l) => !('remote' in l)), 'without a remote field');
  const text = cap.lines().filter((l) => l.route === '/services/:id' || l.route === '/services/:id/replacements' || String(l.path ?? '').startsWith('/services/')).map((l) => JSON.stringify(l)).join('\n');
  for (const v of [direct, forwarded, ua, 'anonymity-probe-5f1c', 'probe-header-value-93a1']) t.notOk(text.includes(v), `no ${v} in their lines`);
  t.match(access.find((l) => l.route === '/services'), { remote: direct }, 'the control line of /services has the address');
});
