// Canonical query strings for /services, /devices and /sandbox/{uuid}/services
// (contract, "Canonical query strings"). Pure: raw query in, canonical form and parsed
// filters out. fast-querystring splits and decodes; it silently keeps undecodable escapes,
// so decodability is checked first, on the raw string.
import { parse as parseQs } from 'fast-querystring';
import { DIMENSIONS, dimensionsOf, noFilters, type DimensionFilters, type DimensionKind, type SearchRoute } from '../domain/dimensions.js';
import { compareCodePoints, hasLoneSurrogate, isPropertyPair, isToken, splitProperty } from '../domain/tokens.js';

export type ParamKind = DimensionKind | 'limit' | 'cursor';
export type QuerySpec = Readonly<Record<string, ParamKind>>;

/** The query parameters of a route: its dimensions (dimensions.ts), `limit` and `after`. */
function specOf(route: SearchRoute): QuerySpec {
  const spec: Record<string, ParamKind> = { after: 'cursor', limit: 'limit' };
  for (const d of dimensionsOf(route)) spec[d.param] = d.kind;
  return spec;
}

export const SEARCH_SPEC: QuerySpec = specOf('services');
export const DEVICES_SPEC: QuerySpec = specOf('devices');

export interface Filters extends DimensionFilters {
  limit: number;
  after: string | null;
}

/** Canonical params: name -> sorted, de-duplicated decoded values. */
export type Params = Map<string, string[]>;

export type CanonResult =
  | { kind: 'ok'; canonical: string; params: Params }
  | { kind: 'redirect'; location: string }
  | { kind: 'error'; message: string };

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
const BAD_ESCAPE = /%(?![0-9a-fA-F]{2})/;

/** Percent-encode: unreserved characters and ':' literal, every other byte %XX upper-case. */
export function encodeValue(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (
      (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) ||
      c === 0x2d || c === 0x2e || c === 0x5f || c === 0x7e || c === 0x3a
    ) {
      out += s[i];
    } else {
      // encodeURIComponent gives upper-case hex of the UTF-8 bytes; it leaves !'()* alone
      // (0x21-0x2a: always two hex digits, nothing to pad)
      const e = encodeURIComponent(String.fromCodePoint(s.codePointAt(i)!));
      out += e.length === 1 ? '%' + c.toString(16).toUpperCase() : e;
      if (c >= 0xd800 && c <= 0xdbff) i++;
    }
  }
  return out;
}

export function serialize(params: Params): string {
  const names = [...params.keys()].sort(compareCodePoints);
  const parts: string[] = [];
  for (const name of names) {
    for (const v of params.get(name)!) parts.push(encodeValue(name) + '=' + encodeValue(v));
  }
  return parts.join('&');
}

function normalise(kind: ParamKind, v: string): string | null {
  switch (kind) {
    case 'token':
    case 'tokens':
      return v.toLowerCase();
    case 'property': {
      const p = splitProperty(v);
      return p ? p.key + ':' + p.value : v;
    }
    case 'flag':
      return v.toLowerCase() === 'true' ? 'true' : null;
    case 'limit':
      if (/^\d+$/.test(v)) {
        const stripped = v.replace(/^0+(?=\d)/, '');
        return stripped === String(DEFAULT_LIMIT) ? null : stripped;
      }
      return v; // not a number: kept, and refused as invalid
    case 'cursor':
      return v;
  }
}

/** Why a raw query string does not decode (null: it does): the checks every query parser starts with. */
export function undecodable(raw: string): string | null {
  // uWS hands over raw (unescaped) bytes decoded as UTF-8 with U+FFFD for invalid sequences
  if (raw.includes('\uFFFD')) return 'the query string is not valid UTF-8';
  // a lone UTF-16 surrogate has no UTF-8 form (encodeValue would throw); uWS never makes one,
  // but no parser may throw whoever calls it
  if (hasLoneSurrogate(raw)) return 'the query string is not valid UTF-8';
  // only saves work: without a '%' BAD_ESCAPE cannot match and decodeURIComponent cannot throw
  // (so `if (true)` is an equivalent mutant, left surviving: disabling ConditionalExpression
  // would also hide `if (false)`, which the tests kill)
  // Stryker disable next-line StringLiteral: includes("") is the same as `if (true)` above
  if (raw.includes('%')) {
    if (BAD_ESCAPE.test(raw)) return 'the query string has a malformed percent-escape';
    try {
      decodeURIComponent(raw);
    } catch {
      return 'the query string does not decode to UTF-8';
    }
  }
  return null;
}

/**
 * @param raw the query string without '?', or null when the URL had no '?' at all
 */
export function canonicalize(path: string, raw: string | null, spec: QuerySpec): CanonResult {
  if (raw === null) return { kind: 'ok', canonical: '', params: new Map() };
  const bad = undecodable(raw);
  if (bad) return { kind: 'error', message: bad };
  const parsed = parseQs(raw) as Record<string, string | string[]>;
  const params: Params = new Map();
  for (const name in parsed) {
    // own keys only: "constructor" or "__proto__" must not find Object.prototype members
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (kind === undefined) continue; // unknown parameter: dropped
    const rawVals = parsed[name]!;
    const vals = new Set<string>();
    for (const v of Array.isArray(rawVals) ? rawVals : [rawVals]) {
      if (v === '') continue; // empty values are dropped
      // normalise() gives null (dropped) or a non-empty value for a non-empty one
      const n = normalise(kind, v);
      if (n !== null) vals.add(n);
    }
    // (`if (true)` here is an equivalent mutant, left surviving: a name whose every value was
    // dropped is not in `canonical`, so the answer is a redirect, whose params nobody reads)
    if (vals.size) params.set(name, [...vals].sort(compareCodePoints));
  }
  const canonical = serialize(params);
  // a bare '?' (raw "") is not canonical either: the canonical form then has no '?' at all
  if (canonical !== raw || canonical === '') {
    return { kind: 'redirect', location: canonical ? path + '?' + canonical : path };
  }
  return { kind: 'ok', canonical, params };
}

export type FilterResult = { ok: true; filters: Filters } | { ok: false; message: string };

const CURSOR_RE = /^\d{1,15}(\.\d{1,4})?$/;

/** Each parameter's Filters field (dimensions.ts). */
const FIELD: ReadonlyMap<string, string> = new Map(DIMENSIONS.map((d) => [d.param, d.field]));

/** Validate canonical params into search filters. */
export function toFilters(params: Params, spec: QuerySpec): FilterResult {
  const f: Filters = { ...noFilters(), limit: DEFAULT_LIMIT, after: null };
  const dims = f as unknown as Record<string, unknown>;
  for (const [name, vals] of params) {
    const kind = spec[name]!;
    if (kind !== 'tokens' && kind !== 'property' && vals.length > 1) {
      return { ok: false, message: `${name} may be given only once` };
    }
    const v = vals[0]!;
    switch (kind) {
      case 'tokens':
        for (const t of vals) if (!isToken(t)) return { ok: false, message: `${name} "${t}" is not a valid token ([a-z0-9._-], 1-64 chars)` };
        dims[FIELD.get(name)!] = vals;
        break;
      case 'token':
        if (!isToken(v)) return { ok: false, message: `${name} "${v}" is not a valid token ([a-z0-9._-], 1-64 chars)` };
        dims[FIELD.get(name)!] = v;
        break;
      case 'property': {
        const pairs: { key: string; value: string }[] = [];
        for (const p of vals) {
          if (!isPropertyPair(p)) return { ok: false, message: `${name} "${p}" must be key:value with a token key and a 1-256 character value` };
          pairs.push(splitProperty(p)!);
        }
        dims[FIELD.get(name)!] = pairs;
        break;
      }
      case 'flag':
        dims[FIELD.get(name)!] = true;
        break;
      case 'limit': {
        if (!/^[1-9]\d{0,3}$/.test(v) || Number(v) > MAX_LIMIT) {
          return { ok: false, message: `limit must be an integer from 1 to ${MAX_LIMIT}` };
        }
        f.limit = Number(v);
        break;
      }
      case 'cursor':
        if (!CURSOR_RE.test(v)) return { ok: false, message: 'after is not a cursor from a next link' };
        f.after = v;
        break;
    }
  }
  return { ok: true, filters: f };
}

/** A canonical query, parsed and validated. */
export interface Canonical {
  canonical: string;
  /** its params (from CursorMemo: without `after`; nextQuery() sets it anyway) */
  params: Params;
  filters: Filters;
  /** from CursorMemo: the canonical query without its cursor (the next page's query is "after=<c>" + it) */
  rest?: string;
}

/**
 * A CursorMemo entry's bytes, measured (bench/overheads.ts): its objects (params Map, value
 * arrays, filters object, Map slot) apart from characters, and per character of its key:
 * the key, the params' names and values and the filters' strings each hold it about once.
 */
export const MEMO_OVERHEAD = 1024; // RSS grew ~1,070 B an entry of 63 characters over 400,000
export const MEMO_PER_CHAR = 3;

/**
 * Paging asks one query again and again with only `after` changed. `after` sorts before every
 * other parameter name of both specs, so a canonical query with a cursor is "after=<cursor>"
 * or "after=<cursor>&<rest>", where <rest> is itself canonical (the query without its cursor).
 * The memo keeps the parsed, validated <rest> of queries that took the full path; a later
 * "after=<c>&<rest>" whose cursor is canonical (digits, as CURSOR_RE; encodeValue and
 * normalise leave it as it is) is then known canonical and valid without parsing: its filters
 * are <rest>'s with `after` = c. Anything else (a second `after`, an unknown <rest>, an
 * escape in the cursor) misses and takes the full path. Bounded: emptied when full.
 */
export class CursorMemo {
  private m = new Map<string, { params: Params; filters: Filters }>();
  /** bytes held (MEMO_OVERHEAD + MEMO_PER_CHAR per character of the key), emptied with the map */
  bytes = 0;

  /** bounded by entries and by bytes (a key is as long as a query may be) */
  constructor(
    readonly max = 4096,
    readonly maxBytes = 1024 * 1024,
  ) {}

  lookup(raw: string | null): Canonical | null {
    if (raw === null || !raw.startsWith('after=')) return null;
    const amp = raw.indexOf('&');
    const cursor = amp < 0 ? raw.slice(6) : raw.slice(6, amp);
    if (!CURSOR_RE.test(cursor)) return null;
    const rest = amp < 0 ? '' : raw.slice(amp + 1);
    // "after=<c>&" is not canonical (a trailing "&"), though "" is a known <rest> (of "after=<c>")
    if (amp >= 0 && rest === '') return null;
    const e = this.m.get(rest);
    if (!e) return null;
    return { canonical: raw, params: e.params, filters: { ...e.filters, after: cursor }, rest };
  }

  /** Keep the cursor-less part of a query that took the full path (and was valid). */
  learn(c: Canonical): void {
    if (c.params.get('after')?.length !== 1 || !c.canonical.startsWith('after=')) return;
    const amp = c.canonical.indexOf('&');
    const rest = amp < 0 ? '' : c.canonical.slice(amp + 1);
    if (this.m.has(rest)) return;
    const size = MEMO_OVERHEAD + MEMO_PER_CHAR * rest.length;
    if (this.m.size >= this.max || this.bytes + size > this.maxBytes) {
      this.m.clear();
      this.bytes = 0;
    }
    const params: Params = new Map(c.params);
    params.delete('after');
    this.m.set(rest, { params, filters: { ...c.filters, after: null } });
    this.bytes += size;
  }
}

/** The next page's query string: nextQuery(), or from the memo's <rest> without serialising. */
export function nextQueryOf(c: Canonical, after: string): string {
  if (c.rest === undefined) return nextQuery(c.params, after);
  return c.rest ? `after=${after}&${c.rest}` : `after=${after}`;
}

/** The query string of the next page: the same canonical params with `after` replaced. */
export function nextQuery(params: Params, after: string): string {
  const next: Params = new Map(params);
  next.set('after', [after]);
  return serialize(next);
}
