// The ratelimit room's entry: what other rooms use of it.
export { RATELIMIT_DRAFT, RateLimiter, type RateLimiterOptions } from './limiter.js';
export { type RateRecord, type RateRecords } from './records.js';
export { RATE_WINDOW } from './window.js';
export { sampleRateLimit } from './metrics.js';
