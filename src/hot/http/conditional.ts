// Conditional GETs (RFC 9110 13.1.2): the ETags of answers and the If-None-Match check,
// shared by the search and device queries and the discovery routes.
import { createHash } from 'node:crypto';

/** If-None-Match matches: RFC 9110 13.1.2 uses the weak comparison (W/"x" matches "x"); '*' matches. */
export function notModified(ifNoneMatch: string, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  return ifNoneMatch.split(',').some((t) => {
    const v = t.trim();
    return (v.startsWith('W/') ? v.slice(2) : v) === opaque;
  });
}

/**
 * A strong ETag: a hash of the bytes it stands for (and of any metadata that goes with them,
 * such as a search page's Link header), so equal tags always mean equal representations.
 */
export function etagOf(...parts: (string | Uint8Array)[]): string {
  // SHA-256 runs on the CPU's SHA extensions, faster here than SHA-1 or MD5
  // (docs/decisions/canonical-queries-and-etags.md); 128 of its bits are plenty for a validator
  const h = createHash('sha256');
  parts.forEach((p, i) => (i ? h.update('\n') : h).update(p));
  return '"' + h.digest('base64url').slice(0, 22) + '"';
}

