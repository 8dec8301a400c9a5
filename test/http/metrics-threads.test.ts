// /metrics aggregated across uWS threads: the real entry point (dist/src/hot/main.js) with
// WORKERS=2 sharing one port and one /metrics listener (METRICS_PORT, served by thread 0); requests arrive on separate connections (the kernel spreads
// them over both threads); every scrape, whichever thread answers it, shows the totals of
// the whole process.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { loadConfig } from '../../src/hot/config.js';
import { ADMIN_KEY, baseEnv, freshDatabase } from '../helpers/server.js';
import { parseProm, sample } from '../helpers/metrics-util.js';
import { dropRedisPrefix } from '../helpers/test-data.js';
import { requestAlone, spawnThreads } from '../helpers/server-process.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** GET on a connection of its own (no keep-alive): each may land on either thread. */
const get = (port: number, path: string) => requestAlone(port, 'GET', path);

t.test('two threads, one total', async (t) => {
  const db = await freshDatabase();
  t.teardown(() => db.drop());
  const prefix = 'tmt' + randomBytes(4).toString('hex') + ':';
  // PORT=0 and METRICS_PORT=0: the kernel picks both and the banner names them (spawnServer);
  // the second thread shares the first one's port
  const env: Record<string, string | undefined> = { ...baseEnv(), DATABASE_URL: db.url, REDIS_KEY_PREFIX: prefix, PORT: '0', METRICS_PORT: '0', WORKERS: '2', ADMIN_API_KEY: ADMIN_KEY, HEAVY_INTERSECTION_THRESHOLD: '0' };
  const srv = await spawnThreads(t, env, loadConfig(env).redisUrl);
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
  const db = await freshDatabase();
  t.teardown(() => db.drop());
  const prefix = 'tmf' + randomBytes(4).toString('hex') + ':';
  // thread 0 serves /metrics: its port is taken, so thread 0's start-up fails
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => taken.close());
  const metricsPort = (taken.address() as { port: number }).port;
  // PORT=0: thread 0 binds first and fails (its /metrics port is taken) before the other starts
  const env: Record<string, string | undefined> = { ...baseEnv(), DATABASE_URL: db.url, REDIS_KEY_PREFIX: prefix, PORT: '0', METRICS_PORT: String(metricsPort), WORKERS: '2', ADMIN_API_KEY: ADMIN_KEY };
  const child = spawn(process.execPath, ['dist/src/hot/main.js'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  t.teardown(async () => {
    child.kill('SIGKILL');
    await dropRedisPrefix(loadConfig(env).redisUrl, prefix);
  });
  // before the fix the process lived on with one thread dead and never printed its banner
  const code = await new Promise<number | null>((resolve) => {
    child.once('exit', (c, signal) => resolve(signal ? -1 : c));
    setTimeout(() => resolve(null), 60_000).unref();
  });
  t.equal(code, 1, 'the process exits with 1 (null: still running after 60 s)');
  t.match(err, /cannot listen for \/metrics/, 'it says why');
  t.match(err, /serving thread 0 ended/, 'and which thread ended');
  t.notMatch(out, /listening on/, 'no banner: it never claimed to serve');
});
