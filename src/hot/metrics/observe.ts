// What happens when a request ends (server.ts hangs this on every route's onDone): the
// Prometheus accounting and, when ACCESS_LOG is on, one JSON access-log line. The line is
// built from the fields below only, never from request headers, so no Authorization value,
// cookie, user agent or key can reach it (pino's redaction in app.ts guards every other log
// line); the anonymous discovery routes leave the client address out too (route.ts).
import type { Level, Logger } from 'pino';
import type { Config } from '../config.js';
import type { Reply } from '../http/reply.js';
import type { Req } from '../http/types.js';
import { observeRequest } from './metrics.js';

/** What the request observer needs of its thread. */
export interface ObserveContext {
  cfg: Config;
  log: Logger;
}

export type Observer = (req: Req, reply: Reply, route: string) => void;

export function requestObserver(app: ObserveContext): Observer | null {
  const metrics = app.cfg.metricsEnabled;
  const access = app.cfg.accessLog;
  if (!metrics && !access) return null;
  // The access line holds only the fields below (no header ever), so it skips pino's
  // redaction, which doubles the cost of a line (docs/decisions/metrics-and-logs.md).
  const log = access ? app.log.child({}, { redact: { paths: [] } }) : app.log;
  const level = app.cfg.accessLogLevel as Level;
  return (req, reply, route) => {
    const ms = performance.now() - req.startedAt;
    if (metrics) observeRequest(route, req.method, reply.status, ms / 1000);
    if (access) {
      log[level](
        {
          method: req.method,
          route,
          path: req.path,
          query: req.query,
          status: reply.status || 'aborted',
          ms: Math.round(ms * 1000) / 1000,
          // "" on the anonymous discovery routes (RouteOptions.anonymous): left out
          ...(req.remote ? { remote: req.remote } : {}),
        },
        'request',
      );
    }
  };
}
