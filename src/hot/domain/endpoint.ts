// The one rule for a service's `endpoint` (contract, "Service"): an absolute http(s) URL,
// stored and returned in its WHATWG URL serialisation (`new URL(x).href`: lower-case scheme
// and host, IDN hosts as punycode, default port dropped, path dot-segments resolved). User
// info and control characters are refused. The request validator (validation.ts) and the
// migration that normalises stored rows (reindex/endpoints.ts) both go through here.

/** Longest endpoint stored, counted on the serialisation (it can be longer than the input). */
export const ENDPOINT_MAX = 2048;

// URL parsers silently drop tabs and newlines, and PostgreSQL refuses NUL: neither may reach
// storage, so any whitespace or control character makes the endpoint invalid
// eslint-disable-next-line no-control-regex
const BAD_CHAR = /[\u0000-\u0020\u007f-\u009f]/;

export type EndpointResult = { ok: true; href: string } | { ok: false; reason: string };

/** The WHATWG serialisation of `s`, or why it is not an acceptable endpoint. */
export function normaliseEndpoint(s: string): EndpointResult {
  if (BAD_CHAR.test(s)) return { ok: false, reason: '/endpoint must not contain whitespace or control characters' };
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return { ok: false, reason: '/endpoint is not an absolute URL' };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { ok: false, reason: '/endpoint must be http or https' };
  // Stryker disable next-line ObjectLiteral,BooleanLiteral,StringLiteral: not reached: the URL parser fails an http(s) URL without a host
  if (!u.hostname) return { ok: false, reason: '/endpoint has no host' };
  // credentials would be published to every anonymous searcher
  // Stryker disable next-line LogicalOperator: user info also fails the pattern below (same reason), so weakening this test is not observable
  if (u.username !== '' || u.password !== '') return { ok: false, reason: '/endpoint must not contain user info (user:password@)' };
  // an empty user info ("http://@host", "http://:@host") serialises without it: the
  // input still carried an "@" before the host, refused like any user info
  if (/^[a-z][a-z0-9+.-]*:[/\\]*[^/\\?#]*@/i.test(s)) return { ok: false, reason: '/endpoint must not contain user info (user:password@)' };
  const href = u.href;
  if (href.length > ENDPOINT_MAX) return { ok: false, reason: `/endpoint must not be longer than ${ENDPOINT_MAX} characters once normalised` };
  return { ok: true, href };
}
