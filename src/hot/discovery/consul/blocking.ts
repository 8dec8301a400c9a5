// Consul's blocking query (contract, "Consul-compatible catalog": `?index=N&wait=D`): an answer
// whose X-Consul-Index does not exceed N is held (held/, a Watch that is `blocking`) until a
// change gives one that does, or D passes; then the answer as it stands, with its index.
// Woken by the deltas of the capability's set (of every service, for catalog/services).
import { filterSuffixes } from '../../domain/keys.js';
import type { Answer, Watch } from '../../held/index.js';
import type { Reply } from '../../http/reply.js';
import type { Headers, Req } from '../../http/route.js';
import type { DiscoveryContext } from '../context.js';
import { computeCatalog, type CatalogQuery, type ConsulAnswer } from './answers.js';
import type { ConsulQuery } from './query.js';

const answerOf = (a: ConsulAnswer): Answer => ({ status: 200, body: a.body, etag: a.index, headers: [['X-Consul-Index', a.index]] });

/**
 * Hold the request when it is a blocking query whose index `a` does not exceed; false when
 * it is answered now (no `index`, a zero wait, or an index already exceeded).
 */
export function holdBlocking(app: DiscoveryContext, reply: Reply, req: Req, common: Headers, ns: string, cq: CatalogQuery, q: ConsulQuery, a: ConsulAnswer): boolean {
  const sets = filterSuffixes(cq.kind === 'services' ? {} : { capabilities: [cq.capability] });
  // computed again without the result cache: a wake may come before the cache hears of the write
  const watch = (): Watch => ({ ns, sets, blocking: true, compute: async () => answerOf(await computeCatalog(app, ns, cq)) });
  const key = ns + '\0consul\0' + JSON.stringify([cq.kind, cq.capability, [...cq.tags].sort(), cq.passing]);
  return held(app, reply, req, common, key, q, a, watch);
}

/** Hold `req` on `key` unless its index is already exceeded by `a`'s (or it asks for no wait). */
function held(app: DiscoveryContext, reply: Reply, req: Req, common: Headers, key: string, q: ConsulQuery, a: ConsulAnswer, watch: () => Watch): boolean {
  if (q.index === null || q.waitMs <= 0 || BigInt(a.index) > q.index) return false;
  app.held.hold(reply, req, q.waitMs / 1000, key, String(q.index), [], common, watch, answerOf(a));
  return true;
}

/**
 * A blocking query on a name no service can have (an answer that never changes, index 1):
 * held for its wait like Consul's on a service it does not know, then answered as it stands.
 * Answered at once, a watch on such a name would ask again at once, for ever. False when it
 * is answered now.
 */
export function holdUnchanging(app: DiscoveryContext, reply: Reply, req: Req, common: Headers, ns: string, q: ConsulQuery, a: ConsulAnswer): boolean {
  // no set to be woken by: only the end of the wait, the drain or the client's leaving end it
  return held(app, reply, req, common, ns + '\0consul\0unchanging', q, a, () => ({ ns, sets: [], blocking: true, compute: () => answerOf(a) }));
}
