// GET /metrics: Prometheus text of every serving thread (see metrics.ts). Unauthenticated,
// like most exporters; METRICS_ENABLED=false removes the route (404) and the per-request
// accounting with it. Operators who expose the port beyond loopback should filter /metrics
// at their proxy.
import type { TemplatedApp } from 'uWebSockets.js';
import type { App } from '../app.js';
import { route, type RouteOptions } from '../http/route.js';

export function registerMetrics(uws: TemplatedApp, app: App, o: RouteOptions): void {
  if (!app.cfg.metricsEnabled) return;
  route(uws, 'get', '/metrics', async (_req, reply) => {
    const m = await app.metrics.scrape();
    reply.send(200, [['Content-Type', m.contentType], ['Cache-Control', 'no-store']], m.body);
  }, o);
}
