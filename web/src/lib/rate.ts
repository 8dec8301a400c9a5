// Rate arithmetic of the live request-rate chart. Plain numbers in, plain numbers out: no
// DOM, so the unit tests (test/unit/web-rate.test.ts) compile and run it under Node.
//
// The poll endpoint returns, oldest first, how many requests each 5-second bucket of the
// last six minutes received: each bucket is the delta of the sandbox's request counter
// over those 5 s. A bucket's rate in requests per minute is that delta x (60 / 5) = x 12.

/** 72 buckets of 5 s: six minutes of history */
export const BUCKETS = 72;
export const BUCKET_SECONDS = 5;
/** the rate-limit window: the sliding minute of twelve 5-second buckets */
export const WINDOW_BUCKETS = 12;

export interface Tick {
  value: number;
  label: string;
}

/** x-axis: seconds relative to now; the chart spans [-360, 0] */
export const X_RANGE: [number, number] = [-BUCKETS * BUCKET_SECONDS, 0];
export const X_TICKS: Tick[] = [
  { value: -360, label: '-6m' },
  { value: -180, label: '-3m' },
  { value: 0, label: 'now' },
];

/** Requests per minute that `count` requests in one bucket amount to. */
export function perMinute(count: number, bucketSeconds = BUCKET_SECONDS): number {
  return (count * 60) / bucketSeconds;
}

/**
 * x (seconds relative to now) of each bucket's centre, oldest first. Bucket i covers
 * [(i - n) * 5, (i - n + 1) * 5], so the oldest starts at -6m and the newest (still
 * filling) ends at "now", and the bars tile the axis exactly.
 */
export function bucketXs(n = BUCKETS, bucketSeconds = BUCKET_SECONDS): number[] {
  return Array.from({ length: n }, (_, i) => (i - n + 0.5) * bucketSeconds);
}

/**
 * The plotted series: exactly `n` values, oldest first, each bucket's requests per minute
 * capped at the limit (the chart's top is 100 %). Missing history counts as zero; extra
 * history is dropped from the old end.
 */
export function chartSeries(buckets: readonly number[], limit: number, n = BUCKETS, bucketSeconds = BUCKET_SECONDS): number[] {
  const recent = buckets.slice(-n);
  const padded = [...new Array<number>(n - recent.length).fill(0), ...recent];
  const cap = Math.max(0, limit);
  return padded.map((c) => Math.min(perMinute(Math.max(0, c), bucketSeconds), cap));
}

/**
 * The live label's number: requests accumulated in the current window (the last twelve
 * buckets = one minute), which is a rate in requests per minute. Not instantaneous, and
 * not capped: it counts rejected requests too, so it may exceed the limit.
 */
export function windowRate(buckets: readonly number[], windowBuckets = WINDOW_BUCKETS): number {
  return buckets.slice(-windowBuckets).reduce((a, b) => a + Math.max(0, b), 0);
}

/** Whole percent of the limit (0 when there is no limit to compare with). */
export function percentOfLimit(rate: number, limit: number): number {
  return limit > 0 ? Math.round((rate / limit) * 100) : 0;
}

/** y-axis: 0 / 50 / 100 % of the limit */
export function yTicks(limit: number): Tick[] {
  return [0, 50, 100].map((p) => ({ value: (limit * p) / 100, label: `${p} %` }));
}

export function rateLabel(rate: number, limit: number): string {
  return `${rate} req/min in the current window · ${percentOfLimit(rate, limit)} % of ${limit}`;
}
