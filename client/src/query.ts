// Canonical query strings, made by the client itself (contract, "Canonical query strings"):
// the server answers any other spelling with a 302 to this one, so a client that sends its
// parameters in object order pays two round trips per page. Pure, and written apart from the
// server's canonicalizer (src/hot/search/canonical.ts) on purpose: the client's tests then
// check one implementation against the other through the server's 302s.

/** A query value as callers give it: one value or several, flags as booleans. */
export type QueryValue = string | number | boolean | null | undefined | readonly (string | number)[];

/** Parameters whose values are tokens: lower-cased (contract, "Tokens"). */
const TOKEN_PARAMS = new Set(['capability', 'deviceClass', 'protocol']);
/** Kept only as `=true`; any other value drops the parameter. */
const FLAG_PARAMS = new Set(['iotReady', 'healthy']);
/** The server's default page size: a `limit` equal to it is dropped. */
export const DEFAULT_LIMIT = 100;

/** Unicode code-point order (not UTF-16 code-unit order, which differs above U+FFFF). */
export function compareCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return x.length === y.length ? 0 : x.length < y.length ? -1 : 1;
}

const utf8 = new TextEncoder();
const HEX = '0123456789ABCDEF';

/** Unreserved characters and ':' as they are, every other UTF-8 byte as %XX (upper-case hex). */
export function encodeComponent(s: string): string {
  let out = '';
  for (const b of utf8.encode(s)) {
    const literal =
      (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) ||
      b === 0x2d || b === 0x2e || b === 0x5f || b === 0x7e || b === 0x3a;
    out += literal ? String.fromCharCode(b) : '%' + HEX[b >> 4] + HEX[b & 15];
  }
  return out;
}

function normalise(name: string, raw: string | number | boolean): string | null {
  if (FLAG_PARAMS.has(name)) return String(raw).toLowerCase() === 'true' ? 'true' : null;
  const v = String(raw);
  if (v === '') return null;
  if (TOKEN_PARAMS.has(name)) return v.toLowerCase();
  if (name === 'property') {
    const i = v.indexOf(':');
    return i < 0 ? v : v.slice(0, i).toLowerCase() + v.slice(i);
  }
  if (name === 'limit' && /^\d+$/.test(v)) {
    const n = v.replace(/^0+(?=\d)/, '');
    return n === String(DEFAULT_LIMIT) ? null : n;
  }
  return v;
}

/**
 * The canonical query string (without '?'; '' when nothing is left) of `query`: empty values
 * and false flags dropped, tokens and property keys lower-cased, the default limit dropped,
 * values de-duplicated and sorted, names sorted, then percent-encoded.
 */
export function canonicalQuery(query: Readonly<Record<string, QueryValue>>): string {
  const names = Object.keys(query).sort(compareCodePoints);
  const parts: string[] = [];
  for (const name of names) {
    const given = query[name];
    if (given === undefined || given === null) continue;
    const values = new Set<string>();
    for (const v of Array.isArray(given) ? given : [given as string | number | boolean]) {
      const n = normalise(name, v);
      if (n !== null) values.add(n);
    }
    for (const v of [...values].sort(compareCodePoints)) parts.push(encodeComponent(name) + '=' + encodeComponent(v));
  }
  return parts.join('&');
}

/** `path` with the canonical form of `query` (no '?' when it is empty). */
export function withQuery(path: string, query: Readonly<Record<string, QueryValue>> = {}): string {
  const q = canonicalQuery(query);
  return q ? `${path}?${q}` : path;
}

/**
 * The target of the `rel="next"` link of a Link header (RFC 8288), or null. Links are
 * separated by commas outside <...>; `rel` may be quoted and may list several relations.
 */
export function nextLink(header: string | null): string | null {
  if (!header) return null;
  const re = /<([^>]*)>([^,<]*)/g;
  for (let m = re.exec(header); m; m = re.exec(header)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(m[2]!);
    const rels = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (rels.includes('next')) return m[1]!;
  }
  return null;
}
