// The OpenAPI 3.1 document served at /openapi.json, built from the same schemas that ajv
// compiles (domain/schemas.ts), so the two cannot drift apart.
import { openApiParameters } from '../domain/dimensions.js';
import * as S from '../domain/schemas.js';
import { RATELIMIT_DRAFT } from '../sandbox/auth.js';

type Obj = Record<string, unknown>;

const json = (schema: Obj | string) => ({ content: { 'application/json': { schema: typeof schema === 'string' ? { $ref: schema } : schema } } });
const err = (description: string) => ({ description, ...json('#/components/schemas/Error') });
const strip = ({ $id: _id, ...rest }: Obj) => rest;

const q = (name: string, description: string, schema: Obj = { type: 'string' }, extra: Obj = {}) => ({ name, in: 'query', description, schema, ...extra });
const p = (name: string, description: string) => ({ name, in: 'path', required: true, description, schema: { type: 'string' } });

const searchParams = openApiParameters('services');

const canonicalNote =
  'Query strings must be canonical (contract: unknown and empty parameters dropped, tokens lower-cased, `iotReady=true` only, default `limit` dropped, ' +
  'values de-duplicated and sorted, names sorted, unreserved characters and ":" literal, every other byte %XX upper-case). A non-canonical query gets 302 ' +
  'to the canonical one with an empty body; an undecodable or invalid one gets 400.';

const rateHeaders = {
  'RateLimit-Policy': { description: `Quota policy (${RATELIMIT_DRAFT}): \`"sandbox";q=<requests>;w=60\``, schema: { type: 'string' } },
  RateLimit: { description: `Remaining quota (${RATELIMIT_DRAFT}): \`"sandbox";r=<remaining>;t=<seconds>\``, schema: { type: 'string' } },
};
const retryAfter = { 'Retry-After': { description: 'seconds to wait', schema: { type: 'integer' } } };
const deprecationHeaders = {
  Deprecation: { description: 'RFC 9745: `@<unix seconds>` when the service is deprecated', schema: { type: 'string' } },
  Sunset: { description: 'RFC 8594: HTTP-date of the sunset_date', schema: { type: 'string' } },
  Link: { description: '`</services/{id}/replacements>; rel="successor-version"` for deprecated services', schema: { type: 'string' } },
};
const r429 = { description: 'over the rate limit', headers: { ...rateHeaders, ...retryAfter }, ...json('#/components/schemas/Error') };
const r302 = { description: 'non-canonical query: redirect to the canonical one (empty body)', headers: { Location: { schema: { type: 'string' } } } };
const keyed = [{ sandboxKey: [] }];
const admin = [{ adminKey: [] }, { adminSession: [] }];

function serviceWrites(base: string, security: Obj[], tag: string, extra: Obj[] = []): Obj {
  const sec = { security, tags: [tag], parameters: extra };
  return {
    [base]: {
      post: { ...sec, summary: 'Register a service', requestBody: { required: true, ...json('#/components/schemas/ServiceCreate') }, responses: { 201: { description: 'created', ...json('#/components/schemas/Service') }, 400: err('invalid body'), 401: err('no valid key'), 413: err('body too large'), 429: r429, 503: err('database unavailable') } },
    },
    [`${base}/batch`]: {
      post: {
        ...sec,
        summary:
          'Register 1-1000 services at once: all or nothing (one transaction), answered in order. Its own body limit (MAX_BATCH_BODY_BYTES, default 4 MiB).' +
          (tag === 'sandbox' ? ' Counts as one request per service against the rate limit; when the window has no room for all of them: 429 and nothing written.' : ' Not rate-limited.'),
        requestBody: { required: true, ...json({ type: 'object', additionalProperties: false, required: ['services'], properties: { services: { type: 'array', minItems: 1, maxItems: 1000, items: { $ref: '#/components/schemas/ServiceCreate' } } } }) },
        responses: {
          201: { description: 'created: the services, in the order of the request', ...json({ type: 'object', properties: { services: { type: 'array', items: { $ref: '#/components/schemas/Service' } } } }) },
          400: err('invalid body: the message names the index of the first invalid entry (`/services/<i>...`); nothing written'),
          401: err(tag === 'sandbox' ? 'no valid key' : 'no valid admin key or session'),
          ...(tag === 'sandbox' ? { 429: { ...r429, description: 'the rate-limit window has no room for every service of the batch; nothing written' } } : { 403: err('session without the CSRF token') }),
          413: err('body larger than MAX_BATCH_BODY_BYTES'),
          415: err('body not declared as JSON'),
          503: err('database unavailable (Retry-After)'),
        },
      },
    },
    [`${base}/{id}`]: {
      parameters: [p('id', 'service id')],
      patch: { ...sec, summary: 'Change a service (deprecated, locked, sunset_date, properties, iot, endpoint, capabilities)', requestBody: { required: true, ...json('#/components/schemas/ServicePatch') }, responses: { 200: { description: 'changed', headers: deprecationHeaders, ...json('#/components/schemas/Service') }, 400: err('invalid body'), 401: err('no valid key'), 404: err('unknown service'), 429: r429 } },
      delete: { ...sec, summary: 'Delete a service', responses: { 204: { description: 'deleted' }, 401: err('no valid key'), 404: err('unknown service'), 429: r429 } },
    },
    [`${base}/{id}/replacements`]: {
      parameters: [p('id', 'service id')],
      get: { ...sec, summary: 'Replacement candidates', responses: { 200: { description: 'ranked candidates', ...json({ type: 'array', items: { $ref: '#/components/schemas/Service' } }) }, 404: err('unknown service') } },
      post: { ...sec, summary: 'Add a replacement candidate from the same namespace', requestBody: { required: true, ...json('#/components/schemas/ReplacementAdd') }, responses: { 201: { description: 'the candidates after the addition', ...json({ type: 'array', items: { $ref: '#/components/schemas/Service' } }) }, 400: err('invalid candidate'), 404: err('unknown service'), 409: err('already a candidate'), 429: r429 } },
    },
  };
}

/** Conditional reads of searches and device queries (contract, "Search": conditional requests). */
const conditionalNote =
  ' Every 200 carries a strong `ETag` that changes whenever the page\'s bytes or its `Link` change (a hash of the documents\' digests, or of the bytes, and the `Link`); a request whose `If-None-Match` matches it ' +
  '(RFC 9110 weak comparison: `W/"x"` matches `"x"`; a list; `*`) gets `304` with the same Cache-Control, Vary and ETag and no body, ' +
  'answered from the node\'s cached page without running the search when it holds one. A keyed 304 counts against the rate limit like a 200.';
const ifNoneMatch = { name: 'If-None-Match', in: 'header', required: false, description: 'ETag(s) of a copy the client holds', schema: { type: 'string' } };
const etagHeader = { ETag: { description: 'strong validator of this page', schema: { type: 'string' } } };
const r304 = (headers: Obj) => ({ description: 'not modified: the If-None-Match still matches; same Cache-Control, Vary and ETag as the 200, no body', headers: { ...etagHeader, ...headers } });

/**
 * Every admin operation may answer 429: a Bearer key that is not the admin key (and every
 * login attempt) counts against LOGIN_FAILURES_PER_MINUTE per client address.
 */
function withAdminThrottle(paths: Obj): Obj {
  const r = { description: 'too many wrong admin keys from this client address (LOGIN_FAILURES_PER_MINUTE, Bearer and login alike)', headers: retryAfter, ...json('#/components/schemas/Error') };
  for (const [path, item] of Object.entries(paths)) {
    if (!path.startsWith('/admin/api/') && path !== '/admin/session') continue;
    for (const [method, op] of Object.entries(item as Obj)) {
      // (GET /admin/session reads the cookie only: no key, nothing counted)
      if (method === 'parameters' || typeof op !== 'object' || op === null || (path === '/admin/session' && method === 'get')) continue;
      const responses = (op as Obj).responses as Obj | undefined;
      if (responses && !responses['429']) responses['429'] = r;
    }
  }
  return paths;
}

export function openApiDocument(version: string): Obj {
  const sbParam = p('uuid', 'sandbox uuid');
  const sandboxWrites = serviceWrites('/sandbox/{uuid}/services', keyed, 'sandbox', [sbParam]);
  // the sandbox list/search shares the collection path with registration
  (sandboxWrites['/sandbox/{uuid}/services'] as Obj).get = {
    security: keyed,
    tags: ['sandbox'],
    summary: 'List or search the sandbox (same filters, paging and body as /services)',
    description: canonicalNote + ' The key is checked first; a 302 counts as one request.' + conditionalNote,
    parameters: [sbParam, ...searchParams, ifNoneMatch],
    responses: { 200: { description: 'services of this sandbox only', headers: { ...rateHeaders, ...etagHeader }, ...json({ type: 'array', items: { $ref: '#/components/schemas/Service' } }) }, 302: r302, 304: r304(rateHeaders), 400: err('invalid query'), 401: err('missing, malformed or foreign key'), 429: r429 },
  };
  (sandboxWrites['/sandbox/{uuid}/services/{id}'] as Obj).get = {
    security: keyed,
    tags: ['sandbox'],
    summary: 'Read a sandbox service',
    parameters: [sbParam],
    responses: { 200: { description: 'the service', headers: { ...rateHeaders, ...deprecationHeaders }, ...json('#/components/schemas/Service') }, 401: err('no valid key'), 404: err('unknown service'), 429: r429 },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Service registry',
      version,
      description:
        'Public registry of services described by capabilities, with isolated sandboxes. Errors always have the body `{"error":{"code","message"}}`. ' +
        `Rate-limit fields follow ${RATELIMIT_DRAFT} (RateLimit-Policy and RateLimit). Deprecation follows RFC 9745, Sunset RFC 8594. ` +
        'JSON bodies nested deeper than MAX_JSON_DEPTH (default 32) levels of arrays/objects are refused with 400 BAD_JSON naming the limit. ' +
        'Prometheus metrics are not part of this API: they are served on a separate listener (METRICS_HOST:METRICS_PORT, loopback by default), never on this port.',
    },
    'x-ratelimit-headers-draft': RATELIMIT_DRAFT,
    components: {
      securitySchemes: {
        sandboxKey: {
          type: 'http',
          scheme: 'bearer',
          description:
            'sandbox API key `<prefix>_sb_<random><checksum>`: prefix `[a-z0-9]{1,16}` from the sandbox name, 32 base62 characters from a CSPRNG (~190 bits), then 6 base62 characters (alphabet 0-9A-Za-z, most significant first, zero-padded) of the CRC32 (IEEE, as zlib) of everything before them. ' +
            'Secret scanners can match it with `\\b[a-z0-9]{1,16}_sb_[0-9A-Za-z]{38}\\b`. A key with a wrong checksum is refused without a look-up. Keys issued before the checksum (exactly 32 characters after `_sb_`) keep working.',
          'x-key-pattern': '^[a-z0-9]{1,16}_sb_[0-9A-Za-z]{38}$',
        },
        adminKey: { type: 'http', scheme: 'bearer', description: 'ADMIN_API_KEY' },
        adminSession: { type: 'apiKey', in: 'cookie', name: 'registry_admin', description: 'from POST /admin/session; non-GET calls also need X-CSRF-Token' },
      },
      schemas: {
        Service: S.service,
        DeviceBinding: S.deviceBinding,
        Error: S.error,
        Sandbox: S.sandbox,
        ServiceCreate: strip(S.serviceCreate),
        ServicePatch: strip(S.servicePatch),
        ReplacementAdd: strip(S.replacementAdd),
        SandboxCreate: strip(S.sandboxCreate),
        TierChange: strip(S.tierChange),
        AdminLogin: strip(S.adminLogin),
      },
    },
    paths: withAdminThrottle({
      '/services': {
        get: {
          tags: ['public'],
          summary: 'Search services',
          description:
            canonicalNote +
            ' Without a key (or with a malformed or unknown one) production services are returned; with a valid sandbox key, that sandbox\'s services only, counted against its rate limit. ' +
            'Every response carries `Vary: Authorization`; anonymous ones are `Cache-Control: public`, ones to a request with Authorization `private`.' +
            conditionalNote,
          parameters: [...searchParams, ifNoneMatch],
          responses: {
            200: { description: 'a page of services', headers: { Link: { description: '`<...after=...>; rel="next"` when more exist', schema: { type: 'string' } }, Vary: { schema: { type: 'string', const: 'Authorization' } }, ...etagHeader }, ...json({ type: 'array', items: { $ref: '#/components/schemas/Service' } }) },
            302: r302,
            304: r304({ Vary: { schema: { type: 'string', const: 'Authorization' } } }),
            400: err('undecodable or invalid query'),
            429: r429,
            503: { ...err('the index is being rebuilt or Redis is unreachable: searches are never answered from a partial index, nor from PostgreSQL (docs/decisions.md)'), headers: retryAfter },
          },
        },
      },
      '/services/changes': {
        get: {
          tags: ['public'],
          summary: 'Change feed (Server-Sent Events): service.created, service.updated, service.deprecated, service.deleted',
          description:
            'A `text/event-stream` that stays open. Anonymous (or with a key that is not a valid sandbox key): production; with a valid sandbox key: that sandbox only, ' +
            'counted once against its rate limit when the stream opens. Each event has `id:` (increasing), `event:` (the type) and `data:` (the service object as JSON; ' +
            '`{"id"}` for service.deleted). Without Last-Event-ID the stream starts at the newest event; with it, it first sends every later event of the namespace, ' +
            'in order, with no gap and no duplicate, then live ones. A comment line is sent every 15 s (configurable) to keep proxies from closing the stream. ' +
            'History is kept for CHANGES_RETENTION_HOURS (default 168).',
          security: [{}, { sandboxKey: [] }],
          parameters: [
            { name: 'Last-Event-ID', in: 'header', required: false, description: 'resume after this event id (EventSource sends it on reconnect)', schema: { type: 'string', pattern: '^[0-9]+$' } },
            q('lastEventId', 'the same as the Last-Event-ID header, for clients that cannot set headers', { type: 'string', pattern: '^[0-9]+$' }),
          ],
          responses: {
            200: {
              description: 'the event stream',
              headers: rateHeaders,
              content: { 'text/event-stream': { schema: { type: 'string', description: 'id: <n>\\nevent: service.updated\\ndata: {"id":...}\\n\\n' } } },
            },
            400: err('Last-Event-ID is not an event id'),
            429: {
              description:
                'over the sandbox rate limit (with RateLimit fields), or too many open streams: CHANGE_STREAMS_PER_ADDRESS (default 32) per client address, ' +
                'CHANGES_MAX_STREAMS (default 10000) in total, both per server process',
              headers: { ...rateHeaders, ...retryAfter },
              ...json('#/components/schemas/Error'),
            },
            503: { ...err('the server is shutting down'), headers: retryAfter },
          },
        },
      },
      '/services/{id}': {
        get: {
          tags: ['public'],
          summary: 'One production service; ignores credentials',
          parameters: [p('id', 'service id')],
          responses: { 200: { description: 'the service', headers: { ETag: { schema: { type: 'string' } }, ...deprecationHeaders }, ...json('#/components/schemas/Service') }, 304: { description: 'not modified' }, 404: err('unknown service') },
        },
      },
      '/services/{id}/replacements': {
        get: {
          tags: ['public'],
          summary: 'Replacement candidates, through the shared public cache (key: the path alone)',
          parameters: [p('id', 'service id')],
          responses: {
            200: {
              description: 'ranked candidates ([] when none)',
              headers: { 'Cache-Control': { schema: { type: 'string' } }, ETag: { schema: { type: 'string' } }, Age: { schema: { type: 'integer' } }, 'X-Cache': { schema: { type: 'string', enum: ['HIT', 'MISS'] } }, ...deprecationHeaders },
              ...json({ type: 'array', items: { $ref: '#/components/schemas/Service' } }),
            },
            304: { description: 'not modified (If-None-Match)' },
            404: err('unknown service'),
          },
        },
      },
      '/devices': {
        get: {
          tags: ['public'],
          summary: 'Device bindings of production IoT profiles: one per (service, deviceClass, protocol)',
          description: canonicalNote + conditionalNote,
          parameters: [...openApiParameters('devices'), ifNoneMatch],
          responses: { 200: { description: 'bindings', headers: etagHeader, ...json({ type: 'array', items: { $ref: '#/components/schemas/DeviceBinding' } }) }, 302: r302, 304: r304({}), 400: err('invalid query') },
        },
      },
      '/sandboxes': {
        post: {
          tags: ['sandbox'],
          summary: 'Create a sandbox (throttled per client address); the API key is shown once',
          requestBody: { required: true, ...json('#/components/schemas/SandboxCreate') },
          responses: { 201: { description: 'created', ...json('#/components/schemas/Sandbox') }, 400: err('invalid body'), 429: { description: 'too many creations', headers: retryAfter, ...json('#/components/schemas/Error') } },
        },
      },
      '/sandbox/{uuid}/dashboard': {
        get: { tags: ['sandbox'], summary: 'Sandbox dashboard data: name, tier, rateLimit, serviceCount, location, counters', parameters: [sbParam], responses: { 200: { description: 'dashboard data', ...json({ type: 'object' }) }, 404: err('unknown sandbox') } },
      },
      '/sandbox/{uuid}/poll': {
        get: {
          tags: ['sandbox'],
          summary: 'Request counters for live charts; JSON whatever Accept says; not counted against the limit',
          parameters: [sbParam],
          responses: {
            200: {
              description: 'counters',
              ...json({
                type: 'object',
                required: ['uuid', 'now', 'total', 'rateLimit', 'bucketSeconds', 'buckets'],
                properties: { uuid: { type: 'string' }, now: { type: 'integer', description: 'server time, ms' }, total: { type: 'integer', description: 'cumulative requests' }, rateLimit: { type: 'integer' }, bucketSeconds: { const: 5 }, buckets: { type: 'array', items: { type: 'integer' }, description: 'requests in each of the last 72 5-second buckets, oldest first' }, windowTotal: { type: 'integer' }, rejected: { type: 'integer' }, tier: { type: 'string' } },
              }),
            },
            404: err('unknown sandbox'),
          },
        },
      },
      ...sandboxWrites,
      ...serviceWrites('/admin/api/services', admin, 'admin'),
      '/admin/session': {
        post: { tags: ['admin'], summary: 'Log in with the admin key; sets the HttpOnly session cookie', requestBody: { required: true, ...json('#/components/schemas/AdminLogin') }, responses: { 200: { description: 'logged in', ...json({ type: 'object', properties: { csrfToken: { type: 'string' } } }) }, 401: err('wrong key') } },
        get: { tags: ['admin'], summary: "The session's CSRF token again (the dashboard keeps it in memory only; after a reload it asks here with its cookie)", responses: { 200: { description: 'the token', ...json({ type: 'object', properties: { csrfToken: { type: 'string' } } }) }, 401: err('no session') } },
        delete: { tags: ['admin'], security: admin, summary: 'Log out (cookie callers send X-CSRF-Token)', responses: { 204: { description: 'logged out' }, 401: err('no session'), 403: err('CSRF token missing or wrong') } },
      },
      '/admin/api/stats': { get: { tags: ['admin'], security: admin, summary: 'Global statistics', responses: { 200: { description: 'stats', ...json({ type: 'object' }) }, 401: err('not authenticated') } } },
      '/admin/api/sandboxes': {
        get: {
          tags: ['admin'],
          security: admin,
          summary: 'A page of sandbox summaries',
          parameters: [q('tier', 'only this tier'), q('page', '0-based page', { type: 'integer', minimum: 0 })],
          responses: { 200: { description: 'page', ...json({ type: 'object', required: ['items', 'total', 'pageSize', 'page', 'displayPage', 'hasPrev', 'hasNext', 'prevPage', 'nextPage'] }) }, 400: err('unknown tier or bad page'), 401: err('not authenticated') },
        },
      },
      '/admin/api/locations': { get: { tags: ['admin'], security: admin, summary: 'Located sandboxes for the overview map (newest 2000): uuid, name, tier, lat, lon', responses: { 200: { description: 'located sandboxes', ...json({ type: 'array', items: { type: 'object' } }) }, 401: err('not authenticated') } } },
      '/admin/api/sandboxes/{uuid}': { get: { tags: ['admin'], security: admin, parameters: [sbParam], summary: 'Sandbox detail', responses: { 200: { description: 'detail', ...json({ type: 'object' }) }, 401: err('not authenticated'), 404: err('unknown sandbox') } } },
      '/admin/api/sandboxes/{uuid}/tier': {
        post: { tags: ['admin'], security: admin, parameters: [sbParam], summary: 'Change the tier; the new limit applies to the next request', requestBody: { required: true, ...json('#/components/schemas/TierChange') }, responses: { 200: { description: 'summary', ...json('#/components/schemas/Sandbox') }, 400: err('unknown tier'), 401: err('not authenticated'), 403: err('CSRF token missing or wrong'), 404: err('unknown sandbox') } },
      },
      '/openapi.json': { get: { tags: ['meta'], summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1' } } } },
      '/livez': { get: { tags: ['meta'], summary: 'Liveness', responses: { 200: { description: 'alive' } } } },
      '/readyz': {
        get: {
          tags: ['meta'],
          summary: 'Readiness: 503 until PostgreSQL has answered and a complete Redis index is live; 503 while the index is rebuilt, while Redis is unreachable and from the moment a shutdown begins',
          description: 'A PostgreSQL outage after start-up keeps readiness at 200 with `"postgres": false` in the body: reads go on from Redis, writes answer 503 with Retry-After.',
          responses: { 200: { description: 'ready' }, 503: { ...err('not ready'), headers: retryAfter } },
        },
      },
    }),
  };
}
