// Heartbeats (PUT /services/{id}/heartbeat, PUT /sandbox/{uuid}/services/{id}/heartbeat)
// and heartbeat-token rotation (contract "Liveness"). A heartbeat's credential is the
// service's heartbeat token, nothing else: a token of the wrong shape is refused from its
// text, any other mismatch by the lease record in Redis; no PostgreSQL look-up either way.
// The thread's token memory (liveness/token-memory.ts) spares a known token its hashing and a
// refused one its Redis call; a heartbeat without a body reads none (route.ts), and one with
// a body has its token verified before the body is read (verifyToken): a wrong token never
// has its body parsed, whatever the body.
import type { TemplatedApp } from 'uWebSockets.js';
import type { Pool } from '../pg/pool.js';
import { type Projector, rotateToken } from '../registry/index.js';
import { bearerKey, keyedRoutes, type SandboxAuth, sandboxNs, sandboxUuid } from '../sandboxes/index.js';
import type { HeartbeatTokenMemory } from './token-memory.js';
import { ApiError } from '../domain/errors.js';
import { PRODUCTION } from '../domain/keys.js';
import { check, validators } from '../domain/validation.js';
import { parseJson } from '../http/body.js';
import { route, type Headers, type Req, type RouteOptions } from '../http/route.js';
import { sendError, type Reply } from '../http/reply.js';
import type { HeartbeatResult, Liveness } from './liveness.js';
import { newHeartbeatToken } from './tokens.js';
import { tokenPrefix } from './store.js';

/** What the liveness routes need of their thread. */
export interface LivenessContext {
  pg: Pool;
  projector: Projector;
  liveness: Liveness;
  heartbeatTokens: HeartbeatTokenMemory;
  auth: SandboxAuth;
}

const NO_STORE: Headers = [['Cache-Control', 'no-store']];
/**
 * A heartbeat's 204 carries no Cache-Control: a response to PUT is not cacheable (RFC 9110
 * §9.3.4, RFC 9111 §3) and a 204 has no content to keep (docs/decisions/heartbeat-batches.md).
 * Its errors keep no-store (reply.ts).
 */
const NONE: Headers = [];
// A sandbox heartbeat's 204 carries the RateLimit fields only once fewer than half the
// window's requests are left (rate-limiter.ts nearExhaustion; draft-10 §6.2): a fleet within
// its limit gets 204s of status line and Date alone. Its 429 carries them always.

function unauthorized(): ApiError {
  return new ApiError('HEARTBEAT_TOKEN_REQUIRED', [], { 'WWW-Authenticate': 'Bearer' });
}

/** The wanted status of a heartbeat body: none (or empty) is "passing". */
function wanted(req: Req, body: Buffer | null): 'passing' | 'critical' {
  if (!body || body.length === 0) return 'passing';
  return check(validators.heartbeat, parseJson(req, body)).status ?? 'passing';
}

/**
 * A heartbeat's token before its body is read (route.ts guard; a heartbeat without a body
 * skips it): a token the thread's memory knows passes, one it refuses is refused, at once;
 * any other is asked of Redis first (a check-only line: nothing renewed, nothing counted
 * against a rate limit) and remembered as accepted, so that its handler takes the common path.
 */
function verifyToken(app: LivenessContext, ns: string | null, id: string, req: Req): Promise<void> | undefined {
  const token = bearerKey(req.authorization);
  if (!ns || !token) throw unauthorized();
  const m = app.heartbeatTokens.look(ns, id, token);
  if (m.refused) throw unauthorized();
  if (m.known) return undefined;
  return app.liveness.verify(ns, id, m.hash).then((r) => {
    if (r === 'unavailable') throw new ApiError('LEASES_RESTORING', [], { 'Retry-After': '1' });
    if (r === 'unauthorized') {
      app.heartbeatTokens.refuse(ns, id, token);
      throw unauthorized();
    }
    app.heartbeatTokens.accept(ns, id, token, m.hash);
  });
}

/**
 * A heartbeat: the common case (a token this thread has seen accepted, and for a sandbox a
 * rate-limit answer this thread has without Redis) goes to Redis in the thread's batch and
 * is answered from its callback, without a promise; anything else takes the general path
 * (general()). A refusal is thrown (route.ts answers it).
 */
function heartbeat(app: LivenessContext, ns: string | null, id: string, req: Req, reply: Reply, body: Buffer | null, sandbox: boolean, o: RouteOptions): Promise<void> | void {
  const token = bearerKey(req.authorization);
  if (!ns || !token) throw unauthorized();
  const m = app.heartbeatTokens.look(ns, id, token);
  if (m.refused) throw unauthorized();
  // the body after the token: a body came only after verifyToken (Redis said yes), and a
  // token refused here never has one parsed
  const want = wanted(req, body);
  if (!m.known) return general(app, ns, id, token, m.hash, want, reply, sandbox, false);
  let rl: Headers | null = null;
  if (sandbox) {
    // the entry's namespace: the same text, its hash already computed (the path's is new)
    rl = app.auth.limitNow(m.ns, 'near'); // throws the 429
    if (!rl) return general(app, ns, id, token, m.hash, want, reply, sandbox, true);
  }
  const headers = rl ?? NONE;
  app.liveness.renew(m, want, (r, err) => {
    try {
      if (err !== undefined) throw err;
      answer(app, ns, id, token, m.hash, false, r, reply, headers);
    } catch (e) {
      sendError(reply, e, (x) => o.onError(x, req));
    }
  });
}

/** The general path: a token seen for the first time, or a rate limit that asks Redis. */
async function general(app: LivenessContext, ns: string, id: string, token: string, hash: string, want: 'passing' | 'critical', reply: Reply, sandbox: boolean, known: boolean): Promise<void> {
  let rl: Headers | null = null;
  const admit = sandbox ? async () => (rl = await app.auth.limitOrThrow(ns, 'near')) : undefined;
  const r = await app.liveness.heartbeat(ns, id, hash, want, admit, known);
  answer(app, ns, id, token, hash, !known, r, reply, (rl as Headers | null) ?? NONE);
}

/** The answer to a heartbeat's result (`remember`: a token accepted for the first time). */
function answer(app: LivenessContext, ns: string, id: string, token: string, hash: string, remember: boolean, r: HeartbeatResult, reply: Reply, headers: Headers): void {
  if (r === 'unauthorized') {
    app.heartbeatTokens.refuse(ns, id, token);
    throw unauthorized();
  }
  if (r === 'unavailable') throw new ApiError('LEASES_RESTORING', [], { 'Retry-After': '1' });
  if (remember) app.heartbeatTokens.accept(ns, id, token, hash);
  reply.send(204, headers);
}

/** POST …/services/{id}/heartbeat-token: a new token (the old one stops working). */
export async function heartbeatTokenHandler(app: LivenessContext, ns: string, id: string, reply: Reply, extra: Headers): Promise<void> {
  const { token, hash } = newHeartbeatToken(await tokenPrefix(app.pg, ns));
  await app.projector.applyCommitted([await rotateToken(app.pg, ns, id, hash)]);
  reply.json(201, JSON.stringify({ heartbeatToken: token }), [...NO_STORE, ...extra]);
}

/** A token for a registration or PATCH that starts a lease (its hash goes to the store). */
export async function leaseToken(app: LivenessContext, ns: string): Promise<{ token: string; hash: Buffer }> {
  return newHeartbeatToken(await tokenPrefix(app.pg, ns));
}

/** The 201/200 body of a write that issued a token: the document plus "heartbeatToken". */
export function withToken(doc: string, token: string | null): string {
  return token ? doc.slice(0, -1) + ',"heartbeatToken":' + JSON.stringify(token) + '}' : doc;
}

export function registerLiveness(uws: TemplatedApp, app: LivenessContext, o: RouteOptions): void {
  keyedRoutes(uws, app.auth)('post', '/sandbox/:uuid/services/:id/heartbeat-token', { ...o, body: true }, (req, reply, _body, rl) => heartbeatTokenHandler(app, sandboxNs(req), req.params[1]!, reply, rl));
  // the handlers never read the client address (the access log may still want it)
  // nor any header but Authorization (and Content-Type when a body comes)
  const ob = { ...o, body: true, addressFree: true, bearerOnly: true };
  route(uws, 'put', '/services/:id/heartbeat', (req, reply, body) => heartbeat(app, PRODUCTION, req.params[0]!, req, reply, body, false, o), { ...ob, guard: (req) => verifyToken(app, PRODUCTION, req.params[0]!, req) });
  route(uws, 'put', '/sandbox/:uuid/services/:id/heartbeat', (req, reply, body) => heartbeat(app, sandboxUuid(req.params[0]!), req.params[1]!, req, reply, body, true, o), { ...ob, guard: (req) => verifyToken(app, sandboxUuid(req.params[0]!), req.params[1]!, req) });
}
