// Fair shares of held requests (contract, "Waiting for a change"): at most HELD_PER_ADDRESS
// per client address and HELD_MAX per process, 429 with Retry-After and the error body at
// once beyond; a slot comes back when its request ends; the caps are the process's, whatever
// its uWS thread count (the shares live on memory every thread shares: held requests spread
// over two threads never pass a cap).
import t from 'tap';
import { registerProduction, serve } from '../helpers/server.js';
import { etagOf, heldCount, heldGauge } from '../helpers/held.js';
import { http } from '../helpers/proxy.js';
import { requestAlone, serveProcess } from '../helpers/server-process.js';
import { waitFor } from '../helpers/wait.js';
import { ADMIN_KEY } from '../helpers/env.js';

t.setTimeout(300_000);

t.test('per address and per process: 429 + Retry-After + the error body, slots come back', async (t) => {
  const s = await serve(t, { env: { HELD_PER_ADDRESS: '2', HELD_MAX: '3', LEASE_SWEEP_MS: '60000' } });
  await registerProduction(s, { endpoint: 'https://sh1.example.com', capabilities: ['shares'] });
  const path = '/services?capability=shares';
  const etag = await etagOf(s, path);
  const headers = { 'if-none-match': etag, prefer: 'wait=60' };
  const held = (from: string) => http(s.server.port, path, { headers, from });
  const a = [held('127.0.0.2'), held('127.0.0.2')];
  await heldCount(s, 2);
  const third = await held('127.0.0.2');
  t.equal(third.status, 429, 'a third from the same address: 429 at once');
  t.ok(Number(third.headers['retry-after']) > 0, 'with Retry-After');
  t.equal(third.headers['vary'], 'Authorization', 'varying on Authorization, as every answer of the search');
  t.equal(third.headers['cache-control'], 'no-store');
  const body = JSON.parse(third.body) as { error: { code: string; message: string } };
  t.equal(body.error.code, 'RATE_LIMITED');
  t.match(body.error.message, /at most 2 held requests/);
  const b = held('127.0.0.3');
  await heldCount(s, 3);
  const over = await held('127.0.0.4');
  t.equal(over.status, 429, 'the fourth in the process: 429, whatever its address');
  t.match((JSON.parse(over.body) as { error: { message: string } }).error.message, /too many held requests/);
  // a write ends them all (200): their slots come back
  await registerProduction(s, { endpoint: 'https://sh2.example.com', capabilities: ['shares'] });
  for (const r of [...(await Promise.all(a)), await b]) t.equal(r.status, 200, 'woken');
  await heldCount(s, 0);
  const fresh = await etagOf(s, path);
  const again = http(s.server.port, path, { headers: { 'if-none-match': fresh, prefer: 'wait=1' }, from: '127.0.0.2' });
  await heldCount(s, 1);
  t.equal((await again).status, 304, 'the address holds again once its requests ended');
});

t.test('two uWS threads: the caps are the process\'s', { timeout: 300_000 }, async (t) => {
  const srv = await serveProcess(t, { threads: 2, env: { HELD_MAX: '4', HELD_PER_ADDRESS: '3' } });
  const put = await requestAlone(srv.port, 'POST', '/admin/api/services', { endpoint: 'https://th1.example.com', capabilities: ['threads'] }, `Bearer ${ADMIN_KEY}`);
  t.equal(put.status, 201);
  const path = '/services?capability=threads';
  const first = await http(srv.port, path);
  const etag = String(first.headers['etag']);
  // each on a connection of its own: the kernel spreads them over both threads
  const hold = (from: string) => http(srv.port, path, { headers: { 'if-none-match': etag, prefer: 'wait=2' }, from });
  const same = await Promise.all(Array.from({ length: 10 }, () => hold('127.0.0.5')));
  t.equal(same.filter((r) => r.status === 304).length, 3, 'one address: exactly HELD_PER_ADDRESS held (then 304 at the end of the wait)');
  t.equal(same.filter((r) => r.status === 429).length, 7, 'the others 429');
  await waitFor('nothing held', async () => (await heldGauge(srv.metricsPort!)) === 0);
  const many = await Promise.all(Array.from({ length: 10 }, (_, i) => hold(`127.0.1.${i + 1}`)));
  t.equal(many.filter((r) => r.status === 304).length, 4, 'ten addresses: exactly HELD_MAX held');
  t.equal(many.filter((r) => r.status === 429).length, 6, 'the others 429');
});
