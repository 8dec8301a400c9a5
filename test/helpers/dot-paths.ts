// Raw paths with encoded and literal dot-segments (issue 41): a generator of such paths
// under the API's roots, and what nginx makes of one before it picks a location (decoded
// once, slashes merged, "." and ".." resolved), to compare with the raw path the server routes.
import fc from 'fast-check';

/** segments that decode or resolve to something else than they read, and plain ones */
const TRICKS = ['.', '..', '%2e', '%2E', '%2e%2e', '.%2e', '%2E.', '%2f', '%2F', '..%2F', '..%2f..%2f', '%2F..', '%2e%2e%2f', '%252F', '%252e%252e', '%5C', '...', '.x', 'x.', '.well-known', '%41', ''];
const PLAIN = ['admin', 'api', 'services', 'stats', 'sandbox', 'x', 'session', 'changes', 'metrics', 'sandboxes'];

/** A raw path: one of the API's roots, then up to 6 segments mixing tricks and plain names. */
export const dotPath = fc
  .tuple(
    fc.constantFrom('/admin/api/x/', '/admin/', '/services/', '/sandbox/x/services/', '/', '/admin/api/'),
    fc.array(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...TRICKS) }, { weight: 2, arbitrary: fc.constantFrom(...PLAIN) }), { minLength: 1, maxLength: 6 }),
  )
  .map(([root, segs]) => root + segs.join('/'));

/** every %XX decoded (latin1), as nginx does once before matching */
export function decodeOnce(raw: string): string {
  return raw.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** repeated slashes merged (nginx's merge_slashes, on by default) */
const merged = (p: string) => p.replace(/\/{2,}/g, '/');

/**
 * The path nginx picks its location by: decoded once, slashes merged, "." and ".." resolved;
 * null when ".." climbs above the root (nginx answers 400 itself).
 */
export function nginxView(raw: string): string | null {
  const segs = merged(decodeOnce(raw)).split('/').slice(1);
  const out: string[] = [];
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i]!;
    const last = i === segs.length - 1;
    if (s === '.') {
      if (last) out.push('');
    } else if (s === '..') {
      if (out.length === 0) return null;
      out.pop();
      if (last) out.push('');
    } else out.push(s);
  }
  return '/' + out.join('/');
}

/** decoded and merged but not resolved: the path as the server's routes would read it */
export const decodedAsIs = (raw: string) => merged(decodeOnce(raw));
