// NEAR_CACHE_MB and RESULT_CACHE_MB are process totals (issue 20): the real entry point with
// WORKERS=2 and 1 MiB budgets, searched for far more distinct filters than a budget holds
// (1,024 real capabilities and as many unknown ones), each request on a connection of its own
// so the kernel spreads them over both threads. At every scrape the process's counted bytes
// (the sum over both threads) stay within the budget, and they come near it: both threads
// filled their shares.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { parseProm, sample } from '../helpers/metrics-util.js';
import { requestAlone, serveProcess } from '../helpers/server-process.js';
import { sleep } from '../helpers/wait.js';
import { ADMIN_KEY } from '../helpers/env.js';

const MIB = 1024 * 1024;

t.setTimeout(300_000); // a server of its own, two threads, a thousand services' worth of searches

const call = (port: number, method: string, path: string, body?: unknown) => requestAlone(port, method, path, body, `Bearer ${ADMIN_KEY}`);

t.test('two uWS threads share one budget: the process total never passes NEAR_CACHE_MB / RESULT_CACHE_MB', { timeout: 600_000 }, async (t) => {
  // PORT=0 and METRICS_PORT=0: the kernel picks both and the banner names them (serveProcess);
  // the second thread shares the first one's port
  const srv = await serveProcess(t, { threads: 2, env: { NEAR_CACHE_MB: '1', RESULT_CACHE_MB: '1' } });
  const port = srv.port;
  const metricsPort = srv.metricsPort!;

  // 32 services × 32 capabilities: 1,024 distinct sets of one member each
  const cap = (i: number) => `cap.b${String(i).padStart(4, '0')}`;
  for (let s = 0; s < 32; s++) {
    const r = await call(port, 'POST', '/admin/api/services', { endpoint: `https://b${s}.example.com`, capabilities: Array.from({ length: 32 }, (_, k) => cap(s * 32 + k)), properties: { note: 'x'.repeat(200) } });
    if (r.status !== 201) throw new Error(`register: ${r.status} ${r.body}`);
  }

  let mostNear = 0;
  let mostResult = 0;
  let over = 0;
  let wrong = 0;
  let threads = 0;
  const scrape = async () => {
    const p = parseProm((await call(metricsPort, 'GET', '/metrics')).body);
    const near = sample(p, 'registry_near_cache_bytes', {}) ?? 0;
    const result = sample(p, 'registry_result_cache_bytes', {}) ?? 0;
    threads = sample(p, 'registry_threads_reporting', {}) ?? 0;
    mostNear = Math.max(mostNear, near);
    mostResult = Math.max(mostResult, result);
    if (near > MIB || result > MIB) over++;
  };
  // 16 at a time, each on a keep-alive connection of fetch's pool (the connections spread over both threads)
  const base = `http://127.0.0.1:${port}`;
  const one = async (i: number) => {
    const known = await fetch(`${base}/services?capability=${cap(i)}`, { signal: AbortSignal.timeout(60_000) });
    const unknown = await fetch(`${base}/services?capability=u${i}x${randomBytes(4).toString('hex')}`, { signal: AbortSignal.timeout(60_000) });
    if (known.status !== 200 || ((await known.json()) as unknown[]).length !== 1) wrong++;
    if (unknown.status !== 200 || (await unknown.text()) !== '[]') wrong++;
  };
  for (let i = 0; i < 1024; i += 16) {
    await Promise.all(Array.from({ length: 16 }, (_, k) => one(i + k)));
    if (i % 128 === 112) await scrape();
  }
  await sleep(1200); // the threads' last reports
  await scrape();
  t.equal(wrong, 0, 'every search answered right');
  t.equal(threads, 2, 'both threads report');
  t.equal(over, 0, `no scrape saw a process total over 1 MiB (near at most ${mostNear}, result at most ${mostResult})`);
  // a thread's share is half: the total came past one share, so both threads held theirs
  t.ok(mostNear > 0.6 * MIB, `the near cache filled the budget between both threads (${mostNear})`);
  t.ok(mostResult > 0.6 * MIB, `and the result cache too (${mostResult})`);
});
