// heartbeat-2.lua against a model of its rules (redis/README.md, the script's header), on
// real Redis: fast-check draws lease records (well-formed, and of other shapes no script of
// ours writes), deadlines and batches of lines (well-formed, and of other shapes), and each
// call must answer what the model answers, line by line, and leave the deadlines the model
// leaves. The script matches records and lines in place rather than parsing them (for its
// speed: every request of a batch waits for it), so the shapes around the edges are drawn.
// heartbeats.lua (several shards in one call) must answer as heartbeat-2.lua per shard, and a
// thread's batch must put a turn's shards in one call on a standalone Redis, one call per
// shard on a cluster (TEST_REDIS_CLUSTER_NODES), each heartbeat answered its own. The rate
// records heartbeats.lua carries must be recorded as rate-count-2.lua records them, and a
// batch on a standalone Redis carries a turn's records (given back when its call fails).
import t from 'tap';
import fc from 'fast-check';
import { loadConfig } from '../../src/hot/config.js';
import { Keys } from '../../src/hot/domain/keys.js';
import { createRedis, type RedisClient } from '../../src/hot/redis/client.js';
import { heartbeatReplies } from '../../src/hot/redis/replies.js';
import { HeartbeatBatch, MAX_BATCH, type RateRecord, type RateRecords } from '../../src/hot/liveness/heartbeat-batch.js';
import { RATE_WINDOW } from '../../src/hot/domain/rate-window.js';
import { shardOf } from '../../src/hot/liveness/redis-lease.js';
import { LEASE_SHARDS } from '../../src/hot/domain/keys.js';

const IDS = ['a', 'b-1', 'c_2', 'D3'];
const NSS = ['production', '0f6c1a52-1b7e-4a61-9a0f-3f2b1c0d9e8a'];
const TOKS = ['ab12', 'AB12', 'ab', 'ab123', 'ff'.repeat(32)];
const LINE = /^([A-Za-z0-9_-]+) ([0-9a-fA-F]+) ([pc]) ([01]) ([A-Za-z0-9_-]+)$/;
const RECORD = /^\d+\|([^|]*)\|([0-9a-fA-F]*)\|(\d+)\|([pc])\|\d+\|\d*$/;

/** What the script answers a line (and the deadline it sets, if any). */
function model(line: string, records: Map<string, string>, now: number): { r: number; renew?: [string, number] } {
  const m = LINE.exec(line);
  if (!m) return { r: -2 };
  const [, id, tok, want, chk, ns] = m as unknown as [string, string, string, string, string, string];
  const rec = records.get(id);
  if (rec === undefined) return { r: -1 };
  const f = RECORD.exec(rec);
  if (!f || f[2] === '' || f[2] !== tok || f[1] !== ns) return { r: -2 };
  const r = f[4] !== want ? 1 : 0;
  return chk !== '1' && want === 'p' ? { r, renew: [id, now + Number(f[3]) * 1000] } : { r };
}

const digits = fc.integer({ min: 0, max: 99_999 }).map(String);
const wellFormed = fc
  .tuple(digits, fc.constantFrom(...NSS, ''), fc.constantFrom(...TOKS, ''), fc.constantFrom('5', '60', '86400'), fc.constantFrom('p', 'c'), fc.constantFrom('0', '600'), fc.constantFrom('', '1764000000000'))
  .map((xs) => xs.join('|'));
/** records no script writes: each field's shape broken in turn, or any text */
const otherShape = fc.oneof(
  wellFormed.map((r) => 'x' + r), // revision not digits
  wellFormed.map((r) => r.replace(/^\d+/, '')), // no revision
  wellFormed.map((r) => r + '|'), // a field too many
  wellFormed.map((r) => r.replace(/\|[pc]\|/, '|x|')), // status
  wellFormed.map((r) => r.replace(/\|(\d+)\|([pc])/, '|t$1|$2')), // ttl
  wellFormed.map((r) => r.split('|').slice(0, 6).join('|')), // a field short
  wellFormed.map((r) => r.replace('|', '||')), // the namespace shifted
  fc.string({ maxLength: 90 }),
);
const record = fc.oneof({ weight: 4, arbitrary: wellFormed }, { weight: 1, arbitrary: otherShape });
const goodLine = fc.tuple(fc.constantFrom(...IDS, 'zz'), fc.constantFrom(...TOKS), fc.constantFrom('p', 'c'), fc.constantFrom('0', '1'), fc.constantFrom(...NSS, 'sandbox')).map((xs) => xs.join(' '));
const badLine = fc.oneof(
  goodLine.map((l) => l + ' '),
  goodLine.map((l) => ' ' + l),
  goodLine.map((l) => l.replace(' ', '  ')),
  goodLine.map((l) => l.replace(/ [pc] /, ' x ')),
  goodLine.map((l) => l.replace(/ [01] /, ' 2 ')),
  goodLine.map((l) => l.replace(/ [0-9a-fA-F]+ /, ' g1 ')),
  goodLine.map((l) => l.split(' ').slice(0, 4).join(' ')),
  fc.string({ maxLength: 40 }).map((s) => s.replace(/\n/g, '')),
);
const line = fc.oneof({ weight: 3, arbitrary: goodLine }, { weight: 1, arbitrary: badLine });

/**
 * One shard's case: its records written to shard `shard` of `k` (each with deadline 1), its
 * lines as the script takes them, and what the model says: the answers, and every record's
 * deadline after the call.
 */
async function seedShard(redis: RedisClient, k: Keys, shard: number, recs: [string, string][], lines: string[], now: number): Promise<{ text: string; want: number[]; deadlines: Map<string, number> }> {
  const records = new Map(recs);
  for (const [id, rec] of records) {
    await redis.hset(k.leases(shard), id, rec);
    await redis.zadd(k.deadlines(shard), 1, id);
  }
  const deadlines = new Map([...records.keys()].map((id) => [id, 1]));
  const want: number[] = [];
  for (const l of lines) {
    const m = model(l, records, now);
    want.push(m.r);
    if (m.renew) deadlines.set(...m.renew);
  }
  return { text: lines.map((l) => l + '\n').join(''), want, deadlines };
}

/** The first deadline in sorted set `key` that is not the model's, or null. */
async function wrongDeadline(redis: RedisClient, key: string, deadlines: Map<string, number>): Promise<{ id: string; got: number; want: number } | null> {
  for (const [id, want] of deadlines) {
    const got = Number(await redis.zscore(key, id));
    if (got !== want) return { id, got, want };
  }
  return null;
}

t.test('heartbeat-2.lua answers every line as its rules say, and renews exactly the deadlines they say', async (t) => {
  const redis = createRedis(loadConfig());
  t.teardown(() => redis.disconnect());
  let run = 0;
  const seen = new Set<number>();
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.constantFrom(...IDS), record), { maxLength: 5 }),
      fc.array(line, { minLength: 1, maxLength: 12 }),
      async (recs, lines) => {
        const k = new Keys(`hbs${process.pid}-${run++}:`);
        const [L, D] = [k.leases(0), k.deadlines(0)];
        const now = 1_764_000_000_000 + run;
        try {
          const c = await seedShard(redis, k, 0, recs, lines, now);
          const got = heartbeatReplies(await redis.heartbeat(L, D, now, c.text), lines.length);
          for (const w of c.want) seen.add(w);
          if (JSON.stringify(got) !== JSON.stringify(c.want)) {
            t.same(got, c.want, `answers of ${JSON.stringify(lines)} with ${JSON.stringify(recs)}`);
            return false;
          }
          const wrong = await wrongDeadline(redis, D, c.deadlines);
          if (wrong) {
            t.equal(wrong.got, wrong.want, `the deadline of ${wrong.id} after ${JSON.stringify(lines)} with ${JSON.stringify(recs)}`);
            return false;
          }
          t.equal(await redis.zcard(D), c.deadlines.size, 'no deadline for an id without a record');
          return true;
        } finally {
          await redis.del(L, D);
        }
      },
    ),
    {
      numRuns: 300,
      examples: [
        [[['a', `7|production|${'ff'.repeat(32)}|60|c|0|1764000000000`]], [`a ${'ff'.repeat(32)} p 0 production`]],
        [[['a', '7|production|ab12|60|p|0|']], ['a ab12 p 0 production', 'bad line', 'a ab12 c 1 production', 'a ab p 0 production', 'zz ab12 p 0 production']],
        [[['b-1', 'x7|production|ab12|60|p|0|']], ['b-1 ab12 p 0 production']],
        // "|<ns>|<token>|" later in the record than right after the revision: not this lease's
        // (namespace "x", token "600"), although the text after it reads as a ttl and a status
        [[['a', '1|x|600|600|p|5|']], ['a 600 p 0 600', 'a 600 p 0 x']],
      ],
    },
  );
  t.same([...seen].sort((a, b) => a - b), [-2, -1, 0, 1], 'every answer occurred');
});

t.test('heartbeats.lua: the shards of one call answered pair after pair, as heartbeat-2.lua answers each', async (t) => {
  const redis = createRedis(loadConfig());
  t.teardown(() => redis.disconnect());
  let run = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.array(fc.tuple(fc.constantFrom(...IDS), record), { maxLength: 4 }), fc.array(line, { minLength: 1, maxLength: 6 })), { minLength: 1, maxLength: 3 }),
      async (shards) => {
        const k = new Keys(`hbm${process.pid}-${run++}:`);
        const now = 1_764_000_000_000 + run;
        const keys: string[] = [];
        const cases: Awaited<ReturnType<typeof seedShard>>[] = [];
        try {
          for (let i = 0; i < shards.length; i++) {
            keys.push(k.leases(i), k.deadlines(i));
            cases.push(await seedShard(redis, k, i, ...shards[i]!, now));
          }
          const want = cases.flatMap((c) => c.want);
          const got = heartbeatReplies(await redis.heartbeats(keys.length, ...keys, now, cases.length, ...cases.map((c) => c.text)), want.length);
          if (JSON.stringify(got) !== JSON.stringify(want)) {
            t.same(got, want, `answers of ${JSON.stringify(shards)}`);
            return false;
          }
          for (const [i, c] of cases.entries()) {
            const wrong = await wrongDeadline(redis, k.deadlines(i), c.deadlines);
            if (wrong) {
              t.equal(wrong.got, wrong.want, `the deadline of ${wrong.id} in ${k.deadlines(i)} after ${JSON.stringify(shards)}`);
              return false;
            }
          }
          return true;
        } finally {
          if (keys.length) await redis.del(...keys);
        }
      },
    ),
    { numRuns: 150 },
  );
});

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
    const redis = createRedis(loadConfig(mode === 'cluster' ? { ...process.env, REDIS_CLUSTER_NODES: CLUSTER } : process.env));
    t.teardown(() => redis.disconnect());
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
  const redis = createRedis(loadConfig());
  t.teardown(() => redis.disconnect());
  let run = 0;
  let shared = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.constantFrom(...IDS), record), { maxLength: 4 }),
      // few distinct heartbeats, drawn many times: most turns repeat some
      fc.array(fc.tuple(fc.constantFrom(...IDS, 'zz'), fc.constantFrom(...TOKS), fc.constantFrom<'p' | 'c'>('p', 'c'), fc.boolean()), { minLength: 1, maxLength: 6 }),
      fc.array(fc.nat(), { minLength: 1, maxLength: 40 }),
      async (recs, pool, picks) => {
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
          // one turn: every heartbeat handed over in the same tick
          const got = await Promise.all(beats.map(([id, tok, w, chk]) => batch.beatAsync('production', id, tok, w, chk)));
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

/** A sandbox's poll history (bucket -> requests) and totals, as Redis holds them. */
async function recorded(redis: RedisClient, k: Keys, uuid: string): Promise<{ history: Record<string, string>; totals: Record<string, string>; ttl: number }> {
  return { history: await redis.hgetall(k.rateHistory(uuid)), totals: await redis.hgetall(k.rateTotals(uuid)), ttl: await redis.ttl(k.rateHistory(uuid)) };
}

t.test('heartbeats.lua: the rate records it carries are recorded as rate-count-2.lua records them, the heartbeats answered alike', async (t) => {
  const redis = createRedis(loadConfig());
  t.teardown(() => redis.disconnect());
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
  const redis = createRedis(loadConfig());
  t.teardown(() => redis.disconnect());
  const k = new Keys(`hbc${process.pid}:`);
  const now = 1_764_000_000_000;
  const batch = new HeartbeatBatch(redis, k, () => now);
  const uuid = '0f6c1a52-1b7e-4a61-9a0f-3f2b1c0d9eff';
  // the records waiting, as sandbox/rate-records.ts keeps them (one entry per sandbox)
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
