// The HTTP part of one thread: the uWebSockets.js app with every route, a catch-all 404
// (JSON, never HTML), the listen socket and the drain. Built by compose.ts (buildThread),
// which also hands in the routes that live outside src/hot (the admin dashboard and API).
// With a proxy socket (PROXY_SOCKET_DIR) a second app, the same routes, listens on it: the
// only one that believes X-Forwarded-For (http/proxy-socket.ts).
import { dirname } from 'node:path';
import uWS from 'uWebSockets.js';
import type { App } from './app.js';
import { allowedMethods, route, type RouteOptions } from './http/route.js';
import { registerOpenApi } from './openapi/index.js';
import { registerReadiness } from './readiness/index.js';
import { registerPublic, registerSandboxReads } from './search/index.js';
import { registerSandbox } from './sandboxes/index.js';
import { registerSandboxWrites } from './writes/index.js';
import { registerLiveness } from './liveness/index.js';
import { registerChanges } from './changes/index.js';
import { registerDiscovery } from './discovery/index.js';
import { countUnexpected } from './metrics/metrics.js';
import { requestObserver } from './metrics/observe.js';
import { prepareSocketDir } from './http/proxy-socket.js';

/** Registers a group of routes (the admin ones come from src/admin through compose.ts). */
export type RegisterRoutes = (uws: uWS.TemplatedApp, app: App, o: RouteOptions) => void;

export interface ServerOptions {
  port: number;
  host: string;
  /**
   * with port 0: listen so that other threads can listen on the same port (SO_REUSEPORT).
   * uSockets sets SO_REUSEPORT only when it is given a port other than 0, so the port the
   * kernel picked is bound again, by number (see listen()).
   */
  sharePort?: boolean;
  /** the reverse proxy's Unix socket for this thread (http/proxy-socket.ts); none when absent */
  socket?: string;
  /** registered after the public and sandbox routes, before the catch-all */
  routes: RegisterRoutes[];
  /** test hooks of the body reader (RouteOptions.bodyHooks) */
  bodyHooks?: RouteOptions['bodyHooks'];
}

export interface Server {
  /** the bound port (0 until listen() resolved) */
  port: number;
  /** open the listen socket; resolves with the bound port */
  listen(): Promise<number>;
  /**
   * Drain: /readyz answers 503 at once and every answer closes its connection; after
   * `listenMs` (probes see the 503 instead of a refused connection) stop accepting; let
   * in-flight requests finish, all within `graceMs`.
   */
  close(graceMs?: number, listenMs?: number): Promise<void>;
  inflight(): number;
}

export function buildUws(app: App, routes: RegisterRoutes[], hooks: Partial<Pick<RouteOptions, 'onStart' | 'onDone' | 'draining' | 'bodyHooks' | 'viaProxy'>> = {}): uWS.TemplatedApp {
  const uws = uWS.App();
  const o: RouteOptions = {
    maxBody: app.cfg.maxBodyBytes,
    maxJsonDepth: app.cfg.maxJsonDepth,
    trustedProxies: new Set(app.cfg.trustedProxies),
    remote: app.cfg.accessLog,
    onError: (err, req) => {
      countUnexpected(err);
      app.log.error({ err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err), method: req.method, path: req.path }, 'request failed');
    },
    ...hooks,
  };
  registerOpenApi(uws, app.version, Object.keys(app.cfg.tiers), o);
  registerReadiness(uws, app, o);
  registerChanges(uws, app, o); // before /services/:id (see changes/routes.ts)
  registerPublic(uws, app, o);
  registerSandbox(uws, app, o);
  registerSandboxReads(uws, app, o);
  registerSandboxWrites(uws, app, o);
  registerLiveness(uws, app, o);
  registerDiscovery(uws, app, o);
  for (const register of routes) register(uws, app, o);
  route(uws, 'any', '/*', (req, reply) => {
    const allow = allowedMethods(uws, req.path);
    if (allow.length) return reply.error('METHOD_NOT_ALLOWED', [req.method, allow.join(', ')], [['Allow', allow.join(', ')]]);
    reply.error('ROUTE_NOT_FOUND', [req.method, req.path]);
  }, o);
  return uws;
}

export function createServer(app: App, opts: ServerOptions): Server {
  let inflight = 0;
  const idle: (() => void)[] = [];
  const observe = requestObserver(app); // metrics and the access log; null when both are off
  const hooks = {
    onStart: () => {
      inflight++;
    },
    onDone: (req: Parameters<NonNullable<RouteOptions['onDone']>>[0], reply: Parameters<NonNullable<RouteOptions['onDone']>>[1], route: string) => {
      observe?.(req, reply, route);
      if (--inflight === 0) for (const f of idle.splice(0)) f();
    },
    draining: () => app.state.shuttingDown,
    bodyHooks: opts.bodyHooks,
  };
  const uws = buildUws(app, opts.routes, hooks);
  // (an app of its own, not a test of the peer address: a TCP peer that reset its connection
  // has no address either, and must not pass for the proxy)
  const viaProxy = opts.socket ? buildUws(app, opts.routes, { ...hooks, viaProxy: true }) : null;
  let socket: uWS.us_listen_socket | null = null;
  let proxySocket: uWS.us_listen_socket | null = null;
  const server: Server = {
    port: 0,
    inflight: () => inflight,
    async listen() {
      const { host, port } = opts;
      const bind = (p: number) => new Promise<uWS.us_listen_socket | false>((resolve) => uws.listen(host, p, resolve));
      for (let attempt = 1; ; attempt++) {
        const s = await bind(port);
        if (!s) throw new Error(`cannot listen on ${host}:${port}`);
        if (port !== 0 || !opts.sharePort) {
          socket = s;
          break;
        }
        // the ephemeral port the kernel picked (no one else holds it), bound again by number to
        // get SO_REUSEPORT; between the close and the bind another process could take it: then
        // pick another (a race of microseconds, where a port chosen by the caller beforehand
        // races for as long as the process takes to start)
        const picked = uWS.us_socket_local_port(s);
        uWS.us_listen_socket_close(s);
        const again = await bind(picked);
        if (again) {
          socket = again;
          break;
        }
        if (attempt >= 5) throw new Error(`cannot listen on ${host}:${picked} (the port picked for port 0, ${attempt} times)`);
      }
      server.port = uWS.us_socket_local_port(socket);
      if (viaProxy && opts.socket) {
        const path = opts.socket;
        prepareSocketDir(dirname(path));
        // (uSockets removes a file left at the path before it binds)
        const s = await new Promise<uWS.us_listen_socket | false>((resolve) => viaProxy.listen_unix(resolve, path));
        if (!s) throw new Error(`cannot listen on the proxy socket ${path}`);
        proxySocket = s;
      }
      return server.port;
    },
    async close(graceMs = app.cfg.shutdownGraceMs, listenMs = 0) {
      const t0 = Date.now();
      app.state.shutDown();
      app.hub.close(); // change streams never finish by themselves: end them, clients resume elsewhere
      app.held.drain(); // held requests: 304 now (contract), their clients ask again elsewhere
      if (listenMs > 0) await new Promise((r) => setTimeout(r, Math.min(listenMs, graceMs)));
      if (socket) uWS.us_listen_socket_close(socket);
      socket = null;
      // (the file stays: the proxy's connections are refused, it tries another thread's
      // socket; unlinking it could remove the socket of a newer start at the same path)
      if (proxySocket) uWS.us_listen_socket_close(proxySocket);
      proxySocket = null;
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
      for (const a of viaProxy ? [uws, viaProxy] : [uws]) (a as unknown as { close?: () => void }).close?.();
    },
  };
  return server;
}
