// GET /services/changes: events in order, resumption with Last-Event-ID (exactly the missed
// ones, no duplicates), namespace isolation (sandbox key vs anonymous), rate-limit counting
// at connect, heartbeats, and streams ended by a server shutdown.
import t from 'tap';
import { createSandbox, registerProduction, type TestServer, serve } from '../helpers/server.js';
import { openSse, type SseStream } from '../helpers/changes-sse.js';
import { pruneChanges } from '../../src/hot/registry/events.js';
import { waitFor } from '../helpers/wait.js';

const ENV = { CHANGES_POLL_MS: '30', CHANGES_HEARTBEAT_MS: '60000' };

async function connect(s: TestServer, headers: Record<string, string> = {}): Promise<SseStream> {
  const st = await openSse(s.url + '/services/changes', headers);
  if (st.status !== 200) throw new Error(`stream refused: ${st.status}`);
  await st.nextComment(); // the preamble: the stream's position is fixed from here on
  return st;
}

const sbWrite = (s: TestServer, sb: { uuid: string; apiKey: string }, method: string, path: string, body?: unknown) =>
  s.req(`/sandbox/${sb.uuid}/services${path}`, {
    method,
    headers: { authorization: `Bearer ${sb.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

t.test('anonymous stream: production events in order; Last-Event-ID resumes with exactly the missed ones', async (t) => {
  const s = await serve(t, { env: ENV });
  const st = await connect(s);
  t.teardown(() => st.close());
  t.equal(st.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  t.equal(st.headers.get('cache-control'), 'no-store');

  const a = await registerProduction(s, { endpoint: 'https://a.example.com', capabilities: ['feed'] });
  const b = await registerProduction(s, { endpoint: 'https://b.example.com', capabilities: ['feed'] });
  t.equal((await s.admin('PATCH', `/admin/api/services/${a.id}`, { properties: { region: 'eu' } })).status, 200);
  t.equal((await s.admin('POST', `/admin/api/services/${a.id}/replacements`, { serviceId: b.id })).status, 201);
  t.equal((await s.admin('PATCH', `/admin/api/services/${a.id}`, { deprecated: true, sunset_date: '2030-01-01' })).status, 200);
  t.equal((await s.admin('PATCH', `/admin/api/services/${a.id}`, { locked: true })).status, 200); // already deprecated: updated
  t.equal((await s.admin('DELETE', `/admin/api/services/${b.id}`)).status, 204);

  const ev = await st.next(7);
  t.same(
    ev.map((e) => [e.event, (JSON.parse(e.data) as { id: string }).id]),
    [
      ['service.created', a.id],
      ['service.created', b.id],
      ['service.updated', a.id],
      ['service.updated', a.id],
      ['service.deprecated', a.id],
      ['service.updated', a.id],
      ['service.deleted', b.id],
    ],
  );
  const ids = ev.map((e) => Number(e.id));
  t.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]!), 'ids increase');
  t.same(JSON.parse(ev[0]!.data), a, 'created: the service object as registered');
  t.match(JSON.parse(ev[2]!.data), { id: a.id, properties: { region: 'eu' } });
  t.match(JSON.parse(ev[4]!.data), { id: a.id, deprecated: true, sunset_date: '2030-01-01' });
  t.same(JSON.parse(ev[6]!.data), { id: b.id });

  // a client that saw the first three resumes: it gets the other four, then only new ones
  st.close();
  const again = await connect(s, { 'last-event-id': ev[2]!.id });
  t.teardown(() => again.close());
  const missed = await again.next(4);
  t.same(missed.map((e) => e.id), ev.slice(3).map((e) => e.id));
  t.same(missed.map((e) => e.data), ev.slice(3).map((e) => e.data));
  const c = await registerProduction(s, { endpoint: 'https://c.example.com', capabilities: ['feed'] });
  const [next] = await again.next(1);
  t.equal(next!.event, 'service.created');
  t.equal((JSON.parse(next!.data) as { id: string }).id, c.id, 'no duplicate and no gap before the live event');

  // the query-parameter form, for clients that cannot set headers
  const q = await openSse(`${s.url}/services/changes?lastEventId=${ev[5]!.id}`);
  t.teardown(() => q.close());
  t.same((await q.next(2)).map((e) => e.id), [ev[6]!.id, next!.id]);

  const bad = await s.req('/services/changes', { headers: { 'last-event-id': 'abc' } });
  t.equal(bad.status, 400);
  t.match(await bad.json(), { error: { code: 'BAD_REQUEST' } });
});

t.test('a sandbox stream sees only its sandbox; anonymous sees only production', async (t) => {
  const s = await serve(t, { env: ENV });
  const sa = await createSandbox(s, 'Feed A');
  const sb = await createSandbox(s, 'Feed B');
  const poll = async () => ((await (await s.req(`/sandbox/${sa.uuid}/poll`)).json()) as { total: number }).total;
  const before = await poll();
  const streamA = await connect(s, { authorization: `Bearer ${sa.apiKey}` });
  t.teardown(() => streamA.close());
  t.equal(await poll(), before + 1, 'opening the stream counted once against the rate limit');
  t.match(streamA.headers.get('ratelimit-policy'), /q=\d+/);
  const anon = await connect(s);
  t.teardown(() => anon.close());
  // a key that is not a valid sandbox key reads production, as GET /services does
  const bogus = await connect(s, { authorization: 'Bearer nope_sb_0000000000000000000000000000000' });
  t.teardown(() => bogus.close());

  const inB = await sbWrite(s, sb, 'POST', '', { endpoint: 'https://b.example.com', capabilities: ['x'] });
  t.equal(inB.status, 201);
  const prod = await registerProduction(s, { endpoint: 'https://p.example.com', capabilities: ['x'] });
  const inA = await sbWrite(s, sa, 'POST', '', { endpoint: 'https://a.example.com', capabilities: ['x'] });
  t.equal(inA.status, 201);
  const aId = ((await inA.json()) as { id: string }).id;
  t.equal((await sbWrite(s, sa, 'DELETE', `/${aId}`)).status, 204);
  const prod2 = await registerProduction(s, { endpoint: 'https://p2.example.com', capabilities: ['x'] });

  const evA = await streamA.next(2);
  t.same(evA.map((e) => [e.event, (JSON.parse(e.data) as { id: string }).id]), [
    ['service.created', aId],
    ['service.deleted', aId],
  ]);
  const evP = await anon.next(2);
  t.same(evP.map((e) => (JSON.parse(e.data) as { id: string }).id), [prod.id, prod2.id], 'production only, in order');
  t.same((await bogus.next(2)).map((e) => e.id), evP.map((e) => e.id));

  // the sandbox stream saw nothing of production or of the other sandbox: its next event is its own
  const inA2 = await sbWrite(s, sa, 'POST', '', { endpoint: 'https://a2.example.com', capabilities: ['x'] });
  const a2 = ((await inA2.json()) as { id: string }).id;
  t.equal((JSON.parse((await streamA.next(1))[0]!.data) as { id: string }).id, a2);
});

t.test('over the rate limit: 429 at connect', async (t) => {
  const s = await serve(t, { env: { ...ENV, TIERS: 'free=1,pro=600,enterprise=6000' } });
  const sb = await createSandbox(s, 'Feed Limited');
  const first = await connect(s, { authorization: `Bearer ${sb.apiKey}` });
  t.teardown(() => first.close());
  const r = await s.req('/services/changes', { headers: { authorization: `Bearer ${sb.apiKey}` } });
  t.equal(r.status, 429);
  t.ok(r.headers.get('retry-after'));
  t.match(await r.json(), { error: { code: 'RATE_LIMITED' } });
});

t.test('heartbeats, and a shutdown ends open streams', async (t) => {
  const s = await serve(t, { env: { ...ENV, CHANGES_HEARTBEAT_MS: '100' } });
  const st = await connect(s);
  t.equal(await st.nextComment(), 'heartbeat');
  await s.close();
  await st.ended();
  t.pass('the stream ended with the server');
});

t.test('events older than the retention are pruned, newer ones kept', async (t) => {
  const s = await serve(t, { env: ENV });
  const a = await registerProduction(s, { endpoint: 'https://old.example.com', capabilities: ['prune'] });
  await registerProduction(s, { endpoint: 'https://new.example.com', capabilities: ['prune'] });
  await s.app.pg.query("UPDATE change_events SET created_at = now() - interval '200 hours' WHERE service_id = $1", [a.id]);
  t.equal(await pruneChanges(s.app.pg, 168), 1);
  const left = await s.app.pg.query<{ service_id: string }>('SELECT service_id FROM change_events');
  t.equal(left.rows.length, 1);
  t.not(left.rows[0]!.service_id, a.id);
});

t.test('HEAD of the stream: its headers, no length, and the connection stays usable', async (t) => {
  const s = await serve(t, { env: ENV });
  const { connect } = await import('node:net');
  const u = new URL(s.url);
  const sock = connect(Number(u.port), u.hostname);
  t.teardown(() => sock.destroy());
  let got = '';
  sock.setEncoding('utf8');
  sock.on('data', (d: string) => (got += d));
  /** wait until what arrived so far matches `re` */
  const arrived = (re: RegExp) =>
    waitFor(String(re), () => {
      if (!re.test(got)) throw new Error(`got ${JSON.stringify(got)}`);
      return true;
    }, 10_000, 20);
  sock.write('HEAD /services/changes HTTP/1.1\r\nHost: x\r\n\r\n');
  await arrived(/\r\n\r\n/);
  const head = got;
  t.match(head, /^HTTP\/1\.1 200 /);
  t.match(head, /\r\nContent-Type: text\/event-stream; charset=utf-8\r\n/i);
  t.notMatch(head, /content-length/i, 'no Content-Length (a GET of it has none)');
  t.notMatch(head, /transfer-encoding/i);
  got = '';
  sock.write('GET /livez HTTP/1.1\r\nHost: x\r\n\r\n');
  await arrived(/\{"status":"ok"\}/);
  t.match(got, /^HTTP\/1\.1 200 /, 'the next request on the same connection is answered, nothing of the stream before it');
});
