// The admin operations of the OpenAPI document (openapi.ts) other than the service writes
// (openapi-namespace.ts): the session (log in, its CSRF token, log out), statistics, the
// sandbox list, detail and locations, and the tier change.
import { adminErrors, empty, headers as H, json, ok, publicErrors, ref, security, uuidParam, type Obj } from './parts.js';

/** The admin paths; `tierIn` is the schema of a configured tier (the list's filter). */
export function adminPaths(tierIn: Obj): Obj {
  return {
    '/admin/session': {
      post: {
        operationId: 'logIn',
        security: security.public,
        tags: ['admin'],
        summary: 'Log in with the admin key; sets the HttpOnly session cookie',
        requestBody: { required: true, ...json(ref('AdminLogin')) },
        responses: {
          200: ok('logged in', ref('CsrfToken'), { ...H.cacheControl('no-store'), ...H.setCookie('the session: HttpOnly, SameSite=Strict, Path=/admin, Secure unless COOKIE_SECURE=false') }),
          ...publicErrors([400, 401, 413, 415, 429]),
        },
      },
      get: {
        operationId: 'getSessionToken',
        security: [{ adminSession: [] }],
        tags: ['admin'],
        summary: "The session's CSRF token again (the dashboard keeps it in memory only; after a reload it asks here with its cookie)",
        responses: { 200: ok('the token', ref('CsrfToken'), H.cacheControl('no-store')), ...publicErrors([401]) },
      },
      delete: {
        operationId: 'logOut',
        security: security.admin,
        tags: ['admin'],
        summary: 'Log out (cookie callers send X-CSRF-Token)',
        responses: { 204: empty('logged out; the cookie is cleared', { ...H.cacheControl('no-store'), ...H.setCookie('clears the session cookie') }), ...adminErrors([400, 403, 413]) },
      },
    },
    '/admin/api/stats': {
      get: { operationId: 'getStats', security: security.admin, tags: ['admin'], summary: 'Global statistics', responses: { 200: ok('statistics', ref('Stats'), H.cacheControl('no-store')), ...adminErrors([]) } },
    },
    '/admin/api/sandboxes': {
      get: {
        operationId: 'listSandboxes',
        security: security.admin,
        tags: ['admin'],
        summary: 'A page of sandbox summaries, every paging field computed on the server',
        parameters: [
          { name: 'tier', in: 'query', required: false, description: 'only this tier (empty: every tier)', schema: { oneOf: [tierIn, { type: 'string', maxLength: 0 }] } },
          { name: 'page', in: 'query', required: false, description: '0-based page (empty: 0)', schema: { type: 'integer', minimum: 0, maximum: 1_000_000 } },
        ],
        responses: { 200: ok('a page', ref('SandboxPage'), H.cacheControl('no-store')), ...adminErrors([400]) },
      },
    },
    '/admin/api/locations': {
      get: {
        operationId: 'listLocations',
        security: security.admin,
        tags: ['admin'],
        summary: 'Located sandboxes for the overview map (newest 2000)',
        responses: { 200: ok('located sandboxes', { type: 'array', items: ref('LocatedSandbox') }, H.cacheControl('no-store')), ...adminErrors([]) },
      },
    },
    '/admin/api/sandboxes/{uuid}': {
      parameters: [uuidParam],
      get: { operationId: 'getSandboxDetail', security: security.admin, tags: ['admin'], summary: 'Sandbox detail', responses: { 200: ok('detail', ref('SandboxDetail'), H.cacheControl('no-store')), ...adminErrors([404]) } },
    },
    '/admin/api/sandboxes/{uuid}/tier': {
      parameters: [uuidParam],
      post: {
        operationId: 'changeTier',
        security: security.admin,
        tags: ['admin'],
        summary: 'Change the tier; the new limit applies to the next request',
        requestBody: { required: true, ...json(ref('TierChange')) },
        responses: { 200: ok('the summary with the new tier and limit', ref('SandboxSummary'), H.cacheControl('no-store')), ...adminErrors([400, 403, 404, 413, 415]) },
      },
    },
  };
}
