// What a load run is asked (LoadOptions) and what it reports (LoadResult), whichever
// generator runs it: autocannon in this process (cannon.ts) or wrk as a child (wrk.ts). Their
// own module so that the two generators share them without importing each other.

export interface LoadOptions {
  /** origin and path; with nextPath, only its origin is used */
  url: string;
  /** a new path for every request (cache-busting cursors) */
  nextPath?: () => string;
  headers?: Record<string, string>;
  /** the status a row counts as answered (rps, latencies); default: any 2xx */
  expect?: number;
  connections: number;
  durationS: number;
  pipelining?: number;
  /** who loads: autocannon in this process (default) or wrk as a child (bench/wrk.ts) */
  generator?: Generator;
  /**
   * The same cursor stream as nextPath, described for wrk (which cannot call back into this
   * process): `path` with `after=<1..max>` put first in its query
   */
  cursor?: { path: string; max: number };
}

export type Generator = 'autocannon' | 'wrk';

export interface LoadResult {
  /** 2xx (or expected-status) responses per second */
  rps: number;
  /** every response per second */
  totalRps: number;
  /** latency of 2xx responses, ms */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  responses: number;
  ok: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
  durationS: number;
  /** bytes per second of 2xx responses (headers included) */
  bytesPerSec: number;
  /** CPU time of this process over the run, in % of one core (both instances when two run) */
  loadgenCpuPct: number;
  /**
   * times the load generator's threads went to sleep (voluntary context switches) per response
   * (wrk only): ~1 when every answer found it idle and the kernel had to wake it, ~0 when
   * answers came faster than it read them
   */
  loadgenSleepsPerReq?: number;
}

export interface Running {
  done: Promise<LoadResult>;
  stop(): void;
}
