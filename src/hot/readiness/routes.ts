// /livez and /readyz. Readiness is the watchers' view (watcher.ts), checked again against
// Redis when it says ready: an index emptied since the last round no longer counts. While the
// index is away and the fallback answers reads from PostgreSQL, /readyz stays 200 and says
// so: `"status": "degraded"`, `"degraded": ["redis"]`, `"reads": "postgres"` (contract,
// "Availability"); 503 only when reads cannot be answered at all (or the server drains).
import type { TemplatedApp } from 'uWebSockets.js';
import { route, type RouteOptions } from '../http/route.js';
import { readinessProbe, type ReadinessContext } from './watcher.js';
import type { ReadSource } from './state.js';

export function registerReadiness(uws: TemplatedApp, app: ReadinessContext, o: RouteOptions): void {
  route(uws, 'get', '/livez', (_req, reply) => reply.json(200, '{"status":"ok"}', [['Cache-Control', 'no-store']]), o);
  const indexAlive = readinessProbe(app);
  route(uws, 'get', '/readyz', async (_req, reply) => {
    const s = app.state;
    const fromIndex = s.ready && (await indexAlive());
    // the index emptied since the last round: the fallback answers, as the searches find out
    const reads: ReadSource = fromIndex ? 'index' : s.reads === 'index' ? (s.fallback && s.pgUp ? 'postgres' : 'none') : s.reads;
    const degraded = [...(fromIndex ? [] : ['redis']), ...(s.pgUp ? [] : ['postgres'])];
    const status = reads === 'none' ? 'not ready' : degraded.length ? 'degraded' : 'ready';
    const body = JSON.stringify({ status, postgres: s.pgUp, redis: s.redisUp, index: !!app.index.gen && !s.rebuilding, shuttingDown: s.shuttingDown, reads, degraded });
    if (reads !== 'none') reply.json(200, body, [['Cache-Control', 'no-store']]);
    else reply.json(503, body, [['Cache-Control', 'no-store'], ['Retry-After', '1']]);
  }, o);
}
