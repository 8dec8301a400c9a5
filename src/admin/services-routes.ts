// Production registry writes: POST/PATCH/DELETE /admin/api/services[/{id}[/replacements]].
import type { TemplatedApp } from 'uWebSockets.js';
import type { App } from '../hot/app.js';
import { PRODUCTION } from '../hot/domain/keys.js';
import { route, type RouteOptions } from '../hot/http/route.js';
import { addReplacementHandler, batchHandler, createHandler, deleteHandler, listReplacementsHandler, parseBatch, patchHandler } from '../hot/routes/writes.js';
import { requireAdmin } from './auth.js';

const NONE: [string, string][] = [];

export function registerAdminServices(uws: TemplatedApp, app: App, o: RouteOptions): void {
  const ob = { ...o, body: true };
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
  route(uws, 'get', '/admin/api/services/:id/replacements', async (req, reply) => {
    await requireAdmin(app, req);
    await listReplacementsHandler(app, PRODUCTION, req.params[0]!, reply, NONE);
  }, o);
  route(uws, 'post', '/admin/api/services/:id/replacements', async (req, reply, body) => {
    await requireAdmin(app, req);
    await addReplacementHandler(app, PRODUCTION, req.params[0]!, req, reply, body, NONE);
  }, ob);
}
