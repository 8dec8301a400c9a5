// Which raw request paths the server refuses before routing: those a proxy may read as
// another path than the one it forwards. nginx matches its location blocks (the /admin
// allow-list among them) on the path it decoded and resolved, and forwards the raw one:
// `/admin/api/x/..%2F..%2Fservices` is `/services` to nginx and an admin path to the router.
// A path holding an encoded "/" or "." (`%2F`, `%2E`, any case) or a literal dot-segment
// ("/./", "/../", or "/." and "/.." at its end) has no single reading, and no route needs
// one: it is refused (400) by the server and by the shipped proxy (deploy/nginx.conf, the
// same rule as a regular expression over $request_uri).

const NOT_CANONICAL = /%2[ef]|\/\.\.?(?:\/|$)/i;

/** true for a raw path (no query) that reads differently decoded and resolved */
export function ambiguousPath(path: string): boolean {
  // the common path has neither a "%" nor a "/.": two scans, no regular expression
  if (path.indexOf('%') === -1 && path.indexOf('/.') === -1) return false;
  return NOT_CANONICAL.test(path);
}
