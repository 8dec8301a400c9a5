// Search and device queries, shared by GET /services (anonymous or keyed),
// GET /sandbox/{uuid}/services and GET /devices.
import { canonicalize, CursorMemo, DEVICES_SPEC, nextQueryOf, SEARCH_SPEC, toFilters, type Canonical, type Filters } from './canonical.js';
import { errorBodyOf } from '../domain/errors.js';
import type { Config } from '../config.js';
import type { Index, PageBody } from './searches.js';
import { type Headers, type Req } from '../http/route.js';
import { JSON_TYPE, type Reply } from '../http/reply.js';
import { PRODUCTION } from '../domain/keys.js';
import { ownBuffer, type CachedResult, type ResultCache } from './result-cache.js';
import { etagOf, notModified } from '../http/conditional.js';
import { pageEtag } from './pipeline/etag.js';

/** What a search needs of its thread (compose.ts's App has it all). */
export interface SearchContext {
  cfg: Config;
  index: Index;
  cache: ResultCache;
}

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

/**
 * Answer from the in-process result cache, or compute, cache and answer. Concurrent misses
 * of one key share one computation (single flight), cancelled only when all its requests
 * have gone away. A matching If-None-Match is answered 304 from a cached page without
 * running the search (its ETag was computed once, when it was stored). A page after a
 * cursor is stored from its second request on.
 */
async function cached(app: SearchContext, req: Req, reply: Reply, ns: string, key: string, common: Headers, deep: boolean, compute: (signal: AbortSignal) => Promise<CachedResult>): Promise<void> {
  const hit = app.cache.get(key, ns);
  if (hit) return sendResult(reply, req, common, hit);
  return computed(app, req, reply, ns, key, common, deep, compute);
}

/** The miss of cached(): one computation per key and namespace version at a time. */
async function computed(app: SearchContext, req: Req, reply: Reply, ns: string, key: string, common: Headers, deep: boolean, compute: (signal: AbortSignal) => Promise<CachedResult>): Promise<void> {
  const version = app.cache.version(ns); // before reading Redis: a write meanwhile wins
  const r = await app.cache.flights.run(key + '\0' + version, reply, async (signal) => {
    const r = await compute(signal);
    store(app, key, ns, version, deep, r);
    return r;
  });
  sendResult(reply, req, common, r);
}

/**
 * Keep a result; a page after a cursor from its second request on (ResultCache.admitOnSecond).
 * `copy`: the body is a scratch buffer that will be reused, so what is kept is a copy of it.
 * A body kept is in a buffer of its own (ownBuffer): a small one sliced from Node's shared
 * pool would keep the whole 8 KiB slab alive, uncounted.
 */
function store(app: SearchContext, key: string, ns: string, version: number, deep: boolean, r: CachedResult, copy = false): void {
  if (!deep || app.cache.admitOnSecond(key)) {
    const body = ownBuffer(r.body, copy);
    app.cache.set(key, ns, version, body === r.body ? r : { ...r, body });
  }
}

/** A device page's strong ETag: its bytes and its Link (the next page's cursor) together. */
function withEtag(r: Omit<CachedResult, 'etag'>): CachedResult {
  const link = r.headers.find(([k]) => k === 'Link')?.[1] ?? '';
  return { ...r, etag: etagOf(r.body, link) };
}

/** A search page as a result: its body, its Link (when more follow), its ETag from its documents' digests. */
function servicePage(req: Req, c: Canonical, page: PageBody): CachedResult {
  const headers: Headers = [];
  let link = '';
  if (page.more && page.last) headers.push(['Link', (link = `<${req.path}?${nextQueryOf(c, page.last)}>; rel="next"`)]);
  return { body: page.body, headers, etag: pageEtag(page.digests, link) };
}

/**
 * 200 with a (cached or computed) result: the route's headers, then the result's own; or
 * 304 with the same headers and no body when the client's copy is still this one.
 */
function sendResult(reply: Reply, req: Req, common: Headers, r: CachedResult): void {
  const headers: Headers = [...common, ['ETag', r.etag], ...r.headers];
  if (notModified(req.ifNoneMatch, r.etag)) return reply.send(304, headers);
  reply.send(200, [['Content-Type', JSON_TYPE], ...headers], r.body);
}

/**
 * A cached result for the raw query as it came, before any parsing. Entries are stored
 * under the canonical query, and canonicalize() answers 'ok' only when the raw query is
 * already canonical (anything else is a 302 or a 400): so a raw query that finds an entry
 * is canonical and valid, and the answer is the one the full path would give. A bare "?"
 * (raw "") is not canonical although its canonical form is "": it takes the full path.
 */
function fastHit(app: SearchContext, reply: Reply, req: Req, ns: string, prefix: string, common: Headers): boolean {
  if (req.query === '') return false;
  const hit = app.cache.get(prefix + (req.query ?? ''), ns, false);
  if (!hit) return false;
  sendResult(reply, req, common, hit);
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
  if (fastHit(app, reply, req, ns, prefix, common)) return;
  const c = canonicalOr(reply, req, SEARCH_SPEC, common);
  if (!c) return;
  const f = c.filters;
  const key = prefix + c.canonical;
  const deep = !!f.after;
  // a canonical query was looked up as it came (fastHit) already: no second look-up
  const again = c.canonical !== req.query || req.query === '';
  if (!again) app.cache.misses++; // (fastHit's look-up does not count its miss)
  const hit = again ? app.cache.get(key, ns) : null;
  if (hit) return sendResult(reply, req, common, hit);
  const now = app.index.nearBodyNow(ns, f, f.after ?? '', f.limit);
  if (now) {
    // the body is the near cache's scratch buffer: sent (uWS copies it) and, if kept, copied.
    // A page after a cursor is not kept: joined from memory again it costs little more than a
    // result-cache hit, where keeping it costs a copy, an eviction and, under random cursors,
    // major GCs (docs/decisions/result-cache.md). A 304 for it is answered from memory too.
    const r = servicePage(req, c, now);
    if (!deep) store(app, key, ns, app.cache.version(ns), false, r, true);
    return sendResult(reply, req, common, r);
  }
  return computed(app, req, reply, ns, key, common, deep, async (signal) => servicePage(req, c, await app.index.searchBody(ns, f, f.after ?? '', f.limit, signal)));
}

interface Binding {
  serviceId: string;
  endpoint: string;
  deviceClass: string;
  protocol: string;
  capabilities: string[];
}

interface DocShape {
  id: string;
  endpoint: string;
  capabilities: string[];
  iot: { deviceClasses: string[]; protocols: string[] } | null;
}

function bindingsOf(d: DocShape, f: Filters): Binding[] {
  if (!d.iot) return [];
  const out: Binding[] = [];
  for (const dc of d.iot.deviceClasses) {
    if (f.deviceClass && dc !== f.deviceClass) continue;
    for (const p of d.iot.protocols) {
      if (f.protocol && p !== f.protocol) continue;
      out.push({ serviceId: d.id, endpoint: d.endpoint, deviceClass: dc, protocol: p, capabilities: d.capabilities });
    }
  }
  return out;
}

/**
 * GET /devices: one binding per (service, deviceClass, protocol) of production IoT
 * profiles. The cursor is "<seq>" (continue after that service) or "<seq>.<k>" (continue
 * inside service <seq>, skipping its first k bindings).
 */
export async function searchDevices(app: SearchContext, req: Req, reply: Reply, common: Headers): Promise<void> {
  const prefix = PRODUCTION + '\0d\0';
  if (fastHit(app, reply, req, PRODUCTION, prefix, common)) return;
  const c = canonicalOr(reply, req, DEVICES_SPEC, common);
  if (!c) return;
  await cached(app, req, reply, PRODUCTION, prefix + c.canonical, common, !!c.filters.after, async (signal) => withEtag(await deviceBindings(app, req, signal, c)));
}

async function deviceBindings(app: SearchContext, req: Req, signal: AbortSignal, c: Canonical): Promise<Omit<CachedResult, 'etag'>> {
  const f = c.filters;
  let after = '';
  let skipSeq = '';
  let skip = 0;
  if (f.after) {
    const [s, k] = f.after.split('.');
    if (k !== undefined) {
      skipSeq = s!;
      skip = Number(k);
      after = String(Number(s) - 1);
    } else after = s!;
  }
  const out: Binding[] = [];
  const pos: { seq: string; k: number; n: number }[] = [];
  let more = false;
  for (;;) {
    const page = await app.index.search(PRODUCTION, { ...f, iotReady: true }, after, f.limit + 1, signal);
    for (let i = 0; i < page.docs.length && out.length <= f.limit; i++) {
      const seq = page.seqs[i]!;
      const all = bindingsOf(JSON.parse(page.docs[i]!) as DocShape, f);
      const start = seq === skipSeq ? skip : 0;
      for (let k = start; k < all.length && out.length <= f.limit; k++) {
        out.push(all[k]!);
        pos.push({ seq, k, n: all.length });
      }
    }
    if (out.length > f.limit) {
      more = true;
      break;
    }
    if (!page.more || !page.last) break;
    after = page.last;
  }
  const headers: Headers = [];
  if (more) {
    out.length = f.limit;
    const p = pos[f.limit - 1]!;
    const cursor = p.k + 1 < p.n ? `${p.seq}.${p.k + 1}` : p.seq;
    headers.push(['Link', `<${req.path}?${nextQueryOf(c, cursor)}>; rel="next"`]);
  }
  return { body: Buffer.from(JSON.stringify(out)), headers };
}

export function anonymousSearchHeaders(app: SearchContext): Headers {
  return [
    ['Cache-Control', `public, max-age=${app.cfg.searchMaxAge}`],
    ['Vary', 'Authorization'],
  ];
}

export { JSON_TYPE };
