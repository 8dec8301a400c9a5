// The rate limiter's clock, in one place: the scripts (rate-limit-4.lua, rate-count-2.lua,
// poll-data-3.lua) take these as ARGV, and the admission batches (ratelimit/admission.ts) and the poll
// data (sandboxes/summary.ts) read them here, so the bucket length, the window and the
// history's length and lifetime cannot drift apart.
export const RATE_WINDOW = {
  /** one bucket of the window and of the history */
  bucketMs: 5000,
  /** the sliding window: twelve 5-second buckets, one minute */
  windowBuckets: 12,
  /** the window hash outlives its newest bucket by this much (the minute plus 5 s) */
  windowTtlS: 65,
  /** the poll history: 72 buckets, six minutes */
  historyBuckets: 72,
  /** the history hash outlives its newest bucket by this much (the six minutes plus one) */
  historyTtlS: 420,
} as const;

/** The ARGV tail of rate-limit-4.lua: bucket ms, window buckets and TTL, history buckets and TTL. */
export const RATE_LIMIT_ARGS = [RATE_WINDOW.bucketMs, RATE_WINDOW.windowBuckets, RATE_WINDOW.windowTtlS, RATE_WINDOW.historyBuckets, RATE_WINDOW.historyTtlS] as const;
