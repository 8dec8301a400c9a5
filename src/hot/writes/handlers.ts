// Registry writes shared by the sandbox routes and the admin production routes. Each is
// acknowledged only after PostgreSQL committed; the index is then updated before the
// response, so a client reads its own write (unless Redis is away: the outbox catches up).
import type { Config } from '../config.js';
import type { GroupCommitter } from './group-commit.js';
import { ApiError } from '../domain/errors.js';
import { deprecationHeaders, serviceObject } from '../domain/service.js';
import { parseServiceCreate, parseServicePatch, check, validators, type ServiceInput } from '../domain/validation.js';
import { type Headers, type Req } from '../http/route.js';
import type { Reply } from '../http/reply.js';
import { parseJson } from '../http/body.js';
import { addReplacement, loadReplacements } from '../registry/index.js';
import { patchService } from './patches.js';
import { commitServices, isRefusal, quotaError, type Committed } from './register.js';
import { leaseToken, newHeartbeatToken, tokenPrefix, withToken, type LivenessContext } from '../liveness/index.js';

/** What the write handlers need of their thread. */
export interface WriteContext extends LivenessContext {
  commits: GroupCommitter;
  cfg: Config;
}

/** "/services" for production, "/sandbox/<uuid>/services" for a sandbox */
export type Base = string;

export async function createHandler(app: WriteContext, ns: string, base: Base, req: Req, reply: Reply, body: Buffer | null, extra: Headers): Promise<void> {
  const input = parseServiceCreate(parseJson(req, body));
  // committed with whatever other registrations arrived meanwhile (group commit); the
  // statement returned the state, so Redis and the response are built from it, not read
  // a lease comes with its heartbeat token, shown once (only its hash is stored)
  const tok = input.ttl != null ? await leaseToken(app, ns) : null;
  // (applied to the index with its batch before it resolves: GroupCommitter's `apply`)
  const c = await app.commits.create({ ns, input, tokenHash: tok?.hash ?? null });
  reply.json(201, withToken(c.doc, tok?.token ?? null), [['Location', `${base}/${c.id}`], ['Cache-Control', 'no-store'], ...deprecationHeaders(c.hdr, `${base}/${c.id}/replacements`), ...extra]);
}

/** The most services one batch may register (contract). */
export const MAX_BATCH = 1000;

/**
 * The registrations of a batch body, all valid, or a 400 naming the index of the first
 * invalid one (nothing is written before every entry passed).
 */
export function parseBatch(req: Req, body: Buffer | null): ServiceInput[] {
  const b = parseJson(req, body);
  if (!b || typeof b !== 'object' || Array.isArray(b)) throw new ApiError('BATCH_NOT_OBJECT');
  const unknown = Object.keys(b).find((k) => k !== 'services');
  if (unknown !== undefined) throw new ApiError('BATCH_UNKNOWN_FIELD', [JSON.stringify(unknown)]);
  const list = (b as { services?: unknown }).services;
  if (!Array.isArray(list)) throw new ApiError('BATCH_NOT_ARRAY');
  if (list.length < 1 || list.length > MAX_BATCH) throw new ApiError('BATCH_SIZE', [MAX_BATCH, list.length]);
  return list.map((x, i) => {
    try {
      return parseServiceCreate(x);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      throw err.at(`/services/${i}`);
    }
  });
}

/**
 * POST .../services/batch with a parsed body: one statement for all of them (all or
 * nothing, the sandbox's quota included: 409 when it has no room for every one), Redis
 * applied in pipelined pages from what it returned, 201 in order.
 */
export async function batchHandler(app: WriteContext, ns: string, inputs: ServiceInput[], reply: Reply, extra: Headers): Promise<void> {
  // leases (ttl given) get their tokens, shown once, each in its own service's object
  const prefix = inputs.some((input) => input.ttl != null) ? await tokenPrefix(app.pg, ns) : '';
  const toks = inputs.map((input) => (input.ttl != null ? newHeartbeatToken(prefix) : null));
  const out = await commitServices(app.pg, inputs.map((input, i) => ({ ns, input, tokenHash: toks[i]?.hash ?? null })), { tiers: app.cfg.tierMaxServices, all: true });
  const refused = out.find(isRefusal);
  if (refused) throw quotaError(refused, true);
  const done = out as Committed[];
  await app.projector.applyCommitted(done);
  reply.json(201, '{"services":[' + done.map((c, i) => withToken(c.doc, toks[i]?.token ?? null)).join(',') + ']}', [['Cache-Control', 'no-store'], ...extra]);
}

export async function patchHandler(app: WriteContext, ns: string, base: Base, id: string, req: Req, reply: Reply, body: Buffer | null, extra: Headers): Promise<void> {
  const change = parseServicePatch(parseJson(req, body));
  // the statement returned the state it committed: Redis and the response are built from it
  // a patch that starts a lease on a service without a token issues one
  const tok = typeof change.ttl === 'number' ? await leaseToken(app, ns) : null;
  // (committed with other patches and applied to the index with its batch: GroupCommitter)
  const c = await patchService(app.pg, ns, id, change, undefined, tok?.hash ?? null, (p) => app.commits.patch(p));
  reply.json(200, withToken(c.doc, c.issued ? tok!.token : null), [['Cache-Control', 'no-store'], ...deprecationHeaders(c.hdr, `${base}/${id}/replacements`), ...extra]);
}

export async function deleteHandler(app: WriteContext, ns: string, id: string, reply: Reply, extra: Headers): Promise<void> {
  // committed with other deletions; the deleted service and every service that listed it
  // as a candidate are re-indexed with the batch, from the states the statement returned
  if (!(await app.commits.delete({ ns, id }))) throw new ApiError('SERVICE_NOT_FOUND');
  reply.send(204, [['Cache-Control', 'no-store'], ...extra]);
}

export async function addReplacementHandler(app: WriteContext, ns: string, id: string, req: Req, reply: Reply, body: Buffer | null, extra: Headers): Promise<void> {
  const { serviceId } = check(validators.replacementAdd, parseJson(req, body));
  const w = await addReplacement(app.pg, ns, id, serviceId);
  await app.projector.applyCommitted([w]);
  reply.json(201, JSON.stringify(w.candidates.map(serviceObject)), [['Cache-Control', 'no-store'], ...extra]);
}

export async function listReplacementsHandler(app: WriteContext, ns: string, id: string, reply: Reply, extra: Headers, status = 200): Promise<void> {
  const list = await loadReplacements(app.pg, ns, id);
  if (!list) throw new ApiError('SERVICE_NOT_FOUND');
  reply.json(status, JSON.stringify(list.map(serviceObject)), [['Cache-Control', 'no-store'], ...extra]);
}
