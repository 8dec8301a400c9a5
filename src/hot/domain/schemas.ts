// JSON Schemas of every request body and response object. ajv compiles the request ones
// once at start-up (validation.ts) and /openapi.json publishes all of them
// (openapi-components.ts): one source, so the document and the validator cannot drift apart.
import { ERRORS, type ErrorCode } from './errors.js';

const tokenIn = { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$', description: 'token: 1-64 of [a-z0-9._-], lower-cased on input' } as const;
const token = { type: 'string', pattern: '^[a-z0-9._-]{1,64}$' } as const;
// property values: 1-256 chars, no control characters
const propValue = { type: 'string', minLength: 1, maxLength: 256, pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f]*$' } as const;
// a calendar day (format: date checks the day exists, 2030-02-30 is refused) of years 0001-9999
// (PostgreSQL has no year 0)
const date = {
  type: ['string', 'null'],
  format: 'date',
  pattern: '^(?!0000)\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])$',
  description: 'YYYY-MM-DD, a day that exists, year 0001-9999',
} as const;

export const iotProfileIn = {
  type: 'object',
  additionalProperties: false,
  required: ['deviceClasses', 'protocols'],
  properties: {
    deviceClasses: { type: 'array', minItems: 1, maxItems: 32, items: tokenIn },
    protocols: { type: 'array', minItems: 1, maxItems: 32, items: tokenIn },
  },
} as const;

const propertiesIn = {
  type: 'object',
  maxProperties: 32,
  propertyNames: tokenIn,
  additionalProperties: propValue,
} as const;

// leases (contract "Liveness"): whole seconds
const ttl = { type: 'integer', minimum: 5, maximum: 86400, description: 'lease: seconds without a heartbeat before the service turns critical' } as const;
const deregisterAfter = { type: 'integer', minimum: 60, maximum: 604800, description: 'seconds a service may stay critical before it is deleted as by DELETE' } as const;

const endpoint = {
  type: 'string',
  minLength: 8,
  maxLength: 2048,
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\u0000-\\u0020\\u007f-\\u009f]*$',
  description:
    'absolute http(s) URL; stored and returned as its WHATWG URL serialisation (lower-case scheme and host, IDN hosts as punycode, default port dropped). ' +
    'User info (`user:pass@`), whitespace and control characters are refused; at most 2048 characters once serialised.',
} as const;

export const serviceCreate = {
  $id: 'ServiceCreate',
  type: 'object',
  additionalProperties: false,
  required: ['endpoint'],
  properties: {
    endpoint,
    capabilities: { type: 'array', minItems: 1, maxItems: 32, items: tokenIn },
    capability: tokenIn,
    properties: propertiesIn,
    iot: { oneOf: [iotProfileIn, { type: 'null' }] },
    deprecated: { type: 'boolean' },
    locked: { type: 'boolean' },
    sunset_date: date,
    ttl,
    deregisterAfter,
  },
  oneOf: [{ required: ['capabilities'], not: { required: ['capability'] } }, { required: ['capability'], not: { required: ['capabilities'] } }],
} as const;

export const servicePatch = {
  $id: 'ServicePatch',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    endpoint,
    capabilities: { type: 'array', minItems: 1, maxItems: 32, items: tokenIn },
    properties: propertiesIn,
    iot: { oneOf: [iotProfileIn, { type: 'null' }] },
    deprecated: { type: 'boolean' },
    locked: { type: 'boolean' },
    sunset_date: date,
    ttl: { oneOf: [ttl, { type: 'null', description: 'drops the lease (status unknown)' }] },
    deregisterAfter: { oneOf: [deregisterAfter, { type: 'null' }] },
  },
} as const;

export const heartbeat = {
  $id: 'Heartbeat',
  type: 'object',
  additionalProperties: false,
  properties: { status: { type: 'string', enum: ['passing', 'critical'], description: 'default passing' } },
} as const;

export const replacementAdd = {
  $id: 'ReplacementAdd',
  type: 'object',
  additionalProperties: false,
  required: ['serviceId'],
  properties: { serviceId: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' } },
} as const;

export const sandboxCreate = {
  $id: 'SandboxCreate',
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    // no control characters: a NUL cannot be stored in PostgreSQL text, the others break displays
    // not blank once trimmed (JavaScript's trim: \s) — the route refuses a blank name
    name: {
      type: 'string',
      minLength: 1,
      maxLength: 64,
      pattern: '^(?=[\\s\\S]*\\S)[^\\u0000-\\u001f\\u007f-\\u009f]*$',
      description: '1-64 characters, no control characters, not only white space (it is trimmed)',
    },
    location: {
      oneOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['lat', 'lon'],
          properties: { lat: { type: 'number', minimum: -90, maximum: 90 }, lon: { type: 'number', minimum: -180, maximum: 180 } },
        },
        { type: 'null' },
      ],
    },
  },
} as const;

export const tierChange = {
  $id: 'TierChange',
  type: 'object',
  additionalProperties: false,
  required: ['tier'],
  properties: { tier: { type: 'string', minLength: 1, maxLength: 32 } },
} as const;

export const adminLogin = {
  $id: 'AdminLogin',
  type: 'object',
  additionalProperties: false,
  required: ['apiKey'],
  properties: { apiKey: { type: 'string', minLength: 1, maxLength: 512 } },
} as const;

// ---- response objects (documentation only) ----
export const service = {
  type: 'object',
  required: ['id', 'endpoint', 'capabilities', 'properties', 'deprecated', 'locked', 'sunset_date', 'iotReady', 'iot', 'health'],
  properties: {
    id: { type: 'string', description: 'server-generated, opaque, URL-safe' },
    endpoint: { type: 'string', pattern: '^https?://[^\\u0000-\\u0020\\u007f-\\u009f]+$', maxLength: 2048, description: 'WHATWG URL serialisation of an absolute http(s) URL, without user info' },
    capabilities: { type: 'array', items: token, minItems: 1, maxItems: 32 },
    properties: { type: 'object', additionalProperties: { type: 'string' } },
    deprecated: { type: 'boolean' },
    locked: { type: 'boolean' },
    sunset_date: date,
    iotReady: { type: 'boolean', description: 'true exactly when iot is not null' },
    iot: {
      oneOf: [
        { type: 'object', required: ['deviceClasses', 'protocols'], properties: { deviceClasses: { type: 'array', items: token }, protocols: { type: 'array', items: token } } },
        { type: 'null' },
      ],
    },
    health: {
      type: 'object',
      required: ['status', 'ttl'],
      description: 'liveness: passing/critical under a lease, unknown (ttl null) without one',
      properties: { status: { type: 'string', enum: ['passing', 'critical', 'unknown'] }, ttl: { type: ['integer', 'null'] } },
    },
    heartbeatToken: { type: 'string', description: 'only in the 201 of a registration with a ttl (and a PATCH that starts a lease); shown once' },
  },
} as const;

export const deviceBinding = {
  type: 'object',
  required: ['serviceId', 'endpoint', 'deviceClass', 'protocol', 'capabilities'],
  properties: {
    serviceId: { type: 'string' },
    endpoint: { type: 'string' },
    deviceClass: token,
    protocol: token,
    capabilities: { type: 'array', items: token },
  },
} as const;

export const error = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string', enum: Object.keys(ERRORS) as ErrorCode[], description: 'from the error registry (errors.ts); a code is never reused for another meaning' }, message: { type: 'string' } },
    },
  },
} as const;

export const location = {
  oneOf: [
    { type: 'object', required: ['lat', 'lon'], properties: { lat: { type: 'number' }, lon: { type: 'number' } } },
    { type: 'null' },
  ],
} as const;

export const sandbox = {
  type: 'object',
  required: ['uuid', 'name', 'tier', 'rateLimit', 'location', 'createdAt'],
  properties: {
    uuid: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    tier: { type: 'string' },
    rateLimit: { type: 'integer', description: 'requests per minute' },
    location,
    createdAt: { type: 'string', format: 'date-time' },
    apiKey: { type: 'string', description: 'only in the 201 of POST /sandboxes; shown once' },
  },
} as const;
