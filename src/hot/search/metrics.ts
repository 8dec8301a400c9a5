// Search metrics: the near cache (look-ups, deltas, bytes), the result cache (outcomes,
// bytes), the replacements' shared cache and the worker pool of heavy intersections.
// Registered in the thread's registry (metrics/registry.ts).
import { Counter, Gauge } from 'prom-client';
import { collector, registers } from '../metrics/registry.js';
import type { Sampler } from '../metrics/metrics.js';

type CacheStats = { hits: number; misses: number; shared: number; bytes: number };
type NearStats = { setHits: number; setMisses: number; docHits: number; docMisses: number; wholePages: number; wholeMisses: number; deltas: number; resets: number; stale: number; bytes: number; warmed: number };

export interface SearchSources {
  resultCache(): CacheStats;
  /** the near cache of index sets and documents (null when off) */
  nearCache(): NearStats | null;
  /** the Piscina pool of heavy intersections (null when disabled) */
  intersectPool(): { queue: number; utilization: number } | null;
}

/** the thread's values at the last sample */
const snapshot: { cache: CacheStats | null; near: NearStats | null } = { cache: null, near: null };

collector('registry_near_cache_total', 'Look-ups in the near cache of index sets and documents, by kind (set, document; answer: a cold page of a query kept whole, NEAR_RESULT_ADMIT) and result (hit; miss: loaded from Redis, or for an answer joined from the documents); hit ratio = hit / (hit + miss)', 'counter', () => {
  const s = snapshot.near;
  if (!s) return [];
  return [
    { labels: { kind: 'set', result: 'hit' }, value: s.setHits },
    { labels: { kind: 'set', result: 'miss' }, value: s.setMisses },
    { labels: { kind: 'document', result: 'hit' }, value: s.docHits },
    { labels: { kind: 'document', result: 'miss' }, value: s.docMisses },
    { labels: { kind: 'answer', result: 'hit' }, value: s.wholePages },
    { labels: { kind: 'answer', result: 'miss' }, value: s.wholeMisses },
  ];
});

collector('registry_near_cache_deltas_total', 'Write deltas applied by the near cache (event=delta), namespaces dropped because a delta was missed (event=reset: a later delta skipped a version; event=stale: the version check found the copy behind Redis, NEAR_CHECK_MS)', 'counter', () => {
  const s = snapshot.near;
  if (!s) return [];
  return [
    { labels: { event: 'delta' }, value: s.deltas },
    { labels: { event: 'reset' }, value: s.resets },
    { labels: { event: 'stale' }, value: s.stale },
  ];
});

collector('registry_near_cache_warmed_documents_total', 'Documents read into the near cache before any search asked for them, by its warmer (NEAR_WARM_PERCENT)', 'counter', () => {
  const s = snapshot.near;
  return s ? [{ labels: {}, value: s.warmed }] : [];
});

const nearBytes = new Gauge({
  name: 'registry_near_cache_bytes',
  help: 'Bytes held by the near caches of index sets and documents (summed over threads; bounded by NEAR_CACHE_MB each)',
  aggregator: 'sum',
  registers,
});

collector('registry_result_cache_total', 'Search and device queries by in-process result cache outcome: hit, miss (computed), shared (a miss that waited for the same computation already running)', 'counter', () => {
  const s = snapshot.cache;
  if (!s) return [];
  return [
    { labels: { result: 'hit' }, value: s.hits },
    { labels: { result: 'miss' }, value: s.misses - s.shared },
    { labels: { result: 'shared' }, value: s.shared },
  ];
});

const cacheBytes = new Gauge({
  name: 'registry_result_cache_bytes',
  help: 'Bytes held by the in-process result caches (summed over threads; bounded by RESULT_CACHE_MB each)',
  aggregator: 'sum',
  registers,
});

const replacementsCache = new Counter({
  name: 'registry_replacements_cache_total',
  help: 'Replacement look-ups through the shared public cache, by X-Cache result',
  labelNames: ['result'] as const,
  registers,
});

const poolQueue = new Gauge({
  name: 'registry_worker_pool_queue_depth',
  help: 'Tasks waiting in the Piscina pools (summed over threads)',
  aggregator: 'sum',
  registers,
});
const poolUtilization = new Gauge({
  name: 'registry_worker_pool_utilization',
  help: 'Piscina utilisation, 0..1 (averaged over threads)',
  aggregator: 'average',
  registers,
});

/** The caches' and the pool's values, copied before each registry read. */
export function sampleSearch(s: SearchSources): Sampler {
  return () => {
    const cache = s.resultCache();
    const near = s.nearCache();
    snapshot.cache = cache;
    snapshot.near = near;
    cacheBytes.set(cache.bytes);
    if (near) nearBytes.set(near.bytes);
    const pool = s.intersectPool();
    if (pool) {
      poolQueue.set(pool.queue);
      poolUtilization.set(pool.utilization);
    }
  };
}

export function countReplacementsCache(result: 'HIT' | 'MISS'): void {
  replacementsCache.labels(result === 'HIT' ? 'hit' : 'miss').inc();
}
