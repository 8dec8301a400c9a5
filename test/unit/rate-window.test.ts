// The rate limiter's clock (src/hot/ratelimit/window.ts): the numbers the Lua scripts, the
// leases and the poll data share, written out by hand, and the relations between them that
// the contract's sliding minute depends on (a twelfth bucket missing lets a second node admit
// a request at 55 s that must be refused: issue 24's surviving mutant).
import t from 'tap';
import { RATE_LIMIT_ARGS, RATE_WINDOW } from '../../src/hot/ratelimit/window.js';

t.test('the window: twelve 5-second buckets, a 72-bucket history, and their lifetimes', async (t) => {
  t.strictSame(RATE_WINDOW, { bucketMs: 5000, windowBuckets: 12, windowTtlS: 65, historyBuckets: 72, historyTtlS: 420 });
});

t.test('the window is exactly one minute; each hash outlives what it must hold', async (t) => {
  t.equal(RATE_WINDOW.windowBuckets * RATE_WINDOW.bucketMs, 60_000, 'twelve buckets make the minute');
  t.equal(RATE_WINDOW.windowTtlS * 1000, 60_000 + RATE_WINDOW.bucketMs, 'the window hash lives the minute plus one bucket');
  t.equal(RATE_WINDOW.historyBuckets * RATE_WINDOW.bucketMs, 360_000, 'the history is six minutes');
  t.ok(RATE_WINDOW.historyTtlS * 1000 > RATE_WINDOW.historyBuckets * RATE_WINDOW.bucketMs, 'the history hash outlives the six minutes');
  t.ok(RATE_WINDOW.historyBuckets >= RATE_WINDOW.windowBuckets, 'the history holds the window');
});

t.test('rate-limit-4.lua ARGV tail: bucket ms, window buckets, window TTL, history buckets, history TTL — in that order', async (t) => {
  t.strictSame(RATE_LIMIT_ARGS, [5000, 12, 65, 72, 420]);
});
