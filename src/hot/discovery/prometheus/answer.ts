// GET /discovery/prometheus's answer for a namespace and a query: every matching service
// (search/ all(): the near cache, else the search pipeline) as target groups ordered by id,
// with its ETag; kept in the result cache under the query's canonical form, so every order
// of the same filters shares one entry and one computation. A function of (namespace,
// query) alone: a held request (Prefer: wait) can compute it again without a client.
import { ApiError } from '../../domain/errors.js';
import { pageEtag } from '../../domain/digest.js';
import { all, countHeld, type CachedResult } from '../../search/index.js';
import type { FilterSets } from '../../search/index.js';
import type { DiscoveryContext } from '../context.js';
import { targetGroup, type ServiceDoc, type TargetGroup } from './targets.js';

/** A query of the route, parsed (search/ discoveryQuery). */
export interface SdQuery {
  filters: FilterSets;
  canonical: string;
}

/** The result cache's key of an answer (its namespace is the cache's own argument). */
export function sdKey(ns: string, q: SdQuery): string {
  return ns + '\0prometheus\0' + q.canonical;
}

/** Code-point order of ids (they are ASCII: plain comparison is code-point order). */
const byId = (a: TargetGroup, b: TargetGroup) => {
  const x = a.labels['__meta_registry_service_id']!;
  const y = b.labels['__meta_registry_service_id']!;
  return x < y ? -1 : x > y ? 1 : 0;
};

/**
 * Compute the answer (no cache): the target groups and an ETag made from the matches'
 * digests (the same documents give the same tag on every node); 422 TOO_MANY_TARGETS past
 * DISCOVERY_MAX_TARGETS.
 */
export async function computeSd(app: DiscoveryContext, ns: string, q: SdQuery, signal?: AbortSignal): Promise<CachedResult> {
  const max = app.cfg.discoveryMaxTargets;
  const m = await all(app.index, ns, q.filters, max, signal);
  if (m.more) {
    const n = countHeld(app.index, ns, q.filters);
    throw new ApiError('TOO_MANY_TARGETS', [n === null ? `more than ${max}` : n, max]);
  }
  const docs = JSON.parse(m.body.toString()) as (ServiceDoc | null)[];
  const groups: TargetGroup[] = [];
  for (const d of docs) {
    const g = d && targetGroup(d, ns);
    if (g) groups.push(g);
  }
  groups.sort(byId);
  const body = Buffer.from(JSON.stringify(groups));
  return { body, headers: [], etag: pageEtag(m.digests, 'prometheus-sd') };
}

/** The answer from the result cache, or computed once for every concurrent request of it and kept. */
export async function sdAnswer(app: DiscoveryContext, ns: string, q: SdQuery, requester?: { onAbort(f: () => void): void }): Promise<CachedResult> {
  const key = sdKey(ns, q);
  const hit = app.cache.get(key, ns);
  if (hit) return hit;
  const version = app.cache.version(ns); // before reading: a write meanwhile wins
  return app.cache.flights.run(key + '\0' + version, requester, async (signal) => {
    const r = await computeSd(app, ns, q, signal);
    app.cache.set(key, ns, version, r);
    return r;
  });
}
