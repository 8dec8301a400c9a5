// Production registry writes: POST/PATCH/DELETE /admin/api/services[/{id}[/replacements]].
import type { TemplatedApp } from 'uWebSockets.js';
import type { App } from '../hot/app.js';
import { PRODUCTION } from '../hot/domain/keys.js';
import { route, type RouteOptions } from '../hot/http/route.js';
import { addReplacementHandler, batchHandler, createHandler, deleteHandler, listReplacementsHandler, parseBatch, patchHandler } from '../hot/writes/index.js';
import { heartbeatTokenHandler } from '../hot/liveness/index.js';
import { adminGuard, requireAdmin } from './auth.js';

const NONE: [string, string][] = [];

export function registerAdminServices(uws: TemplatedApp, app: App, o: RouteOptions): void {
  // the credential before the body (adminGuard): a stranger's body is never read
  const ob = { ...o, body: true, guard: adminGuard(app) };
  route(uws, 'post', '/admin/api/services', async (req, reply, body) => {
    await requireAdmin(app, req);
    await createHandler(app, PRODUCTION, '/services', req, reply, body, NONE);
  }, ob);
  // not rate-limited (contract); its own body limit (MAX_BATCH_BODY_BYTES)
  route(uws, 'post', '/admin/api/services/batch', async (req, reply, body) => {
    await requireAdmin(app, req);
    await batchHandler(app, PRODUCTION, parseBatch(req, body), reply, NONE);
  }, { ...ob, maxBody: app.cfg.maxBatchBodyBytes });
  route(uws, 'patch', '/admin/api/services/:id', async (req, reply, body) => {
    await requireAdmin(app, req);
    await patchHandler(app, PRODUCTION, '/services', req.params[0]!, req, reply, body, NONE);
  }, ob);
  route(uws, 'del', '/admin/api/services/:id', async (req, reply) => {
    await requireAdmin(app, req);
    await deleteHandler(app, PRODUCTION, req.params[0]!, reply, NONE);
  }, ob);
  route(uws, 'post', '/admin/api/services/:id/heartbeat-token', async (req, reply) => {
    await requireAdmin(app, req);
    await heartbeatTokenHandler(app, PRODUCTION, req.params[0]!, reply, NONE);
  }, ob);
  route(uws, 'get', '/admin/api/services/:id/replacements', async (req, reply) => {
    await requireAdmin(app, req);
    await listReplacementsHandler(app, PRODUCTION, req.params[0]!, reply, NONE);
  }, o);
  route(uws, 'post', '/admin/api/services/:id/replacements', async (req, reply, body) => {
    await requireAdmin(app, req);
    await addReplacementHandler(app, PRODUCTION, req.params[0]!, req, reply, body, NONE);
  }, ob);
}
