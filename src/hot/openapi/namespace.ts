// The operations of a namespace's services in the OpenAPI document (openapi.ts): the keyed
// sandbox routes and the admin routes over production are one set of operations that differ
// in their base path, security, operation ids and error statuses; and the heartbeat, whose
// credential is the service's own token.
import { RATELIMIT_DRAFT } from '../ratelimit/index.js';
import { openApiParameters } from '../domain/dimensions.js';
import {
  arrayOf,
  canonicalNote,
  conditionalNote,
  empty,
  heldNote,
  errors,
  headers as H,
  json,
  ok,
  params as P,
  ref,
  searchResponses,
  security as SECURITY,
  serviceIdParam,
  uuidParam,
  type Obj,
} from './parts.js';

/** The write routes of a namespace: `/sandbox/{uuid}/services…` (keyed) or `/admin/api/services…`. */
export function serviceWrites(base: string, kind: 'sandbox' | 'admin'): Obj {
  const sandbox = kind === 'sandbox';
  const security = sandbox ? SECURITY.keyed : SECURITY.admin;
  const tags = [sandbox ? 'sandbox' : 'admin'];
  const op = (name: string) => `${name}${sandbox ? 'InSandbox' : 'InProduction'}`;
  const pre = sandbox ? [uuidParam] : [];
  // (sent on every answer to an admitted keyed request, except while Redis is unreachable:
  // the limiter then fails open, without them)
  const rate = sandbox ? H.rate(false) : {};
  // answers of the admin write routes: cookie callers need the CSRF token (403); wrong
  // Bearer admin keys count against LOGIN_FAILURES_PER_MINUTE (429)
  const authErr = sandbox ? [401, 429] : [401, 403, 429];
  const e = (statuses: number[]) => errors([...statuses, 414, 503], { rate: sandbox });
  const body = [400, 413, 415];
  // a sandbox's registrations stop at its tier's quota (production has none)
  const quota = (what: string) =>
    sandbox
      ? { 409: { ...e([409])[409], description: `the sandbox's service quota (serviceQuota of the dashboard data: TIER_MAX_SERVICES of its tier) has no room for ${what}: QUOTA_EXCEEDED, the message naming the quota and the count; nothing written` } }
      : {};
  // from a registration to its reads (OpenAPI links: a generated client can follow them)
  const links = sandbox
    ? {
        readService: { operationId: 'getServiceInSandbox', parameters: { uuid: '$request.path.uuid', id: '$response.body#/id' }, description: 'read the service back (keyed)' },
        readReplacements: { operationId: 'listReplacementsInSandbox', parameters: { uuid: '$request.path.uuid', id: '$response.body#/id' }, description: 'its replacement candidates (keyed)' },
      }
    : {
        readService: { operationId: 'getService', parameters: { id: '$response.body#/id' }, description: 'the public read of the new production service' },
        readReplacements: { operationId: 'getReplacements', parameters: { id: '$response.body#/id' }, description: 'its replacement candidates (public, cached)' },
      };
  const out: Obj = {
    [base]: {
      post: {
        operationId: op('registerService'),
        security,
        tags,
        summary: 'Register a service (with `ttl`: a lease; the 201 then carries `heartbeatToken`, shown once)',
        description: 'The endpoint is stored and returned in its WHATWG URL serialisation. Acknowledged after PostgreSQL committed.',
        parameters: pre,
        requestBody: { required: true, ...json(ref('ServiceCreate')) },
        responses: {
          201: ok('created', ref('Service'), { ...H.cacheControl('no-store'), ...H.location('the new service'), ...H.deprecation, ...rate }, { links }),
          ...e([...body, ...authErr]),
          ...quota('it'),
        },
      },
    },
    [`${base}/batch`]: {
      post: {
        operationId: op('registerServices'),
        security,
        tags,
        summary: 'Register 1-1000 services at once: all or nothing (one transaction), answered in order',
        description:
          'Its own body limit (MAX_BATCH_BODY_BYTES, default 4 MiB). ' +
          (sandbox ? 'Counts as one request per service against the rate limit; when the window has no room for all of them: 429 and nothing written. When the sandbox\'s service quota has no room for all of them: 409 and nothing written. The key is checked before the body is read (a refused key costs no parsing and counts nothing); a batch refused after that (400) counts as one request.' : 'Not rate-limited.'),
        parameters: pre,
        requestBody: { required: true, ...json({ type: 'object', additionalProperties: false, required: ['services'], properties: { services: { type: 'array', minItems: 1, maxItems: 1000, items: ref('ServiceCreate') } } }) },
        responses: {
          201: ok('created: the services, in the order of the request', { type: 'object', additionalProperties: false, required: ['services'], properties: { services: arrayOf('Service') } }, { ...H.cacheControl('no-store'), ...rate }),
          ...e([...body, ...authErr]),
          400: { ...e([400])[400], description: 'invalid body: the message names the index of the first invalid entry (`/services/<i>…`); nothing written' },
          ...quota('every one of them (all or nothing: concurrent batches never pass it together)'),
        },
      },
    },
    [`${base}/{id}`]: {
      parameters: [...pre, serviceIdParam],
      patch: {
        operationId: op('patchService'),
        security,
        tags,
        summary:
          'Change a service (deprecated, locked, sunset_date, properties, iot, endpoint, capabilities, ttl, deregisterAfter; `"ttl": null` drops the lease; a ttl on a service without a token returns `heartbeatToken`)',
        requestBody: { required: true, ...json(ref('ServicePatch')) },
        responses: { 200: ok('changed', ref('Service'), { ...H.cacheControl('no-store'), ...H.deprecation, ...rate }), ...e([...body, ...authErr, 404]) },
      },
      delete: {
        operationId: op('deleteService'),
        security,
        tags,
        summary: 'Delete a service (it leaves every replacement list)',
        responses: { 204: empty('deleted', { ...H.cacheControl('no-store'), ...rate }), ...e([400, 413, ...authErr, 404]) },
      },
    },
    [`${base}/{id}/heartbeat-token`]: {
      parameters: [...pre, serviceIdParam],
      post: {
        operationId: op('issueHeartbeatToken'),
        security,
        tags,
        summary: 'Issue a new heartbeat token for a leased service (the previous one stops working)',
        responses: { 201: ok('the new token, shown once', ref('HeartbeatToken'), { ...H.cacheControl('no-store'), ...rate }), ...e([400, 413, ...authErr, 404, 409]) },
      },
    },
    [`${base}/{id}/replacements`]: {
      parameters: [...pre, serviceIdParam],
      get: {
        operationId: op('listReplacements'),
        security,
        tags,
        summary: 'Replacement candidates, ranked as registered',
        responses: { 200: ok('ranked candidates (`[]` when none)', arrayOf('Service'), { ...H.cacheControl('no-store'), ...rate }), ...e([...authErr.filter((s) => s !== 403), 404]) },
      },
      post: {
        operationId: op('addReplacement'),
        security,
        tags,
        summary: 'Add a replacement candidate from the same namespace',
        requestBody: { required: true, ...json(ref('ReplacementAdd')) },
        responses: { 201: ok('the candidates after the addition', arrayOf('Service'), { ...H.cacheControl('no-store'), ...rate }), ...e([...body, ...authErr, 404, 409]) },
      },
    },
  };
  if (sandbox) {
    (out[base] as Obj).get = {
      operationId: 'searchSandbox',
      security,
      tags,
      summary: 'List or search the sandbox (same filters, paging and body as /services)',
      description: canonicalNote + ' The key is checked first; a 302 counts as one request.' + conditionalNote + heldNote,
      parameters: [uuidParam, ...openApiParameters('services'), P.ifNoneMatch, P.prefer],
      responses: { ...searchResponses('Service', { vary: true, rate: true, extraErrors: [], varyOnErrors: false }), ...errors([401]), ...errors([429], { rate: true }) },
    };
    (out[`${base}/{id}`] as Obj).get = {
      operationId: 'getServiceInSandbox',
      security,
      tags,
      summary: 'Read a sandbox service',
      description: "Its ETag is the document's: a heartbeat that changes nothing keeps it, a status change or any other write changes it. A 304 counts against the rate limit." + heldNote + ' A held read of a service that is deleted meanwhile is answered 404.',
      parameters: [P.ifNoneMatch, P.prefer],
      responses: {
        200: ok('the service', ref('Service'), { ...H.cacheControl('private, no-store'), ...H.etag, ...H.deprecation, ...rate, ...H.preferenceApplied }),
        304: empty('not modified (If-None-Match; to a held request: when its wait ended); no body', { ...H.cacheControl('private, no-store'), ...H.etag, ...H.deprecation, ...rate, ...H.preferenceApplied }),
        ...e([401, 429]),
        ...errors([404], { rate: true, extra: H.preferenceApplied }),
      },
    };
  }
  return out;
}

/** PUT …/services/{id}/heartbeat: the service's heartbeat token is its only credential. */
export function heartbeatOp(kind: 'sandbox' | 'production'): Obj {
  const sandbox = kind === 'sandbox';
  return {
    operationId: sandbox ? 'heartbeatInSandbox' : 'heartbeat',
    security: [{ heartbeatToken: [] }],
    tags: [sandbox ? 'sandbox' : 'public'],
    summary: "Heartbeat: renew the service's lease (optional body: the status it reports, default passing)",
    description:
      'A heartbeat that does not change the status writes nothing durable and changes no document, ETag or cached page. ' +
      'One that changes it (critical → passing, or a reported `critical`) is a write like any other (change feed `service.updated`). ' +
      "Anything but this service's heartbeat token (a sandbox key, another service's token, a service without a lease) is 401 and changes nothing." +
      (sandbox
        ? " Counts against the sandbox's rate limit once the token is verified. The 204 carries `RateLimit-Policy` and `RateLimit` only once fewer than half the window's requests are left " +
          `(${RATELIMIT_DRAFT} §6.2: fields only when a quota is close to exhaustion); a 429 always carries them.`
        : ''),
    requestBody: { required: false, ...json(ref('Heartbeat')) },
    responses: {
      204: empty('renewed', sandbox ? H.rate(false) : {}),
      ...errors([400, 401, 413, 414, 415, 503], { rate: false }),
      ...(sandbox ? errors([429], { rate: true }) : {}),
    },
  };
}
