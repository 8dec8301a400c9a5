// heartbeat-2.lua against a model of its rules (redis/README.md, the script's header), on
// real Redis: fast-check draws lease records (well-formed, and of other shapes no script of
// ours writes), deadlines and batches of lines (well-formed, and of other shapes), and each
// call must answer what the model answers, line by line, and leave the deadlines the model
// leaves. The script matches records and lines in place rather than parsing them (for its
// speed: every request of a batch waits for it), so the shapes around the edges are drawn.
import t from 'tap';
import fc from 'fast-check';
import { loadConfig } from '../../src/hot/config.js';
import { Keys } from '../../src/hot/domain/keys.js';
import { createRedis } from '../../src/hot/redis/client.js';
import { heartbeatReplies } from '../../src/hot/redis/replies.js';

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
        const records = new Map(recs);
        const now = 1_764_000_000_000 + run;
        try {
          for (const [id, rec] of records) {
            await redis.hset(L, id, rec);
            await redis.zadd(D, 1, id);
          }
          const want = lines.map((l) => model(l, records, now));
          const got = heartbeatReplies(await redis.heartbeat(L, D, now, lines.map((l) => l + '\n').join('')), lines.length);
          for (const w of want) seen.add(w.r);
          if (JSON.stringify(got) !== JSON.stringify(want.map((w) => w.r))) {
            t.same(got, want.map((w) => w.r), `answers of ${JSON.stringify(lines)} with ${JSON.stringify(recs)}`);
            return false;
          }
          const deadlines = new Map([...records.keys()].map((id) => [id, 1]));
          for (const w of want) if (w.renew) deadlines.set(...w.renew);
          for (const [id, d] of deadlines) {
            const score = Number(await redis.zscore(D, id));
            if (score !== d) {
              t.equal(score, d, `the deadline of ${id} after ${JSON.stringify(lines)} with ${JSON.stringify(recs)}`);
              return false;
            }
          }
          t.equal(await redis.zcard(D), records.size, 'no deadline for an id without a record');
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
