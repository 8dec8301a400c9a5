// Rate records carried by heartbeat calls, on real Redis: the rate records heartbeats.lua
// carries must be recorded as rate-count-2.lua records them (the heartbeats answered alike),
// and a thread's batch on a standalone Redis carries a turn's records (given back when its
// call fails).
import t from 'tap';
import fc from 'fast-check';
import { Keys } from '../../src/hot/domain/keys.js';
import { type RedisClient } from '../../src/hot/redis/client.js';
import { heartbeatReplies } from '../../src/hot/redis/replies.js';
import { HeartbeatBatch, type RateRecord, type RateRecords } from '../../src/hot/liveness/heartbeat-batch.js';
import { RATE_WINDOW } from '../../src/hot/ratelimit/window.js';
import { shardOf } from '../../src/hot/liveness/redis-lease.js';
import { IDS, line, record, seedShard } from '../helpers/heartbeat-model.js';
import { suiteRedis } from '../helpers/test-data.js';

/** A sandbox's poll history (bucket -> requests) and totals, as Redis holds them. */
async function recorded(redis: RedisClient, k: Keys, uuid: string): Promise<{ history: Record<string, string>; totals: Record<string, string>; ttl: number }> {
  return { history: await redis.hgetall(k.rateHistory(uuid)), totals: await redis.hgetall(k.rateTotals(uuid)), ttl: await redis.ttl(k.rateHistory(uuid)) };
}

t.test('heartbeats.lua: the rate records it carries are recorded as rate-count-2.lua records them, the heartbeats answered alike', async (t) => {
  const redis = suiteRedis(t);
  let run = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.integer({ min: 1, max: 500 }), fc.integer({ min: 0, max: 3 })), { minLength: 1, maxLength: 4 }),
      fc.array(line, { minLength: 1, maxLength: 4 }),
      fc.array(fc.tuple(fc.constantFrom(...IDS), record), { maxLength: 4 }),
      async (recs, lines, leases) => {
        const carried = new Keys(`hbr${process.pid}-${run}:`);
        const alone = new Keys(`hbq${process.pid}-${run++}:`);
        const now = 1_764_000_000_000 + run;
        const uuids = recs.map((_, i) => `0f6c1a52-1b7e-4a61-9a0f-3f2b1c0d9e${String(i).padStart(2, '0')}`);
        const keys: string[] = [];
        try {
          // the same heartbeats twice: with the records, and without them (answers must agree)
          const a = await seedShard(redis, carried, 0, leases, lines, now);
          const b = await seedShard(redis, alone, 0, leases, lines, now);
          keys.push(carried.leases(0), carried.deadlines(0), alone.leases(0), alone.deadlines(0));
          const rk: string[] = [];
          const args: (string | number)[] = [RATE_WINDOW.bucketMs, RATE_WINDOW.historyTtlS];
          for (const [i, [n, rej]] of recs.entries()) {
            const rejected = Math.min(n, rej);
            rk.push(carried.rateHistory(uuids[i]!), carried.rateTotals(uuids[i]!));
            args.push(n, rejected);
            // the same record, alone, through rate-count-2.lua
            await redis.rateCount(alone.rateHistory(uuids[i]!), alone.rateTotals(uuids[i]!), n, RATE_WINDOW.bucketMs, RATE_WINDOW.historyTtlS, rejected);
            keys.push(carried.rateHistory(uuids[i]!), carried.rateTotals(uuids[i]!), alone.rateHistory(uuids[i]!), alone.rateTotals(uuids[i]!));
          }
          const got = heartbeatReplies(await redis.heartbeats(2 + rk.length, carried.leases(0), carried.deadlines(0), ...rk, now, 1, a.text, ...args), a.want.length);
          const plain = heartbeatReplies(await redis.heartbeats(2, alone.leases(0), alone.deadlines(0), now, 1, b.text), b.want.length);
          if (JSON.stringify(got) !== JSON.stringify(a.want) || JSON.stringify(plain) !== JSON.stringify(b.want)) {
            t.same([got, plain], [a.want, b.want], `answers of ${JSON.stringify(lines)} with records ${JSON.stringify(recs)}`);
            return false;
          }
          for (const uuid of uuids) {
            const x = await recorded(redis, carried, uuid);
            const y = await recorded(redis, alone, uuid);
            // the two calls ran a few ms apart: the same bucket unless one crossed into the next
            const same = JSON.stringify(x.totals) === JSON.stringify(y.totals) && JSON.stringify(Object.values(x.history)) === JSON.stringify(Object.values(y.history)) && x.ttl > 0 && Math.abs(x.ttl - y.ttl) <= 1;
            if (!same) {
              t.same(x, y, `the records of ${uuid} (${JSON.stringify(recs)})`);
              return false;
            }
          }
          return true;
        } finally {
          if (keys.length) await redis.del(...keys);
        }
      },
    ),
    { numRuns: 60 },
  );
});

t.test("a thread's batch on a standalone Redis carries the turn's rate records in its heartbeat call, and gives them back when the call fails", async (t) => {
  const redis = suiteRedis(t);
  const k = new Keys(`hbc${process.pid}:`);
  const now = 1_764_000_000_000;
  const batch = new HeartbeatBatch(redis, k, () => now);
  const uuid = '0f6c1a52-1b7e-4a61-9a0f-3f2b1c0d9eff';
  // the records waiting, as ratelimit/records.ts keeps them (one entry per sandbox)
  const waiting = new Map<string, RateRecord>();
  const flushed: RateRecord[][] = [];
  const records: RateRecords = {
    take: () => {
      const out = [...waiting.values()];
      waiting.clear();
      return out;
    },
    restore: (rs) => rs.forEach((r) => waiting.set(r.uuid, r)),
    flush: () => flushed.push(records.take()),
  };
  t.notOk(batch.carries(), 'nothing carried before carry()');
  batch.carry(records);
  t.notOk(batch.carries(), 'no call due: the records go their own way');
  const id = 'svc-carry';
  const hash = 'ab'.repeat(32);
  await redis.hset(k.leases(shardOf(id)), id, `1|${uuid}|${hash}|30|p|0|`);
  const beat = () => new Promise<number>((ok, no) => batch.beat(uuid, id, hash, 'p', false, (r, err) => (err === undefined ? ok(r) : no(err))));
  try {
    const p = beat();
    t.ok(batch.carries(), 'a call is due this turn: it carries the records');
    waiting.set(uuid, { uuid, n: 7, rejected: 2 });
    t.equal(await p, 0, 'the heartbeat renewed');
    t.equal(waiting.size, 0, 'the call took the records');
    t.same(flushed, [], 'none sent apart');
    const r = await recorded(redis, k, uuid);
    t.same(r.totals, { total: '7', rejected: '2' }, 'counted in the totals');
    t.same(Object.values(r.history), ['7'], 'and in one bucket of the history');
    // a call that fails: the records it carried wait again
    const real = redis.heartbeats;
    redis.heartbeats = (() => Promise.reject(new Error('injected failure'))) as typeof real;
    try {
      const q = beat();
      waiting.set(uuid, { uuid, n: 3, rejected: 0 });
      await t.rejects(q, /injected failure/);
    } finally {
      redis.heartbeats = real;
    }
    t.same([...waiting.values()], [{ uuid, n: 3, rejected: 0 }], 'given back by the failed call');
    t.same((await recorded(redis, k, uuid)).totals, { total: '7', rejected: '2' }, 'and not counted');
  } finally {
    await redis.del(k.leases(shardOf(id)), k.deadlines(shardOf(id)), k.rateHistory(uuid), k.rateTotals(uuid));
  }
});
