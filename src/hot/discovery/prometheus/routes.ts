// GET /discovery/prometheus: Prometheus's HTTP service discovery (contract, "Prometheus HTTP
// service discovery"): the search filters in any order, the whole list, a valid sandbox key
// selecting its sandbox, ETag and 304. Every answer varies on Authorization; one to a
// request that carried it is private, as on /services. A conditional request that matches and
// prefers a wait (`Prefer: wait=N`) is held until the list changes (held/).
import type { TemplatedApp } from 'uWebSockets.js';
import { ApiError } from '../../domain/errors.js';
import { outageError } from '../../domain/outage.js';
import { notModified } from '../../http/conditional.js';
import { JSON_TYPE, type Reply } from '../../http/reply.js';
import { route, type Headers, type Req, type RouteOptions } from '../../http/route.js';
import { discoveryQuery } from '../../search/index.js';
import { chooseNamespace, type DiscoveryContext } from '../context.js';
import { countSdAnswer } from '../metrics.js';
import { computeSd, sdAnswer, sdKey, type SdQuery } from './answer.js';
import { filterSuffixes } from '../../domain/keys.js';
import type { Watch } from '../../held/index.js';

export const PROMETHEUS_PATH = '/discovery/prometheus';

export function registerPrometheus(uws: TemplatedApp, app: DiscoveryContext, o: RouteOptions): void {
  const common = (req: Req): Headers =>
    req.authorization
      ? [['Cache-Control', 'private, no-cache'], ['Vary', 'Authorization']]
      : [['Cache-Control', `public, max-age=${app.cfg.searchMaxAge}`], ['Vary', 'Authorization']];
  route(uws, 'get', PROMETHEUS_PATH, async (req, reply) => {
    const headers = common(req);
    try {
      const chosen = await chooseNamespace(app, req.authorization);
      const q = discoveryQuery(req.query);
      if (!q.ok) return reply.error('QUERY_INVALID', [q.message], [...headers, ...chosen.rate]);
      const r = await sdAnswer(app, chosen.ns, q, reply);
      const all: Headers = [...headers, ...chosen.rate, ['ETag', r.etag]];
      const same = notModified(req.ifNoneMatch, r.etag);
      countSdAnswer(same ? 'not_modified' : 'listed');
      if (same && holdSd(app, reply, req, [...headers, ...chosen.rate], chosen.ns, q, r.etag)) return;
      if (same) return reply.send(304, all);
      reply.send(200, [['Content-Type', JSON_TYPE], ...all], r.body);
    } catch (err) {
      // the error answers vary too (429, 422, 503), and are private to a keyed caller
      const e = err instanceof ApiError ? err : (outageError(err) ?? err);
      if (e instanceof ApiError) {
        if (e.code === 'TOO_MANY_TARGETS') countSdAnswer('too_many');
        e.headers.Vary = 'Authorization';
        if (req.authorization) e.headers['Cache-Control'] = 'private, no-store';
      }
      throw e;
    }
  }, { ...o, remote: false, anonymous: true });
}

/** Hold a matching request that prefers a wait; false when it prefers none (answered 304). */
function holdSd(app: DiscoveryContext, reply: Reply, req: Req, common: Headers, ns: string, q: SdQuery, etag: string): boolean {
  const wait = app.held.waitOf(req);
  if (!wait) return false;
  // computed again without the result cache: a wake may come before the cache hears of the write
  const watch = (): Watch => ({
    ns,
    sets: filterSuffixes(q.filters),
    compute: async () => {
      const r = await computeSd(app, ns, q);
      return { status: 200, body: r.body, etag: r.etag, headers: [] };
    },
  });
  app.held.hold(reply, req, wait, sdKey(ns, q), etag, [], common, watch);
  return true;
}
