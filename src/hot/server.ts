// Builds the uWebSockets.js app of one thread: every route, a catch-all 404 (JSON, never
// HTML), and the listen socket. Used by main.ts (one per thread) and by the tests.
import uWS from 'uWebSockets.js';
import { registerAdmin } from '../admin/routes.js';
import type { App } from './app.js';
import { allowedMethods, route, type RouteOptions } from './http.js';
import { indexAlive, startWatchers, type Watchers } from './lifecycle.js';
import { startInvalidation } from './invalidation.js';
import { openApiDocument } from './openapi.js';
import { registerPublic } from './routes/public.js';
import { registerSandbox } from './routes/sandbox.js';
import { registerChanges } from './changes/route.js';
import { closeHub, hubOf } from './changes/hub.js';
import { countBackendError, countUnexpected, setBackendStateSource, setOutboxLagSource, setPoolStatsSource, setRateLimitSource, setNearCacheSource, setResultCacheSource } from './metrics.js';
import { joinAggregation } from './metrics-threads.js';
import { requestObserver } from './observe.js';
import { registerMetrics } from './routes/metrics.js';

export interface Server {
  port: number;
  app: App;
  watchers: Watchers;
  /**
   * Drain: /readyz answers 503 at once and every answer closes its connection; after
   * `listenMs` (probes see the 503 instead of a refused connection) stop accepting; let
   * in-flight requests finish, all within `graceMs`.
   */
  close(graceMs?: number, listenMs?: number): Promise<void>;
  inflight(): number;
}

export function buildUws(app: App, hooks: Partial<Pick<RouteOptions, 'onStart' | 'onDone' | 'draining'>> = {}): uWS.TemplatedApp {
  const uws = uWS.App();
  const o: RouteOptions = {
    maxBody: app.cfg.maxBodyBytes,
    remote: app.cfg.accessLog,
    onError: (err, req) => {
      countUnexpected(err);
      app.log.error({ err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err), method: req.method, path: req.path }, 'request failed');
    },
    ...hooks,
  };
  const openapi = JSON.stringify(openApiDocument(app.version));
  route(uws, 'get', '/openapi.json', (_req, reply) => reply.json(200, openapi, [['Cache-Control', 'public, max-age=300']]), o);
  route(uws, 'get', '/livez', (_req, reply) => reply.json(200, '{"status":"ok"}', [['Cache-Control', 'no-store']]), o);
  route(uws, 'get', '/readyz', async (_req, reply) => {
    const s = app.state;
    // the watchers' view is up to one poll old: an index emptied since reads "not ready" now
    const ready = s.ready && (await indexAlive(app));
    const body = JSON.stringify({ status: ready ? 'ready' : 'not ready', postgres: s.pgUp, redis: s.redisUp, index: !!app.index.gen && !s.rebuilding, shuttingDown: s.shuttingDown });
    if (ready) reply.json(200, body, [['Cache-Control', 'no-store']]);
    else reply.json(503, body, [['Cache-Control', 'no-store'], ['Retry-After', '1']]);
  }, o);
  registerMetrics(uws, app, o);
  registerChanges(uws, app, o); // before /services/:id (see changes/route.ts)
  registerPublic(uws, app, o);
  registerSandbox(uws, app, o);
  registerAdmin(uws, app, o);
  route(uws, 'any', '/*', (req, reply) => {
    const allow = allowedMethods(uws, req.path);
    if (allow.length) return reply.error('METHOD_NOT_ALLOWED', `${req.method} is not allowed here; use ${allow.join(', ')}`, [['Allow', allow.join(', ')]]);
    reply.error('NOT_FOUND', `no route for ${req.method} ${req.path}`);
  }, o);
  return uws;
}

export async function startServer(app: App, port = app.cfg.port, host = app.cfg.host): Promise<Server> {
  let inflight = 0;
  const idle: (() => void)[] = [];
  const observe = requestObserver(app); // metrics and the access log; null when both are off
  const uws = buildUws(app, {
    onStart: () => {
      inflight++;
    },
    onDone: (req, reply, route) => {
      observe?.(req, reply, route);
      if (--inflight === 0) for (const f of idle.splice(0)) f();
    },
    draining: () => app.state.shuttingDown,
  });
  joinAggregation(app.cfg.workers);
  setOutboxLagSource(() => app.projector.lag());
  setPoolStatsSource(() => app.workers?.stats() ?? null);
  setResultCacheSource(() => ({ hits: app.cache.hits, misses: app.cache.misses, shared: app.cache.flights.joined, bytes: app.cache.bytes + app.replacements.bytes }));
  setRateLimitSource(() => app.auth.stats);
  setNearCacheSource(() => ({ ...(app.index.near?.stats ?? { setHits: 0, setMisses: 0, docHits: 0, docMisses: 0, deltas: 0, resets: 0 }), bytes: app.index.near?.bytes ?? 0 }));
  setBackendStateSource(() => ({ postgres: app.state.pgUp, redis: app.state.redisUp }));
  app.redis.on('error', () => countBackendError('redis', 'connection'));
  app.pool.on('error', () => countBackendError('postgres', 'connection'));
  hubOf(app); // now, not at the first stream: it also prunes expired change events
  const watchers = startWatchers(app);
  const stopInvalidation = startInvalidation(app);
  await watchers.tick();
  const socket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    uws.listen(host, port, (s) => (s ? resolve(s) : reject(new Error(`cannot listen on ${host}:${port}`))));
  });
  const actual = uWS.us_socket_local_port(socket);
  return {
    port: actual,
    app,
    watchers,
    inflight: () => inflight,
    async close(graceMs = app.cfg.shutdownGraceMs, listenMs = 0) {
      const t0 = Date.now();
      app.state.shuttingDown = true;
      app.state.ready = false;
      closeHub(app); // change streams never finish by themselves: end them, clients resume elsewhere
      if (listenMs > 0) await new Promise((r) => setTimeout(r, Math.min(listenMs, graceMs)));
      uWS.us_listen_socket_close(socket);
      if (inflight > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.max(0, graceMs - (Date.now() - t0)));
          idle.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      // end every connection still open (idle keep-alive ones, abandoned requests): uWS's
      // App.close() (in the binary, missing from its typings). A worker thread that exits
      // with a uWS socket still open makes Node abort the whole process.
      (uws as unknown as { close?: () => void }).close?.();
      watchers.stop();
      await stopInvalidation();
    },
  };
}
