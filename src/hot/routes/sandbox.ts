// Sandbox routes: creation (public, throttled per client address), the public dashboard
// and poll data, and the key-protected, rate-limited registry of one sandbox (its key
// checked before a body is read: the routes' guard).
import type { TemplatedApp } from 'uWebSockets.js';
import type { App } from '../app.js';
import { ApiError } from '../domain/errors.js';
import { deprecationHeaders } from '../domain/service.js';
import { etagOf, notModified } from '../http/conditional.js';
import { check, validators, type ServiceInput } from '../domain/validation.js';
import { route, type Headers, type Req, type RouteOptions } from '../http/route.js';
import type { Reply } from '../http/reply.js';
import { parseJson } from '../http/body.js';
import { hashKey, newSandboxKey, sandboxUuid } from '../sandbox/keys.js';
import { writeSandboxMeta } from '../store/sandbox-meta.js';
import { enqueueSandbox, getSandbox, insertSandbox, type SandboxRow } from '../store/sandboxes.js';
import { pollData, sandboxSummary, serviceQuota } from '../sandbox/summary.js';
import { searchServices } from './search.js';
import { addReplacementHandler, batchHandler, createHandler, deleteHandler, listReplacementsHandler, parseBatch, patchHandler } from './writes.js';
import { integer } from '../redis/replies.js';
import { heartbeatTokenHandler } from './liveness.js';

const PRIVATE: Headers = [['Cache-Control', 'private, no-store']];

/** The sandbox of a uuid path segment (any case) from PostgreSQL, or the 404. */
async function sandboxOr404(app: App, segment: string): Promise<SandboxRow> {
  const uuid = sandboxUuid(segment);
  const s = uuid ? await getSandbox(app.pg, uuid) : null;
  if (!s) throw new ApiError('SANDBOX_NOT_FOUND');
  return s;
}

export function registerSandbox(uws: TemplatedApp, app: App, o: RouteOptions): void {
  const ob = { ...o, body: true };

  route(uws, 'post', '/sandboxes', async (req, reply, body) => {
    // validate first: the throttle counts sandboxes, so a client's rejected bodies do not
    // use up its allowance
    const b = check(validators.sandboxCreate, parseJson(req, body));
    const name = b.name.trim();
    if (!name) throw new ApiError('SANDBOX_NAME_BLANK');
    const minute = Math.floor(Date.now() / 60_000);
    const tk = app.keys.createThrottle(req.remote, minute);
    const n = integer(await app.redis.count(tk, 120), 'count');
    if (n > app.cfg.sandboxCreatePerMinute) {
      const retry = String(Math.max(1, Math.ceil(((minute + 1) * 60_000 - Date.now()) / 1000)));
      throw new ApiError('SANDBOX_CREATE_THROTTLED', [app.cfg.sandboxCreatePerMinute], { 'Retry-After': retry });
    }
    const { key, prefix } = newSandboxKey(name);
    const hash = hashKey(key);
    const row = await insertSandbox(app.pg, name, prefix, hash, app.cfg.defaultTier, b.location ?? null);
    // derived state; if Redis is away the key resolves through PostgreSQL until the
    // sweeper has written it (the index counts as incomplete meanwhile: sandbox/key-resolver.ts)
    await Promise.all([
      writeSandboxMeta(app.redis, app.keys, row, app.cfg.tiers[row.tier] ?? 0, hash.toString('hex')),
      app.index.ensureNamespace(row.uuid),
    ]).catch(async (err: unknown) => {
      app.projector.sandboxPending();
      app.log.warn({ err: String(err) }, 'sandbox created while Redis was unavailable');
      await enqueueSandbox(app.pg, row.uuid);
    });
    reply.json(201, JSON.stringify({ ...sandboxSummary(app.cfg.tiers, row), apiKey: key }), [['Cache-Control', 'no-store'], ['Location', `/sandbox/${row.uuid}/dashboard`]]);
  }, ob);

  route(uws, 'get', '/sandbox/:uuid/dashboard', async (req, reply) => {
    const s = await sandboxOr404(app, req.params[0]!);
    const poll = await pollData(app.redis, app.keys, s.uuid, 12, app.auth.records);
    reply.json(
      200,
      JSON.stringify({
        ...sandboxSummary(app.cfg.tiers, s),
        ...serviceQuota(app.cfg.tierMaxServices, s),
        counters: {
          total: poll?.total ?? 0,
          rejected: poll?.rejected ?? 0,
          lastMinute: poll ? poll.buckets.reduce((a, b) => a + b, 0) : 0,
        },
      }),
      [['Cache-Control', 'no-store']],
    );
  }, o);

  route(uws, 'get', '/sandbox/:uuid/poll', async (req, reply) => {
    const uuid = sandboxUuid(req.params[0]!) ?? ''; // UUIDs compare case-insensitively; "" is none
    let p = uuid ? await pollData(app.redis, app.keys, uuid, undefined, app.auth.records) : null;
    if (!p) {
      // Redis may have lost the sandbox's hash: PostgreSQL decides whether it exists
      const s = await sandboxOr404(app, uuid);
      await writeSandboxMeta(app.redis, app.keys, s, app.cfg.tiers[s.tier] ?? 0, '');
      p = await pollData(app.redis, app.keys, uuid, undefined, app.auth.records);
      if (!p) throw new ApiError('SANDBOX_NOT_FOUND');
    }
    const window = p.buckets.slice(-12).reduce((a, b) => a + b, 0);
    reply.json(
      200,
      JSON.stringify({ uuid, now: Date.now(), total: p.total, rateLimit: p.limit, bucketSeconds: 5, tier: p.tier, rejected: p.rejected, windowTotal: window, buckets: p.buckets }),
      [['Cache-Control', 'no-store']],
    );
  }, o);

  // ---- key-protected registry of one sandbox ----
  const base = (req: Req) => `/sandbox/${req.params[0]!.toLowerCase()}/services`;
  const ns = (req: Req) => req.params[0]!.toLowerCase();

  // the key alone, before a body is read (a wrong one costs no body: route.ts); the handler's
  // admit() then counts the request (the key resolved by then: from this thread's maps)
  const guard = (req: Req) => app.auth.verify(req.authorization, req.params[0]!);

  /**
   * A route that needs this sandbox's key: the key is checked (and the request counted)
   * first; every answer to an admitted request, errors included, carries the rate headers.
   */
  const keyedRoute = (method: 'get' | 'post' | 'patch' | 'del', pattern: string, opts: RouteOptions, fn: (req: Req, reply: Reply, body: Buffer | null, rl: Headers) => Promise<void> | void) =>
    route(uws, method, pattern, async (req, reply, body) => {
      const rl = await app.auth.admit(req.authorization, req.params[0]!);
      try {
        await fn(req, reply, body, rl);
      } catch (err) {
        if (err instanceof ApiError) for (const [k, v] of rl) err.headers[k] ??= v;
        throw err;
      }
    }, opts.body ? { ...opts, guard } : opts);

  keyedRoute('post', '/sandbox/:uuid/services', ob, (req, reply, body, rl) => createHandler(app, ns(req), base(req), req, reply, body, rl));

  // a batch counts one request per service, all admitted or none (admitMany): the key is
  // checked first without counting (guard), then the body is read and checked, so that an
  // invalid batch counts as the one request it is and a refused key costs no body at all
  route(uws, 'post', '/sandbox/:uuid/services/batch', async (req, reply, body) => {
    let inputs: ServiceInput[];
    try {
      inputs = parseBatch(req, body);
    } catch (err) {
      const rl = await app.auth.admit(req.authorization, req.params[0]!);
      if (err instanceof ApiError) for (const [k, v] of rl) err.headers[k] ??= v;
      throw err;
    }
    const rl = await app.auth.admitMany(req.authorization, req.params[0]!, inputs.length);
    try {
      await batchHandler(app, ns(req), inputs, reply, rl);
    } catch (err) {
      if (err instanceof ApiError) for (const [k, v] of rl) err.headers[k] ??= v;
      throw err;
    }
  }, { ...ob, maxBody: app.cfg.maxBatchBodyBytes, guard });

  keyedRoute('get', '/sandbox/:uuid/services', o, (req, reply, _body, rl) => searchServices(app, req, reply, ns(req), [...PRIVATE, ['Vary', 'Authorization'], ...rl]));

  keyedRoute('get', '/sandbox/:uuid/services/:id', o, async (req, reply, _body, rl) => {
    const id = req.params[1]!;
    const s = await app.index.getService(ns(req), id);
    if (!s) throw new ApiError('SERVICE_NOT_FOUND');
    // the document's ETag, as on /services/{id}: a heartbeat that changes nothing keeps it,
    // a transition or any other write changes it; a matching If-None-Match is a 304 (counted)
    const etag = etagOf(s.doc);
    const headers: Headers = [...PRIVATE, ['ETag', etag], ...deprecationHeaders(s.hdr, `${base(req)}/${id}/replacements`), ...rl];
    if (notModified(req.ifNoneMatch, etag)) return reply.send(304, headers);
    reply.json(200, s.doc, headers);
  });

  keyedRoute('patch', '/sandbox/:uuid/services/:id', ob, (req, reply, body, rl) => patchHandler(app, ns(req), base(req), req.params[1]!, req, reply, body, rl));

  keyedRoute('del', '/sandbox/:uuid/services/:id', ob, (req, reply, _body, rl) => deleteHandler(app, ns(req), req.params[1]!, reply, rl));

  keyedRoute('post', '/sandbox/:uuid/services/:id/heartbeat-token', ob, (req, reply, _body, rl) => heartbeatTokenHandler(app, ns(req), req.params[1]!, reply, rl));

  keyedRoute('get', '/sandbox/:uuid/services/:id/replacements', o, (req, reply, _body, rl) => listReplacementsHandler(app, ns(req), req.params[1]!, reply, rl));

  keyedRoute('post', '/sandbox/:uuid/services/:id/replacements', ob, (req, reply, body, rl) => addReplacementHandler(app, ns(req), req.params[1]!, req, reply, body, rl));
}
