// One atomic read for the Consul-compatible catalog: a capability's members (or every
// service of the namespace) with their revisions and the capability tombstones, as instances
// with the answer's X-Consul-Index. From the index (redis/catalog-1.lua), or from PostgreSQL
// while the index is away (search's either(), the fallback room: one statement, the same
// documents and revisions, the tombstones at the revisions a rebuild would write them at).
import { ApiError } from '../../domain/errors.js';
import { CAPABILITY_SET } from '../../domain/dimensions.js';
import { catalogReply, NOT_INDEXED, type CatalogRead } from '../../redis/replies.js';
import { either } from '../../search/index.js';
import type { DiscoveryContext } from '../context.js';
import type { ServiceDoc } from '../prometheus/targets.js';
import { consulIndex } from './consul-index.js';
import { instanceOf, type Instance } from './model.js';

export interface CatalogSnapshot {
  /** in seq order */
  instances: Instance[];
  index: bigint;
}

function notIndexed(): ApiError {
  return new ApiError('INDEX_REBUILDING', [], { 'Retry-After': '2' });
}

type Read = CatalogRead | { tooMany: number | string };

/** The read from the index; INDEX_REBUILDING when it has no generation or not the namespace. */
async function fromIndex(app: DiscoveryContext, ns: string, capability: string | null): Promise<Read> {
  const { index, cfg } = app;
  const gen = index.gen;
  if (!gen) throw notIndexed();
  const set = capability === null ? 'all' : CAPABILITY_SET + capability;
  const r = catalogReply(await index.redis.catalog(index.keys.ver(ns, gen), index.keys.base(ns, gen), set, cfg.discoveryMaxTargets, capability ?? ''));
  if (r === NOT_INDEXED) throw notIndexed();
  return r;
}

/** `capability`'s instances in namespace `ns` (null: every service of it), at most DISCOVERY_MAX_TARGETS. */
export async function readCatalog(app: DiscoveryContext, ns: string, capability: string | null): Promise<CatalogSnapshot> {
  const max = app.cfg.discoveryMaxTargets;
  // once PostgreSQL has answered because the index could not, it answers until the index has
  // caught up with it (the readiness watcher: its tombstones raised, the outage's writes
  // applied): an index read before then could step back. Only those first answers count
  // (served): a steady flow of catalog reads does not hold the catalog on PostgreSQL.
  const f = app.index.fallback;
  const c = f?.catalog;
  let held = false;
  const source = c ? { reads: f.reads, away: () => f.away() || (held = c.pending()) } : f;
  const r = await either(source, () => fromIndex(app, ns, capability), (pg) => {
    if (!held) c?.served();
    return pg.catalog(ns, capability, max);
  });
  if ('tooMany' in r) throw new ApiError('TOO_MANY_TARGETS', [r.tooMany, max]);
  const instances: Instance[] = [];
  const members = r.docs.map((text, i) => {
    const doc = JSON.parse(text) as ServiceDoc;
    const inst = instanceOf(doc, Number(r.revs[i]));
    if (inst) instances.push(inst);
    return { id: doc.id, capabilities: doc.capabilities, rev: r.revs[i]! };
  });
  return { instances, index: consulIndex(members, r.tombs, capability) };
}
