// The dashboard's static files (web/dist, built by `npx vite build web`), served at /admin/.
// Everything is read into memory once (the build is small), so a request is a Map look-up:
// no file system access per request and no path traversal by construction. index.html is
// rewritten so every script and stylesheet URL carries ?v=<version>; assets are cacheable
// for five minutes and never `immutable` (contract).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import type { TemplatedApp } from 'uWebSockets.js';
import type { App } from '../hot/app.js';
import { route, type Headers, type RouteOptions } from '../hot/http/route.js';
import { ROOT } from '../hot/paths.js';

export const DIST = join(ROOT, 'web', 'dist');
export const ASSET_CACHE = 'public, max-age=300';
const MAX_FILE = 8 * 1024 * 1024;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

// The page's own rules: only this origin's scripts and data; Lit and uPlot set styles from
// script, hence 'unsafe-inline' for styles only.
const PAGE_HEADERS: Headers = [
  ['Content-Security-Policy', "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"],
  ['X-Frame-Options', 'DENY'],
  ['Referrer-Policy', 'no-referrer'],
];

export interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
}

/** Append ?v=<version> to every local src/href of script, link and modulepreload tags. */
export function versionUrls(html: string, version: string): string {
  const v = encodeURIComponent(version);
  return html.replace(/<(script|link)\b[^>]*>/gi, (tag) =>
    tag.replace(/\b(src|href)=(["'])([^"']+)\2/gi, (m, attr: string, q: string, url: string) => {
      if (/^(?:[a-z][a-z0-9+.-]*:|\/\/|#|data:)/i.test(url)) return m; // other origins, fragments
      if (/[?&]v=/.test(url)) return m;
      return `${attr}=${q}${url}${url.includes('?') ? '&' : '?'}v=${v}${q}`;
    }),
  );
}

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) walk(p, out);
    else if (st.isFile() && st.size <= MAX_FILE) out.push(p);
  }
  return out;
}

function file(body: Buffer, path: string): StaticFile {
  const etag = '"' + createHash('sha256').update(body).digest('base64url').slice(0, 27) + '"';
  return { body, type: TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream', etag };
}

/** URL path below /admin/ -> file; null when the build is missing. */
export function loadDist(dir: string, version: string): Map<string, StaticFile> | null {
  if (!existsSync(join(dir, 'index.html'))) return null;
  const files = new Map<string, StaticFile>();
  for (const p of walk(dir)) {
    const rel = relative(dir, p).split(sep).join('/');
    let body = readFileSync(p);
    if (rel === 'index.html') body = Buffer.from(versionUrls(body.toString('utf8'), version));
    files.set(rel, file(body, p));
  }
  return files;
}

export function registerStatic(uws: TemplatedApp, app: App, o: RouteOptions, dir = DIST): void {
  let files = loadDist(dir, app.version);
  let lastTry = Date.now();
  // Built after the server started? Look again, at most once a second, until it is there.
  const current = () => {
    if (!files && Date.now() - lastTry > 1000) {
      lastTry = Date.now();
      files = loadDist(dir, app.version);
    }
    return files;
  };

  const serve: Parameters<typeof route>[3] = (req, reply) => {
    const fs = current();
    if (!fs) return reply.error('DASHBOARD_NOT_BUILT', [], [['Retry-After', '5']]);
    let rel = req.path.slice('/admin/'.length);
    if (rel === '') rel = 'index.html';
    const f = fs.get(rel);
    if (!f) return reply.error('FILE_NOT_FOUND', [req.path]);
    const headers: Headers = [
      ['Content-Type', f.type],
      ['Cache-Control', ASSET_CACHE],
      ['ETag', f.etag],
      ['X-Content-Type-Options', 'nosniff'],
      ...(rel === 'index.html' ? PAGE_HEADERS : []),
    ];
    if (req.ifNoneMatch && req.ifNoneMatch.split(/\s*,\s*/).some((t) => t === f.etag || t === 'W/' + f.etag || t === '*')) {
      return reply.send(304, headers.filter(([k]) => k !== 'Content-Type'));
    }
    reply.send(200, headers, f.body);
  };

  route(uws, 'get', '/admin', (_req, reply) => reply.send(302, [['Location', '/admin/'], ['Cache-Control', ASSET_CACHE]]), o);
  route(uws, 'get', '/admin/', serve, o);
  route(uws, 'get', '/admin/*', serve, o);
}
