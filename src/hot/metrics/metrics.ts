// Prometheus metrics (prom-client) that belong to no feature: the per-request accumulators,
// backend errors and reachability, the threads reporting. Each uWS thread keeps its own
// registry (a module instance is per thread: registry.ts); threads.ts merges them at scrape
// time. Counters and histograms are summed; each gauge names its own aggregator. Each
// feature's metrics are in its own room (<feature>/metrics.ts).
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

const backendErrors = new Counter({
  name: 'registry_backend_errors_total',
  help: 'Errors from Redis and PostgreSQL (connection losses and failed commands/queries)',
  labelNames: ['backend', 'kind'] as const,
  registers,
});
const threads = new Gauge({
  name: 'registry_threads_reporting',
  help: 'Serving threads whose metrics are in this scrape',
  aggregator: 'sum',
  registers,
});
threads.set(1);
const backendUp = new Gauge({
  name: 'registry_backend_up',
  help: 'Whether the readiness watcher reached Redis / PostgreSQL at its last check (1 or 0; the minimum over threads)',
  labelNames: ['backend'] as const,
  aggregator: 'min',
  registers,
});

/**
 * A thread part's values copied into the metrics that mirror them, right before this thread's
 * registry is read. Each feature's metrics module makes its own (ratelimit/metrics.ts,
 * search/metrics.ts, registry/metrics.ts, …); the composition root hands them to the
 * thread's MetricsAggregation (threads.ts). Nothing here holds on to a part.
 */
export type Sampler = () => Promise<void> | void;

/** The readiness watcher's view of the backends (app.state), as registry_backend_up. */
export function sampleBackends(read: () => { postgres: boolean; redis: boolean }): Sampler {
  return () => {
    const b = read();
    backendUp.labels('postgres').set(b.postgres ? 1 : 0);
    backendUp.labels('redis').set(b.redis ? 1 : 0);
  };
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

export function countBackendError(backend: 'redis' | 'postgres', kind: string): void {
  backendErrors.labels(backend, kind).inc();
}

/** Count an unexpected request error under its backend, if it came from one. */
export function countUnexpected(err: unknown): void {
  const from = backendOf(err);
  if (from === 'redis') countBackendError('redis', 'command');
  else if (from === 'postgres') countBackendError('postgres', 'query');
}
