// Admin authentication: `Authorization: Bearer <ADMIN_API_KEY>` for scripts, compared in
// constant time. Browser sessions (cookie + CSRF) are in session.ts and plug in here.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { App } from '../hot/app.js';
import { ApiError } from '../hot/domain/errors.js';
import type { Req } from '../hot/http/route.js';
import { bearerKey } from '../hot/sandbox/auth.js';
import { integer } from '../hot/redis/replies.js';
import { isRedisUnavailable } from '../hot/ops/outage.js';
import { sessionFromCookie } from './session.js';

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
 * Guessing the admin key is throttled: LOGIN_FAILURES_PER_MINUTE failures per client
 * address, for POST /admin/session and admin keys sent as Bearer alike. Every attempt is
 * counted first, atomically, and only the first LIMIT of a minute are compared at all: 200
 * parallel guesses get exactly LIMIT answers (a read-then-count let all of them through the
 * check). Throws 429 beyond; otherwise returns `giveBack`, for a right key (successes do
 * not count).
 */
export async function countKeyAttempt(app: App, remote: string): Promise<() => Promise<unknown>> {
  const minute = Math.floor(Date.now() / 60_000);
  const failures = app.keys.loginFailures(remote, minute);
  let n: number;
  try {
    n = integer(await app.redis.count(failures, 120), 'count');
  } catch (err) {
    // Redis away: the admin API (PostgreSQL writes) stays usable with the Bearer key,
    // uncounted, as rate limits fail open (docs/decisions.md); a login needs Redis anyway
    if (isRedisUnavailable(err)) return () => Promise.resolve();
    throw err;
  }
  if (n > app.cfg.loginFailuresPerMinute) {
    const retry = String(Math.max(1, Math.ceil(((minute + 1) * 60_000 - Date.now()) / 1000)));
    throw new ApiError('RATE_LIMITED', 'too many failed admin key attempts from this address; try again later', { 'Retry-After': retry });
  }
  return () => app.redis.decr(failures);
}

/**
 * 401 without a valid admin key or session cookie; a Bearer key counts as an attempt at the
 * admin key (countKeyAttempt: 429 beyond the address's failures of the minute); for cookie callers, every method other
 * than GET must carry the session's CSRF token in X-CSRF-Token (403 otherwise).
 */
export async function requireAdmin(app: App, req: Req): Promise<AdminPrincipal> {
  const key = bearerKey(req.authorization);
  if (key) {
    const giveBack = await countKeyAttempt(app, req.remote);
    if (isAdminKey(app, key)) {
      await giveBack();
      return { by: 'admin-api-key', via: 'bearer' };
    }
  }
  const s = await sessionFromCookie(app, req.cookie);
  if (!s) throw new ApiError('UNAUTHORIZED', 'admin key or session required', { 'WWW-Authenticate': 'Bearer' });
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    const sent = Buffer.from(req.csrf || '');
    const want = Buffer.from(s.csrf);
    if (sent.length !== want.length || !timingSafeEqual(sent, want)) throw new ApiError('CSRF_FAILED', 'missing or wrong X-CSRF-Token');
  }
  return { by: `session:${s.id.slice(0, 8)}`, via: 'cookie' };
}
