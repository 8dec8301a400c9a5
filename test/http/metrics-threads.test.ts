// /metrics aggregated across uWS threads: the real entry point (dist/src/hot/main.js) with
// WORKERS=2 sharing one port and one /metrics listener (METRICS_PORT, served by thread 0); requests arrive on separate connections (the kernel spreads
// them over both threads); every scrape, whichever thread answers it, shows the totals of
// the whole process.
import { createServer } from 'node:http';
import t from 'tap';
import { parseProm, sample } from '../helpers/metrics-util.js';
import { requestAlone, serveProcess } from '../helpers/server-process.js';

/** GET on a connection of its own (no keep-alive): each may land on either thread. */
const get = (port: number, path: string) => requestAlone(port, 'GET', path);

t.test('two threads, one total', async (t) => {
  // PORT=0 and METRICS_PORT=0: the kernel picks both and the banner names them (serveProcess);
  // the second thread shares the first one's port
  const srv = await serveProcess(t, { threads: 2, env: { HEAVY_INTERSECTION_THRESHOLD: '0' } });
  const port = srv.port;
  const metricsPort = srv.metricsPort!;

  t.equal((await get(port, '/metrics')).status, 404, 'not on the public port');
  const N = 60;
  for (let i = 0; i < N; i++) t.equal((await get(port, '/livez')).status, 200);
  for (let k = 0; k < 8; k++) {
    const m = await get(metricsPort, '/metrics');
    t.equal(m.status, 200);
    const p = parseProm(m.body);
    t.equal(sample(p, 'registry_threads_reporting', {}), 2, `scrape ${k}: both threads reported`);
    t.equal(sample(p, 'registry_http_requests_total', { route: '/livez', method: 'GET', status: '200' }), N, `scrape ${k}: every request counted once`);
    t.equal(sample(p, 'registry_http_requests_total', { route: '/metrics', method: 'GET', status: '200' }), k || undefined, `scrape ${k}: the earlier scrapes`);
  }
});

t.test('a serving thread that cannot start takes the process down (exit 1), not a process that never listens', async (t) => {
  // thread 0 serves /metrics: its port is taken, so thread 0's start-up fails
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => taken.close());
  const metricsPort = (taken.address() as { port: number }).port;
  // PORT=0: thread 0 binds first and fails (its /metrics port is taken) before the other starts
  const srv = await serveProcess(t, { env: { METRICS_PORT: String(metricsPort), WORKERS: '2' }, stop: 'SIGKILL', until: 'spawned' });
  // before the fix the process lived on with one thread dead and never printed its banner
  const code = await Promise.race([srv.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), 60_000).unref())]);
  t.equal(code, 1, 'the process exits with 1 (null: still running after 60 s)');
  const err = srv.stderr.join('\n');
  t.match(err, /cannot listen for \/metrics/, 'it says why');
  t.match(err, /serving thread 0 ended/, 'and which thread ended');
  t.notMatch(srv.logs.join('\n'), /listening on/, 'no banner: it never claimed to serve');
});
