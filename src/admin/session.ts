// Admin browser sessions, kept in Redis so every server thread and process shares them.
// Cookie: HttpOnly, SameSite=Strict, Path=/admin, Secure unless configured off; idle and
// absolute expiry; a CSRF token per session.
import { randomBytes } from 'node:crypto';
import type { App } from '../hot/app.js';

export const COOKIE = 'registry_admin';

export interface Session {
  id: string;
  csrf: string;
  createdAt: number;
}

function key(app: App, id: string): string {
  return app.keys.adminSession(id);
}

export function cookieValue(header: string): string {
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === COOKIE) return part.slice(i + 1).trim();
  }
  return '';
}

export async function createSession(app: App): Promise<{ session: Session; cookie: string }> {
  const id = randomBytes(32).toString('base64url');
  const s: Session = { id, csrf: randomBytes(24).toString('base64url'), createdAt: Date.now() };
  await app.redis.set(key(app, id), JSON.stringify(s), 'EX', app.cfg.sessionIdleSeconds);
  return { session: s, cookie: setCookie(app, id, app.cfg.sessionAbsoluteSeconds) };
}

export function setCookie(app: App, value: string, maxAge: number): string {
  return `${COOKIE}=${value}; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${app.cfg.cookieSecure ? '; Secure' : ''}`;
}

/** the shape of a session id (32 random bytes, base64url): nothing else reaches Redis */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

export async function sessionFromCookie(app: App, header: string): Promise<Session | null> {
  const id = cookieValue(header);
  if (!id || !SESSION_ID.test(id)) return null;
  const raw = await app.redis.get(key(app, id));
  if (!raw) return null;
  const s = JSON.parse(raw) as Session;
  if (Date.now() - s.createdAt > app.cfg.sessionAbsoluteSeconds * 1000) {
    await app.redis.del(key(app, id));
    return null;
  }
  await app.redis.expire(key(app, id), app.cfg.sessionIdleSeconds); // sliding idle expiry
  return s;
}

export async function destroySession(app: App, id: string): Promise<void> {
  if (SESSION_ID.test(id)) await app.redis.del(key(app, id));
}
