// Services per sandbox (issue 41; contract "Sandbox endpoints"): a registration or batch
// that would pass the tier's quota (TIER_MAX_SERVICES) is 409 QUOTA_EXCEEDED naming it, and
// nothing is written; concurrent batches and registrations never pass it together; a
// deletion and an expiry's deregistration free room, a promotion raises it at once; the
// dashboard data and the admin detail show the quota and its use. A fast-check property runs
// random sequences of registrations, batches, concurrent bursts and deletions against a
// model of the count.
import t from 'tap';
import fc from 'fast-check';
import { isError, jsonBody, keyed } from '../helpers/checks.js';
import { createSandbox, serve } from '../helpers/server.js';

// the rate limits out of the way: only the quotas refuse here; leases on a clock the test
// moves, the sweeper driven by hand (an expiry's deregistration frees room)
let clock = Date.now();
const s = await serve(t, {
  env: { TIERS: 'free=1000000,pro=1000000,enterprise=1000000', TIER_MAX_SERVICES: 'free=5,pro=12,enterprise=23', SANDBOX_CREATE_PER_MINUTE: '1000000' },
  hooks: { leaseNow: () => clock, sweep: false },
});

type Box = Awaited<ReturnType<typeof createSandbox>>;
let n = 0;
const body = () => ({ endpoint: `https://q${++n}.example.com/`, capabilities: ['quota'] });
const register = (b: Box) => s.req(`/sandbox/${b.uuid}/services`, jsonBody('POST', body(), b.apiKey));
const batch = (b: Box, size: number) => s.req(`/sandbox/${b.uuid}/services/batch`, jsonBody('POST', { services: Array.from({ length: size }, body) }, b.apiKey));
const remove = (b: Box, id: string) => s.req(`/sandbox/${b.uuid}/services/${id}`, keyed(b.apiKey, { method: 'DELETE' }));
const rows = async (b: Box) => (await s.app.pg.query<{ id: string }>('SELECT id FROM services WHERE ns = $1', [b.uuid])).rows.map((r) => r.id).sort();
const written = async (b: Box) => Number((await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM change_events WHERE ns = $1', [b.uuid])).rows[0]!.n);
const dashboard = async (b: Box) => (await (await s.req(`/sandbox/${b.uuid}/dashboard`)).json()) as { serviceQuota: number; serviceCount: number };
const detail = async (b: Box) => (await (await s.admin('GET', `/admin/api/sandboxes/${b.uuid}`)).json()) as { serviceQuota: number; serviceCount: number };
const promote = async (b: Box, tier: string) => {
  const r = await s.admin('POST', `/admin/api/sandboxes/${b.uuid}/tier`, { tier });
  if (r.status !== 200) throw new Error(`tier: ${r.status}`);
};

t.test('single registrations: the sixth of a free sandbox (5) is 409 and writes nothing', async (t) => {
  const b = await createSandbox(s, 'Singles');
  for (let i = 0; i < 5; i++) t.equal((await register(b)).status, 201, `registration ${i + 1} of 5`);
  const before = await written(b);
  const r = await register(b);
  t.match(r.headers.get('ratelimit-policy') ?? '', /^"sandbox";q=/, 'an admitted request: the rate headers');
  const e = await isError(t, r, 409, 'QUOTA_EXCEEDED');
  t.equal(e.message, 'sandbox quota of 5 services reached: 5 registered', 'the message names the quota and the count');
  t.equal((await rows(b)).length, 5, 'no row');
  t.equal(await written(b), before, 'no change event');
  t.match(await dashboard(b), { serviceQuota: 5, serviceCount: 5 }, 'the dashboard data: quota and use');
  t.match(await detail(b), { serviceQuota: 5, serviceCount: 5 }, 'the admin detail too');
});

t.test('a batch: all or nothing against the quota', async (t) => {
  const b = await createSandbox(s, 'Batches');
  t.equal((await batch(b, 3)).status, 201);
  const before = [await rows(b), await written(b)];
  const e = await isError(t, await batch(b, 3), 409, 'QUOTA_EXCEEDED');
  t.equal(e.message, 'sandbox quota of 5 services reached: 3 registered, batch of 3');
  t.same([await rows(b), await written(b)], before, 'not one of the three written (rows, change events)');
  t.equal((await batch(b, 2)).status, 201, 'a batch that fits exactly');
  t.equal((await dashboard(b)).serviceCount, 5);
  await isError(t, await batch(b, 1), 409, 'QUOTA_EXCEEDED', 'a batch of one at the quota');
});

t.test('concurrent batches and registrations cannot pass it together', async (t) => {
  const b = await createSandbox(s, 'Crowd');
  await promote(b, 'enterprise'); // 23
  // 12 batches of 4 at once: exactly 5 fit (20), whatever the order they commit in
  const batches = await Promise.all(Array.from({ length: 12 }, () => batch(b, 4)));
  const codes = batches.map((r) => r.status);
  await Promise.all(batches.map((r) => r.arrayBuffer()));
  t.equal(codes.filter((c) => c === 201).length, 5, `five batches written (${codes.join(' ')})`);
  t.equal(codes.filter((c) => c === 409).length, 7, 'the other seven refused');
  t.equal((await rows(b)).length, 20);
  // 10 registrations at once (committed together by the group committer): exactly 3 fit
  const singles = await Promise.all(Array.from({ length: 10 }, () => register(b)));
  await Promise.all(singles.map((r) => r.arrayBuffer()));
  t.equal(singles.filter((r) => r.status === 201).length, 3, 'exactly the room left');
  t.equal((await rows(b)).length, 23, 'the quota, not one more');
  t.match(await dashboard(b), { serviceQuota: 23, serviceCount: 23 });
});

t.test('a deletion frees room; a promotion raises the quota for the next write', async (t) => {
  const b = await createSandbox(s, 'Room');
  const made = (await (await batch(b, 5)).json()) as { services: { id: string }[] };
  await isError(t, await register(b), 409, 'QUOTA_EXCEEDED');
  t.equal((await remove(b, made.services[0]!.id)).status, 204);
  t.equal((await dashboard(b)).serviceCount, 4, 'the use follows the deletion');
  t.equal((await register(b)).status, 201, 'the freed place is taken');
  await isError(t, await register(b), 409, 'QUOTA_EXCEEDED', 'and then it is full again');
  await promote(b, 'pro');
  t.match(await dashboard(b), { tier: 'pro', serviceQuota: 12, serviceCount: 5 }, 'the dashboard shows the new quota');
  t.match(await detail(b), { tier: 'pro', serviceQuota: 12, serviceCount: 5 });
  t.equal((await batch(b, 7)).status, 201, 'the next write has the new room');
  t.equal((await isError(t, await register(b), 409, 'QUOTA_EXCEEDED')).message, 'sandbox quota of 12 services reached: 12 registered');
  await promote(b, 'free');
  t.match(await dashboard(b), { serviceQuota: 5, serviceCount: 12 }, 'a demotion keeps the services; nothing new fits');
  await isError(t, await register(b), 409, 'QUOTA_EXCEEDED');
});

t.test('a deregistration (critical for deregisterAfter) frees room', async (t) => {
  const b = await createSandbox(s, 'Leases');
  const leased = (await (await s.req(`/sandbox/${b.uuid}/services`, jsonBody('POST', { ...body(), ttl: 5, deregisterAfter: 60 }, b.apiKey))).json()) as { id: string };
  t.equal((await batch(b, 4)).status, 201);
  await isError(t, await register(b), 409, 'QUOTA_EXCEEDED');
  clock += 6_000;
  await s.app.sweeper.sweepOnce(); // critical
  clock += 61_000;
  await s.app.sweeper.sweepOnce(); // critical for longer than deregisterAfter: deleted
  t.notOk((await rows(b)).includes(leased.id), 'deregistered');
  t.equal((await dashboard(b)).serviceCount, 4, 'the use follows');
  t.equal((await register(b)).status, 201, 'and its place is free');
});

// ---- the property: random sequences against a model of the count ----

type Op = { k: 'one' } | { k: 'batch'; size: number } | { k: 'burst'; n: number } | { k: 'delete'; pick: number };
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.constant<Op>({ k: 'one' }),
  fc.integer({ min: 1, max: 7 }).map((size): Op => ({ k: 'batch', size })),
  fc.integer({ min: 2, max: 6 }).map((n): Op => ({ k: 'burst', n })),
  fc.nat().map((pick): Op => ({ k: 'delete', pick })),
);

t.test('property: registrations, batches, bursts and deletions keep to the quota, as a model says', async (t) => {
  const QUOTA = 5; // free
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), async (ops) => {
      const b = await createSandbox(s, `Model ${runs++}`);
      const held: string[] = []; // the model: the services the sandbox holds
      for (const o of ops) {
        if (o.k === 'one' || o.k === 'batch') {
          const size = o.k === 'one' ? 1 : o.size;
          const r = o.k === 'one' ? await register(b) : await batch(b, size);
          const fits = held.length + size <= QUOTA;
          if (r.status !== (fits ? 201 : 409)) throw new Error(`${JSON.stringify(o)} with ${held.length} held: ${r.status} ${await r.text()}`);
          const out = (await r.json()) as { id?: string; services?: { id: string }[]; error?: { message: string } };
          if (fits) held.push(...(out.services?.map((x) => x.id) ?? [out.id!]));
          else if (!out.error!.message.startsWith(`sandbox quota of ${QUOTA} services reached: ${held.length} registered`)) throw new Error(out.error!.message);
        } else if (o.k === 'burst') {
          const rs = await Promise.all(Array.from({ length: o.n }, () => register(b)));
          const ok = rs.filter((r) => r.status === 201);
          if (ok.length !== Math.min(o.n, QUOTA - held.length)) throw new Error(`burst of ${o.n} with ${held.length} held: ${ok.length} written`);
          if (rs.some((r) => r.status !== 201 && r.status !== 409)) throw new Error(`burst: ${rs.map((r) => r.status).join(' ')}`);
          for (const r of ok) held.push(((await r.json()) as { id: string }).id);
          await Promise.all(rs.filter((r) => r.status !== 201).map((r) => r.arrayBuffer()));
        } else if (held.length) {
          const [id] = held.splice(o.pick % held.length, 1);
          const r = await remove(b, id!);
          if (r.status !== 204) throw new Error(`delete: ${r.status}`);
        }
      }
      const d = await dashboard(b);
      if (d.serviceCount !== held.length || d.serviceQuota !== QUOTA) throw new Error(`dashboard ${JSON.stringify(d)}, model ${held.length}`);
      if ((await rows(b)).join() !== [...held].sort().join()) throw new Error('the rows are not the model');
    }),
    { numRuns: 25 },
  );
  t.pass('every sequence kept to the model');
});
