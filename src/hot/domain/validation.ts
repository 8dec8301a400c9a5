// Request-body validators, compiled once at start-up (model: fastify lib/validation.js),
// plus the normalisation that follows a passed schema (lower-casing tokens, de-duplication).
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import * as S from './schemas.js';
import { normaliseEndpoint } from './endpoint.js';
import { ApiError } from './errors.js';

const ajv = new Ajv({ allErrors: false, strict: false });
// `format: date` of sunset_date: the document publishes it, the validator applies it
addFormats.default(ajv, ['date']);

function compile<T>(schema: object): ValidateFunction<T> {
  return ajv.compile<T>(schema);
}

export interface IotProfile {
  deviceClasses: string[];
  protocols: string[];
}
export interface ServiceCreateBody {
  endpoint: string;
  capabilities?: string[];
  capability?: string;
  properties?: Record<string, string>;
  iot?: IotProfile | null;
  deprecated?: boolean;
  locked?: boolean;
  sunset_date?: string | null;
  ttl?: number;
  deregisterAfter?: number;
}
export type ServicePatchBody = Partial<Omit<ServiceCreateBody, 'capability' | 'ttl' | 'deregisterAfter'>> & { ttl?: number | null; deregisterAfter?: number | null };

export const validators = {
  serviceCreate: compile<ServiceCreateBody>(S.serviceCreate),
  servicePatch: compile<ServicePatchBody>(S.servicePatch),
  replacementAdd: compile<{ serviceId: string }>(S.replacementAdd),
  heartbeat: compile<{ status?: 'passing' | 'critical' }>(S.heartbeat),
  sandboxCreate: compile<{ name: string; location?: { lat: number; lon: number } | null }>(S.sandboxCreate),
  tierChange: compile<{ tier: string }>(S.tierChange),
  adminLogin: compile<{ apiKey: string }>(S.adminLogin),
};

function describe(errors: ErrorObject[] | null | undefined, body: unknown): string {
  // Stryker disable next-line OptionalChaining: a validator that returned false has set `errors`
  const e = errors?.[0];
  // Stryker disable next-line StringLiteral: never reached (see above); kept should ajv ever fail without an error
  if (!e) return 'the body does not match the schema';
  const where = e.instancePath || '(body)';
  // ajv tries a body's top-level oneOf (serviceCreate: capabilities xor capability) before its
  // `type` and lists the branches' errors first, so a body that is no object, and one with
  // both fields, would both read "(body) must NOT be valid"
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return '(body) must be object';
  if (e.keyword === 'additionalProperties') return `${where}: unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
  // a branch's `not` failed: the other field was given too
  if (e.keyword === 'not' && where === '(body)') return 'give either "capabilities" (array) or "capability" (string), not both';
  return `${where} ${e.message ?? 'is invalid'}`;
}

/** Validate with one of the compiled validators; throws a 400 ApiError. */
export function check<T>(v: ValidateFunction<T>, body: unknown): T {
  if (!v(body)) throw new ApiError('BODY_INVALID', [describe(v.errors, body)]);
  return body;
}

function uniqLower(xs: string[]): string[] {
  return [...new Set(xs.map((x) => x.toLowerCase()))];
}

function validDate(s: string): boolean {
  // Stryker disable next-line StringLiteral: Date reads a date-only ISO string as UTC midnight too
  const d = new Date(s + 'T00:00:00Z');
  // Stryker disable next-line LogicalOperator: the schema (format: date, pattern) refuses every string this refuses; no body reaches a difference
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

function normEndpoint(s: string): string {
  const r = normaliseEndpoint(s);
  if (!r.ok) throw new ApiError('BODY_INVALID', [r.reason]);
  return r.href;
}

function normProps(p: Record<string, string>): Record<string, string> {
  // no prototype and own keys only: "constructor" is not a duplicate of anything, and
  // "__proto__" (both valid tokens) is a key, not the object's prototype
  const out = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(p)) {
    const key = k.toLowerCase();
    if (Object.hasOwn(out, key)) throw new ApiError('PROPERTY_KEY_TWICE', [key]);
    out[key] = v;
  }
  return out;
}

function normIot(i: IotProfile | null | undefined): IotProfile | null | undefined {
  if (!i) return i;
  return { deviceClasses: uniqLower(i.deviceClasses), protocols: uniqLower(i.protocols) };
}

export interface ServiceInput {
  endpoint: string;
  capabilities: string[];
  properties: Record<string, string>;
  iot: IotProfile | null;
  deprecated: boolean;
  locked: boolean;
  sunsetDate: string | null;
  /** lease seconds; null or absent: no lease */
  ttl?: number | null;
  deregisterAfter?: number | null;
}

export function parseServiceCreate(body: unknown): ServiceInput {
  const b = check(validators.serviceCreate, body);
  // Stryker disable next-line StringLiteral: not reached while the schema checks the date (validDate is the second line of defence)
  if (b.sunset_date && !validDate(b.sunset_date)) throw new ApiError('SUNSET_DATE_INVALID');
  return {
    endpoint: normEndpoint(b.endpoint),
    capabilities: uniqLower(b.capabilities ?? [b.capability!]),
    properties: normProps(b.properties ?? {}),
    iot: normIot(b.iot) ?? null,
    deprecated: b.deprecated ?? false,
    locked: b.locked ?? false,
    sunsetDate: b.sunset_date ?? null,
    ttl: b.ttl ?? null,
    deregisterAfter: b.deregisterAfter ?? null,
  };
}

export type ServiceChange = Partial<ServiceInput>;

export function parseServicePatch(body: unknown): ServiceChange {
  const b = check(validators.servicePatch, body);
  // Stryker disable next-line StringLiteral: not reached while the schema checks the date (validDate is the second line of defence)
  if (b.sunset_date && !validDate(b.sunset_date)) throw new ApiError('SUNSET_DATE_INVALID');
  const c: ServiceChange = {};
  if (b.endpoint !== undefined) c.endpoint = normEndpoint(b.endpoint);
  if (b.capabilities !== undefined) c.capabilities = uniqLower(b.capabilities);
  if (b.properties !== undefined) c.properties = normProps(b.properties);
  if (b.iot !== undefined) c.iot = normIot(b.iot) ?? null;
  if (b.deprecated !== undefined) c.deprecated = b.deprecated;
  if (b.locked !== undefined) c.locked = b.locked;
  if (b.sunset_date !== undefined) c.sunsetDate = b.sunset_date;
  if (b.ttl !== undefined) c.ttl = b.ttl;
  if (b.deregisterAfter !== undefined) c.deregisterAfter = b.deregisterAfter;
  return c;
}
