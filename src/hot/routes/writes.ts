// Registry writes shared by the sandbox routes and the admin production routes. Each is
// acknowledged only after PostgreSQL committed; the index is then updated before the
// response, so a client reads its own write (unless Redis is away: the outbox catches up).
import type { App } from '../app.js';
import { ApiError } from '../domain/errors.js';
import { deprecationHeaders, headerData, serializeService, serviceObject } from '../domain/service.js';
import { parseServiceCreate, parseServicePatch, check, validators } from '../domain/validation.js';
import { type Headers, type Reply, type Req } from '../http/route.js';
import { parseJson } from '../http/body.js';
import { addReplacement, createService, deleteService, loadReplacements, loadService, patchService } from '../store/services.js';

/** "/services" for production, "/sandbox/<uuid>/services" for a sandbox */
export type Base = string;

export async function createHandler(app: App, ns: string, base: Base, req: Req, reply: Reply, body: Buffer | null, extra: Headers): Promise<void> {
  const input = parseServiceCreate(parseJson(req, body));
  const w = await createService(app.pg, ns, input);
  await app.projector.syncQuietly([{ row: w.row, ns, id: w.id }]);
  const s = await loadService(app.pg, ns, w.id);
  if (!s) throw new ApiError('INTERNAL', 'the service vanished after it was written');
  reply.json(201, serializeService(s), [['Location', `${base}/${s.id}`], ['Cache-Control', 'no-store'], ...deprecationHeaders(headerData(s), `${base}/${s.id}/replacements`), ...extra]);
}

export async function patchHandler(app: App, ns: string, base: Base, id: string, req: Req, reply: Reply, body: Buffer | null, extra: Headers): Promise<void> {
  const change = parseServicePatch(parseJson(req, body));
  const w = await patchService(app.pg, ns, id, change);
  await app.projector.syncQuietly([{ row: w.row, ns, id }]);
  const s = await loadService(app.pg, ns, id);
  if (!s) throw ApiError.of('NOT_FOUND', ['service']);
  reply.json(200, serializeService(s), [['Cache-Control', 'no-store'], ...deprecationHeaders(headerData(s), `${base}/${id}/replacements`), ...extra]);
}

export async function deleteHandler(app: App, ns: string, id: string, reply: Reply, extra: Headers): Promise<void> {
  // re-index the deleted service and every service that listed it as a candidate
  const writes = await deleteService(app.pg, ns, id);
  await app.projector.syncQuietly(writes);
  reply.send(204, [['Cache-Control', 'no-store'], ...extra]);
}

export async function addReplacementHandler(app: App, ns: string, id: string, req: Req, reply: Reply, body: Buffer | null, extra: Headers): Promise<void> {
  const { serviceId } = check(validators.replacementAdd, parseJson(req, body));
  const w = await addReplacement(app.pg, ns, id, serviceId);
  await app.projector.syncQuietly([{ row: w.row, ns, id }]);
  await listReplacementsHandler(app, ns, id, reply, extra, 201);
}

export async function listReplacementsHandler(app: App, ns: string, id: string, reply: Reply, extra: Headers, status = 200): Promise<void> {
  const list = await loadReplacements(app.pg, ns, id);
  if (!list) throw ApiError.of('NOT_FOUND', ['service']);
  reply.json(status, JSON.stringify(list.map(serviceObject)), [['Cache-Control', 'no-store'], ...extra]);
}
