// The admin surface: session login/logout, the admin API and the dashboard's static files.
import type { TemplatedApp } from 'uWebSockets.js';
import type { App } from '../hot/app.js';
import { ApiError } from '../hot/domain/errors.js';
import { check, validators } from '../hot/domain/validation.js';
import { parseJson, route, type RouteOptions } from '../hot/http.js';
import { isAdminKey, requireAdmin } from './auth.js';
import { cookieValue, createSession, destroySession, setCookie } from './session.js';
import { registerAdminServices } from './services-routes.js';

export function registerAdmin(uws: TemplatedApp, app: App, o: RouteOptions): void {
  const ob = { ...o, body: true };
  route(uws, 'post', '/admin/session', async (req, reply, body) => {
    const { apiKey } = check(validators.adminLogin, parseJson(req, body));
    if (!isAdminKey(app, apiKey)) throw new ApiError('UNAUTHORIZED', 'wrong admin key');
    const { session, cookie } = await createSession(app);
    reply.json(200, JSON.stringify({ csrfToken: session.csrf }), [['Set-Cookie', cookie], ['Cache-Control', 'no-store']]);
  }, ob);

  route(uws, 'del', '/admin/session', async (req, reply) => {
    const who = await requireAdmin(app, req);
    if (who.via === 'cookie') await destroySession(app, cookieValue(req.cookie));
    reply.send(204, [['Set-Cookie', setCookie(app, '', 0)], ['Cache-Control', 'no-store']]);
  }, ob);

  registerAdminServices(uws, app, o);
}
