// Assertions shared by the HTTP acceptance tests: the contract's error body and small
// request helpers. Everything here looks only at what a client sees.
import { request as httpRequest } from 'node:http';
import type { Test } from 'tap';
import type { TestServer } from './server.js';
import { assertDocumented } from './openapi-check.js';
import type { Svc } from './svc.js';

/** The response is `status` with exactly {"error":{"code","message"}} as JSON. */
export async function isError(t: Test, r: Response, status: number, code?: string, what = ''): Promise<{ code: string; message: string }> {
  const text = await r.text();
  const pre = what ? what + ': ' : '';
  t.equal(r.status, status, `${pre}status ${status}`);
  t.match(r.headers.get('content-type') ?? '', /^application\/json/, `${pre}JSON content type`);
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    t.fail(`${pre}body is not JSON: ${text.slice(0, 200)}`);
  }
  const b = body as { error?: { code?: unknown; message?: unknown } };
  t.same(Object.keys(b ?? {}), ['error'], `${pre}only "error" at the top`);
  t.same(Object.keys(b?.error ?? {}).sort(), ['code', 'message'], `${pre}error has exactly code and message`);
  t.type(b?.error?.code, 'string', `${pre}code is a string`);
  t.type(b?.error?.message, 'string', `${pre}message is a string`);
  t.notMatch(text, /\bat .*\.js:\d+/, `${pre}no stack trace`);
  if (code) t.equal(b?.error?.code, code, `${pre}code ${code}`);
  return (b?.error ?? { code: '', message: '' }) as { code: string; message: string };
}

export const ids = async (r: Response): Promise<string[]> => ((await r.json()) as Svc[]).map((x) => x.id);

/** The target of `Link: <...>; rel="next"`, or null. */
export function nextLink(r: Response): string | null {
  const l = r.headers.get('link');
  if (!l) return null;
  const m = /<([^>]+)>\s*;\s*rel="?next"?/.exec(l);
  return m ? m[1]! : null;
}

export function keyed(key: string, init: RequestInit = {}): RequestInit {
  return { ...init, headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${key}` } };
}

export function jsonBody(method: string, body: unknown, key?: string): RequestInit {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  return { method, headers, body: JSON.stringify(body) };
}

/** Follow `Link: rel="next"` from `path`, returning every page's ids (max 50 pages). */
export async function allPages(s: TestServer, path: string, init: RequestInit = {}): Promise<{ pages: string[][]; links: string[] }> {
  const pages: string[][] = [];
  const links: string[] = [];
  let p: string | null = path;
  for (let i = 0; p && i < 50; i++) {
    const r = await s.req(p, init);
    if (r.status !== 200) throw new Error(`${p}: ${r.status} ${await r.text()}`);
    const next = nextLink(r);
    pages.push(((await r.json()) as { id?: string; serviceId?: string; deviceClass?: string; protocol?: string }[]).map((x) => x.id ?? `${x.serviceId}/${x.deviceClass}/${x.protocol}`));
    if (next) links.push(next);
    p = next;
  }
  return { pages, links };
}

/** GET with the request target sent byte for byte (fetch drops a bare '?'). */
export function rawGet(s: TestServer, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const u = new URL(s.url);
  return new Promise((resolve, reject) => {
    const r = httpRequest({ host: u.hostname, port: u.port, path, method: 'GET', headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        try {
          const h = (n: string) => {
            const v = res.headers[n.toLowerCase()];
            return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
          };
          assertDocumented(Number(u.port), { method: 'GET', target: path, status: res.statusCode ?? 0, header: h, body });
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        } catch (err) {
          reject(err as Error);
        }
      });
    });
    r.on('error', reject);
    r.end();
  });
}
