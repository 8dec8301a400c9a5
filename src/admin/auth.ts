// Admin authentication: `Authorization: Bearer <ADMIN_API_KEY>` for scripts, compared in
// constant time. Browser sessions (cookie + CSRF) are in session.ts and plug in here.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { App } from '../hot/app.js';
import { ApiError } from '../hot/domain/errors.js';
import type { Req } from '../hot/http/route.js';
import { bearerKey } from '../hot/sandbox/auth.js';
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
 * 401 without a valid admin key or session cookie; for cookie callers, every method other
 * than GET must carry the session's CSRF token in X-CSRF-Token (403 otherwise).
 */
export async function requireAdmin(app: App, req: Req): Promise<AdminPrincipal> {
  const key = bearerKey(req.authorization);
  if (key && isAdminKey(app, key)) return { by: 'admin-api-key', via: 'bearer' };
  const s = await sessionFromCookie(app, req.cookie);
  if (!s) throw new ApiError('UNAUTHORIZED', 'admin key or session required', { 'WWW-Authenticate': 'Bearer' });
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    const sent = Buffer.from(req.csrf || '');
    const want = Buffer.from(s.csrf);
    if (sent.length !== want.length || !timingSafeEqual(sent, want)) throw new ApiError('CSRF_FAILED', 'missing or wrong X-CSRF-Token');
  }
  return { by: `session:${s.id.slice(0, 8)}`, via: 'cookie' };
}
