// The admin surface: session login/logout, the admin API and the dashboard's static files.
import type { TemplatedApp } from 'uWebSockets.js';
import type { App } from '../hot/app.js';
import { ApiError } from '../hot/domain/errors.js';
import { route, type RouteOptions } from '../hot/http/route.js';
import { parseJson } from '../hot/http/body.js';
import { registerAdminApi } from './api.js';
import { adminGuard, checkAdminKey, requireAdmin } from './auth.js';
import { cookieValue, createSession, destroySession, sessionFromCookie, setCookie } from './session.js';
import { registerAdminServices } from './services-routes.js';
import { registerStatic } from './static.js';

export function registerAdmin(uws: TemplatedApp, app: App, routeOptions: RouteOptions): void {
  // every admin route may count a wrong key against the client address (auth.ts)
  const o: RouteOptions = { ...routeOptions, remote: true };
  const ob = { ...o, body: true };
  route(uws, 'post', '/admin/session', async (req, reply, body) => {
    // a body that does not parse is refused as BAD_JSON before any key is looked at
    const b = parseJson(req, body) as { apiKey?: unknown } | null;
    // a missing, empty or mistyped key is as wrong as a wrong one: 401, not a schema error
    const apiKey = b && typeof b === 'object' && typeof b.apiKey === 'string' ? b.apiKey : '';
    // throttled per address (checkAdminKey: 429 beyond LOGIN_FAILURES_PER_MINUTE failures)
    if (!(await checkAdminKey(app, req.remote, apiKey))) throw new ApiError('ADMIN_KEY_WRONG');
    const { session, cookie } = await createSession(app);
    reply.json(200, JSON.stringify({ csrfToken: session.csrf }), [['Set-Cookie', cookie], ['Cache-Control', 'no-store']]);
  }, ob);

  // The dashboard keeps the CSRF token in memory only; after a reload it asks for it again
  // here. Only same-origin script can read this answer (no CORS), which is what makes a
  // token fetched with the cookie safe to hand out.
  route(uws, 'get', '/admin/session', async (req, reply) => {
    const s = await sessionFromCookie(app, req.cookie);
    if (!s) throw new ApiError('ADMIN_SESSION_MISSING', [], { 'WWW-Authenticate': 'Bearer' });
    reply.json(200, JSON.stringify({ csrfToken: s.csrf }), [['Cache-Control', 'no-store']]);
  }, o);

  route(uws, 'del', '/admin/session', async (req, reply) => {
    await requireAdmin(app, req); // cookie callers need X-CSRF-Token (403 otherwise)
    // the session the cookie names ends, however the request was authenticated (an admin
    // Bearer beside the cookie used to clear the cookie and leave its session valid)
    const id = cookieValue(req.cookie);
    if (id) await destroySession(app, id);
    reply.send(204, [['Set-Cookie', setCookie(app, '', 0)], ['Cache-Control', 'no-store']]);
  }, { ...ob, guard: adminGuard(app) });

  registerAdminServices(uws, app, o);
  registerAdminApi(uws, app, o);
  registerStatic(uws, app, o);
}
