// uWebSockets.js plumbing, the request side (models: uWS examples AsyncFunction.mjs and
// JsonPost.js): read everything from `req` synchronously, attach onAborted before any await
// (a Reply does, reply.ts, which also writes the answer inside cork()), read bodies (body.ts)
// behind the route's credential check (guard), and route: 414, 400 for an ambiguous path
// (domain/raw-path.ts) and 405 before a handler, shadowed templates, HEAD twins of GET routes.
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { clientAddress } from './client-address.js';
import { ambiguousPath } from '../domain/raw-path.js';
import { readBody, readBodyAfter } from './body.js';
import { Reply, sendError } from './reply.js';
import type { BodyHooks, Req } from './types.js';

export type { BodyHooks, Headers, Req } from './types.js';

const NO_PROXIES: ReadonlySet<string> = new Set();
/** the params of a route without any: one array for every request (frozen: nothing writes it) */
const NO_PARAMS = Object.freeze([]) as unknown as string[];

/**
 * Header names as bytes: uWS reads a Uint8Array in place, where a string argument is
 * converted to UTF-8 on every call (docs/decisions/heartbeat-batches.md). Each is its own
 * ArrayBuffer (TextEncoder), offset 0.
 */
const enc = (s: string) => new TextEncoder().encode(s);
const H = {
  contentLength: enc('content-length'),
  authorization: enc('authorization'),
  cookie: enc('cookie'),
  csrf: enc('x-csrf-token'),
  ifNoneMatch: enc('if-none-match'),
  prefer: enc('prefer'),
  contentType: enc('content-type'),
  transferEncoding: enc('transfer-encoding'),
};

/**
 * The client's address. `viaProxy`: the request came through the proxy's Unix socket (the
 * app listening there, never a guess from the peer address: a TCP peer that reset its
 * connection has no address either).
 */
function remoteOf(req: HttpRequest, res: HttpResponse, trusted: ReadonlySet<string>, viaProxy: boolean): string {
  if (viaProxy) return clientAddress(null, req.getHeader('x-forwarded-for'), req.getHeader('x-real-ip'), trusted);
  const own = Buffer.from(res.getRemoteAddressAsText()).toString();
  if (trusted.size === 0) return own;
  return clientAddress(own, req.getHeader('x-forwarded-for'), req.getHeader('x-real-ip'), trusted);
}

/**
 * Everything a handler may read of the request, copied now: uWS's request object is only
 * valid until the handler first returns. The client address costs a native call, a buffer
 * and a decode: it is read only for routes that use it (`withRemote`), "" otherwise.
 * `method`: the route's method when it has one (its name, no native call), else read.
 * `bearerOnly`: of the headers only Authorization and the body's (Content-Length, and
 * Content-Type unless there is no body); the others read as "" (RouteOptions.bearerOnly).
 */
export function readReq(req: HttpRequest, res: HttpResponse, nParams: number, withRemote = true, trusted: ReadonlySet<string> = NO_PROXIES, method?: string, bearerOnly = false, viaProxy = false): Req {
  const q = req.getQuery();
  const params: string[] = nParams ? [] : NO_PARAMS;
  for (let i = 0; i < nParams; i++) params.push(req.getParameter(i) ?? '');
  const cl = req.getHeader(H.contentLength);
  const contentLength = cl === '' ? -1 : /^\d{1,15}$/.test(cl) ? Number(cl) : -2;
  // a bearer-only route (a body route) with neither Content-Length nor Transfer-Encoding has
  // no body: it reads no Content-Type (others read Transfer-Encoding in route(), body routes only)
  const te = bearerOnly && contentLength === -1 ? req.getHeader(H.transferEncoding) : undefined;
  const ifNoneMatch = bearerOnly ? '' : req.getHeader(H.ifNoneMatch);
  // a conditional request may ask to be held: only then Prefer and the address it is counted by
  const prefer = ifNoneMatch ? req.getHeader(H.prefer) : '';
  const remote = withRemote ? remoteOf(req, res, trusted, viaProxy) : '';
  return {
    method: method ?? req.getMethod().toUpperCase(),
    path: req.getUrl(),
    query: q === undefined ? null : q,
    params,
    authorization: req.getHeader(H.authorization),
    cookie: bearerOnly ? '' : req.getHeader(H.cookie),
    csrf: bearerOnly ? '' : req.getHeader(H.csrf),
    ifNoneMatch,
    prefer,
    waiter: prefer ? remote || remoteOf(req, res, trusted, viaProxy) : '',
    contentType: bearerOnly && (contentLength === 0 || (contentLength === -1 && te === '')) ? '' : req.getHeader(H.contentType),
    transferEncoding: te,
    contentLength,
    remote,
    startedAt: performance.now(),
  };
}

export type Handler = (req: Req, reply: Reply, body: Buffer | null) => Promise<void> | void;

export interface RouteOptions {
  /** read a body (POST/PATCH/DELETE) before calling the handler */
  body?: boolean;
  maxBody: number;
  /** deepest nesting of arrays/objects accepted in a JSON body (400 BAD_JSON beyond) */
  maxJsonDepth?: number;
  onError: (err: unknown, req: Req) => void;
  /** called when a request starts, and once when it ends (answered or aborted) */
  onStart?: () => void;
  onDone?: (req: Req, reply: Reply, route: string) => void;
  /** more request headers to copy into req.extra (lower-case names) */
  headers?: string[];
  /** true while the server drains for shutdown: answers close their connection */
  draining?: () => boolean;
  /** copy the client address into req.remote (routes with a body always do; the access log needs it) */
  remote?: boolean;
  /**
   * a body route whose handler never reads the client address (heartbeats): it is copied
   * only when `remote` asks (the access log). A native call, a buffer and a decode saved
   */
  addressFree?: boolean;
  /**
   * a handler that reads no request header but Authorization (and the body's: Content-Length,
   * Content-Type): the others (Cookie, X-CSRF-Token, If-None-Match) are not copied (a native
   * call and a string each) and read as "". Heartbeats
   */
  bearerOnly?: boolean;
  /**
   * a route whose caller stays anonymous (GET /services/{id}, /replacements): the client
   * address is never read (req.remote stays ""), even for the access log
   */
  anonymous?: boolean;
  /** addresses of reverse proxies whose X-Forwarded-For is believed (TRUSTED_PROXIES) */
  trustedProxies?: ReadonlySet<string>;
  /** the app behind the proxy's Unix socket (http/proxy-socket.ts): X-Forwarded-For is believed */
  viaProxy?: boolean;
  /**
   * a route that holds requests without `Prefer` (Consul's blocking queries: `?index=`): the
   * address a held request is counted by (req.waiter) is read when its query names `index`
   */
  blocking?: boolean;
  /**
   * The request's credential, checked before a byte of its body is read (contract "Input
   * limits": a wrong key costs no body parsing). A throw or a rejected promise refuses the
   * request: answered at once, the connection closed, the rest of the body never read;
   * while a promise is pending the body waits in the socket (body.ts readBodyAfter). It
   * answers synchronously (undefined) whenever it can tell without I/O: no promise on a hot
   * path. A request without a body skips it (its handler checks the credential as ever).
   */
  guard?: (req: Req) => Promise<void> | undefined;
  /** test hooks: the body bytes a request cost (compose.ts ThreadHooks.body) */
  bodyHooks?: BodyHooks;
}

/**
 * Longest path + query accepted (RFC 9110 asks for at least 8000 octets). uWS itself drops
 * the connection when the request head does not fit its buffers; this answers a clear 414
 * below that.
 */
export const MAX_URL_BYTES = 8192;

function run(handler: Handler, req: Req, reply: Reply, body: Buffer | null, o: RouteOptions): void {
  const fail = (err: unknown) => sendError(reply, err, (e) => o.onError(e, req));
  try {
    const p = handler(req, reply, body);
    if (p && typeof (p as Promise<void>).then === 'function') {
      (p as Promise<void>).then(() => {
        if (!reply.done && !reply.holder) fail(new Error(`handler of ${req.method} ${req.path} sent no response`));
      }, fail);
    }
  } catch (err) {
    fail(err);
  }
}

/** Method + path pattern of every registered route, per app: the catch-all answers 405 from it. */
const routeTable = new WeakMap<TemplatedApp, { method: string; re: RegExp; pattern: string }[]>();

/** Method and pattern of every route registered on `app` (HEAD twins and catch-alls aside). */
export function registeredRoutes(app: TemplatedApp): { method: string; pattern: string }[] {
  return (routeTable.get(app) ?? []).filter((r) => r.method !== 'HEAD').map(({ method, pattern }) => ({ method, pattern }));
}

function patternRegExp(pattern: string): RegExp {
  const body = pattern
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${body}$`);
}

/** Methods that have a route for `path` (empty: no route at all, a 404). */
export function allowedMethods(app: TemplatedApp, path: string): string[] {
  const out = new Set<string>();
  for (const r of routeTable.get(app) ?? []) if (r.re.test(path)) out.add(r.method);
  return [...out];
}

/** A concrete pattern shadowing a templated one, and its methods. */
interface Shadow {
  re: RegExp;
  methods: string[];
  allow: string;
}

/**
 * Concrete patterns that shadow a templated one: `/sandbox/:uuid/services/batch` shadows
 * `/sandbox/:uuid/services/:id` (as in OpenAPI, a concrete path is matched before a templated
 * one). A request of the templated route's method on a path of a concrete pattern that lacks
 * that method is a 405 with that pattern's methods, answered before a byte of body is read —
 * not whatever the templated route would make of `batch` (a 415 for its body, say).
 * Computed on a route's first request (every route is registered by then), kept by the
 * route; usually empty.
 */
function shadowing(app: TemplatedApp, pattern: string): Shadow[] {
  const segs = pattern.split('/');
  const found = new Map<string, { re: RegExp; methods: Set<string> }>();
  for (const r of routeTable.get(app) ?? []) {
    const rs = r.pattern.split('/');
    if (r.pattern === pattern || rs.length !== segs.length) continue;
    let same = true;
    let concrete = false;
    for (let i = 0; i < segs.length && same; i++) {
      if (segs[i]!.startsWith(':')) concrete ||= !rs[i]!.startsWith(':') && rs[i] !== '*';
      else same = rs[i] === segs[i];
    }
    if (!same || !concrete) continue;
    const f = found.get(r.pattern) ?? { re: r.re, methods: new Set<string>() };
    f.methods.add(r.method);
    found.set(r.pattern, f);
  }
  return [...found.values()].map((f) => ({ re: f.re, methods: [...f.methods], allow: [...f.methods].join(', ') }));
}

/** A credential refused before the body was read: the answer closes the connection (the rest of the body is not worth receiving). */
function refuse(reply: Reply, req: Req, err: unknown, o: RouteOptions): void {
  reply.closeAfter = true;
  sendError(reply, err, (e) => o.onError(e, req));
}

const EMPTY_BODY = Buffer.alloc(0);

const METHOD_NAME = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', del: 'DELETE' } as const;

/** Register a handler; `pattern` uses uWS's :param syntax. A GET route answers HEAD too. */
export function route(app: TemplatedApp, method: 'get' | 'post' | 'put' | 'patch' | 'del' | 'any', pattern: string, handler: Handler, o: RouteOptions): void {
  const nParams = (pattern.match(/:/g) ?? []).length;
  if (method !== 'any') {
    const table = routeTable.get(app) ?? [];
    routeTable.set(app, table);
    const re = patternRegExp(pattern);
    table.push({ method: METHOD_NAME[method], re, pattern });
    if (method === 'get') table.push({ method: 'HEAD', re, pattern });
  }
  const withRemote = !o.anonymous && !!((o.body && !o.addressFree) || o.remote);
  let shadows: Shadow[] | null = null;
  const register = (m: 'get' | 'post' | 'put' | 'patch' | 'del' | 'any' | 'head') => app[m](pattern, (res: HttpResponse, r: HttpRequest) => {
    const req = readReq(r, res, nParams, withRemote, o.trustedProxies, m === 'any' ? undefined : m === 'head' ? 'HEAD' : METHOD_NAME[m], o.bearerOnly, o.viaProxy);
    if (o.headers) req.extra = Object.fromEntries(o.headers.map((h) => [h, r.getHeader(h)]));
    if (o.blocking && !req.waiter && req.query?.includes('index=')) req.waiter = remoteOf(r, res, o.trustedProxies ?? NO_PROXIES, o.viaProxy === true);
    if (o.maxJsonDepth !== undefined) req.maxJsonDepth = o.maxJsonDepth;
    o.onStart?.();
    const reply = new Reply(res, (rep) => o.onDone?.(req, rep, pattern));
    reply.head = req.method === 'HEAD';
    if (o.draining?.()) reply.closeAfter = true;
    if (req.path.length + (req.query?.length ?? 0) > MAX_URL_BYTES) {
      return reply.error('URL_TOO_LONG', [MAX_URL_BYTES], [], true);
    }
    // before any route reads a parameter of it: a proxy may have judged it as another path
    if (ambiguousPath(req.path)) return reply.error('PATH_AMBIGUOUS');
    if (nParams) {
      shadows ??= shadowing(app, pattern);
      for (const sh of shadows) {
        if (sh.re.test(req.path) && !sh.methods.includes(req.method)) return reply.error('METHOD_NOT_ALLOWED', [req.method, sh.allow], [['Allow', sh.allow]]);
      }
    }
    if (!o.body) return run(handler, req, reply, null, o);
    if (req.contentLength === -2) return reply.error('CONTENT_LENGTH_INVALID', [], [], true);
    if (req.contentLength > o.maxBody) {
      // refuse before reading a byte of it, and close: the rest is not worth receiving
      return reply.error('BODY_TOO_LARGE', [o.maxBody], [], true);
    }
    // no body at all (Content-Length: 0, or neither it nor Transfer-Encoding): nothing to
    // wait for, no onData callback and no buffers (a heartbeat is usually such a request)
    if (req.contentLength === 0 || (req.contentLength === -1 && (req.transferEncoding ?? r.getHeader(H.transferEncoding)) === '')) {
      return run(handler, req, reply, EMPTY_BODY, o);
    }
    const hooks = o.bodyHooks;
    const onChunk = hooks ? (n: number) => hooks.read(req, n) : undefined;
    const take = (body: Buffer | null) => {
      if (body === null) return reply.error('BODY_TOO_LARGE', [o.maxBody], [], true);
      hooks?.handed(req);
      run(handler, req, reply, body, o);
    };
    let gate: Promise<void> | undefined;
    try {
      gate = o.guard?.(req);
    } catch (err) {
      return refuse(reply, req, err, o);
    }
    if (gate) readBodyAfter(res, o.maxBody, gate, take, (err) => refuse(reply, req, err, o), () => reply.aborted, onChunk);
    else readBody(res, o.maxBody, take, onChunk);
  });
  register(method);
  if (method === 'get') register('head');
}
