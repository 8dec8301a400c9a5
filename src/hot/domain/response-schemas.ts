// JSON Schemas of the response bodies that are not registry objects (schemas.ts has those):
// sandbox dashboard and poll counters, admin statistics, pages and details, readiness.
// Documentation only: /openapi.json publishes them (openapi-components.ts) and the test
// harness validates every response a test sees against them (test/helpers/openapi-check.ts).
import { location } from './schemas.js';

const count = { type: 'integer', minimum: 0 } as const;
const uuid = { type: 'string', format: 'uuid' } as const;
const dateTime = { type: 'string', format: 'date-time' } as const;
/** The quota of the dashboard data and the admin detail (sandboxes/summary.ts serviceQuota()), and its use. */
export const serviceQuota = { ...count, description: 'services the sandbox may hold, from its tier (TIER_MAX_SERVICES); a registration or batch beyond it is 409 QUOTA_EXCEEDED' } as const;
export const serviceCount = { ...count, description: "the sandbox's services: the use of serviceQuota" } as const;
const perNs = { type: 'object', additionalProperties: false, required: ['production', 'sandboxes'], properties: { production: count, sandboxes: count } } as const;

/** Services per health status (liveness): passing and critical hold a lease, unknown has none. */
export const healthCounts = {
  type: 'object',
  additionalProperties: false,
  required: ['passing', 'critical', 'unknown'],
  properties: { passing: count, critical: count, unknown: count },
} as const;

/** A sandbox as the admin and dashboard routes show it (sandboxes/summary.ts); `tier` names a configured tier. */
export function sandboxSummary(tier: object) {
  return {
    type: 'object',
    required: ['uuid', 'name', 'tier', 'rateLimit', 'location', 'createdAt'],
    properties: {
      uuid,
      name: { type: 'string' },
      tier,
      rateLimit: { type: 'integer', minimum: 0, description: 'requests per minute, from the tier' },
      location,
      createdAt: dateTime,
    },
  } as const;
}

export const dashboardCounters = {
  type: 'object',
  additionalProperties: false,
  required: ['total', 'rejected', 'lastMinute'],
  properties: { total: { ...count, description: 'cumulative requests' }, rejected: { ...count, description: 'cumulative 429s' }, lastMinute: { ...count, description: 'requests in the last twelve 5-second buckets' } },
} as const;

export const poll = {
  type: 'object',
  additionalProperties: false,
  required: ['uuid', 'now', 'total', 'rateLimit', 'bucketSeconds', 'tier', 'rejected', 'windowTotal', 'buckets'],
  properties: {
    uuid,
    now: { type: 'integer', description: 'server time, ms since the epoch' },
    total: { ...count, description: 'cumulative requests of the sandbox, every request answered before this poll included' },
    rateLimit: { type: 'integer', minimum: 0, description: 'requests per minute' },
    bucketSeconds: { const: 5 },
    tier: { type: 'string' },
    rejected: { ...count, description: 'cumulative 429s' },
    windowTotal: { ...count, description: 'requests in the sliding minute (the last 12 buckets)' },
    buckets: { type: 'array', items: count, description: 'requests in each of the last 5-second buckets (72: six minutes), oldest first' },
  },
} as const;

export function stats(tierNames: readonly string[]) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['services', 'deprecated', 'locked', 'iotReady', 'health', 'sandboxesByTier', 'sandboxes', 'locatedSandboxes', 'requests', 'tiers', 'defaultTier', 'generatedAt'],
    properties: {
      services: perNs,
      deprecated: perNs,
      locked: perNs,
      iotReady: perNs,
      health: {
        type: 'object',
        additionalProperties: false,
        required: ['passing', 'critical', 'unknown'],
        properties: { passing: perNs, critical: perNs, unknown: perNs },
        description: 'services per health status, production and sandboxes',
      },
      sandboxesByTier: { type: 'object', additionalProperties: count, description: 'every configured tier (0 when no sandbox has it), and any tier sandboxes still have that is no longer configured' },
      sandboxes: count,
      locatedSandboxes: count,
      requests: { type: 'object', additionalProperties: false, required: ['total', 'rejected'], properties: { total: count, rejected: count } },
      tiers: { type: 'object', propertyNames: { enum: [...tierNames] }, additionalProperties: { type: 'integer', minimum: 1 }, description: 'configured tiers: requests per minute' },
      defaultTier: { enum: [...tierNames] },
      generatedAt: dateTime,
    },
  } as const;
}

const pageInt = { type: 'integer', minimum: 0 } as const;
const pageOrNull = { type: ['integer', 'null'], minimum: 0 } as const;

/** GET /admin/api/sandboxes: one page, every paging field computed on the server (admin/paging.ts). */
export function sandboxPage(summaryRef: string, tier: object) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['items', 'tier', 'total', 'pageSize', 'page', 'displayPage', 'hasPrev', 'hasNext', 'prevPage', 'nextPage'],
    properties: {
      items: { type: 'array', items: { type: 'object', allOf: [{ $ref: summaryRef }], required: ['serviceCount'], properties: { serviceCount: serviceCount } } },
      tier: { oneOf: [tier, { type: 'null' }], description: 'the tier filter, null for every tier' },
      total: count,
      pageSize: { type: 'integer', minimum: 1 },
      page: { ...pageInt, description: '0-based' },
      displayPage: { type: 'integer', minimum: 1, description: 'page + 1' },
      hasPrev: { type: 'boolean' },
      hasNext: { type: 'boolean' },
      prevPage: { ...pageOrNull, description: 'null on the first page; past the end, the last page that has items' },
      nextPage: { ...pageOrNull, description: 'null on the last page' },
    },
  } as const;
}

export const tierChangeRecord = {
  type: 'object',
  additionalProperties: false,
  required: ['from', 'to', 'by', 'at'],
  properties: { from: { type: 'string' }, to: { type: 'string' }, by: { type: 'string' }, at: dateTime },
} as const;

export const adminCounters = {
  type: ['object', 'null'],
  additionalProperties: false,
  required: ['total', 'rejected', 'windowTotal'],
  properties: { total: count, rejected: count, windowTotal: count },
  description: 'null while Redis is unreachable',
} as const;

export const locatedSandbox = {
  type: 'object',
  required: ['uuid', 'name', 'tier', 'lat', 'lon'],
  properties: { uuid, name: { type: 'string' }, tier: { type: 'string' }, lat: { type: 'number', minimum: -90, maximum: 90 }, lon: { type: 'number', minimum: -180, maximum: 180 } },
} as const;

export const csrfToken = {
  type: 'object',
  additionalProperties: false,
  required: ['csrfToken'],
  properties: { csrfToken: { type: 'string', minLength: 1, description: 'send it in X-CSRF-Token on every call other than GET made with the cookie' } },
} as const;

export const readiness = {
  type: 'object',
  additionalProperties: false,
  required: ['status', 'postgres', 'redis', 'index', 'shuttingDown', 'reads', 'degraded'],
  properties: {
    status: { enum: ['ready', 'degraded', 'not ready'], description: '`degraded`: reads are served, but a backend is away (`degraded` names it)' },
    postgres: { type: 'boolean' },
    redis: { type: 'boolean' },
    index: { type: 'boolean', description: 'a complete index generation is live and no rebuild runs' },
    shuttingDown: { type: 'boolean' },
    reads: { enum: ['index', 'postgres', 'none'], description: 'where discovery reads are answered from: the Redis index, PostgreSQL while the index is away (slower, bounded: 503 `OVERLOADED` beyond), or nowhere (503)' },
    degraded: { type: 'array', items: { enum: ['redis', 'postgres'] }, description: '`redis`: the index cannot answer (Redis unreachable, the index missing or being rebuilt); `postgres`: PostgreSQL is unreachable (writes answer 503)' },
  },
} as const;

export const liveness = { type: 'object', additionalProperties: false, required: ['status'], properties: { status: { const: 'ok' } } } as const;
