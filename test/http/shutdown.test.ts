// Graceful shutdown of the built server (child process) on SIGTERM, with one uWS thread and
// with two (the main thread forwards the signal): /readyz turns 503 at once — on an open
// keep-alive connection and on new ones while the port stays open for a moment — an
// in-flight request finishes, the pools close, and the process exits within
// SHUTDOWN_GRACE_MS. A request that never finishes cannot hold the exit past the grace
// period.
import t from 'tap';
import { sleep, waitFor } from '../helpers/wait.js';
import { serveProcess } from '../helpers/server-process.js';
import { collect, rawSocket } from '../helpers/raw-socket.js';
import { ADMIN_KEY } from '../helpers/env.js';

// the port stays open for grace/4 after SIGTERM (max 2 s): 1 s here, room enough to read
// /readyz on a new connection on a busy machine; the never-finishing request waits out its
// whole grace period, so that one is shorter
const GRACE = 4000;
const GRACE_STUCK = 2000;
/** slack for the exit itself on a loaded machine (a bound on a requirement, not a benchmark) */
const SLACK = 1500;

function statusOf(data: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0);
}

const body = JSON.stringify({ endpoint: 'https://inflight.example.com', capability: 'inflight' });
const postHead = `POST /admin/api/services HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;

for (const workers of [1, 2]) {
  t.test(`SIGTERM with ${workers} uWS thread${workers > 1 ? 's' : ''}: drain, finish in-flight work, close, exit in time`, async (t) => {
    const env = { REDIS_CLUSTER_NODES: '', WORKERS: String(workers), SHUTDOWN_GRACE_MS: String(GRACE), LOG_LEVEL: 'info' };
    const stuckEnv = { ...env, SHUTDOWN_GRACE_MS: String(GRACE_STUCK) };

    await t.test('an in-flight request finishes', async (t) => {
      const srv = await serveProcess(t, { env });
      // a keep-alive connection opened before, and a request in flight: half its body sent
      const keep = await rawSocket(srv.port);
      keep.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
      t.equal(statusOf((await collect(keep, 300)).data), 200, 'ready before');
      const inflight = await rawSocket(srv.port);
      inflight.write(postHead + body.slice(0, 10));
      await sleep(200);

      const t0 = Date.now();
      srv.signal('SIGTERM');
      // new connections, while the port is still open: 503 at once
      const fresh = await waitFor('/readyz 503 on a new connection', async () => {
        const r = await fetch(srv.url + '/readyz').catch(() => null);
        return r && r.status === 503 ? r : null;
      }, GRACE, 10);
      t.equal(fresh.status, 503, '/readyz answers 503 once SIGTERM arrived');
      t.match(await fresh.json(), { status: 'not ready', shuttingDown: true });
      // the connection opened before: 503 too, and it is closed after that answer
      keep.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
      const k = await collect(keep, 1000);
      t.equal(statusOf(k.data), 503, 'an open keep-alive connection reads 503 as well');
      t.ok(k.closed, '... and is closed after the answer, so its client moves on');

      inflight.write(body.slice(10));
      const done = await collect(inflight, 2000);
      t.equal(statusOf(done.data), 201, 'the in-flight request finished with its 201');

      const code = await srv.exited;
      const took = Date.now() - t0;
      t.equal(code, 0, 'exit code 0');
      t.ok(took < GRACE + SLACK, `exited ${took} ms after SIGTERM (grace ${GRACE} ms)`);
      t.ok(srv.logs.some((l) => /stopped: .*(pools closed|closed their pools)/.test(l)), 'pools closed before the exit');
      if (workers > 1) t.ok(srv.logs.some((l) => l.includes(`stopped: ${workers} of ${workers} threads`)), 'every thread drained');
      // the write is durable: the next start finds it
      const again = await serveProcess(t, { env, on: srv });
      const found = (await (await fetch(again.url + '/services?capability=inflight')).json()) as unknown[];
      t.equal(found.length, 1, 'the request finished during the drain is there after a restart');
      again.signal('SIGTERM');
      t.equal(await again.exited, 0);
      keep.destroy();
      inflight.destroy();
    });

    await t.test('a request that never finishes does not hold the exit past the grace period', async (t) => {
      const srv = await serveProcess(t, { env: stuckEnv });
      const stuck = await rawSocket(srv.port);
      stuck.on('error', () => undefined);
      stuck.write(postHead + body.slice(0, 10)); // and never the rest
      await sleep(200);
      const t0 = Date.now();
      srv.signal('SIGTERM');
      const code = await srv.exited;
      const took = Date.now() - t0;
      t.ok(took < GRACE_STUCK + SLACK, `exited ${took} ms after SIGTERM (grace ${GRACE_STUCK} ms), code ${code}`);
      stuck.destroy();
    });
  });
}
