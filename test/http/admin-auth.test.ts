// Admin authentication (contract, "Administration"): login and its cookie, logout, the
// 401 on every /admin/api/* call without a valid cookie or admin key, and CSRF: a cookie
// caller's non-GET call without the session's X-CSRF-Token is 403 and changes nothing.
import t from 'tap';
import { createSandbox, type TestServer, serve } from '../helpers/server.js';
import { ADMIN_KEY } from '../helpers/env.js';

const JSON_CT = { 'content-type': 'application/json' };

async function login(s: TestServer): Promise<{ cookie: string; csrf: string; setCookie: string }> {
  const r = await s.req('/admin/session', { method: 'POST', headers: JSON_CT, body: JSON.stringify({ apiKey: ADMIN_KEY }) });
  if (r.status !== 200) throw new Error(`login failed: ${r.status}`);
  const setCookie = r.headers.get('set-cookie') ?? '';
  const { csrfToken } = (await r.json()) as { csrfToken: string };
  return { cookie: setCookie.split(';')[0]!, csrf: csrfToken, setCookie };
}

async function errorCode(r: Response): Promise<string> {
  const b = (await r.json()) as { error?: { code?: string; message?: string } };
  return typeof b.error?.message === 'string' ? (b.error.code ?? '') : 'no error body';
}

t.test('admin auth', async (t) => {
  // wrong keys by the dozen from one address: the throttle (admin-login-throttle.test.ts)
  // would answer 429 before the 401s these tests are about
  const s = await serve(t, { env: { SANDBOX_CREATE_PER_MINUTE: '1000', LOGIN_FAILURES_PER_MINUTE: '1000' } });
  const sb = await createSandbox(s, 'Auth target');

  t.test('login: 401 with the error body on a wrong, empty or missing key; no cookie', async (t) => {
    for (const body of [{ apiKey: 'wrong-key-wrong-key-wrong' }, { apiKey: '' }, {}, { apiKey: 42 }, { apiKey: ADMIN_KEY + 'x' }]) {
      const r = await s.req('/admin/session', { method: 'POST', headers: JSON_CT, body: JSON.stringify(body) });
      t.equal(r.status, 401, JSON.stringify(body));
      t.match(r.headers.get('content-type'), /^application\/json/);
      t.equal(await errorCode(r), 'UNAUTHORIZED');
      t.equal(r.headers.get('set-cookie'), null, 'no cookie for a failed login');
    }
    const bad = await s.req('/admin/session', { method: 'POST', headers: JSON_CT, body: '{not json' });
    t.equal(bad.status, 400);
    t.equal(await errorCode(bad), 'BAD_JSON');
  });

  t.test('login: 200 {csrfToken} and an HttpOnly, SameSite=Strict, Path=/admin cookie', async (t) => {
    const { setCookie, csrf } = await login(s);
    t.ok(csrf.length >= 20, 'a CSRF token');
    t.match(setCookie, /^registry_admin=[A-Za-z0-9_-]{43};/);
    t.match(setCookie, /;\s*HttpOnly/i);
    t.match(setCookie, /;\s*SameSite=Strict/i);
    t.match(setCookie, /;\s*Path=\/admin(;|$)/);
    t.notMatch(setCookie, /;\s*Secure/i, 'COOKIE_SECURE=false (local http) leaves Secure off');
    t.not((await login(s)).cookie, (await login(s)).cookie, 'each login is its own session');
  });

  t.test('the cookie is Secure unless configured off', async (t) => {
    const secure = await serve(t, { env: { COOKIE_SECURE: 'true' } });
    t.match((await login(secure)).setCookie, /;\s*Secure/i);
  });

  t.test('every /admin/api/* call without a valid cookie or admin key is 401', async (t) => {
    const calls: [string, string, unknown?][] = [
      ['GET', '/admin/api/stats'],
      ['GET', '/admin/api/sandboxes'],
      ['GET', '/admin/api/sandboxes?tier=nope&page=-1'],
      ['GET', `/admin/api/sandboxes/${sb.uuid}`],
      ['GET', '/admin/api/sandboxes/not-a-uuid'],
      ['POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'pro' }],
      ['GET', '/admin/api/locations'],
      ['POST', '/admin/api/services', { endpoint: 'https://x.example', capabilities: ['x'] }],
      ['GET', '/admin/api/no-such-thing'],
      ['DELETE', '/admin/api/stats'],
      ['PUT', '/admin/api/sandboxes'],
    ];
    const creds: [string, Record<string, string>][] = [
      ['nothing', {}],
      ['a wrong Bearer key', { authorization: 'Bearer not-the-admin-key-000000' }],
      ['a sandbox key', { authorization: `Bearer ${sb.apiKey}` }],
      ['an unknown session cookie', { cookie: 'registry_admin=' + 'A'.repeat(43) }],
      ['a malformed cookie', { cookie: 'registry_admin=../../etc' }],
      ['the key in the cookie', { cookie: `registry_admin=${ADMIN_KEY}` }],
    ];
    for (const [what, h] of creds) {
      for (const [method, path, body] of calls) {
        const r = await s.req(path, { method, headers: { ...h, ...(body ? JSON_CT : {}) }, body: body ? JSON.stringify(body) : undefined });
        t.equal(r.status, 401, `${method} ${path} with ${what}`);
        t.equal(await errorCode(r), 'UNAUTHORIZED');
      }
    }
    const detail = await s.admin('GET', `/admin/api/sandboxes/${sb.uuid}`);
    t.equal(((await detail.json()) as { tier: string }).tier, 'free', 'none of those changed the tier');
  });

  t.test('a cookie authenticates GETs and can fetch its CSRF token again', async (t) => {
    const { cookie } = await login(s);
    t.equal((await s.req('/admin/api/stats', { headers: { cookie } })).status, 200);
    const r = await s.req('/admin/session', { headers: { cookie } });
    t.equal(r.status, 200, 'the page can fetch its CSRF token again after a reload');
    t.equal((await s.req('/admin/session')).status, 401);
    t.equal((await s.admin('GET', '/admin/api/no-such-thing')).status, 404, 'unknown paths are 404 once authenticated');
  });

  t.test('tier change by cookie: 403 and no change without the right X-CSRF-Token', async (t) => {
    const { cookie, csrf } = await login(s);
    const other = await login(s);
    for (const [what, extra] of [
      ['no token', {}],
      ['an empty token', { 'x-csrf-token': '' }],
      ['a wrong token', { 'x-csrf-token': csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A') }],
      ["another session's token", { 'x-csrf-token': other.csrf }],
    ] as const) {
      const r = await s.req(`/admin/api/sandboxes/${sb.uuid}/tier`, { method: 'POST', headers: { cookie, ...JSON_CT, ...extra }, body: JSON.stringify({ tier: 'pro' }) });
      t.equal(r.status, 403, what);
      t.equal(await errorCode(r), 'CSRF_FAILED');
    }
    const d = (await (await s.admin('GET', `/admin/api/sandboxes/${sb.uuid}`)).json()) as { tier: string; tierChanges: unknown[] };
    t.equal(d.tier, 'free', 'the tier did not change');
    t.same(d.tierChanges, [], 'nothing was recorded');
    const probe = await s.req(`/sandbox/${sb.uuid}/services`, { headers: { authorization: `Bearer ${sb.apiKey}` } });
    t.match(probe.headers.get('ratelimit-policy'), /q=60;/, 'the limit did not change');

    const ok = await s.req(`/admin/api/sandboxes/${sb.uuid}/tier`, { method: 'POST', headers: { cookie, ...JSON_CT, 'x-csrf-token': csrf }, body: JSON.stringify({ tier: 'pro' }) });
    t.equal(ok.status, 200, 'with the token it works');
    t.equal(((await ok.json()) as { rateLimit: number }).rateLimit, 600);
    const after = (await (await s.admin('GET', `/admin/api/sandboxes/${sb.uuid}`)).json()) as { tierChanges: { from: string; to: string; by: string; at: string }[] };
    t.equal(after.tierChanges.length, 1);
    t.match(after.tierChanges[0], { from: 'free', to: 'pro', by: /^session:/ }, 'who changed it is recorded');
    t.ok(Date.now() - Date.parse(after.tierChanges[0]!.at) < 60_000, 'and when');
    t.equal((await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'free' })).status, 200, 'a Bearer caller needs no CSRF token');
  });

  t.test('sessions expire: idle TTL in Redis, and an absolute age limit', async (t) => {
    const { cookie } = await login(s);
    const id = cookie.slice('registry_admin='.length);
    const k = s.app.keys.adminSession(id);
    const ttl = await s.app.redis.ttl(k);
    t.ok(ttl > s.cfg.sessionIdleSeconds - 5 && ttl <= s.cfg.sessionIdleSeconds, `idle expiry is the key's TTL (${ttl} s)`);
    await s.app.redis.expire(k, 100);
    t.equal((await s.req('/admin/api/stats', { headers: { cookie } })).status, 200);
    t.ok((await s.app.redis.ttl(k)) > 100, 'use slides the idle expiry');
    // a session older than the absolute lifetime is refused even while in use
    const sess = JSON.parse((await s.app.redis.get(k))!) as { createdAt: number };
    sess.createdAt = Date.now() - s.cfg.sessionAbsoluteSeconds * 1000 - 1000;
    await s.app.redis.set(k, JSON.stringify(sess), 'EX', 600);
    t.equal((await s.req('/admin/api/stats', { headers: { cookie } })).status, 401, 'past the absolute lifetime');
    t.equal(await s.app.redis.exists(k), 0, 'and removed');
  });

  t.test('logout: CSRF required for cookie callers, and nothing changes without it', async (t) => {
    const { cookie, csrf } = await login(s);
    t.equal((await s.req('/admin/session', { method: 'DELETE' })).status, 401, 'no session, no logout');
    const noToken = await s.req('/admin/session', { method: 'DELETE', headers: { cookie } });
    t.equal(noToken.status, 403);
    t.equal(await errorCode(noToken), 'CSRF_FAILED');
    t.equal(noToken.headers.get('set-cookie'), null, 'the cookie is not cleared');
    t.equal((await s.req('/admin/api/stats', { headers: { cookie } })).status, 200, 'the session still works');
    const wrong = await s.req('/admin/session', { method: 'DELETE', headers: { cookie, 'x-csrf-token': 'nope' } });
    t.equal(wrong.status, 403);
    t.equal((await s.req('/admin/api/stats', { headers: { cookie } })).status, 200, 'still works');

    const out = await s.req('/admin/session', { method: 'DELETE', headers: { cookie, 'x-csrf-token': csrf } });
    t.equal(out.status, 204);
    t.match(out.headers.get('set-cookie'), /^registry_admin=;.*Max-Age=0/, 'the cookie is cleared');
    t.equal((await s.req('/admin/api/stats', { headers: { cookie } })).status, 401, 'the session is gone');
    t.equal((await s.req('/admin/session', { method: 'DELETE', headers: { cookie, 'x-csrf-token': csrf } })).status, 401, 'a second logout is 401');
  });

  t.test('logout with the cookie and an admin Bearer ends the session too', async (t) => {
    const { cookie } = await login(s);
    t.equal((await s.req('/admin/api/stats', { headers: { cookie } })).status, 200, 'a live session');
    const out = await s.req('/admin/session', { method: 'DELETE', headers: { cookie, authorization: `Bearer ${ADMIN_KEY}` } });
    t.equal(out.status, 204, 'the Bearer needs no CSRF token');
    t.match(out.headers.get('set-cookie'), /^registry_admin=;.*Max-Age=0/, 'the cookie is cleared');
    t.equal((await s.req('/admin/api/stats', { headers: { cookie } })).status, 401, 'and the session it named is over');
  });
});
