// The client address behind a reverse proxy. A request that arrived on the proxy's Unix
// socket (PROXY_SOCKET_DIR: remote null) is the proxy's; so is a TCP connection from an
// address in TRUSTED_PROXIES (a proxy on another host). From either, X-Forwarded-For is
// walked from the right (each proxy appends the address it saw), skipping trusted hops, and
// the first untrusted address is the client; without X-Forwarded-For, X-Real-IP is the one
// hop. Any other connection is its own address, whatever it claims. A hop that is not an IP
// address ends the walk at the last good one: a client can put anything at the left of the
// list, never at the right of what the proxy appended.
import { isIP } from 'node:net';

/** One spelling per address: lower-case, IPv6 compressed, IPv4-mapped IPv6 as IPv4. */
export function normalizeAddress(raw: string): string {
  let a = raw.trim().toLowerCase();
  if (a.startsWith('[') && a.endsWith(']')) a = a.slice(1, -1);
  if (isIP(a) === 6) {
    try {
      a = new URL(`http://[${a}]/`).hostname.slice(1, -1);
    } catch {
      return a;
    }
    const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
    if (m) {
      const hi = parseInt(m[1]!, 16);
      const lo = parseInt(m[2]!, 16);
      return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
    }
    // Stryker disable next-line Regex: the URL parser writes every IPv6 address in hex (::ffff:7f00:1), never dotted, so no variant of this pattern meets a dotted form
    const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
    if (dotted) return dotted[1]!;
  }
  return a;
}

/** What a request on the proxy's socket without a usable X-Forwarded-For / X-Real-IP is "from". */
export const PROXY_SOCKET_PEER = 'unix';

/** `remote`: the TCP peer's address, or null for a request on the proxy's Unix socket. */
export function clientAddress(remote: string | null, forwardedFor: string, realIp: string, trusted: ReadonlySet<string>): string {
  let addr = remote === null ? PROXY_SOCKET_PEER : normalizeAddress(remote);
  if (remote !== null && !trusted.has(addr)) return addr;
  const hops = forwardedFor ? forwardedFor.split(',') : realIp ? [realIp] : [];
  for (let i = hops.length - 1; i >= 0; i--) {
    const h = normalizeAddress(hops[i]!);
    if (!isIP(h)) break;
    addr = h;
    if (!trusted.has(h)) break;
  }
  return addr;
}
