// Search and device queries, shared by GET /services (anonymous or keyed),
// GET /sandbox/{uuid}/services and GET /devices: the canonical check, the result cache, the
// near cache's synchronous page, the async path, and the answer (200, 304, or held:
// held-pages.ts). The pages themselves are computed by pages.ts.
import { canonicalize, CursorMemo, DEVICES_SPEC, SEARCH_SPEC, toFilters, type Canonical, type QuerySpec } from './canonical.js';
import { errorBodyOf } from '../domain/errors.js';
import { type Headers, type Req } from '../http/route.js';
import { JSON_TYPE, type Reply } from '../http/reply.js';
import { PRODUCTION } from '../domain/keys.js';
import type { CachedResult } from './result-cache.js';
import { notModified } from '../http/conditional.js';
import { deviceBindings, servicePage, store, withEtag, type SearchContext } from './pages.js';
import { holdPage } from './held-pages.js';

export type { SearchContext } from './pages.js';

/** Paged queries parsed once per cursor-less form, per spec (CursorMemo). */
const memos = new Map([
  [SEARCH_SPEC, new CursorMemo()],
  [DEVICES_SPEC, new CursorMemo()],
]);

/**
 * 400 for a query that does not decode or is invalid. It carries the route's own caching
 * headers: the answer follows from the query alone, so an anonymous one is as public as a
 * result, and one to a request with Authorization stays private (contract, "Search").
 */
function badQuery(reply: Reply, message: string, common: Headers): void {
  reply.send(400, [['Content-Type', JSON_TYPE], ...common], errorBodyOf('QUERY_INVALID', [message]));
}

/** Canonical check: answers 302/400 itself and returns null, or returns the filters. */
export function canonicalOr(reply: Reply, req: Req, spec: typeof SEARCH_SPEC, common: Headers): Canonical | null {
  const memo = memos.get(spec);
  const known = memo?.lookup(req.query);
  if (known) return known;
  const c = canonicalize(req.path, req.query, spec);
  if (c.kind === 'error') {
    badQuery(reply, c.message, common);
    return null;
  }
  if (c.kind === 'redirect') {
    reply.send(302, [['Location', c.location], ...common]);
    return null;
  }
  const f = toFilters(c.params, spec);
  if (!f.ok) {
    badQuery(reply, f.message, common);
    return null;
  }
  const out = { params: c.params, filters: f.filters, canonical: c.canonical };
  memo?.learn(out);
  return out;
}

/** Where a result was asked for: what a held request needs to wait on it (held-pages.ts). */
interface At {
  ns: string;
  /** the result cache's key: namespace, route, path, canonical query */
  key: string;
  spec: QuerySpec;
  /** the query parsed; null when the result came straight from the cache (fastHit) */
  c: Canonical | null;
}

/**
 * Answer from the in-process result cache, or compute, cache and answer. Concurrent misses
 * of one key share one computation (single flight), cancelled only when all its requests
 * have gone away. A matching If-None-Match is answered 304 from a cached page without
 * running the search (its ETag was computed once, when it was stored). A page after a
 * cursor is stored from its second request on.
 */
async function cached(app: SearchContext, req: Req, reply: Reply, at: At, common: Headers, deep: boolean, compute: (signal: AbortSignal) => Promise<CachedResult>): Promise<void> {
  const hit = app.cache.get(at.key, at.ns);
  if (hit) return sendResult(app, reply, req, common, hit, at.ns, at.key, at.spec, at.c);
  return computed(app, req, reply, at, common, deep, compute);
}

/** The miss of cached(): one computation per key and namespace version at a time. */
async function computed(app: SearchContext, req: Req, reply: Reply, at: At, common: Headers, deep: boolean, compute: (signal: AbortSignal) => Promise<CachedResult>): Promise<void> {
  const { ns, key } = at;
  const version = app.cache.version(ns); // before reading Redis: a write meanwhile wins
  const r = await app.cache.flights.run(key + '\0' + version, reply, async (signal) => {
    const r = await compute(signal);
    store(app, key, ns, version, deep, r);
    return r;
  });
  sendResult(app, reply, req, common, r, ns, key, at.spec, at.c);
}

/**
 * 200 with a (cached or computed) result: the route's headers, then the result's own; or
 * 304 with the same headers and no body when the client's copy is still this one; or, when
 * that request also prefers a wait (Prefer), held until the result changes (held-pages.ts).
 * Where the result was asked for comes as arguments, not an object: a cache hit allocates
 * nothing it does not send.
 */
function sendResult(app: SearchContext, reply: Reply, req: Req, common: Headers, r: CachedResult, ns: string, key: string, spec: QuerySpec, c: Canonical | null): void {
  if (notModified(req.ifNoneMatch, r.etag)) {
    if (req.prefer && holdPage(app, reply, req, common, r, ns, key, spec, c)) return;
    return reply.send(304, [...common, ['ETag', r.etag], ...r.headers]);
  }
  reply.send(200, [['Content-Type', JSON_TYPE], ...common, ['ETag', r.etag], ...r.headers], r.body);
}

/**
 * A cached result for the raw query as it came, before any parsing. Entries are stored
 * under the canonical query, and canonicalize() answers 'ok' only when the raw query is
 * already canonical (anything else is a 302 or a 400): so a raw query that finds an entry
 * is canonical and valid, and the answer is the one the full path would give. A bare "?"
 * (raw "") is not canonical although its canonical form is "": it takes the full path.
 */
function fastHit(app: SearchContext, reply: Reply, req: Req, ns: string, prefix: string, common: Headers, spec: QuerySpec): boolean {
  if (req.query === '') return false;
  const key = prefix + (req.query ?? '');
  const hit = app.cache.get(key, ns, false);
  if (!hit) return false;
  sendResult(app, reply, req, common, hit, ns, key, spec, null);
  return true;
}

/**
 * A search: from the result cache; else, when this thread's near cache holds the sets and
 * every document of the page (the common cold case), computed and written synchronously,
 * here, with no promise, single flight or AbortController; else the async path (single
 * flight, Redis, the pool). All three give the same ETag for the same page.
 */
export function searchServices(app: SearchContext, req: Req, reply: Reply, ns: string, common: Headers): Promise<void> | void {
  const prefix = ns + '\0s\0' + req.path + '?';
  if (fastHit(app, reply, req, ns, prefix, common, SEARCH_SPEC)) return;
  const c = canonicalOr(reply, req, SEARCH_SPEC, common);
  if (!c) return;
  const f = c.filters;
  const key = prefix + c.canonical;
  const deep = !!f.after;
  // a canonical query was looked up as it came (fastHit) already: no second look-up
  const again = c.canonical !== req.query || req.query === '';
  if (!again) app.cache.misses++; // (fastHit's look-up does not count its miss)
  const hit = again ? app.cache.get(key, ns) : null;
  if (hit) return sendResult(app, reply, req, common, hit, ns, key, SEARCH_SPEC, c);
  const now = app.index.nearBodyNow(ns, f, f.after ?? '', f.limit);
  if (now) {
    // the body is the near cache's scratch buffer: sent (uWS copies it) and, if kept, copied.
    // A page after a cursor is not kept: joined from memory again it costs little more than a
    // result-cache hit, where keeping it costs a copy, an eviction and, under random cursors,
    // major GCs (docs/decisions/result-cache.md). A 304 for it is answered from memory too.
    const r = servicePage(req.path, c, now);
    if (!deep) store(app, key, ns, app.cache.version(ns), false, r, true);
    return sendResult(app, reply, req, common, r, ns, key, SEARCH_SPEC, c);
  }
  const at: At = { ns, key, spec: SEARCH_SPEC, c };
  return computed(app, req, reply, at, common, deep, async (signal) => servicePage(req.path, c, await app.index.searchBody(ns, f, f.after ?? '', f.limit, signal)));
}

/** GET /devices: production IoT profiles' bindings (pages.ts deviceBindings()). */
export async function searchDevices(app: SearchContext, req: Req, reply: Reply, common: Headers): Promise<void> {
  const prefix = PRODUCTION + '\0d\0';
  if (fastHit(app, reply, req, PRODUCTION, prefix, common, DEVICES_SPEC)) return;
  const c = canonicalOr(reply, req, DEVICES_SPEC, common);
  if (!c) return;
  const at: At = { ns: PRODUCTION, key: prefix + c.canonical, spec: DEVICES_SPEC, c };
  await cached(app, req, reply, at, common, !!c.filters.after, async (signal) => withEtag(await deviceBindings(app, req.path, signal, c)));
}

const anonymous = new WeakMap<SearchContext, Headers>();

/**
 * The headers of an anonymous search's answers: one array per thread (no answer changes
 * it), so that a held request keeps a reference to them, not a copy.
 */
export function anonymousSearchHeaders(app: SearchContext): Headers {
  let h = anonymous.get(app);
  if (!h) {
    h = [
      ['Cache-Control', `public, max-age=${app.cfg.searchMaxAge}`],
      ['Vary', 'Authorization'],
    ];
    anonymous.set(app, h);
  }
  return h;
}

export { JSON_TYPE };
