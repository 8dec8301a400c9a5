import t from 'tap';
import { BATCH_DIVISOR, BATCH_MAX, BATCH_MS, AdmissionBatches, PREFETCH_MIN } from '../../src/hot/ratelimit/admission.js';

const T0 = 1_000_000 * 5000 + 100; // 100 ms into a 5-second bucket
const ok = (limit: number, used: number, reset = 60) => ({ admitted: true, limit, used, retryAfter: 0, reset });

t.test('small limits never lease: every request asks Redis', async (t) => {
  const l = new AdmissionBatches();
  const limit = BATCH_DIVISOR * 2 - 1;
  for (let i = 0; i < 5; i++) {
    const p = l.plan('a');
    t.equal(p.want, 1);
    l.granted('a', ok(limit, i + 1), 1, T0);
    t.equal(l.take('a', T0), null);
  }
});

t.test('high limits: batches double while they run out, up to the cap', async (t) => {
  const l = new AdmissionBatches();
  const limit = 1e9;
  let want = l.plan('a').want;
  t.equal(want, 1);
  const seen: number[] = [];
  for (let round = 0; round < 12; round++) {
    l.granted('a', ok(limit, 10), want, T0);
    let n = 0;
    while (l.take('a', T0)) n++;
    t.equal(n, want - 1, 'the rest of the batch is answered locally');
    want = l.plan('a').want;
    seen.push(want);
  }
  t.same(seen.slice(0, 8), [2, 4, 8, 16, 32, 64, 128, 256]);
  t.equal(Math.max(...seen), BATCH_MAX, 'never above BATCH_MAX');
});

t.test('the cap is limit / BATCH_DIVISOR', async (t) => {
  const l = new AdmissionBatches();
  const limit = BATCH_DIVISOR * 6;
  let want = 1;
  for (let i = 0; i < 6; i++) {
    l.granted('a', ok(limit, 1), want, T0);
    while (l.take('a', T0));
    want = l.plan('a').want;
  }
  t.equal(want, 6);
});

t.test('headers from a lease count on from the first admission', async (t) => {
  const l = new AdmissionBatches();
  l.granted('a', ok(1e9, 41, 30), 4, T0);
  const a = l.take('a', T0 + 10)!;
  const b = l.take('a', T0 + 20)!;
  t.same([a.used, b.used], [42, 43]);
  t.equal(a.limit, 1e9);
  t.equal(a.admitted, true);
  t.equal(a.reset, 30);
});

t.test('a lease ends after BATCH_MS and at the end of its bucket; the rest is given back', async (t) => {
  const l = new AdmissionBatches();
  l.granted('a', ok(1e9, 1), 10, T0);
  t.ok(l.take('a', T0 + BATCH_MS - 1));
  t.equal(l.take('a', T0 + BATCH_MS), null, 'expired');
  const p = l.plan('a');
  t.equal(p.refunds, `${Math.floor(T0 / 5000)}:8`, 'unused admissions go back, with their bucket');
  t.equal(p.want, 2, 'the next batch is what was used');
  t.equal(l.plan('a').refunds, '', 'given back once');

  const edge = (Math.floor(T0 / 5000) + 1) * 5000 - 10; // 10 ms before the bucket ends
  l.granted('a', ok(1e9, 1), 10, edge);
  t.ok(l.take('a', edge + 5));
  t.equal(l.take('a', edge + 10), null, 'never past its bucket');
  // a lease of the next bucket retired before anything was given back: both buckets go back
  l.granted('a', ok(1e9, 1), 4, edge + 10);
  l.drop('a');
  t.equal(l.plan('a').refunds, `${Math.floor(edge / 5000)}:8,${Math.floor(edge / 5000) + 1}:3`, 'every bucket keeps its own rest');
});

t.test('rejections and dropped leases', async (t) => {
  const l = new AdmissionBatches();
  l.granted('a', ok(1e9, 1), 8, T0);
  l.drop('a');
  t.equal(l.take('a', T0), null, 'a dropped lease answers nothing');
  const p = l.plan('a');
  t.equal(p.want, 1, 'after a drop (tier change) the next ask is for one');
  t.equal(p.refunds, `${Math.floor(T0 / 5000)}:7`);
  l.granted('a', { admitted: false, limit: 1e9, used: 1e9, retryAfter: 3, reset: 3 }, 0, T0);
  t.equal(l.take('a', T0), null, 'a refusal leases nothing');
});

t.test('only limits that allow batches make concurrent requests wait for one', async (t) => {
  const l = new AdmissionBatches();
  t.equal(l.mayBatch('a'), false, 'unknown limit: never wait');
  l.granted('a', ok(BATCH_DIVISOR * 2 - 1, 1), 1, T0);
  t.equal(l.mayBatch('a'), false, 'a small limit asks Redis for each request');
  l.granted('b', ok(BATCH_DIVISOR * 2, 1), 1, T0);
  t.equal(l.mayBatch('b'), true);
});

t.test("a lease follows Redis's bucket, whatever this node's clock says", async (t) => {
  const l = new AdmissionBatches();
  const local = 7_000_000 * 5000 + 4990; // this node thinks its bucket ends in 10 ms
  // Redis counted the batch in bucket 42 with 30 ms of it left
  l.granted('a', ok(1e9, 1), 10, local, { bucket: 42, leftMs: 30 });
  t.ok(l.take('a', local + 20), 'still Redis\'s bucket 20 ms later (past the local bucket edge)');
  t.equal(l.take('a', local + 30), null, 'never past Redis\'s bucket');
  l.drop('a');
  t.equal(l.plan('a').refunds, '42:8', 'the rest goes back to the bucket Redis named');
});

t.test('a batch of PREFETCH_MIN or more asks for the next when a quarter is left, and the count goes on without a gap', async (t) => {
  const low: string[] = [];
  const l = new AdmissionBatches((uuid) => low.push(uuid));
  // the window held 99: a batch of 16 for a request (need 1) leaves 115 counted, used 100
  l.granted('a', ok(1e9, 100), 16, T0);
  const used: number[] = [];
  for (let i = 0; i < 11; i++) used.push(l.take('a', T0)!.used);
  t.same(low, ['a'], 'asked ahead once, when 4 of 15 are left');
  t.equal(l.plan('a', true).refunds, '', 'a plan ahead keeps the current batch');
  used.push(l.take('a', T0)!.used);
  // Redis counts the next batch after the whole current one: 115 before it (need 0)
  l.granted('a', ok(1e9, 115), 32, T0 + 1, undefined, true);
  let r;
  while ((r = l.take('a', T0 + 2))) used.push(r.used);
  t.equal(used.length, 15 + 32, 'the current batch to its end, then all of the next one');
  t.same(used, Array.from({ length: 47 }, (_, i) => 101 + i), 'one by one across the switch');
  t.same(low, ['a', 'a'], 'the next batch asks ahead in turn, once');
});

t.test('small batches never ask ahead', async (t) => {
  const low: string[] = [];
  const l = new AdmissionBatches((uuid) => low.push(uuid));
  l.granted('a', ok(1e9, 1), PREFETCH_MIN - 1, T0);
  while (l.take('a', T0));
  t.same(low, []);
  l.granted('a', ok(1e9, 1), PREFETCH_MIN, T0);
  while (l.take('a', T0));
  t.same(low, ['a']);
});

t.test('no ask ahead while one is under way or a next batch is held', async (t) => {
  const low: string[] = [];
  const l = new AdmissionBatches((uuid) => low.push(uuid));
  l.granted('a', ok(1e9, 1), 16, T0);
  let release = () => undefined as void;
  const p = l.ask('a', () => new Promise((ok2) => (release = () => ok2(ok(1e9, 1)))));
  for (let i = 0; i < 14; i++) l.take('a', T0);
  t.same(low, [], 'an ask under way: none more');
  release();
  await p;
  await new Promise((r) => setImmediate(r));
  l.granted('a', ok(1e9, 1), 16, T0);
  for (let i = 0; i < 11; i++) l.take('a', T0);
  t.same(low, ['a'], 'none under way: asked');
  // a next batch held before the current one is down to a quarter
  l.granted('a', ok(1e9, 1), 16, T0);
  l.granted('a', ok(1e9, 16), 16, T0, undefined, true);
  t.ok(l.holdsRefunds('a'));
  for (let i = 0; i < 14; i++) l.take('a', T0);
  t.same(low, ['a'], 'a next batch held: none more');
});

t.test('a batch that ran out of time is not followed by the one asked ahead: both go back', async (t) => {
  const l = new AdmissionBatches();
  l.granted('a', ok(1e9, 1), 16, T0);
  for (let i = 0; i < 12; i++) l.take('a', T0);
  l.granted('a', ok(1e9, 16), 8, T0 + 1, undefined, true);
  t.equal(l.take('a', T0 + BATCH_MS), null, 'the current batch is over with 3 left: ask Redis');
  const p = l.plan('a');
  t.equal(p.refunds, `${Math.floor(T0 / 5000)}:11`, 'its 3 and the 8 asked ahead go back');
  t.equal(l.take('a', T0 + BATCH_MS), null, 'nothing held after the plan');
});

t.test('an ask ahead refused or answered after the batch ran out', async (t) => {
  const l = new AdmissionBatches();
  l.granted('a', ok(1e9, 1), 16, T0);
  for (let i = 0; i < 12; i++) l.take('a', T0);
  l.granted('a', { admitted: false, limit: 1e9, used: 1e9, retryAfter: 3, reset: 3 }, 0, T0, undefined, true);
  let n = 0;
  while (l.take('a', T0)) n++;
  t.equal(n, 3, 'a refusal ahead leaves the current batch answering to its end');
  // the batch ran out before the answer came: the answer is the current batch, all of it usable
  l.granted('a', ok(1e9, 50), 8, T0, undefined, true);
  const used: number[] = [];
  let r;
  while ((r = l.take('a', T0))) used.push(r.used);
  t.same(used, [51, 52, 53, 54, 55, 56, 57, 58]);
});
