// Fair shares of the change feed (issue 20): open streams are capped per client address
// (CHANGE_STREAMS_PER_ADDRESS) and in total (CHANGES_MAX_STREAMS), each answering 429 with
// Retry-After and the error body; concurrent opens never hold one more than a cap, and a
// slot comes back when its stream ends. Clients come from distinct loopback addresses
// (the socket's localAddress), and through a trusted proxy's X-Forwarded-For.
import http from 'node:http';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { StreamShares, streamSharesBuffer } from '../../src/hot/changes/shares.js';
import { waitFor, sleep } from '../helpers/wait.js';
import { serve } from '../helpers/server.js';

interface Opened {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  close(): void;
}

/** GET /services/changes from `localAddress`; resolves at the status line (a 200 stays open) */
function open(url: string, localAddress: string, headers: Record<string, string> = {}): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const req = http.get(url + '/services/changes', { localAddress, agent: false, headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      const close = () => req.destroy();
      if (res.statusCode === 200) return resolve({ status: 200, headers: res.headers, body: '', close });
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, close }));
    });
    req.on('error', reject);
  });
}

t.test('per address and in total: 429 + Retry-After + the error body, slots come back', async (t) => {
  const s = await serve(t, { env: { CHANGE_STREAMS_PER_ADDRESS: '3', CHANGES_MAX_STREAMS: '5' } });
  const shares = s.app.hub.shares;
  const a: Opened[] = [];
  for (let i = 0; i < 3; i++) a.push(await open(s.url, '127.0.0.2'));
  t.same(a.map((x) => x.status), [200, 200, 200], 'three streams for 127.0.0.2');
  const fourth = await open(s.url, '127.0.0.2');
  t.equal(fourth.status, 429, 'a fourth from the same address: 429');
  t.ok(Number(fourth.headers['retry-after']) > 0, 'with Retry-After');
  t.equal((JSON.parse(fourth.body) as { error: { code: string } }).error.code, 'RATE_LIMITED', 'and the error body');
  const b1 = await open(s.url, '127.0.0.3');
  const b2 = await open(s.url, '127.0.0.3');
  t.same([b1.status, b2.status], [200, 200], 'another address is still served');
  const over = await open(s.url, '127.0.0.4');
  t.equal(over.status, 429, 'the sixth stream in total: 429, whatever its address');
  t.ok(Number(over.headers['retry-after']) > 0);
  t.equal(shares.open(), 5, 'five open: never one more');
  a[0]!.close();
  await waitFor('four streams open', () => shares.open() === 4, 20_000, 10);
  const again = await open(s.url, '127.0.0.4');
  t.equal(again.status, 200, 'a closed stream gives its slot back');
  for (const x of [...a, b1, b2, again]) x.close();
  await waitFor('every slot back', () => shares.open() === 0, 20_000, 10);
  t.equal(shares.openBy('127.0.0.2'), 0, 'every slot given back');
});

t.test('refused or failed opens give their slot back', async (t) => {
  const s = await serve(t, { env: { CHANGE_STREAMS_PER_ADDRESS: '2', CHANGES_MAX_STREAMS: '10' } });
  for (let i = 0; i < 5; i++) {
    const r = await open(s.url, '127.0.0.5', { 'last-event-id': 'not-an-id' });
    t.equal(r.status, 400, 'a bad Last-Event-ID: 400');
  }
  t.equal(s.app.hub.shares.open(), 0, 'the 400s hold no slot');
  const x = await open(s.url, '127.0.0.5');
  const y = await open(s.url, '127.0.0.5');
  t.same([x.status, y.status], [200, 200], 'the address still has its whole share');
  x.close();
  y.close();
  await waitFor('every slot back', () => s.app.hub.shares.open() === 0, 20_000, 10);
});

t.test('concurrent opens never exceed the caps', async (t) => {
  const s = await serve(t, { env: { CHANGE_STREAMS_PER_ADDRESS: '7', CHANGES_MAX_STREAMS: '12' } });
  const all = await Promise.all([
    ...Array.from({ length: 20 }, () => open(s.url, '127.0.0.6')),
    ...Array.from({ length: 20 }, () => open(s.url, '127.0.0.7')),
  ]);
  const ok6 = all.slice(0, 20).filter((x) => x.status === 200).length;
  const ok7 = all.slice(20).filter((x) => x.status === 200).length;
  t.ok(ok6 <= 7 && ok7 <= 7, `per address: ${ok6} and ${ok7} of 7`);
  t.equal(ok6 + ok7, 12, 'exactly the total admitted (each address alone could not fill it)');
  t.ok(all.every((x) => x.status === 200 || x.status === 429), 'the others: 429, no 5xx');
  for (const x of all) x.close();
  await waitFor('every slot back', () => s.app.hub.shares.open() === 0, 20_000, 10);
});

t.test('behind a trusted proxy the address is X-Forwarded-For\'s', async (t) => {
  const s = await serve(t, { env: { CHANGE_STREAMS_PER_ADDRESS: '1', TRUSTED_PROXIES: '127.0.0.1' } });
  const x = await open(s.url, '127.0.0.1', { 'x-forwarded-for': '203.0.113.9' });
  const y = await open(s.url, '127.0.0.1', { 'x-forwarded-for': '203.0.113.10' });
  t.same([x.status, y.status], [200, 200], 'two clients of one proxy: one stream each');
  const z = await open(s.url, '127.0.0.1', { 'x-forwarded-for': '203.0.113.9' });
  t.equal(z.status, 429, 'the first client\'s second stream: 429');
  for (const o of [x, y, z]) o.close();
  await waitFor('every slot back', () => s.app.hub.shares.open() === 0, 20_000, 10);
});

t.test('threads share one count: racing reservations on several threads hold exactly the cap', async (t) => {
  const buf = streamSharesBuffer();
  const url = new URL('../../src/hot/changes/shares.js', import.meta.url).href;
  // each thread reserves as fast as it can for one address; none releases
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    import(workerData.url).then(({ StreamShares }) => {
      const s = new StreamShares(1000, 600, workerData.buf);
      const go = new Int32Array(workerData.go);
      Atomics.wait(go, 0, 0);
      let ok = 0;
      for (let i = 0; i < 2000; i++) if (typeof s.reserve(i % 2 ? 'a' : 'b') === 'function') ok++;
      parentPort.postMessage(ok);
    });`;
  const go = new SharedArrayBuffer(4);
  const workers = Array.from({ length: 4 }, () => new Worker(code, { eval: true, workerData: { url, buf, go } }));
  const results = workers.map((w) => new Promise<number>((r) => w.once('message', r)));
  await sleep(200); // let them reach the gate
  Atomics.store(new Int32Array(go), 0, 1);
  Atomics.notify(new Int32Array(go), 0);
  const ok = (await Promise.all(results)).reduce((a, b) => a + b, 0);
  await Promise.all(workers.map((w) => w.terminate()));
  const shares = new StreamShares(1000, 600, buf);
  t.equal(ok, 1000, '8,000 tries on four threads: exactly the total of 1,000');
  t.equal(shares.open(), 1000, 'and the count says so');
  t.ok(shares.openBy('a') <= 600 && shares.openBy('b') <= 600, 'neither address above its 600');
});
