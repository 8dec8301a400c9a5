// Admin authentication: `Authorization: Bearer <ADMIN_API_KEY>` for scripts, compared in
// constant time. Browser sessions (cookie + CSRF) are in session.ts and plug in here. Routes
// with a body check it before reading the body (adminGuard).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { App } from '../hot/app.js';
import { ApiError } from '../hot/domain/errors.js';
import type { Req } from '../hot/http/route.js';
import { bearerKey } from '../hot/sandboxes/index.js';
import { integer } from '../hot/redis/replies.js';
import { TurnReads } from '../hot/redis/turn-reads.js';
import { isRedisUnavailable } from '../hot/domain/outage.js';
import { cookieValue, sessionFromCookie } from './session.js';

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export function isAdminKey(app: App, key: string): boolean {
  return key.length > 0 && timingSafeEqual(digest(key), digest(app.cfg.adminApiKey));
}

export interface AdminPrincipal {
  /** recorded as "who" in audit rows; never the key itself */
  by: string;
  via: 'bearer' | 'cookie';
}

/**
 * Whether `key` is the admin key, with guessing throttled per client address:
 * LOGIN_FAILURES_PER_MINUTE failures a minute, for POST /admin/session and admin keys sent as
 * Bearer alike (429 + Retry-After beyond). An address already at the limit is refused before
 * any comparison. A right key is admitted and counts nothing: a script's concurrent requests
 * never throttle themselves (counting every attempt before comparing, as this did first, gave
 * a correct key 429 as soon as more than LIMIT of its requests were in flight). Each wrong key
 * is counted atomically and refused once the count passes the limit: 200 parallel wrong keys
 * get exactly LIMIT answers of 401. What this gives up: wrong guesses sent in one burst before
 * the count reaches the limit are all compared (one round trip's worth), then the address is
 * refused for the rest of the minute.
 */
// each app's failure counts, read once per event-loop turn and address (turn-reads.ts)
const failureReads = new WeakMap<App, TurnReads<string | null>>();

function readFailures(app: App, key: string): Promise<string | null> {
  let r = failureReads.get(app);
  if (!r) failureReads.set(app, (r = new TurnReads((k) => app.redis.get(k))));
  return r.get(key);
}

export async function checkAdminKey(app: App, remote: string, key: string): Promise<boolean> {
  const minute = Math.floor(Date.now() / 60_000);
  const failures = app.keys.loginFailures(remote, minute);
  const limit = app.cfg.loginFailuresPerMinute;
  const refuse = () => {
    const retry = String(Math.max(1, Math.ceil(((minute + 1) * 60_000 - Date.now()) / 1000)));
    return new ApiError('ADMIN_KEY_THROTTLED', [], { 'Retry-After': retry });
  };
  try {
    if (Number((await readFailures(app, failures)) ?? 0) >= limit) throw refuse();
  } catch (err) {
    // Redis away: the admin API (PostgreSQL writes) stays usable with the Bearer key,
    // uncounted, as rate limits fail open (docs/decisions/outages.md); a login needs Redis anyway
    if (!isRedisUnavailable(err)) throw err;
    return isAdminKey(app, key);
  }
  if (isAdminKey(app, key)) return true;
  let n: number;
  try {
    n = integer(await app.redis.count(failures, 120), 'count');
  } catch (err) {
    if (isRedisUnavailable(err)) return false;
    throw err;
  }
  if (n > limit) throw refuse();
  return false;
}

/** each request's answer of requireAdmin(): a route's guard asks first, its handler again */
const principals = new WeakMap<Req, Promise<AdminPrincipal>>();

/**
 * 401 without a valid admin key or session cookie; a Bearer key counts as an attempt at the
 * admin key (checkAdminKey: 429 beyond the address's failures of the minute); for cookie
 * callers, every method other than GET must carry the session's CSRF token in X-CSRF-Token (403
 * otherwise). Asked once a request (a wrong key counts once), however often it is called.
 */
export function requireAdmin(app: App, req: Req): Promise<AdminPrincipal> {
  let p = principals.get(req);
  if (!p) principals.set(req, (p = checkAdmin(app, req)));
  return p;
}

/**
 * requireAdmin() as the guard of a route with a body (route.ts), before the body is read: a
 * request with neither a Bearer credential nor a session cookie is refused at once, without
 * a promise; any other waits for requireAdmin(), whose answer its handler then reuses.
 */
export function adminGuard(app: App): (req: Req) => Promise<void> | undefined {
  return (req) => {
    if (!bearerKey(req.authorization) && !cookieValue(req.cookie)) throw notAdmin();
    return requireAdmin(app, req).then(() => undefined);
  };
}

function notAdmin(): ApiError {
  return new ApiError('ADMIN_AUTH_REQUIRED', [], { 'WWW-Authenticate': 'Bearer' });
}

async function checkAdmin(app: App, req: Req): Promise<AdminPrincipal> {
  const key = bearerKey(req.authorization);
  if (key && (await checkAdminKey(app, req.remote, key))) return { by: 'admin-api-key', via: 'bearer' };
  const s = await sessionFromCookie(app, req.cookie);
  if (!s) throw notAdmin();
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    const sent = Buffer.from(req.csrf || '');
    const want = Buffer.from(s.csrf);
    if (sent.length !== want.length || !timingSafeEqual(sent, want)) throw new ApiError('CSRF_FAILED');
  }
  return { by: `session:${s.id.slice(0, 8)}`, via: 'cookie' };
}
