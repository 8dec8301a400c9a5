// Routes of one sandbox's registry (/sandbox/{uuid}/...): the key must be that sandbox's,
// checked before a body is read (the route's guard: a wrong key costs no body), then the
// request counts against the sandbox's rate limit; every answer to an admitted request,
// errors included, carries the rate headers. The features register their sandbox routes
// through this (writes/, search/, liveness/).
import type { TemplatedApp } from 'uWebSockets.js';
import { ApiError } from '../domain/errors.js';
import type { Reply } from '../http/reply.js';
import { route, type Headers, type Req, type RouteOptions } from '../http/route.js';
import type { SandboxAuth } from './auth.js';

export type KeyedHandler = (req: Req, reply: Reply, body: Buffer | null, rl: Headers) => Promise<void> | void;
export type KeyedRoute = (method: 'get' | 'post' | 'patch' | 'del', pattern: string, opts: RouteOptions, fn: KeyedHandler) => void;

/** The namespace of a /sandbox/{uuid}/... request (uuids compare case-insensitively). */
export const sandboxNs = (req: Req): string => req.params[0]!.toLowerCase();

/** The base path of a sandbox's services, for Location and Link headers. */
export const sandboxBase = (req: Req): string => `/sandbox/${sandboxNs(req)}/services`;

/** Rate headers onto an ApiError that left an admitted request's handler. */
export function withRateHeaders(err: unknown, rl: Headers): unknown {
  if (err instanceof ApiError) for (const [k, v] of rl) err.headers[k] ??= v;
  return err;
}

/** The key alone, counting nothing: a route's guard, before its body is read. */
export function keyGuard(auth: SandboxAuth): (req: Req) => Promise<void> | undefined {
  return (req) => auth.verify(req.authorization, req.params[0]!);
}

export function keyedRoutes(uws: TemplatedApp, auth: SandboxAuth): KeyedRoute {
  const guard = keyGuard(auth);
  return (method, pattern, opts, fn) =>
    route(uws, method, pattern, async (req, reply, body) => {
      const rl = await auth.admit(req.authorization, req.params[0]!);
      try {
        await fn(req, reply, body, rl);
      } catch (err) {
        throw withRateHeaders(err, rl);
      }
    }, opts.body ? { ...opts, guard } : opts);
}
