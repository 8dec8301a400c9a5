// The write routes of a sandbox's registry (its key first: sandboxes/keyed.ts): register,
// batch, PATCH, DELETE and replacement candidates. Production's are the admin API's
// (src/admin/services-routes.ts); both call the handlers (handlers.ts).
import type { TemplatedApp } from 'uWebSockets.js';
import type { Config } from '../config.js';
import type { ServiceInput } from '../domain/validation.js';
import { route, type RouteOptions } from '../http/route.js';
import { keyedRoutes, keyGuard, sandboxBase, sandboxNs, withRateHeaders } from '../sandboxes/index.js';
import { addReplacementHandler, batchHandler, createHandler, deleteHandler, listReplacementsHandler, parseBatch, patchHandler, type WriteContext } from './handlers.js';

export function registerSandboxWrites(uws: TemplatedApp, app: WriteContext & { cfg: Config }, o: RouteOptions): void {
  const ob = { ...o, body: true };
  const keyed = keyedRoutes(uws, app.auth);
  const ns = sandboxNs;

  keyed('post', '/sandbox/:uuid/services', ob, (req, reply, body, rl) => createHandler(app, ns(req), sandboxBase(req), req, reply, body, rl));

  // a batch counts one request per service, all admitted or none (admitMany): the key is
  // checked first without counting (the guard), then the body is read and checked, so that
  // an invalid batch counts as the one request it is and a refused key costs no body at all
  route(uws, 'post', '/sandbox/:uuid/services/batch', async (req, reply, body) => {
    let inputs: ServiceInput[];
    try {
      inputs = parseBatch(req, body);
    } catch (err) {
      throw withRateHeaders(err, await app.auth.admit(req.authorization, req.params[0]!));
    }
    const rl = await app.auth.admitMany(req.authorization, req.params[0]!, inputs.length);
    try {
      await batchHandler(app, ns(req), inputs, reply, rl);
    } catch (err) {
      throw withRateHeaders(err, rl);
    }
  }, { ...ob, maxBody: app.cfg.maxBatchBodyBytes, guard: keyGuard(app.auth) });

  keyed('patch', '/sandbox/:uuid/services/:id', ob, (req, reply, body, rl) => patchHandler(app, ns(req), sandboxBase(req), req.params[1]!, req, reply, body, rl));

  keyed('del', '/sandbox/:uuid/services/:id', ob, (req, reply, _body, rl) => deleteHandler(app, ns(req), req.params[1]!, reply, rl));

  keyed('get', '/sandbox/:uuid/services/:id/replacements', o, (req, reply, _body, rl) => listReplacementsHandler(app, ns(req), req.params[1]!, reply, rl));

  keyed('post', '/sandbox/:uuid/services/:id/replacements', ob, (req, reply, body, rl) => addReplacementHandler(app, ns(req), req.params[1]!, req, reply, body, rl));
}
