// Reusable pieces of the OpenAPI document (openapi.ts): parameters, response headers and
// responses by kind (errors by status with their headers, search pages, writes). A route
// added later documents itself with these, so that every response kind is described once.
import { RATELIMIT_DRAFT } from '../ratelimit/index.js';

export type Obj = Record<string, unknown>;

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const json = (schema: Obj) => ({ content: { 'application/json': { schema } } });
export const arrayOf = (name: string) => ({ type: 'array', items: ref(name) });

/** An operation's security requirement by who may call it. */
export const security: Record<'public' | 'keyed' | 'admin', Obj[]> = {
  public: [], // no credentials
  keyed: [{ sandboxKey: [] }],
  admin: [{ adminKey: [] }, { adminSession: [] }],
};

// ---- parameters ----

export const UUID_PATTERN = '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';
export const SERVICE_ID = '^[A-Za-z0-9_-]{1,64}$';

export const query = (name: string, description: string, schema: Obj, extra: Obj = {}) => ({ name, in: 'query', required: false, description, schema, ...extra });
export const path = (name: string, description: string, pattern: string) => ({ name, in: 'path', required: true, description, schema: { type: 'string', pattern } });

export const serviceIdParam = path('id', 'service id (server-generated, URL-safe)', SERVICE_ID);
export const uuidParam = path('uuid', 'sandbox uuid (any case)', UUID_PATTERN);

/** query parameters of search routes come from the table of dimensions (domain/dimensions.ts, openApiParameters) */
export const params = {
  ifNoneMatch: { name: 'If-None-Match', in: 'header', required: false, description: 'ETag(s) of a copy the client holds', schema: { type: 'string' } },
  prefer: {
    name: 'Prefer',
    in: 'header',
    required: false,
    description: 'RFC 7240 `wait=N` (whole seconds, 1 or more; above WAIT_MAX_SECONDS, default 300, the maximum applies): together with an If-None-Match that matches, the request is held until its answer changes (200) or the wait ends (304). Other preferences, and a malformed or zero `wait`, are ignored',
    schema: { type: 'string' },
    example: 'wait=60',
  },
};

// ---- response headers ----

const header = (description: string, schema: Obj, required: boolean) => ({ description, required, schema });

export const headers = {
  cacheControl: (value?: string) => ({ 'Cache-Control': header(value ? `\`${value}\`` : 'caching rules of this answer', value ? { type: 'string', const: value } : { type: 'string' }, true) }),
  etag: { ETag: header('strong validator of this representation', { type: 'string', pattern: '^"[^"]*"$' }, true) },
  varyAuthorization: { Vary: header('the answer depends on Authorization', { type: 'string', const: 'Authorization' }, true) },
  nextLink: { Link: header('`<…canonical URL with after=…>; rel="next"` when more results exist (absent on the last page)', { type: 'string' }, false) },
  rate: (required: boolean) => ({
    'RateLimit-Policy': header(`quota policy (${RATELIMIT_DRAFT}): \`"sandbox";q=<requests>;w=60\``, { type: 'string', pattern: '^"sandbox";q=\\d+;w=60$' }, required),
    RateLimit: header(`remaining quota (${RATELIMIT_DRAFT}): \`"sandbox";r=<remaining>;t=<seconds>\``, { type: 'string', pattern: '^"sandbox";r=\\d+;t=\\d+$' }, required),
  }),
  retryAfter: { 'Retry-After': header('seconds to wait before trying again', { type: 'string', pattern: '^\\d+$' }, true) },
  location: (description: string) => ({ Location: header(description, { type: 'string' }, true) }),
  deprecation: {
    Deprecation: header('RFC 9745: `@<unix seconds>`, when the service is deprecated', { type: 'string', pattern: '^@\\d+$' }, false),
    Sunset: header('RFC 8594: HTTP-date of the sunset_date, when one is set', { type: 'string' }, false),
    Link: header('`</…/{id}/replacements>; rel="successor-version"`, when the service is deprecated', { type: 'string' }, false),
  },
  setCookie: (description: string) => ({ 'Set-Cookie': header(description, { type: 'string' }, true) }),
  preferenceApplied: { 'Preference-Applied': header('RFC 7240: `wait=<seconds>`, the wait applied, on the answer to a held request (absent when the request was answered at once)', { type: 'string', pattern: '^wait=\\d+$' }, false) },
};

// ---- responses ----

const ERROR_TEXT: Record<number, string> = {
  400: 'invalid request (query, body or header): BAD_REQUEST, BAD_QUERY, BAD_JSON or VALIDATION_FAILED',
  401: 'missing, malformed or wrong credentials: UNAUTHORIZED',
  403: 'CSRF token missing or wrong (cookie callers): CSRF_FAILED',
  404: 'unknown resource: NOT_FOUND',
  409: 'conflict: CONFLICT',
  413: 'body larger than MAX_BODY_BYTES: PAYLOAD_TOO_LARGE',
  414: 'URL longer than 8192 bytes: URI_TOO_LONG',
  415: 'the body is not sent as application/json: UNSUPPORTED_MEDIA_TYPE',
  429: 'too many requests: RATE_LIMITED',
  503: 'overload or outage (PostgreSQL or Redis unreachable, index being rebuilt): UNAVAILABLE or OVERLOADED; try again after Retry-After',
};

// (only a refusal always has them: while Redis is unreachable the limiter fails open and an
// admitted request is answered without them, docs/decisions/outages.md)
const RATE_ALWAYS = new Set([429]);
const RATE_NEVER = new Set([401, 413, 414]);

export interface ErrorOptions {
  /** the rate-limit headers (answers to an admitted sandbox request) */
  rate?: boolean;
  /** descriptions that replace the default of a status */
  text?: Record<number, string>;
  /** more headers on every one of these errors */
  extra?: Obj;
}

/** Error responses (the contract's error body) for `statuses`, each with the headers it always has. */
export function errors(statuses: number[], o: ErrorOptions = {}): Record<number, Obj> {
  const out: Record<number, Obj> = {};
  for (const s of statuses) {
    // the rate headers go with every answer to an admitted keyed request: always on the
    // statuses only a handler answers; not on those decided before the key is checked (401,
    // 413, 414: the route refuses the request first); sometimes on 400 and 503 (a bad
    // Content-Length or an outage can come before or after the key)
    const rate = !o.rate ? {} : RATE_ALWAYS.has(s) ? headers.rate(true) : RATE_NEVER.has(s) ? {} : headers.rate(false);
    const retry = s === 429 || s === 503 ? headers.retryAfter : {};
    out[s] = {
      description: o.text?.[s] ?? ERROR_TEXT[s] ?? 'error',
      headers: { ...headers.cacheControl(), ...rate, ...retry, ...(o.extra ?? {}) },
      ...json(ref('Error')),
    };
  }
  return out;
}

/**
 * 431 on every operation: answered by the shipped reverse proxy (deploy/headers.js), which
 * refuses what the server could not read; the server itself never answers it.
 */
export const headersTooLarge = {
  description:
    'from the shipped reverse proxy, never the server: more request header lines than the server reads (48, counting those the proxy adds: at most 41 of the client\'s besides Host, Connection, Content-Length, Transfer-Encoding, X-Forwarded-For, X-Real-IP and X-Forwarded-Proto, which it replaces), ' +
    'or one header line over 8 KiB: HEADERS_TOO_LARGE. Sent straight to the server, such a request is never answered (uWebSockets.js closes the connection after about 10 s).',
  headers: headers.cacheControl(),
  ...json(ref('ProxyError')),
};

/** The errors of a public operation: its own statuses, then 414 and 503 (any route). */
export const publicErrors = (statuses: number[]) => errors([...statuses, 414, 503]);

/** The errors of an admin operation: 401 and 429 (wrong Bearer keys count against LOGIN_FAILURES_PER_MINUTE) first. */
export const adminErrors = (statuses: number[]) => errors([401, 429, ...statuses, 414, 503]);

/** 200/201 with a JSON body of `schema` and `hdrs`. */
export const ok = (description: string, schema: Obj, hdrs: Obj = {}, extra: Obj = {}) => ({ description, headers: hdrs, ...json(schema), ...extra });

/** An answer without a body (204, 304, 302). */
export const empty = (description: string, hdrs: Obj = {}) => ({ description, headers: hdrs });

export const canonicalNote =
  'Query strings must be canonical (contract: unknown and empty parameters dropped, tokens lower-cased, `iotReady=true` and `healthy=true` only, default `limit` dropped, ' +
  'values de-duplicated and sorted, names sorted, unreserved characters and ":" literal, every other byte %XX upper-case). A non-canonical query gets 302 ' +
  'to the canonical one with an empty body; an undecodable or invalid one gets 400.';

export const heldNote =
  ' **Held requests** (RFC 7240 `Prefer: wait=N`): with an If-None-Match that matches the current ETag, the request is held until the answer changes — a write, a deletion, a health ' +
  'transition or an expiry that changes it, on any node — then answered `200` with the new body and ETag, or `304` when the wait ends unchanged (never earlier, a shutdown excepted: ' +
  'the drain answers `304` at once). Both carry `Preference-Applied: wait=<the wait applied>`. Without a matching If-None-Match the request is answered at once, without ' +
  '`Preference-Applied`. A keyed held request counts once against its rate limit, when it arrives. At most HELD_PER_ADDRESS (default 1000) held requests per client address and ' +
  'HELD_MAX (default 100000) per server process: `429` with Retry-After beyond.';

export const conditionalNote =
  ' Every 200 carries a strong `ETag` that changes whenever the page\'s bytes or its `Link` change; a request whose `If-None-Match` matches it ' +
  '(RFC 9110 weak comparison: `W/"x"` matches `"x"`; a list; `*`) gets `304` with the same Cache-Control, Vary and ETag and no body. ' +
  'A keyed 304 counts against the rate limit like a 200.';

/** The responses of a paged search (GET /services, /devices, /sandbox/{uuid}/services). */
export function searchResponses(item: string, o: { vary: boolean; rate: boolean; extraErrors: number[]; varyOnErrors?: boolean }): Record<number, Obj> {
  // (rate headers: not required, the limiter fails open while Redis is unreachable)
  const common = { ...headers.cacheControl(), ...(o.vary ? headers.varyAuthorization : {}), ...(o.rate ? headers.rate(false) : {}) };
  // (GET /services: every answer varies on Authorization, errors too — the contract; the
  // sandbox search promises it on its pages and redirects only: an outage's 503 may come first)
  const errOpts: ErrorOptions = { rate: o.rate, extra: (o.varyOnErrors ?? o.vary) ? headers.varyAuthorization : {} };
  return {
    200: ok('a page of results (`[]` when none); to a held request, the changed page', arrayOf(item), { ...common, ...headers.etag, ...headers.nextLink, ...headers.preferenceApplied }),
    302: empty('non-canonical query: redirect to the canonical one (empty body)', { ...common, ...headers.location('the same path with the canonical query string (no `?` when it is empty)') }),
    304: empty('not modified: the If-None-Match still matches (to a held request: when its wait ended); same Cache-Control, Vary and ETag as the 200, no body', { ...common, ...headers.etag, ...headers.nextLink, ...headers.preferenceApplied }),
    ...errors([400, 414, ...o.extraErrors, 503], errOpts),
  };
}
