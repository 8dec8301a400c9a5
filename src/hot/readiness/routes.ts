// /livez and /readyz. Readiness is the watchers' view (watcher.ts), checked again against
// Redis when it says ready: an index emptied since the last round reads "not ready" at once.
import type { TemplatedApp } from 'uWebSockets.js';
import { route, type RouteOptions } from '../http/route.js';
import { readinessProbe, type ReadinessContext } from './watcher.js';

export function registerReadiness(uws: TemplatedApp, app: ReadinessContext, o: RouteOptions): void {
  route(uws, 'get', '/livez', (_req, reply) => reply.json(200, '{"status":"ok"}', [['Cache-Control', 'no-store']]), o);
  const indexAlive = readinessProbe(app);
  route(uws, 'get', '/readyz', async (_req, reply) => {
    const s = app.state;
    const ready = s.ready && (await indexAlive());
    const body = JSON.stringify({ status: ready ? 'ready' : 'not ready', postgres: s.pgUp, redis: s.redisUp, index: !!app.index.gen && !s.rebuilding, shuttingDown: s.shuttingDown });
    if (ready) reply.json(200, body, [['Cache-Control', 'no-store']]);
    else reply.json(503, body, [['Cache-Control', 'no-store'], ['Retry-After', '1']]);
  }, o);
}
