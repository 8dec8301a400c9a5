// The admin surface: session login/logout, the admin API and the dashboard's static files.
import type { TemplatedApp } from 'uWebSockets.js';
import type { App } from '../hot/app.js';
import { ApiError } from '../hot/domain/errors.js';
import { route, type RouteOptions } from '../hot/http/route.js';
import { parseJson } from '../hot/http/body.js';
import { registerAdminApi } from './api.js';
import { isAdminKey, requireAdmin } from './auth.js';
import { cookieValue, createSession, destroySession, sessionFromCookie, setCookie } from './session.js';
import { registerAdminServices } from './services-routes.js';
import { registerStatic } from './static.js';
import { integer } from '../hot/redis/replies.js';

export function registerAdmin(uws: TemplatedApp, app: App, o: RouteOptions): void {
  const ob = { ...o, body: true };
  route(uws, 'post', '/admin/session', async (req, reply, body) => {
    // guessing the key is throttled: LOGIN_FAILURES_PER_MINUTE failures per client address.
    // Every attempt is counted first, atomically, and only the first LIMIT of a minute are
    // compared at all: 200 parallel guesses get exactly LIMIT answers (a read-then-count
    // let all of them through the check). A right key gives its count back.
    const minute = Math.floor(Date.now() / 60_000);
    const failures = app.keys.loginFailures(req.remote, minute);
    if (integer(await app.redis.count(failures, 120), 'count') > app.cfg.loginFailuresPerMinute) {
      const retry = String(Math.max(1, Math.ceil(((minute + 1) * 60_000 - Date.now()) / 1000)));
      throw new ApiError('RATE_LIMITED', 'too many failed logins from this address; try again later', { 'Retry-After': retry });
    }
    const b = parseJson(req, body) as { apiKey?: unknown } | null;
    // a missing, empty or mistyped key is as wrong as a wrong one: 401, not a schema error
    const apiKey = b && typeof b === 'object' && typeof b.apiKey === 'string' ? b.apiKey : '';
    if (!isAdminKey(app, apiKey)) throw new ApiError('UNAUTHORIZED', 'wrong admin key');
    await app.redis.decr(failures); // successes do not count
    const { session, cookie } = await createSession(app);
    reply.json(200, JSON.stringify({ csrfToken: session.csrf }), [['Set-Cookie', cookie], ['Cache-Control', 'no-store']]);
  }, ob);

  // The dashboard keeps the CSRF token in memory only; after a reload it asks for it again
  // here. Only same-origin script can read this answer (no CORS), which is what makes a
  // token fetched with the cookie safe to hand out.
  route(uws, 'get', '/admin/session', async (req, reply) => {
    const s = await sessionFromCookie(app, req.cookie);
    if (!s) throw new ApiError('UNAUTHORIZED', 'no admin session', { 'WWW-Authenticate': 'Bearer' });
    reply.json(200, JSON.stringify({ csrfToken: s.csrf }), [['Cache-Control', 'no-store']]);
  }, o);

  route(uws, 'del', '/admin/session', async (req, reply) => {
    const who = await requireAdmin(app, req); // cookie callers need X-CSRF-Token (403 otherwise)
    if (who.via === 'cookie') await destroySession(app, cookieValue(req.cookie));
    reply.send(204, [['Set-Cookie', setCookie(app, '', 0)], ['Cache-Control', 'no-store']]);
  }, ob);

  registerAdminServices(uws, app, o);
  registerAdminApi(uws, app, o);
  registerStatic(uws, app, o);
}
