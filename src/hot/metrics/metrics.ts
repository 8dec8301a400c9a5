// Prometheus metrics (prom-client) of the serving threads: the per-request accumulators,
// the caches, rate limits, backends and pools. Each uWS thread keeps its own registry (a
// module instance is per thread: metrics-registry.ts); metrics-threads.ts merges them at
// scrape time. Counters and histograms are summed; each gauge names its own aggregator. The
// liveness metrics are liveness-metrics.ts's.
import { Counter, Gauge } from 'prom-client';
import { backendOf } from '../domain/outage.js';
import { collector, registers, type Exported } from './registry.js';

// The two per-request metrics are plain accumulators exported through a minimal custom
// collector: prom-client's labelled children re-hash their labels on every inc()/observe(),
// where a Map hit and a few additions cost a tenth of that (docs/decisions/metrics-and-logs.md;
// bench/README.md, "Micro-benchmarks").
const BUCKETS = [0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10]; // the hot path answers in well under a millisecond

interface ReqAcc {
  labels: { route: string; method: string; status: string };
  n: number;
}
interface DurAcc {
  labels: { route: string; method: string };
  /** per bucket (not cumulative); the last slot is above the largest bound */
  counts: number[];
  sum: number;
  n: number;
}
/** one route pattern and method: its duration histogram and its counters by status */
interface RouteAcc {
  dur: DurAcc;
  byStatus: Map<number, ReqAcc>;
}
// Looked up by route, then method, then status: the pattern and the method are strings the
// route holds (their hashes computed once, kept in the string), the status a small integer.
// A key joined per request would be a new string to hash on every request
// (docs/decisions/metrics-and-logs.md).
const byRoute = new Map<string, Map<string, RouteAcc>>();
const reqAcc: ReqAcc[] = [];
const durAcc: DurAcc[] = [];

collector('registry_http_requests_total', 'HTTP requests answered, by route pattern, method and status ("aborted" when the client left first)', 'counter', () =>
  reqAcc.map((a) => ({ labels: { ...a.labels }, value: a.n })),
);
collector('registry_http_request_duration_seconds', 'Time from reading the request to the end of the response (a change stream: its whole life)', 'histogram', () => {
  const out: Exported[] = [];
  const name = 'registry_http_request_duration_seconds';
  for (const a of durAcc) {
    let cum = 0;
    BUCKETS.forEach((le, i) => {
      cum += a.counts[i]!;
      out.push({ labels: { ...a.labels, le }, value: cum, metricName: name + '_bucket' });
    });
    out.push({ labels: { ...a.labels, le: '+Inf' }, value: a.n, metricName: name + '_bucket' });
    out.push({ labels: { ...a.labels }, value: a.sum, metricName: name + '_sum' });
    out.push({ labels: { ...a.labels }, value: a.n, metricName: name + '_count' });
  }
  return out;
});

collector('registry_rate_limit_checks_total', 'Sandbox requests counted against their limit, by where the decision came from: redis (the rate-limit script), lease (a batch this thread holds) or local (refused while this thread knows the sandbox is over its limit)', 'counter', () => {
  const s = snapshot?.rate;
  if (!s) return [];
  return [
    { labels: { source: 'redis' }, value: s.asked },
    { labels: { source: 'lease' }, value: s.batched },
    { labels: { source: 'local' }, value: s.refusedLocally ?? 0 },
  ];
});

collector('registry_near_cache_total', 'Look-ups in the near cache of index sets and documents, by kind (set, document) and result (hit; miss: loaded from Redis); hit ratio = hit / (hit + miss)', 'counter', () => {
  const s = snapshot?.near;
  if (!s) return [];
  return [
    { labels: { kind: 'set', result: 'hit' }, value: s.setHits },
    { labels: { kind: 'set', result: 'miss' }, value: s.setMisses },
    { labels: { kind: 'document', result: 'hit' }, value: s.docHits },
    { labels: { kind: 'document', result: 'miss' }, value: s.docMisses },
  ];
});

collector('registry_near_cache_deltas_total', 'Write deltas applied by the near cache (event=delta), namespaces dropped because a delta was missed (event=reset: a later delta skipped a version; event=stale: the version check found the copy behind Redis, NEAR_CHECK_MS)', 'counter', () => {
  const s = snapshot?.near;
  if (!s) return [];
  return [
    { labels: { event: 'delta' }, value: s.deltas },
    { labels: { event: 'reset' }, value: s.resets },
    { labels: { event: 'stale' }, value: s.stale },
  ];
});

const nearBytes = new Gauge({
  name: 'registry_near_cache_bytes',
  help: 'Bytes held by the near caches of index sets and documents (summed over threads; bounded by NEAR_CACHE_MB each)',
  aggregator: 'sum',
  registers,
});

collector('registry_result_cache_total', 'Search and device queries by in-process result cache outcome: hit, miss (computed), shared (a miss that waited for the same computation already running)', 'counter', () => {
  const s = snapshot?.cache;
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

const rateLimited = new Counter({
  name: 'registry_rate_limit_rejections_total',
  help: 'Sandbox requests refused with 429, by tier',
  labelNames: ['tier'] as const,
  registers,
});
const replacementsCache = new Counter({
  name: 'registry_replacements_cache_total',
  help: 'Replacement look-ups through the shared public cache, by X-Cache result',
  labelNames: ['result'] as const,
  registers,
});
const projectorFailures = new Counter({
  name: 'registry_projector_failures_total',
  help: 'Index updates of committed writes that failed (left to the outbox sweeper), by stage: write (right after the commit), sweep, invalidate (a cache invalidation not published or subscribed), missing (an outbox row with nothing to apply)',
  labelNames: ['stage'] as const,
  registers,
});
const backendErrors = new Counter({
  name: 'registry_backend_errors_total',
  help: 'Errors from Redis and PostgreSQL (connection losses and failed commands/queries)',
  labelNames: ['backend', 'kind'] as const,
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
const outboxLag = new Gauge({
  name: 'registry_outbox_lag',
  help: 'Committed writes not yet applied to the Redis index (outbox rows)',
  // every thread reads the same PostgreSQL table: summing would multiply it
  aggregator: 'max',
  registers,
});
const threads = new Gauge({
  name: 'registry_threads_reporting',
  help: 'Serving threads whose metrics are in this scrape',
  aggregator: 'sum',
  registers,
});
threads.set(1);
const streams = new Gauge({
  name: 'registry_change_streams',
  help: 'Open GET /services/changes streams',
  aggregator: 'sum',
  registers,
});

const backendUp = new Gauge({
  name: 'registry_backend_up',
  help: 'Whether the readiness watcher reached Redis / PostgreSQL at its last check (1 or 0; the minimum over threads)',
  labelNames: ['backend'] as const,
  aggregator: 'min',
  registers,
});

type CacheStats = { hits: number; misses: number; shared: number; bytes: number };

/**
 * The parts of a serving thread that some metrics mirror, read at every scrape. The
 * composition root (app.ts) builds one from the thread's parts and hands it to
 * metrics-threads.ts; nothing here holds on to it.
 */
export interface ThreadSources {
  /** the readiness watcher's view (app.state) */
  backends(): { postgres: boolean; redis: boolean };
  /** outbox rows not yet applied (Projector.lag) */
  outboxLag(): Promise<number>;
  /** the Piscina pool of heavy intersections (null when disabled) */
  intersectPool(): { queue: number; utilization: number } | null;
  resultCache(): CacheStats;
  /** rate-limit decisions of this thread (SandboxAuth.stats) */
  rateLimit(): RateStats;
  /** the near cache of index sets and documents (null when off) */
  nearCache(): NearStats | null;
}

type RateStats = { asked: number; batched: number; refusedLocally?: number };
type NearStats = { setHits: number; setMisses: number; docHits: number; docMisses: number; deltas: number; resets: number; stale: number; bytes: number };

/** what the counter collectors above export: the thread's totals at the last read */
let snapshot: { rate: RateStats; cache: CacheStats; near: NearStats | null } | null = null;

/** Copy the thread's current values into the metrics that mirror them (before a registry read). */
export async function readSources(s: ThreadSources): Promise<void> {
  const cache = s.resultCache();
  const near = s.nearCache();
  snapshot = { rate: s.rateLimit(), cache, near };
  cacheBytes.set(cache.bytes);
  if (near) nearBytes.set(near.bytes);
  const pool = s.intersectPool();
  if (pool) {
    poolQueue.set(pool.queue);
    poolUtilization.set(pool.utilization);
  }
  const b = s.backends();
  backendUp.labels('postgres').set(b.postgres ? 1 : 0);
  backendUp.labels('redis').set(b.redis ? 1 : 0);
  try {
    outboxLag.set(await s.outboxLag());
  } catch {
    countBackendError('postgres', 'query');
  }
}

export function observeRequest(route: string, method: string, status: number, seconds: number): void {
  let methods = byRoute.get(route);
  if (!methods) byRoute.set(route, (methods = new Map()));
  let a = methods.get(method);
  if (!a) {
    a = { dur: { labels: { route, method }, counts: new Array<number>(BUCKETS.length + 1).fill(0), sum: 0, n: 0 }, byStatus: new Map() };
    methods.set(method, a);
    durAcc.push(a.dur);
  }
  let r = a.byStatus.get(status);
  if (!r) {
    a.byStatus.set(status, (r = { labels: { route, method, status: status === 0 ? 'aborted' : String(status) }, n: 0 }));
    reqAcc.push(r);
  }
  r.n++;
  const d = a.dur;
  let i = 0;
  while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
  d.counts[i]!++;
  d.sum += seconds;
  d.n++;
}

export function countRateLimited(tier: string): void {
  rateLimited.labels(tier).inc();
}

export function countProjectorFailure(stage: 'write' | 'sweep' | 'invalidate' | 'missing'): void {
  projectorFailures.labels(stage).inc();
}

export function countReplacementsCache(result: 'HIT' | 'MISS'): void {
  replacementsCache.labels(result === 'HIT' ? 'hit' : 'miss').inc();
}

export function countBackendError(backend: 'redis' | 'postgres', kind: string): void {
  backendErrors.labels(backend, kind).inc();
}

export function changeStreams(delta: number): void {
  streams.inc(delta);
}

/** Count an unexpected request error under its backend, if it came from one. */
export function countUnexpected(err: unknown): void {
  const from = backendOf(err);
  if (from === 'redis') countBackendError('redis', 'command');
  else if (from === 'postgres') countBackendError('postgres', 'query');
}
