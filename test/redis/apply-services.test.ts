// apply-services-1.lua (a group's states in one call) against apply-service-1.lua (one call
// per state): fast-check drives random groups of states — the same id twice in a group,
// stale revisions, deletions, sets shared across bucket boundaries — through both scripts on
// real Redis into two key prefixes, and requires the same reply per state (the namespace
// version after it, or 0 when stale), the same deltas, and byte-equal keys afterwards.
import t from 'tap';
import fc from 'fast-check';
import { Keys, PRODUCTION } from '../../src/hot/domain/keys.js';
import { type RedisClient } from '../../src/hot/redis/client.js';
import { applyServicesReply, integer, NOT_INDEXED } from '../../src/hot/redis/replies.js';
import { suiteRedis } from '../helpers/test-data.js';

const IDS = ['x0', 'x1', 'x2', 'x3', 'x4', 'x5'];
// each id keeps its seq (as a service does), around bucket boundaries
const SEQ: Record<string, number> = { x0: 1, x1: 4095, x2: 4096, x3: 4097, x4: 8191, x5: 100_000 };
const CAPS = ['a', 'b', 'c'];

type State = { id: string; revBack: number; gone: boolean; caps: string[]; repl: string[] };
const stateArb: fc.Arbitrary<State> = fc.record({
  id: fc.constantFrom(...IDS),
  revBack: fc.constantFrom(0, 0, 0, 2), // 2: older than what may be in place (stale)
  gone: fc.constantFrom(false, false, false, true),
  caps: fc.subarray(CAPS),
  repl: fc.subarray(IDS.map((id) => String(SEQ[id]))),
});

/** [id, rev, seq, doc, hdr, members, repl] of a state: apply-service's ARGV[2..8] */
function fields(s: State, rev: number): string[] {
  if (s.gone) return [s.id, String(rev), '', '', '', '', ''];
  const seq = SEQ[s.id]!;
  const doc = JSON.stringify({ seq, capabilities: s.caps, properties: {}, iot: null });
  return [s.id, String(rev), String(seq), doc, s.caps.length ? `${seq}|` : '', ['all', ...s.caps.map((c) => 'c:' + c)].join('\n'), s.repl.join(',')];
}

/** every key under `prefix`, its type and content, with the prefix taken out of names and values */
async function dump(redis: RedisClient, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = (await redis.scan(cursor, 'MATCH', prefix + '*', 'COUNT', 1000)) as [string, string[]];
    cursor = next;
    for (const k of keys) {
      const type = await redis.type(k);
      let v: unknown;
      if (type === 'hash') v = Object.entries(await redis.hgetallBuffer(k)).map(([f, b]) => [f, b.toString('hex')]).sort();
      else if (type === 'set') v = (await redis.smembers(k)).sort();
      else v = await redis.get(k);
      out.push(k.slice(prefix.length) + ' ' + type + ' ' + JSON.stringify(v));
    }
  } while (cursor !== '0');
  return out.sort();
}

t.test('apply-services equals apply-service state by state', async (t) => {
  const redis = suiteRedis(t);
  const sub = suiteRedis(t);
  const channel = `tas${process.pid}:deltas`;
  const deltas: string[] = [];
  await sub.subscribe(channel);
  sub.on('message', (_c: string, m: string) => deltas.push(m));
  let run = 0;
  let repeated = 0;
  let stale = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(stateArb, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 6 }), async (groups) => {
      const one = new Keys(`tas${process.pid}-${run}-one:`);
      const many = new Keys(`tas${process.pid}-${run++}-many:`);
      const gen = 'g1';
      await redis.set(one.ver(PRODUCTION, gen), '1');
      await redis.set(many.ver(PRODUCTION, gen), '1');
      let rev = 10;
      try {
        for (const g of groups) {
          const states = g.map((s) => ({ s, rev: (rev += 3) - s.revBack * 3 }));
          if (new Set(g.map((s) => s.id)).size < g.length) repeated++;
          deltas.length = 0;
          const singly: number[] = [];
          for (const { s, rev: r } of states) {
            singly.push(integer(await redis.applyService(one.ver(PRODUCTION, gen), one.base(PRODUCTION, gen), ...fields(s, r), channel), 'apply-service'));
          }
          const together = applyServicesReply(
            await redis.applyServices(many.ver(PRODUCTION, gen), many.base(PRODUCTION, gen), channel, ...states.flatMap(({ s, rev: r }) => fields(s, r))),
            states.length,
          );
          if (singly.includes(0)) stale++;
          if (JSON.stringify(together) !== JSON.stringify(singly)) {
            t.same(together, singly, 'the same reply per state');
            return false;
          }
          // every delta published so far comes before this PING's reply on the subscriber's connection
          await sub.ping();
          const norm = (m: string, k: Keys) => m.split(k.base(PRODUCTION, gen)).join('<base>');
          const n = singly.filter((x) => x > 0).length;
          const [a, b] = [deltas.slice(0, n).map((m) => norm(m, one)), deltas.slice(n, 2 * n).map((m) => norm(m, many))];
          if (JSON.stringify(a) !== JSON.stringify(b)) {
            t.same(b, a, 'the same deltas, in order');
            return false;
          }
          const [da, db] = [await dump(redis, one.prefix), await dump(redis, many.prefix)];
          if (JSON.stringify(da) !== JSON.stringify(db)) {
            t.same(db, da, 'the same keys, byte for byte');
            return false;
          }
        }
        return true;
      } finally {
        for (const k of [one, many]) {
          const keys = (await redis.keys(k.prefix + '*')) as string[];
          if (keys.length) await redis.del(...keys);
        }
      }
    }),
    { numRuns: 60 },
  );
  t.ok(repeated > 0 && stale > 0, `groups with an id twice (${repeated}) and stale states (${stale}) were in the runs`);
  const none = new Keys(`tas${process.pid}-none:`);
  t.equal(
    applyServicesReply(await redis.applyServices(none.ver(PRODUCTION, 'g9'), none.base(PRODUCTION, 'g9'), '', ...fields({ id: 'x0', revBack: 0, gone: false, caps: ['a'], repl: [] }, 1)), 1),
    NOT_INDEXED,
    'a namespace not indexed: -1',
  );
  t.same(await redis.keys(none.prefix + '*'), [], 'and nothing written');
});
