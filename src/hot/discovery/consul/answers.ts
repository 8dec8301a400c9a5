// The Consul-compatible catalog's answers: each a function of (namespace, route, capability,
// filters) alone, its body and its X-Consul-Index, kept in the result cache (dropped with the
// namespace's other results on any write to it) and computed once for concurrent requests. A
// held blocking query (`?index=N&wait=D`) can compute it again without a client and compare
// the index with N.
import type { CachedResult } from '../../search/index.js';
import type { DiscoveryContext } from '../context.js';
import { readCatalog } from './catalog.js';
import { catalogEntry, healthEntry, matches, servicesMap } from './model.js';

/** The catalog routes whose answer reads the index. */
export type CatalogKind = 'services' | 'service' | 'health';

export interface CatalogQuery {
  kind: CatalogKind;
  /** the capability (Consul service name); "" for `services` */
  capability: string;
  tags: readonly string[];
  passing: boolean;
}

export interface ConsulAnswer {
  body: Buffer;
  /** X-Consul-Index, decimal */
  index: string;
}

/** A capability name as the registry writes tokens (lower case); null when no service can have it. */
export function capabilityName(raw: string): string | null {
  const c = raw.toLowerCase();
  return /^[a-z0-9._-]{1,64}$/.test(c) ? c : null;
}

/** The answer computed from one atomic read of the index. */
export async function computeCatalog(app: DiscoveryContext, ns: string, q: CatalogQuery): Promise<ConsulAnswer> {
  const dc = app.cfg.consulDatacenter;
  const snap = await readCatalog(app, ns, q.kind === 'services' ? null : q.capability);
  let out: unknown;
  if (q.kind === 'services') out = servicesMap(snap.instances);
  else {
    const kept = snap.instances.filter((i) => matches(i, q.tags, q.passing)).sort((a, b) => (a.doc.id < b.doc.id ? -1 : a.doc.id > b.doc.id ? 1 : 0));
    out = kept.map((i) => (q.kind === 'service' ? catalogEntry(i, q.capability, dc) : healthEntry(i, q.capability, dc)));
  }
  return { body: Buffer.from(JSON.stringify(out)), index: String(snap.index) };
}

/** The result cache's key of an answer. */
function key(ns: string, q: CatalogQuery): string {
  return ns + '\0consul\0' + JSON.stringify([q.kind, q.capability, [...q.tags].sort(), q.passing]);
}

/** From the result cache, or computed once for every concurrent request of it, and kept. */
export async function catalogAnswer(app: DiscoveryContext, ns: string, q: CatalogQuery, requester?: { onAbort(f: () => void): void }): Promise<ConsulAnswer> {
  const k = key(ns, q);
  const hit = app.cache.get(k, ns);
  if (hit) return fromEntry(hit);
  const version = app.cache.version(ns);
  const r = await app.cache.flights.run(k + '\0' + version, requester, async (): Promise<CachedResult> => {
    const a = await computeCatalog(app, ns, q);
    // (Consul's answers have no ETag: the index is their validator)
    const entry: CachedResult = { body: a.body, headers: [[INDEX_HEADER, a.index]], etag: '' };
    app.cache.set(k, ns, version, entry);
    return entry;
  });
  return fromEntry(r);
}

const INDEX_HEADER = 'X-Consul-Index';

function fromEntry(e: CachedResult): ConsulAnswer {
  return { body: e.body, index: e.headers.find(([h]) => h === INDEX_HEADER)![1] };
}
