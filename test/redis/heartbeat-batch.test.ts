// A thread's batch of heartbeats (liveness/heartbeat-batch.ts) on real Redis: it must put a
// turn's shards in one call on a standalone Redis, one call per shard on a cluster
// (TEST_REDIS_CLUSTER_NODES), each heartbeat answered its own; and identical heartbeats of a
// turn share one line, each answered as its own line would be (the model of heartbeat-2.lua:
// helpers/heartbeat-model.ts), whether it comes by its fields (beat) or as a known token's
// passing renewal (beatKnown, the identity object of the token memory).
import t from 'tap';
import fc from 'fast-check';
import { Keys } from '../../src/hot/domain/keys.js';
import { HeartbeatBatch, MAX_BATCH, type BeatIdentity } from '../../src/hot/liveness/heartbeat-batch.js';
import { shardOf } from '../../src/hot/liveness/redis-lease.js';
import { LEASE_SHARDS } from '../../src/hot/domain/keys.js';
import { IDS, TOKS, model, record } from '../helpers/heartbeat-model.js';
import { suiteRedis } from '../helpers/test-data.js';

/** ids that fall in `n` different lease shards, `per` of each */
function spread(n: number, per: number): string[] {
  const by = new Map<number, string[]>();
  for (let i = 0; by.size < n || [...by.values()].some((v) => v.length < per); i++) {
    const id = `hb${i}`;
    const s = shardOf(id);
    const list = by.get(s) ?? [];
    if (!by.has(s) && by.size >= n) continue;
    if (list.length < per) list.push(id);
    by.set(s, list);
  }
  return [...by.values()].flat();
}

const CLUSTER = process.env.REDIS_CLUSTER_NODES || process.env.TEST_REDIS_CLUSTER_NODES || '';
for (const mode of ['standalone', 'cluster'] as const) {
  t.test(`a thread's batch (${mode} Redis): a turn's heartbeats in several shards, each answered its own`, { skip: mode === 'cluster' && !CLUSTER ? 'no TEST_REDIS_CLUSTER_NODES' : false }, async (t) => {
    const redis = suiteRedis(t, mode === 'cluster' ? { REDIS_CLUSTER_NODES: CLUSTER } : {});
    const k = new Keys(`hbb${process.pid}-${mode}:`);
    const now = 1_764_000_000_000;
    const batch = new HeartbeatBatch(redis, k, () => now);
    const hash = (id: string) => Buffer.from(id).toString('hex').padEnd(64, 'a');
    const ids = spread(LEASE_SHARDS, 20); // 320 heartbeats: more than one call's MAX_BATCH
    t.ok(ids.length > MAX_BATCH);
    try {
      for (const id of ids) await redis.hset(k.leases(shardOf(id)), id, `3|production|${hash(id)}|${id.length}|p|0|`);
      /** one turn: every heartbeat handed to the batch in the same tick; every third with another token */
      const turn = (list: string[]) =>
        Promise.all(list.map((id, i) => new Promise<[string, number]>((ok, no) => batch.beat('production', id, i % 3 === 2 ? 'ff'.repeat(32) : hash(id), 'p', false, (r, err) => (err === undefined ? ok([id, r]) : no(err))))));
      const few = ids.filter((_, i) => i % 20 === 0); // one of each shard
      let calls = batch.stats.calls;
      const a = await turn(few);
      t.same(a.map(([, r]) => r), few.map((_, i) => (i % 3 === 2 ? -2 : 0)), 'each answer its own heartbeat\'s');
      t.equal(batch.stats.calls - calls, mode === 'cluster' ? new Set(few.map(shardOf)).size : 1, mode === 'cluster' ? 'one call a shard' : 'the shards of the turn in one call');
      for (let s = 0; s < LEASE_SHARDS; s++) await redis.del(k.deadlines(s)); // the next turn's renewals alone
      calls = batch.stats.calls;
      const b = await turn(ids);
      t.same(b.map(([, r]) => r), ids.map((_, i) => (i % 3 === 2 ? -2 : 0)), 'all 320 answered their own');
      t.equal(batch.stats.calls - calls, mode === 'cluster' ? LEASE_SHARDS : Math.ceil(ids.length / MAX_BATCH), mode === 'cluster' ? 'one call a shard' : `calls of at most ${MAX_BATCH}`);
      for (const [i, id] of ids.entries()) {
        const score = await redis.zscore(k.deadlines(shardOf(id)), id);
        if ((score === null) !== (i % 3 === 2) || (score !== null && Number(score) !== now + id.length * 1000)) {
          t.fail(`deadline of ${id}: ${score}`);
          break;
        }
      }
    } finally {
      for (let s = 0; s < LEASE_SHARDS; s++) await redis.del(k.leases(s), k.deadlines(s));
    }
  });
}

t.test("a thread's batch: identical heartbeats of a turn share one line, and each is answered as its own line would be", async (t) => {
  const redis = suiteRedis(t);
  let run = 0;
  let shared = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.constantFrom(...IDS), record), { maxLength: 4 }),
      // few distinct heartbeats, drawn many times: most turns repeat some
      fc.array(fc.tuple(fc.constantFrom(...IDS, 'zz'), fc.constantFrom(...TOKS), fc.constantFrom<'p' | 'c'>('p', 'c'), fc.boolean()), { minLength: 1, maxLength: 6 }),
      fc.array(fc.nat(), { minLength: 1, maxLength: 40 }),
      // whether the turn's passing renewals go as a known token's (all of them alike: the same
      // heartbeat by both ways in one turn would be two lines, answered alike)
      fc.boolean(),
      async (recs, pool, picks, known) => {
        const k = new Keys(`hbd${process.pid}-${run++}:`);
        const now = 1_764_000_000_000 + run;
        const batch = new HeartbeatBatch(redis, k, () => now);
        const records = new Map(recs);
        const beats = picks.map((i) => pool[i % pool.length]!);
        const lines = beats.map(([id, tok, want, chk]) => `${id} ${tok} ${want} ${chk ? '1' : '0'} production`);
        try {
          for (const [id, rec] of records) {
            await redis.hset(k.leases(shardOf(id)), id, rec);
            await redis.zadd(k.deadlines(shardOf(id)), 1, id);
          }
          const deadlines = new Map([...records.keys()].map((id) => [id, 1]));
          const want = lines.map((l) => {
            const m = model(l, records, now);
            if (m.renew) deadlines.set(...m.renew);
            return m.r;
          });
          const [calls, sent] = [batch.stats.calls, batch.stats.lines];
          // one turn: every heartbeat handed over in the same tick; a passing renewal of a token
          // drawn as "known" goes by its identity object (beatKnown: the token memory's entry,
          // one object per token), the others by their fields (beat)
          const ids = new Map<string, BeatIdentity>();
          const identity = (id: string, tok: string) => ids.get(id + ' ' + tok) ?? ids.set(id + ' ' + tok, { ns: 'production', id, hash: tok, shard: shardOf(id) }).get(id + ' ' + tok)!;
          const got = await Promise.all(
            beats.map(([id, tok, w, chk]) =>
              w === 'p' && !chk && known
                ? new Promise<number>((ok, no) => batch.beatKnown(identity(id, tok), (r, err) => (err === undefined ? ok(r) : no(err))))
                : batch.beatAsync('production', id, tok, w, chk),
            ),
          );
          if (JSON.stringify(got) !== JSON.stringify(want)) {
            t.same(got, want, `answers of ${JSON.stringify(lines)} with ${JSON.stringify(recs)}`);
            return false;
          }
          const distinct = new Set(lines).size;
          if (batch.stats.lines - sent !== distinct || batch.stats.calls - calls !== 1) {
            t.equal(batch.stats.lines - sent, distinct, `lines sent for ${JSON.stringify(lines)} (${batch.stats.calls - calls} calls)`);
            return false;
          }
          if (distinct < lines.length) shared++;
          for (const [id, d] of deadlines) {
            const got = Number(await redis.zscore(k.deadlines(shardOf(id)), id));
            if (got !== d) {
              t.equal(got, d, `the deadline of ${id} after ${JSON.stringify(lines)} with ${JSON.stringify(recs)}`);
              return false;
            }
          }
          return true;
        } finally {
          for (let s = 0; s < LEASE_SHARDS; s++) await redis.del(k.leases(s), k.deadlines(s));
        }
      },
    ),
    { numRuns: 100 },
  );
  t.ok(shared > 50, `turns with a shared line: ${shared} of 100`);
});
