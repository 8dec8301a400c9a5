// The calls that are batched by their caller already (a turn's heartbeats, a turn's rate
// records, a rate-limit batch asked for ahead) are written to Redis at once, not held by
// ioredis's auto-pipeline for one more event-loop turn (redis/client.ts DIRECT_COMMANDS;
// docs/decisions/heartbeat-batches.md), on
// a standalone Redis and on a cluster.
// Other commands still auto-pipeline. And the order a poll relies on holds: a rate record
// sent at once before a pipelined read of the same keys is counted by that read.
import t from 'tap';
import { Keys, LEASE_SHARDS } from '../../src/hot/domain/keys.js';
import { RATE_LIMIT_ARGS, RATE_WINDOW } from '../../src/hot/ratelimit/window.js';
import { DIRECT_COMMANDS } from '../../src/hot/redis/client.js';
import { HeartbeatBatch } from '../../src/hot/liveness/heartbeat-batch.js';
import { suiteRedis } from '../helpers/test-data.js';

const CLUSTER = process.env.REDIS_CLUSTER_NODES || process.env.TEST_REDIS_CLUSTER_NODES || '';
const UUID = '0f6c1a52-1b7e-4a61-9a0f-3f2b1c0d9e8a';
for (const mode of ['standalone', 'cluster'] as const) {
  t.test(`${DIRECT_COMMANDS.join(', ')} skip the auto-pipeline (${mode} Redis)`, { skip: mode === 'cluster' && !CLUSTER ? 'no TEST_REDIS_CLUSTER_NODES' : false }, async (t) => {
    const redis = suiteRedis(t, mode === 'cluster' ? { REDIS_CLUSTER_NODES: CLUSTER } : {});
    const k = new Keys(`dc${process.pid}-${mode}:`);
    await redis.ping(); // connected (a cluster: its slots known)
    try {
      // a pipelined command waits in the queue until the next turn: what the test can see
      const got = redis.get(k.leases(0));
      t.equal(redis.autoPipelineQueueSize, 1, 'an ordinary command waits in the auto-pipeline');
      await got;
      const batch = new HeartbeatBatch(redis, k, () => 1_764_000_000_000);
      const beat = batch.beatAsync('production', 'svc-1', 'ab'.repeat(32), 'p', false);
      // the batch's own flush (setImmediate) has run: the script call went out, nothing queued
      await new Promise((ok) => setImmediate(ok));
      t.equal(batch.stats.calls, 1, 'the batch sent its call');
      t.equal(redis.autoPipelineQueueSize, 0, 'the heartbeat call is not held by the auto-pipeline');
      t.equal(await beat, -1, 'and is answered (no lease)');
      const counted = redis.rateCount(k.rateHistory(UUID), k.rateTotals(UUID), 3, RATE_WINDOW.bucketMs, RATE_WINDOW.historyTtlS, 0);
      t.equal(redis.autoPipelineQueueSize, 0, 'a rate record is not held either');
      // a batch asked for ahead (ratelimit/admission.ts): rate-limit under its second name, sent at once
      const ahead = redis.rateAhead(k.sandbox(UUID), k.rateWindow(UUID), k.rateHistory(UUID), k.rateTotals(UUID), 4, 0, '', ...RATE_LIMIT_ARGS, 0);
      t.equal(redis.autoPipelineQueueSize, 0, 'a rate-limit call asked ahead is not held either');
      t.same(await ahead, [-1], 'and is answered by rate-limit (an unknown sandbox)');
      // a read of the totals issued after it (pipelined) sees it: the order a poll relies on
      const totals = await redis.hgetall(k.rateTotals(UUID));
      await counted;
      t.ok(Object.values(totals).some((v) => Number(v) === 3), `the read after the record counts it: ${JSON.stringify(totals)}`);
    } finally {
      await redis.del(k.rateHistory(UUID), k.rateTotals(UUID));
      for (let s = 0; s < LEASE_SHARDS; s++) await redis.del(k.leases(s), k.deadlines(s));
    }
  });
}
