// The discovery reads: the public ones (no key: search, one service, its replacements
// through the shared public cache, device queries) and a sandbox's (its search and one
// service, behind its key). The two discovery routes ignore credentials entirely and send
// nothing per caller: no cookie, no request id, nothing echoed from the request.
import type { TemplatedApp } from 'uWebSockets.js';
import type { ResultCache } from './result-cache.js';
import { bearerKey, keyedRoutes, type SandboxAuth, sandboxBase, sandboxNs } from '../sandboxes/index.js';
import { PRODUCTION } from '../domain/keys.js';
import { ApiError } from '../domain/errors.js';
import { deprecationHeaders } from '../domain/service.js';
import type { Replacements } from './live-index.js';
import { route, type Headers, type Req, type RouteOptions } from '../http/route.js';
import type { Reply } from '../http/reply.js';
import { countReplacementsCache } from './metrics.js';
import { outageError } from '../domain/outage.js';
import { etagOf, notModified } from '../http/conditional.js';
import { anonymousSearchHeaders, searchDevices, searchServices, type SearchContext } from './answer.js';
import { holdService } from './held-pages.js';

/** What the public discovery routes need of their thread. */
export interface PublicContext extends SearchContext {
  replacements: ResultCache<Replacements>;
  auth: SandboxAuth;
}

const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

export function registerPublic(uws: TemplatedApp, app: PublicContext, o: RouteOptions): void {
  // every answer of the search varies on Authorization, its errors (429, 503) too, and
  // one to a request that carried Authorization is private
  const privately = (req: Req, err: unknown): unknown => {
    // (an outage surfaces as a backend's error: made the 503 here, so that it varies too)
    const e = err instanceof ApiError ? err : (outageError(err) ?? err);
    if (e instanceof ApiError) {
      e.headers.Vary = 'Authorization';
      if (req.authorization) e.headers['Cache-Control'] = 'private, no-store';
    }
    return e;
  };
  // not async: a page the near cache answers at once, and an over-limit key's 429, cost no
  // promise (searchServices() and search() return one only when they have to wait)
  route(uws, 'get', '/services', (req, reply) => {
    let p: Promise<void> | void;
    try {
      p = search(req, reply);
    } catch (err) {
      throw privately(req, err);
    }
    return p?.catch((err: unknown) => {
      throw privately(req, err);
    });
  }, o);

  const search = (req: Req, reply: Reply): Promise<void> | void => {
    if (!req.authorization) return searchServices(app, req, reply, PRODUCTION, anonymousSearchHeaders(app));
    const key = bearerKey(req.authorization);
    // a key this thread has resolved, of a sandbox it knows to be over its limit: the 429
    // from memory, as limitOrThrow() would throw it (the same fields, in the same order)
    const known = key ? app.auth.resolvedNow(key) : undefined;
    const refused = known ? app.auth.refusedNow(known) : null;
    if (refused) {
      const [args, headers] = app.auth.refusal(refused);
      return reply.error('SANDBOX_RATE_LIMITED', args, [...headers, ['Vary', 'Authorization'], ['Cache-Control', 'private, no-store']]);
    }
    return keyedSearch(req, reply, key);
  };

  const keyedSearch = async (req: Req, reply: Reply, key: string) => {
    // a request that carried Authorization is private, whatever the key turns out to be
    const common: Headers = [
      ['Cache-Control', 'private, no-cache'],
      ['Vary', 'Authorization'],
    ];
    const uuid = key ? await app.auth.resolve(key) : null;
    if (!uuid) return searchServices(app, req, reply, PRODUCTION, common);
    const rate = await app.auth.limitOrThrow(uuid);
    return searchServices(app, req, reply, uuid, [...common, ...rate]);
  };

  // replacement discovery stores nothing that identifies the caller (contract, "Logs keep
  // discovery anonymous"): these two never read the client address, whatever ACCESS_LOG says
  const anonymous: RouteOptions = { ...o, remote: false, anonymous: true };
  const publicRead: [string, string] = ['Cache-Control', `public, max-age=${app.cfg.discoveryMaxAge}`];
  route(uws, 'get', '/services/:id', async (req, reply) => {
    const id = req.params[0]!;
    const s = ID_RE.test(id) ? await app.index.getService(PRODUCTION, id) : null;
    if (!s) return reply.error('SERVICE_NOT_FOUND');
    const etag = etagOf(s.doc);
    const replacements = `/services/${id}/replacements`;
    const own = deprecationHeaders(s.hdr, replacements);
    const headers: Headers = [publicRead, ['ETag', etag], ...own];
    if (notModified(req.ifNoneMatch, etag)) {
      if (req.prefer && holdService(app, reply, req, [publicRead], etag, own, PRODUCTION, id, s.seq, replacements)) return;
      return reply.send(304, headers);
    }
    reply.json(200, s.doc, headers);
  }, anonymous);

  route(uws, 'get', '/services/:id/replacements', async (req, reply) => {
    const id = req.params[0]!;
    if (!ID_RE.test(id)) return reply.error('SERVICE_NOT_FOUND');
    const maxAge = app.cfg.discoveryMaxAge;
    const path = `/services/${id}/replacements`;
    // An in-process copy of the shared cache's entry: a HIT answered without Redis, dropped
    // with the namespace's other cached results on any production write (the same write
    // that deletes the shared entry), and never kept past the shared entry's own lifetime.
    const copy = app.replacements.get(id, PRODUCTION);
    if (copy) return sendCached(reply, req, copy, maxAge, path);
    const version = app.replacements.version(PRODUCTION);
    const r = await app.index.replacements(PRODUCTION, id, maxAge);
    if (!r) return reply.error('SERVICE_NOT_FOUND');
    const left = r.storedAt + maxAge * 1000 - Date.now();
    if (left > 0) app.replacements.set(id, PRODUCTION, version, { ...r, status: 'HIT' }, left);
    sendCached(reply, req, r, maxAge, path);
  }, anonymous);

  const devices = anonymousSearchHeaders(app).slice(0, 1);
  route(uws, 'get', '/devices', (req, reply) => searchDevices(app, req, reply, devices), o);
}

const PRIVATE: Headers = [['Cache-Control', 'private, no-store']];

/** The reads of a sandbox's registry: its search and one service (its key first: keyed.ts). */
export function registerSandboxReads(uws: TemplatedApp, app: PublicContext, o: RouteOptions): void {
  const keyed = keyedRoutes(uws, app.auth);

  keyed('get', '/sandbox/:uuid/services', o, (req, reply, _body, rl) => searchServices(app, req, reply, sandboxNs(req), [...PRIVATE, ['Vary', 'Authorization'], ...rl]));

  keyed('get', '/sandbox/:uuid/services/:id', o, async (req, reply, _body, rl) => {
    const id = req.params[1]!;
    const s = await app.index.getService(sandboxNs(req), id);
    if (!s) throw new ApiError('SERVICE_NOT_FOUND');
    // the document's ETag, as on /services/{id}: a heartbeat that changes nothing keeps it,
    // a transition or any other write changes it; a matching If-None-Match is a 304 (counted)
    const etag = etagOf(s.doc);
    const replacements = `${sandboxBase(req)}/${id}/replacements`;
    const own = deprecationHeaders(s.hdr, replacements);
    const headers: Headers = [...PRIVATE, ['ETag', etag], ...own, ...rl];
    if (notModified(req.ifNoneMatch, etag)) {
      // held: counted against the rate limit once, now (keyedRoutes admitted it)
      if (req.prefer && holdService(app, reply, req, [...PRIVATE, ...rl], etag, own, sandboxNs(req), id, s.seq, replacements)) return;
      return reply.send(304, headers);
    }
    reply.json(200, s.doc, headers);
  });
}

export function sendCached(
  reply: Reply,
  req: Req,
  r: Replacements,
  maxAge: number,
  replacementsPath: string,
): void {
  countReplacementsCache(r.status);
  const age = Math.max(0, Math.min(maxAge, Math.floor((Date.now() - r.storedAt) / 1000)));
  const headers: Headers = [
    ['Cache-Control', `public, max-age=${maxAge}`],
    ['ETag', r.etag],
    ['Age', String(age)],
    ['X-Cache', r.status],
    ...deprecationHeaders(r.hdr, replacementsPath),
  ];
  if (notModified(req.ifNoneMatch, r.etag)) return reply.send(304, headers);
  reply.json(200, r.body, headers);
}
