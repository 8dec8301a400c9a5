// Where a service listens, as the discovery protocols name it: its endpoint's host (IPv6
// without brackets), port (the scheme's default when the URL has none), scheme and path.
// Pure. Endpoints are stored in their WHATWG serialisation (domain/endpoint.ts), so the URL
// parser gives these back exactly.

export interface Listen {
  /** the host as the URL has it: a name, an IPv4 address, or an IPv6 address without brackets */
  host: string;
  port: number;
  /** `http` or `https` */
  scheme: string;
  /** the URL's path (`/` at least) */
  path: string;
  /** `<host>:<port>`, IPv6 in brackets: Prometheus's target */
  hostPort: string;
}

const DEFAULT_PORT: Record<string, number> = { 'http:': 80, 'https:': 443 };

/** The endpoint's parts, or null when it is no http(s) URL with a host (never stored, but checked). */
export function listenOf(endpoint: string): Listen | null {
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch {
    return null;
  }
  const def = DEFAULT_PORT[u.protocol];
  if (def === undefined || u.hostname === '') return null;
  const port = u.port === '' ? def : Number(u.port);
  const bracketed = u.hostname.startsWith('[');
  const host = bracketed ? u.hostname.slice(1, -1) : u.hostname;
  return { host, port, scheme: u.protocol.slice(0, -1), path: u.pathname || '/', hostPort: `${u.hostname}:${port}` };
}
