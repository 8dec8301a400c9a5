// CPU cost per request of what server.ts runs when a request ends: the Prometheus
// accounting and the access-log line (pino, to /dev/null), measured in isolation because
// throughput runs on a shared 2-core machine are too noisy to show a few microseconds.
// node dist/bench/observe-cost.js   (results: docs/decisions/metrics-and-logs.md)
import pino from 'pino';
import type { App } from '../src/hot/app.js';
import { createLogger } from '../src/hot/app.js';
import { loadConfig } from '../src/hot/config.js';
import type { Req } from '../src/hot/http/route.js';
import type { Reply } from '../src/hot/http/reply.js';
import { requestObserver } from '../src/hot/metrics/observe.js';

const N = 200_000;
const req: Req = {
  method: 'GET', path: '/services/imp0000000pWgBvl', query: null, params: ['imp0000000pWgBvl'], authorization: '', cookie: '', csrf: '',
  ifNoneMatch: '', prefer: '', waiter: '', contentType: '', contentLength: -1, remote: '127.0.0.1', startedAt: performance.now(),
};
const reply = { status: 200 } as Reply;

function cost(metrics: boolean, access: boolean): number {
  const cfg = loadConfig({ ADMIN_API_KEY: 'x'.repeat(16), METRICS_ENABLED: String(metrics), ACCESS_LOG: String(access) });
  const log = createLogger(cfg, {}, pino.destination({ dest: '/dev/null', sync: false }));
  const obs = requestObserver({ cfg, log } as unknown as App);
  if (!obs) return 0;
  let best = Infinity;
  for (let run = 0; run < 5; run++) {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) obs(req, reply, '/services/:id');
    best = Math.min(best, ((performance.now() - t0) * 1e6) / N);
  }
  return best;
}

for (const [m, a] of [[true, false], [false, true], [true, true]] as const) {
  console.log(`metrics=${m} access_log=${a}: ${cost(m, a).toFixed(0)} ns per request (best of 5 x ${N})`);
}
