import t from 'tap';
import { LEASE_DIVISOR, LEASE_MAX, LEASE_MS, Leases } from '../../src/hot/sandbox/leases.js';

const T0 = 1_000_000 * 5000 + 100; // 100 ms into a 5-second bucket
const ok = (limit: number, used: number, reset = 60) => ({ admitted: true, limit, used, retryAfter: 0, reset });

t.test('small limits never lease: every request asks Redis', async (t) => {
  const l = new Leases();
  const limit = LEASE_DIVISOR * 2 - 1;
  for (let i = 0; i < 5; i++) {
    const p = l.plan('a');
    t.equal(p.want, 1);
    l.granted('a', ok(limit, i + 1), 1, T0);
    t.equal(l.take('a', T0), null);
  }
});

t.test('high limits: batches double while they run out, up to the cap', async (t) => {
  const l = new Leases();
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
  t.equal(Math.max(...seen), LEASE_MAX, 'never above LEASE_MAX');
});

t.test('the cap is limit / LEASE_DIVISOR', async (t) => {
  const l = new Leases();
  const limit = LEASE_DIVISOR * 6;
  let want = 1;
  for (let i = 0; i < 6; i++) {
    l.granted('a', ok(limit, 1), want, T0);
    while (l.take('a', T0));
    want = l.plan('a').want;
  }
  t.equal(want, 6);
});

t.test('headers from a lease count on from the first admission', async (t) => {
  const l = new Leases();
  l.granted('a', ok(1e9, 41, 30), 4, T0);
  const a = l.take('a', T0 + 10)!;
  const b = l.take('a', T0 + 20)!;
  t.same([a.used, b.used], [42, 43]);
  t.equal(a.limit, 1e9);
  t.equal(a.admitted, true);
  t.equal(a.reset, 30);
});

t.test('a lease ends after LEASE_MS and at the end of its bucket; the rest is given back', async (t) => {
  const l = new Leases();
  l.granted('a', ok(1e9, 1), 10, T0);
  t.ok(l.take('a', T0 + LEASE_MS - 1));
  t.equal(l.take('a', T0 + LEASE_MS), null, 'expired');
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
  const l = new Leases();
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
  const l = new Leases();
  t.equal(l.mayLease('a'), false, 'unknown limit: never wait');
  l.granted('a', ok(LEASE_DIVISOR * 2 - 1, 1), 1, T0);
  t.equal(l.mayLease('a'), false, 'a small limit asks side by side');
  l.granted('b', ok(LEASE_DIVISOR * 2, 1), 1, T0);
  t.equal(l.mayLease('b'), true);
});

t.test("a lease follows Redis's bucket, whatever this node's clock says", async (t) => {
  const l = new Leases();
  const local = 7_000_000 * 5000 + 4990; // this node thinks its bucket ends in 10 ms
  // Redis counted the batch in bucket 42 with 30 ms of it left
  l.granted('a', ok(1e9, 1), 10, local, { bucket: 42, leftMs: 30 });
  t.ok(l.take('a', local + 20), 'still Redis\'s bucket 20 ms later (past the local bucket edge)');
  t.equal(l.take('a', local + 30), null, 'never past Redis\'s bucket');
  l.drop('a');
  t.equal(l.plan('a').refunds, '42:8', 'the rest goes back to the bucket Redis named');
});
