// Held requests across nodes and in a node's life: a write on one node wakes the request held
// on another (the delta reaches every node over pub/sub); a client that goes away leaves
// nothing held (uWS's onAborted); the drain answers every held request 304 at once.
import t from 'tap';
import { connect } from 'node:net';
import { registerProduction, serve } from '../helpers/server.js';
import { etagOf, heldCount, holdOn } from '../helpers/held.js';
import { ids } from '../helpers/checks.js';

t.test('a write on node A wakes a request held on node B; B\'s unrelated answers stay held', async (t) => {
  const env = { LEASE_SWEEP_MS: '60000' };
  const a = await serve(t, { env });
  const b = await serve(t, { env, on: a });
  const one = await registerProduction(a, { endpoint: 'https://n1.example.com', capabilities: ['nodes'] });
  const path = '/services?capability=nodes';
  const held = holdOn(b, path, await etagOf(b, path), 30);
  const single = holdOn(b, `/services/${one.id}`, await etagOf(b, `/services/${one.id}`), 30);
  await heldCount(b, 2);
  const two = await registerProduction(a, { endpoint: 'https://n2.example.com', capabilities: ['nodes'] });
  const r = await held.answer;
  t.equal(r.status, 200, 'woken on B by A\'s write');
  t.same((await ids(r)).sort(), [one.id, two.id].sort());
  t.equal(r.headers.get('preference-applied'), 'wait=30');
  await heldCount(b, 1);
  t.notOk(single.settled(), 'the read of a service the write did not touch is still held');
  t.equal((await a.admin('PATCH', `/admin/api/services/${one.id}`, { properties: { k: 'v' } })).status, 200);
  t.equal((await single.answer).status, 200, 'and woken on B by A\'s PATCH of it');
});

t.test('a client that goes away leaves nothing held', async (t) => {
  const s = await serve(t, { env: { HELD_PER_ADDRESS: '1' } });
  await registerProduction(s, { endpoint: 'https://ab1.example.com', capabilities: ['abort'] });
  const path = '/services?capability=abort';
  const etag = await etagOf(s, path);
  // a raw socket: the request, then the client closes it without waiting for the answer
  const sock = connect(s.server.port, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  sock.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nIf-None-Match: ${etag}\r\nPrefer: wait=60\r\n\r\n`);
  await heldCount(s, 1);
  t.equal(s.app.held.watches.size, 1, 'one answer watched');
  sock.destroy();
  await heldCount(s, 0);
  t.equal(s.app.held.watches.size, 0, 'its answer is no longer watched');
  // its share came back: the address's one slot holds another request
  const again = holdOn(s, path, etag, 1);
  await heldCount(s, 1);
  t.equal((await again.answer).status, 304, 'the address may hold again');
});

t.test('the drain answers every held request 304 at once, and one that comes during it', async (t) => {
  const s = await serve(t, { env: { LEASE_SWEEP_MS: '60000' } });
  await registerProduction(s, { endpoint: 'https://dr1.example.com', capabilities: ['drain'] });
  const path = '/services?capability=drain';
  const etag = await etagOf(s, path);
  const held = [holdOn(s, path, etag, 300), holdOn(s, path, etag, 300)];
  await heldCount(s, 2);
  // a grace far longer than the test: the drain, not the grace, must end them. The port stays
  // open a while (listenMs): a request held then is answered at once too
  const stopped = s.thread.stop({ graceMs: 600_000, listenMs: 5000 });
  const late = await fetch(s.url + path, { headers: { 'if-none-match': etag, prefer: 'wait=300' } });
  t.equal(late.status, 304, 'one that comes during the drain: 304 at once');
  t.equal(late.headers.get('preference-applied'), 'wait=300');
  for (const h of held) {
    const r = await h.answer;
    t.equal(r.status, 304, 'answered 304');
    t.equal(r.headers.get('etag'), etag);
    t.equal(r.headers.get('preference-applied'), 'wait=300');
  }
  await stopped;
  t.equal(s.app.held.size, 0, 'nothing held');
});
