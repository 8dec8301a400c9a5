// The client address behind a trusted reverse proxy (TRUSTED_PROXIES). The connection's
// own address is used unless it is one of the trusted proxies; then X-Forwarded-For is
// walked from the right (each proxy appends the address it saw), skipping trusted hops, and
// the first untrusted address is the client. Without X-Forwarded-For, X-Real-IP is the one
// hop. A hop that is not an IP address ends the walk at the last good one: a client can put
// anything at the left of the list, never at the right of what the proxy appended.
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

export function clientAddress(remote: string, forwardedFor: string, realIp: string, trusted: ReadonlySet<string>): string {
  let addr = normalizeAddress(remote);
  if (!trusted.has(addr)) return addr;
  const hops = forwardedFor ? forwardedFor.split(',') : realIp ? [realIp] : [];
  for (let i = hops.length - 1; i >= 0; i--) {
    const h = normalizeAddress(hops[i]!);
    if (!isIP(h)) break;
    addr = h;
    if (!trusted.has(h)) break;
  }
  return addr;
}
