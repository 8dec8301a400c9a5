// The discovery reads' side of held requests (held/, contract "Waiting for a change"): when a
// conditional GET matches and prefers a wait, the route hands its reply to the thread's
// HeldRequests with the watch of its answer: the sets a search or device query reads and how
// to compute its page again (pages.ts), or a single read's service and how to read it again.
import { canonicalize, DEVICES_SPEC, toFilters, type Canonical, type QuerySpec } from './canonical.js';
import { filterSuffixes, PRODUCTION } from '../domain/keys.js';
import { errorBodyOf } from '../domain/errors.js';
import { deprecationHeaders } from '../domain/service.js';
import type { Answer, Watch } from '../held/index.js';
import type { Headers, Req } from '../http/route.js';
import type { Reply } from '../http/reply.js';
import { etagOf } from '../http/conditional.js';
import type { CachedResult } from './result-cache.js';
import { freshDevicePage, freshServicePage, type SearchContext } from './pages.js';

const answerOf = (r: CachedResult): Answer => ({ status: 200, body: r.body, etag: r.etag, headers: r.headers });

/**
 * Hold a page request whose If-None-Match matched `r` when it prefers a wait: true when the
 * reply is taken (held, or refused), false when it prefers none (the caller answers 304).
 * `c`: the query parsed, or null when it came straight from the result cache (it is then
 * canonical and valid, answer.ts fastHit()).
 */
export function holdPage(app: SearchContext, reply: Reply, req: Req, common: Headers, r: CachedResult, ns: string, key: string, spec: QuerySpec, c: Canonical | null): boolean {
  const wait = app.held.waitOf(req);
  if (!wait) return false;
  app.held.hold(reply, req, wait, key, r.etag, r.headers, common, () => pageWatch(app, ns, key, req.path, spec, c ?? parsed(req, spec)));
  return true;
}

/** A canonical query's filters (what canonicalOr() found before it was memoised). */
function parsed(req: Req, spec: QuerySpec): Canonical {
  const c = canonicalize(req.path, req.query, spec);
  const f = c.kind === 'ok' ? toFilters(c.params, spec) : null;
  if (c.kind !== 'ok' || !f?.ok) throw new Error(`held page: the query "${req.query}" was answered from the cache but is not canonical`);
  return { params: c.params, filters: f.filters, canonical: c.canonical };
}

function pageWatch(app: SearchContext, ns: string, key: string, path: string, spec: QuerySpec, c: Canonical): Watch {
  if (spec === DEVICES_SPEC) {
    return { ns: PRODUCTION, sets: filterSuffixes({ ...c.filters, iotReady: true }), compute: async () => answerOf(await freshDevicePage(app, key, path, c)) };
  }
  return {
    ns,
    sets: filterSuffixes(c.filters),
    compute: () => {
      const r = freshServicePage(app, ns, key, path, c);
      return r instanceof Promise ? r.then(answerOf) : answerOf(r);
    },
  };
}

/** A single read's answer: the service's document, or 404 once it is gone. */
async function readService(app: SearchContext, ns: string, id: string, replacements: string): Promise<Answer> {
  const s = await app.index.getService(ns, id);
  if (!s) return { status: 404, body: errorBodyOf('SERVICE_NOT_FOUND'), etag: null, headers: [] };
  return { status: 200, body: s.doc, etag: etagOf(s.doc), headers: deprecationHeaders(s.hdr, replacements), seq: Number(s.seq) };
}

/**
 * Hold a single read (`GET /services/{id}`, `/sandbox/{uuid}/services/{id}`) whose
 * If-None-Match matched the document (`etag`, `own`: its deprecation headers) when it
 * prefers a wait; false when it prefers none.
 */
export function holdService(app: SearchContext, reply: Reply, req: Req, common: Headers, etag: string, own: Headers, ns: string, id: string, seq: string, replacements: string): boolean {
  const wait = app.held.waitOf(req);
  if (!wait) return false;
  const watch = (): Watch => ({ ns, seq: Number(seq), compute: () => readService(app, ns, id, replacements) });
  app.held.hold(reply, req, wait, ns + '\0i\0' + id, etag, own, common, watch);
  return true;
}
