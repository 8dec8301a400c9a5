// The exact width of the rate-limit window (issue 24's survivor: a window of 11 buckets
// instead of 12 let a second node admit, at 55 s, a request that must be refused). The
// window is twelve 5-second buckets on Redis's clock (src/hot/ratelimit/window.ts,
// redis/rate-limit-4.lua): a full bucket 11 buckets back still counts, one 12 back does not.
// The test writes the full bucket itself, at a bucket number read from Redis's TIME, and
// asks from a node that has seen no refusal of that sandbox (a fresh sandbox each time:
// nothing local, no lease, no remembered 429, can answer for Redis).
import t from 'tap';
import { createSandbox, serve } from '../helpers/server.js';

const LIMIT = 5;
const s = await serve(t, { env: { TIERS: `free=${LIMIT},pro=600,enterprise=6000` } });

/** Redis's bucket number now (5-second buckets of its own clock). */
async function redisBucket(): Promise<number> {
  const [sec, usec] = await s.app.redis.time();
  return Math.floor((Number(sec) * 1000 + Math.floor(Number(usec) / 1000)) / 5000);
}

/**
 * Status of one keyed request to a fresh sandbox whose window holds a full bucket `back`
 * buckets before the current one. A bucket boundary passing between the set-up and the
 * answer would shift the window by one: such a round is done again.
 */
async function withFullBucket(back: number): Promise<number> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const sb = await createSandbox(s, `window ${back}`);
    const b = await redisBucket();
    await s.app.redis.hset(s.app.keys.rateWindow(sb.uuid), String(b - back), String(LIMIT));
    const r = await s.req(`/sandbox/${sb.uuid}/services`, { headers: { authorization: `Bearer ${sb.apiKey}` } });
    await r.arrayBuffer();
    if ((await redisBucket()) === b) return r.status;
  }
  throw new Error('a bucket boundary passed during every attempt');
}

t.test('a full bucket 11 buckets back still fills the window: 429', async (t) => {
  t.equal(await withFullBucket(11), 429);
});

t.test('a full bucket 12 buckets back has left the window: 200', async (t) => {
  t.equal(await withFullBucket(12), 200);
});

t.test('a full current bucket: 429 (the set-up itself is counted)', async (t) => {
  t.equal(await withFullBucket(0), 429);
});
