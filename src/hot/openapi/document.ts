// The OpenAPI 3.1 document served at /openapi.json: its head, the public, sandbox and meta
// operations, built from the same schemas that ajv compiles (components: openapi-components.ts),
// so the two cannot drift apart, from the table of search dimensions (domain/dimensions.ts:
// the query parameters) and from the reusable pieces of openapi-parts.ts; the admin
// operations are in openapi-admin.ts, a namespace's service operations in
// openapi-namespace.ts. Every status an operation answers is listed: the test harness
// (test/helpers/openapi-check.ts) checks every response the HTTP tests see against it.
import { openApiParameters } from '../domain/dimensions.js';
import { RATELIMIT_DRAFT } from '../ratelimit/index.js';
import {
  arrayOf,
  canonicalNote,
  conditionalNote,
  empty,
  heldNote,
  errors,
  headers as H,
  headersTooLarge,
  json,
  ok,
  params as P,
  publicErrors,
  ref,
  searchResponses,
  security,
  serviceIdParam,
  uuidParam,
  type Obj,
} from './parts.js';
import { adminPaths } from './admin.js';
import { openApiComponents } from './components.js';
import { heartbeatOp, serviceWrites } from './namespace.js';
import { discoveryPaths } from './discovery.js';

export interface OpenApiOptions {
  /** configured tier names (TIERS); the contract's defaults when not given */
  tiers?: readonly string[];
}


export function openApiDocument(version: string, opts: OpenApiOptions = {}): Obj {
  const tiers = [...(opts.tiers ?? ['free', 'pro', 'enterprise'])];
  const tierIn = { type: 'string', enum: tiers, description: 'a configured tier (TIERS)' };
  return withProxyRefusals({
    openapi: '3.1.0',
    info: {
      title: 'Service registry',
      version,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      description:
        'Public registry of services described by capabilities, with isolated sandboxes. Errors always have the body `{"error":{"code","message"}}` (code from the error registry). ' +
        `Rate-limit fields follow ${RATELIMIT_DRAFT} (RateLimit-Policy and RateLimit). Deprecation follows RFC 9745, Sunset RFC 8594. ` +
        'JSON bodies nested deeper than MAX_JSON_DEPTH (default 32) levels of arrays/objects are refused with 400 BAD_JSON naming the limit. ' +
        'Any route answers 414 to a URL longer than 8192 bytes, 400 BAD_REQUEST to a path holding an encoded "/" or "." (%2F, %2E, any case) or a "." or ".." segment (a path a proxy could read as another: never resolved, always refused), 405 (with Allow) to a method it does not have, and 503 with Retry-After during an overload or outage; unknown paths get 404 (under /admin/api/ after the admin check: 401, 403 or 429 first). ' +
        'Prometheus metrics are not part of this API: they are served on a separate listener (METRICS_HOST:METRICS_PORT, loopback by default), never on this port.',
    },
    servers: [{ url: 'http://localhost:8080', description: 'a local `make run` (PORT, default 8080); behind the shipped reverse proxy, its address' }],
    'x-ratelimit-headers-draft': RATELIMIT_DRAFT,
    tags: [
      { name: 'public', description: 'discovery without credentials' },
      { name: 'sandbox', description: 'sandboxes and their keyed registries' },
      { name: 'admin', description: 'administration: admin key or session cookie' },
      { name: 'discovery', description: 'the protocols other tools speak: Prometheus HTTP service discovery and a Consul-compatible catalog (the DNS server: docs/operations.md)' },
      { name: 'meta', description: 'the document, liveness and readiness' },
    ],
    components: openApiComponents(tiers, tierIn),
    // every admin operation lists 429 (wrong Bearer keys count against LOGIN_FAILURES_PER_MINUTE): adminErrors(), serviceWrites()
    paths: {
      '/services': {
        get: {
          operationId: 'searchServices',
          security: [{}, { sandboxKey: [] }],
          tags: ['public'],
          summary: 'Search services',
          description:
            canonicalNote +
            " Without a key (or with a malformed or unknown one) production services are returned; with a valid sandbox key, that sandbox's services only, counted against its rate limit (the 200 then carries RateLimit and RateLimit-Policy). " +
            'Every response carries `Vary: Authorization`; anonymous ones are `Cache-Control: public`, ones to a request with Authorization `private`. ' +
            'Searches are never answered from a partial index nor from PostgreSQL: 503 while the index is rebuilt or Redis is unreachable.' +
            conditionalNote +
            heldNote,
          parameters: [...openApiParameters('services'), P.ifNoneMatch, P.prefer],
          responses: (() => {
            const r = searchResponses('Service', { vary: true, rate: false, extraErrors: [429] });
            // keyed: the rate headers too (not on anonymous answers, so not required)
            const withRate = (x: Obj) => ({ ...x, headers: { ...(x.headers as Obj), ...H.rate(false) } });
            return { ...r, 200: withRate(r[200]!), 302: withRate(r[302]!), 304: withRate(r[304]!), 429: { ...r[429], headers: { ...(r[429]!.headers as Obj), ...H.rate(true) } } };
          })(),
        },
      },
      '/services/changes': {
        get: {
          operationId: 'streamChanges',
          security: [{}, { sandboxKey: [] }],
          tags: ['public'],
          summary: 'Change feed (Server-Sent Events): service.created, service.updated, service.deprecated, service.deleted',
          description:
            'A `text/event-stream` that stays open. Anonymous (or with a key that is not a valid sandbox key): production; with a valid sandbox key: that sandbox only, ' +
            'counted once against its rate limit when the stream opens. Each event has `id:` (increasing), `event:` (the type) and `data:` (the service object as JSON; ' +
            '`{"id"}` for service.deleted). Without Last-Event-ID the stream starts at the newest event; with it, it first sends every later event of the namespace, ' +
            'in order, with no gap and no duplicate, then live ones. A comment line is sent every 15 s (configurable) to keep proxies from closing the stream. ' +
            'History is kept for CHANGES_RETENTION_HOURS (default 168). Open streams are capped per client address (CHANGE_STREAMS_PER_ADDRESS: 429) and in total (503).',
          parameters: [
            { name: 'Last-Event-ID', in: 'header', required: false, description: 'resume after this event id (EventSource sends it on reconnect)', schema: { type: 'string', pattern: '^\\d{1,15}$' } },
            { name: 'lastEventId', in: 'query', required: false, description: 'the same as the Last-Event-ID header, for clients that cannot set headers', schema: { type: 'string', pattern: '^\\d{1,15}$' } },
          ],
          responses: {
            200: {
              description: 'the event stream',
              headers: { ...H.cacheControl('no-store'), ...H.varyAuthorization, ...H.rate(false) },
              content: { 'text/event-stream': { schema: { type: 'string', description: 'id: <n>\\nevent: service.updated\\ndata: {"id":...}\\n\\n' } } },
            },
            ...errors([400, 414], { text: { 400: 'Last-Event-ID is not an event id' } }),
            ...errors([429], {
              text: { 429: 'over the sandbox rate limit (with RateLimit fields), or too many open streams: CHANGE_STREAMS_PER_ADDRESS (default 32) per client address, CHANGES_MAX_STREAMS (default 10000) in total, both per server process' },
              extra: H.rate(false),
            }),
            ...errors([503], { text: { 503: 'the server is shutting down, or an outage' } }),
          },
        },
      },
      '/services/{id}': {
        parameters: [serviceIdParam],
        get: {
          operationId: 'getService',
          security: security.public,
          tags: ['public'],
          summary: 'One production service; ignores credentials',
          description: "Its ETag is the document's." + heldNote + ' A held read of a service that is deleted meanwhile is answered 404.',
          parameters: [P.ifNoneMatch, P.prefer],
          responses: {
            200: ok('the service', ref('Service'), { ...H.cacheControl(), ...H.etag, ...H.deprecation, ...H.preferenceApplied }),
            304: empty('not modified (If-None-Match; to a held request: when its wait ended); no body', { ...H.cacheControl(), ...H.etag, ...H.deprecation, ...H.preferenceApplied }),
            ...errors([404], { extra: H.preferenceApplied }),
            ...publicErrors([429]),
          },
        },
      },
      '/services/{id}/replacements': {
        parameters: [serviceIdParam],
        get: {
          operationId: 'getReplacements',
          security: security.public,
          tags: ['public'],
          summary: 'Replacement candidates, through the shared public cache (key: the path alone); ignores credentials',
          parameters: [P.ifNoneMatch],
          responses: (() => {
            const h = {
              ...H.cacheControl(),
              ...H.etag,
              Age: { description: 'seconds this entry has been in the cache', required: true, schema: { type: 'string', pattern: '^\\d+$' } },
              'X-Cache': { description: 'whether this response came from the cache', required: true, schema: { type: 'string', enum: ['HIT', 'MISS'] } },
              ...H.deprecation,
            };
            return { 200: ok('ranked candidates (`[]` when none)', arrayOf('Service'), h), 304: empty('not modified (If-None-Match); no body', h), ...publicErrors([404]) };
          })(),
        },
      },
      '/services/{id}/heartbeat': {
        parameters: [serviceIdParam],
        put: heartbeatOp('production'),
      },
      '/sandbox/{uuid}/services/{id}/heartbeat': {
        parameters: [uuidParam, serviceIdParam],
        put: heartbeatOp('sandbox'),
      },
      '/devices': {
        get: {
          operationId: 'searchDevices',
          security: security.public,
          tags: ['public'],
          summary: 'Device bindings of production IoT profiles: one per (service, deviceClass, protocol)',
          description: canonicalNote + conditionalNote + heldNote,
          parameters: [...openApiParameters('devices'), P.ifNoneMatch, P.prefer],
          responses: searchResponses('DeviceBinding', { vary: false, rate: false, extraErrors: [429] }),
        },
      },
      '/sandboxes': {
        post: {
          operationId: 'createSandbox',
          security: security.public,
          tags: ['sandbox'],
          summary: 'Create a sandbox (throttled per client address); the API key is shown once',
          requestBody: { required: true, ...json(ref('SandboxCreate')) },
          responses: {
            201: ok('created; `apiKey` appears here only', ref('SandboxCreated'), { ...H.cacheControl('no-store'), ...H.location('its dashboard data') }),
            ...publicErrors([400, 413, 415, 429]),
          },
        },
      },
      '/sandbox/{uuid}/dashboard': {
        parameters: [uuidParam],
        get: {
          operationId: 'getDashboard',
          security: security.public,
          tags: ['sandbox'],
          summary: 'Sandbox dashboard data: name, tier, rateLimit, serviceQuota and its use (serviceCount), location, counters',
          responses: { 200: ok('dashboard data', ref('Dashboard'), H.cacheControl('no-store')), ...publicErrors([404]) },
        },
      },
      '/sandbox/{uuid}/poll': {
        parameters: [uuidParam],
        get: {
          operationId: 'pollSandbox',
          security: security.public,
          tags: ['sandbox'],
          summary: 'Request counters for live charts; JSON whatever Accept says; not counted against the limit',
          responses: { 200: ok('counters', ref('Poll'), H.cacheControl('no-store')), ...publicErrors([404]) },
        },
      },
      ...discoveryPaths(),
      ...serviceWrites('/sandbox/{uuid}/services', 'sandbox'),
      ...serviceWrites('/admin/api/services', 'admin'),
      ...adminPaths(tierIn),
      '/openapi.json': {
        get: {
          operationId: 'getOpenApi',
          security: security.public,
          tags: ['meta'],
          summary: 'This document',
          responses: { 200: ok('OpenAPI 3.1', { type: 'object', required: ['openapi', 'info', 'paths'], properties: { openapi: { const: '3.1.0' }, info: { type: 'object' }, paths: { type: 'object' } } }, H.cacheControl()), ...errors([414]) },
        },
      },
      '/livez': {
        get: { operationId: 'getLiveness', security: security.public, tags: ['meta'], summary: 'Liveness', responses: { 200: ok('alive', ref('Liveness'), H.cacheControl('no-store')), ...errors([414]) } },
      },
      '/readyz': {
        get: {
          operationId: 'getReadiness',
          security: security.public,
          tags: ['meta'],
          summary: 'Readiness: 200 while discovery reads are answered (from the Redis index, or from PostgreSQL while the index is away); 503 when neither can answer them and from the moment a shutdown begins',
          description: 'A backend away keeps readiness at 200 with `"status": "degraded"` and the backend named in `degraded`: with Redis unreachable or the index missing or being rebuilt, reads answer from PostgreSQL (`"reads": "postgres"`, bounded: 503 `OVERLOADED` with Retry-After beyond) and writes go on; with PostgreSQL unreachable after start-up, reads go on from Redis and writes answer 503 with Retry-After.',
          responses: {
            200: ok('ready, or degraded with reads served', ref('Readiness'), H.cacheControl('no-store')),
            503: ok('not ready (the same body, `status: "not ready"`, `reads: "none"`)', ref('Readiness'), { ...H.cacheControl('no-store'), ...H.retryAfter }),
            ...errors([414]),
          },
        },
      },
    },
  });
}

/** Every operation may meet the shipped proxy's 431 (openapi-parts.ts headersTooLarge). */
function withProxyRefusals(doc: Obj): Obj {
  for (const item of Object.values(doc.paths as Record<string, Obj>)) {
    for (const method of ['get', 'put', 'post', 'patch', 'delete']) if (item[method]) ((item[method] as Obj).responses as Obj)[431] = headersTooLarge;
  }
  return doc;
}
