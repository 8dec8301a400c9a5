// The indexed search dimensions, one row each (docs/dimensions.md: adding one). Everything
// else about a dimension is derived from its row, here: the query parameters a route takes
// (canonical.ts's specs), the Filters fields, the sets a search reads (filterSuffixes), the
// sets a service belongs to (documentMembers, in TypeScript, and memberRuleLua(), the same rule
// generated into apply-service-1.lua), the rule's fingerprint (in the namespace marker's
// name and in PostgreSQL: a changed rule re-indexes), and the OpenAPI query parameters.
import { createHash } from 'node:crypto';

/**
 * - `tokens`: repeatable token parameter, all must match; one set per token (`<set>:<token>`)
 * - `token`: a single token parameter; one set per token
 * - `property`: repeatable `key:value` parameter; one set per pair (`<set>:<key>:<value>`)
 * - `flag`: `=true` or absent; one set (`<set>`) of the services whose document holds one
 *   of `oneOf` at `path`
 */
export type DimensionKind = 'tokens' | 'token' | 'property' | 'flag';
/** `services`: GET /services and /sandbox/{uuid}/services; `devices`: GET /devices */
export type SearchRoute = 'services' | 'devices';

export interface Dimension {
  /** the query parameter */
  readonly param: string;
  /** its field in Filters */
  readonly field: string;
  readonly kind: DimensionKind;
  /** the set-name suffix (after a namespace's base): `<set>:<value>`, a flag's `<set>` */
  readonly set: string;
  /**
   * Where the service's document (serviceObject(), the JSON stored in Redis) holds it: an
   * array of tokens or one string (token kinds), an object of string values (property), any
   * value (flag).
   */
  readonly path: readonly string[];
  /** flag: the values at `path` that make a service a member */
  readonly oneOf?: readonly (string | boolean)[];
  /** flag: parameters whose every set lies within this one's (the flag's set is then not read) */
  readonly impliedBy?: readonly string[];
  readonly routes: readonly SearchRoute[];
  /** its OpenAPI description */
  readonly description: string;
  /** a value, for the OpenAPI document */
  readonly example: string;
}

export const DIMENSIONS = [
  {
    param: 'capability', field: 'capabilities', kind: 'tokens', set: 'c', path: ['capabilities'], routes: ['services', 'devices'],
    description: 'capability token; repeatable, all must match', example: 'payments',
  },
  {
    param: 'property', field: 'properties', kind: 'property', set: 'p', path: ['properties'], routes: ['services'],
    description: '`key:value`, split at the first ":"; repeatable, all must match', example: 'region:eu-west',
  },
  {
    param: 'deviceClass', field: 'deviceClass', kind: 'token', set: 'd', path: ['iot', 'deviceClasses'], routes: ['services', 'devices'],
    description: 'IoT device class of the service profile', example: 'sensor',
  },
  {
    param: 'protocol', field: 'protocol', kind: 'token', set: 'r', path: ['iot', 'protocols'], routes: ['services', 'devices'],
    description: 'IoT protocol of the service profile', example: 'mqtt',
  },
  {
    param: 'iotReady', field: 'iotReady', kind: 'flag', set: 'iot', path: ['iotReady'], oneOf: [true], impliedBy: ['deviceClass', 'protocol'], routes: ['services'],
    description: 'only `true` is kept: services with an IoT profile', example: 'true',
  },
  {
    // liveness (issue 23): every service whose health is not critical (unknown: no lease)
    param: 'healthy', field: 'healthy', kind: 'flag', set: 'h', path: ['health', 'status'], oneOf: ['passing', 'unknown'], routes: ['services', 'devices'],
    description: 'only `true` is kept: leaves out services whose health status is `critical` (services without a lease, `unknown`, stay in)', example: 'true',
  },
] as const satisfies readonly Dimension[];

type Dim = (typeof DIMENSIONS)[number];
type ValueOf<K extends DimensionKind> = K extends 'tokens' ? string[] : K extends 'token' ? string | null : K extends 'property' ? { key: string; value: string }[] : boolean;

/** A search's filters over the dimensions: one field per row of DIMENSIONS. */
export type DimensionFilters = { -readonly [D in Dim as D['field']]: ValueOf<D['kind']> };

/** Filters that restrict nothing. */
export function noFilters(): DimensionFilters {
  const f: Record<string, unknown> = {};
  for (const d of DIMENSIONS as readonly Dimension[]) f[d.field] = d.kind === 'token' ? null : d.kind === 'flag' ? false : [];
  return f as DimensionFilters;
}

/** The dimensions a route takes. */
export function dimensionsOf(route: SearchRoute): readonly Dimension[] {
  return (DIMENSIONS as readonly Dimension[]).filter((d) => d.routes.includes(route));
}

/**
 * Set suffixes (after a namespace's base) of a search's filters; `all` when there are none.
 * A flag whose set holds every member of another given dimension's sets is not read.
 */
export function filterSuffixes(f: Partial<DimensionFilters>): string[] {
  const given = f as Record<string, unknown>;
  const sets: string[] = [];
  for (const d of DIMENSIONS as readonly Dimension[]) {
    const v = given[d.field];
    if (d.kind === 'tokens') for (const t of (v as string[] | undefined) ?? []) sets.push(d.set + ':' + t);
    else if (d.kind === 'token') {
      if (v) sets.push(d.set + ':' + (v as string));
    } else if (d.kind === 'property') for (const p of (v as { key: string; value: string }[] | undefined) ?? []) sets.push(d.set + ':' + p.key + ':' + p.value);
    else if (v === true && !d.impliedBy?.some((o) => given[fieldOf(o)])) sets.push(d.set);
  }
  if (!sets.length) sets.push('all');
  return sets;
}

function fieldOf(param: string): string {
  return (DIMENSIONS as readonly Dimension[]).find((d) => d.param === param)!.field;
}

function at(doc: unknown, path: readonly string[]): unknown {
  let v = doc;
  for (const k of path) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, k)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/**
 * Set suffixes a service belongs to, from its document (serviceObject()): `all`, then each
 * dimension's. The order carries no meaning. memberRuleLua() is the same rule in Lua;
 * keys.ts memberSuffixes() applies it to a service record.
 */
export function documentMembers(doc: object, dimensions: readonly Dimension[] = DIMENSIONS): string[] {
  const out = ['all'];
  for (const d of dimensions) {
    const v = at(doc, d.path);
    if (d.kind === 'flag') {
      if (d.oneOf!.includes(v as string | boolean)) out.push(d.set);
    } else if (d.kind === 'property') {
      if (v !== null && typeof v === 'object') for (const k of Object.keys(v)) out.push(d.set + ':' + k + ':' + (v as Record<string, string>)[k]!);
    } else if (Array.isArray(v)) for (const t of v) out.push(d.set + ':' + (t as string));
    else if (typeof v === 'string') out.push(d.set + ':' + v); // a token kind over one value (e.g. a property's)
  }
  return out;
}

const LUA_NAME = /^[A-Za-z0-9_.:-]+$/;

function luaString(s: string): string {
  if (!LUA_NAME.test(s)) throw new Error(`dimensions: ${JSON.stringify(s)} cannot be written into the Lua member rule`);
  return "'" + s + "'";
}

function luaValue(v: string | boolean): string {
  return typeof v === 'boolean' ? String(v) : luaString(v);
}

/**
 * documentMembers() as Lua over a stored document: `local function memberSuffixes(doc)`,
 * included into apply-service-1.lua (`--@include dimensions.lua`, redis/client.ts), which
 * derives the sets a previous state is in from its stored document.
 */
export function memberRuleLua(dimensions: readonly Dimension[] = DIMENSIONS): string {
  const lines = [
    '-- generated from src/hot/domain/dimensions.ts (memberRuleLua): the sets a stored document is in',
    'local function memberSuffixes(doc)',
    "  local out = { 'all' }",
    '  if not doc then return out end',
    '  local s = cjson.decode(doc)',
    '  local function at(path)',
    '    local v = s',
    "    for _, k in ipairs(path) do if type(v) ~= 'table' then return nil end v = v[k] end",
    '    return v',
    '  end',
    '  local v',
  ];
  for (const d of dimensions) {
    lines.push(`  v = at({ ${d.path.map(luaString).join(', ')} }) -- ${d.param}`);
    const set = luaString(d.set + ':');
    if (d.kind === 'flag') lines.push(`  if ${d.oneOf!.map((x) => 'v == ' + luaValue(x)).join(' or ')} then out[#out + 1] = ${luaString(d.set)} end`);
    else if (d.kind === 'property') lines.push(`  if type(v) == 'table' then for k, x in pairs(v) do out[#out + 1] = ${set} .. k .. ':' .. x end end`);
    else lines.push(`  if type(v) == 'table' then for _, x in ipairs(v) do out[#out + 1] = ${set} .. x end elseif type(v) == 'string' then out[#out + 1] = ${set} .. v end`);
  }
  lines.push('  return out', 'end', '');
  return lines.join('\n');
}

/**
 * A fingerprint of the member rule (each dimension's set, kind, path and member values). It
 * is part of the namespace marker's name (Keys.verAt), so a generation built under another
 * rule reads as not indexed and is rebuilt, and the migrator compares it with the one the
 * stored index text (services.idx_members) was computed under, recomputing that text when
 * they differ (reindex/index-text.ts).
 */
export const MEMBER_RULE = createHash('sha256')
  .update(JSON.stringify((DIMENSIONS as readonly Dimension[]).map((d) => [d.set, d.kind, d.path, d.oneOf ?? null])))
  .digest('hex')
  .slice(0, 8);

/**
 * The set-name prefix of the capability dimension (`c:`): the Consul-compatible catalog's
 * services are capabilities (discovery/consul), and the index records who left one
 * (keys.ts capabilityTombstones, redis/lib/apply.lua). capabilityLua() is it in Lua.
 */
export const CAPABILITY_SET = (DIMENSIONS as readonly Dimension[]).find((d) => d.param === 'capability')!.set + ':';

/** CAPABILITY_SET as Lua, included into apply-service-1.lua and apply-services-1.lua (`--@include capability.lua`). */
export function capabilityLua(): string {
  return `-- generated from src/hot/domain/dimensions.ts (capabilityLua): the capability dimension's set prefix\nlocal CAPABILITY_SET = ${luaString(CAPABILITY_SET)}\n`;
}

/** a token as a query accepts it (the canonical redirect lower-cases it) */
const TOKEN_QUERY = '^[A-Za-z0-9._-]{1,64}$';
/** `key:value`: token key, value of 1-256 characters without control characters */
const PROPERTY_QUERY = '^[A-Za-z0-9._-]{1,64}:[^\\u0000-\\u001f\\u007f-\\u009f]{1,256}$';
/** the cursor of a `Link: rel="next"` (canonical.ts, CURSOR_RE) */
const CURSOR_QUERY = '^\\d{1,15}(\\.\\d{1,4})?$';

/**
 * The OpenAPI query parameters of a search route: `after`, its dimensions and `limit`, in
 * the canonical (code-point) order of their names, with the patterns the server checks.
 */
export function openApiParameters(route: SearchRoute): Record<string, unknown>[] {
  const q = (name: string, description: string, schema: object, extra: object = {}) => ({ name, in: 'query', required: false, description, schema, ...extra });
  const out = [
    ...dimensionsOf(route).map((d) =>
      d.kind === 'tokens' || d.kind === 'property'
        ? q(d.param, d.description, { type: 'array', items: { type: 'string', pattern: d.kind === 'tokens' ? TOKEN_QUERY : PROPERTY_QUERY } }, { style: 'form', explode: true, example: [d.example] })
        : q(d.param, d.description, d.kind === 'flag' ? { type: 'string', enum: ['true'] } : { type: 'string', pattern: TOKEN_QUERY }, { example: d.example }),
    ),
    q('limit', 'page size, 1-1000, default 100 (a decimal without leading zeros; the default is dropped from canonical queries)', { type: 'integer', minimum: 1, maximum: 1000, default: 100 }),
    q('after', 'cursor from a `Link: rel="next"` header', { type: 'string', pattern: CURSOR_QUERY }),
  ];
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
