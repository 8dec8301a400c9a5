// heartbeat-2.lua against a model of its rules (redis/README.md, the script's header;
// helpers/heartbeat-model.ts), on real Redis: fast-check draws lease records (well-formed, and
// of other shapes no script of ours writes), deadlines and batches of lines (well-formed, and
// of other shapes), and each call must answer what the model answers, line by line, and leave
// the deadlines the model leaves. The script matches records and lines in place rather than
// parsing them (for its speed: every request of a batch waits for it), so the shapes around
// the edges are drawn. heartbeats.lua (several shards in one call) must answer as
// heartbeat-2.lua per shard.
import t from 'tap';
import fc from 'fast-check';
import { Keys } from '../../src/hot/domain/keys.js';
import { type RedisClient } from '../../src/hot/redis/client.js';
import { heartbeatReplies } from '../../src/hot/redis/replies.js';
import { IDS, line, record, seedShard } from '../helpers/heartbeat-model.js';
import { suiteRedis } from '../helpers/test-data.js';

/** The first deadline in sorted set `key` that is not the model's, or null. */
async function wrongDeadline(redis: RedisClient, key: string, deadlines: Map<string, number>): Promise<{ id: string; got: number; want: number } | null> {
  for (const [id, want] of deadlines) {
    const got = Number(await redis.zscore(key, id));
    if (got !== want) return { id, got, want };
  }
  return null;
}

t.test('heartbeat-2.lua answers every line as its rules say, and renews exactly the deadlines they say', async (t) => {
  const redis = suiteRedis(t);
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
  const redis = suiteRedis(t);
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
