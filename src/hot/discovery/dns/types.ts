// The seams of the DNS server (dns.ts): where its data comes from (DnsSource), where its
// counts go (DnsMetrics) and what it is configured with (DnsOptions, the DNS_* settings of
// the contract plus limits that have safe defaults). Nothing here does I/O.

/** One service as DNS sees it. */
export interface DnsService {
  /** the service id; the SRV target of an IP-literal endpoint is `<id>.addr.<domain>` */
  id: string;
  /** the WHATWG serialisation of its http(s) endpoint (domain/endpoint.ts) */
  endpoint: string;
}

/**
 * The registry's view for DNS: production services that are not `critical`, nothing else
 * (DNS carries no key). Both calls may throw; the query is then answered SERVFAIL.
 */
export interface DnsSource {
  /**
   * The services that have every one of `capabilities` (1 to 32 distinct tokens of
   * `[a-z0-9_-]`, lower case, no `.`). An empty list means the name does not exist (NXDOMAIN).
   * The list itself when the source has it at hand (the answer is then made and sent within
   * the packet's event, no promise), else a promise of it.
   */
  servicesWith(capabilities: readonly string[]): readonly DnsService[] | Promise<readonly DnsService[]>;
  /**
   * The service whose id equals `id` ignoring ASCII case (DNS names are case-insensitive and
   * resolvers may change the case of a name they forward), or null. `id` is 1 to 63 of
   * `[A-Za-z0-9_-]`, in the case it was asked.
   */
  serviceById(id: string): Promise<DnsService | null>;
}

export type DnsRcode = 'NOERROR' | 'FORMERR' | 'SERVFAIL' | 'NXDOMAIN' | 'NOTIMP' | 'REFUSED' | 'BADVERS';
export type DnsTransport = 'udp' | 'tcp';
/**
 * Why a packet or a connection got nothing: `malformed` (shorter than a header, a response
 * rather than a query, or a TCP message under 12 bytes: the connection is closed), `busy`
 * (too many UDP look-ups in flight), `tcp-limit` (a connection over the per-address or total
 * cap, closed at once), `send-error` (the socket refused an answer).
 */
export type DnsDropReason = 'malformed' | 'busy' | 'tcp-limit' | 'send-error';

/** Counters the server reports to; the composition root backs them with prom-client. */
export interface DnsMetrics {
  /** an answer sent, by its response code and transport */
  answered(rcode: DnsRcode, transport: DnsTransport): void;
  /** a UDP query over its address's rate: answered empty with TC (`slip`) or not at all (`drop`) */
  rateLimited(action: 'slip' | 'drop'): void;
  /** a packet or connection refused without an answer */
  dropped(reason: DnsDropReason): void;
}

export interface DnsOptions {
  source: DnsSource;
  /** DNS_HOST: the address both sockets bind (default 127.0.0.1) */
  host?: string;
  /** DNS_PORT (default 8600); 0 lets the kernel pick one port free for UDP and TCP alike */
  port?: number;
  /** DNS_DOMAIN: the zone this server is authoritative for (default `registry.`) */
  domain?: string;
  /** DNS_TTL: seconds, for every record and the SOA's negative-caching minimum (default 5) */
  ttl?: number;
  /** DNS_MAX_RECORDS: most answer records in one TCP answer (default 1000) */
  maxRecords?: number;
  /** DNS_RATE_PER_ADDRESS: UDP answers a second per client address (default 200) */
  ratePerAddress?: number;
  metrics?: DnsMetrics;
  /** client addresses the rate limiter tracks in one second; the rest share one budget (default 10000) */
  rateTableSize?: number;
  /** UDP look-ups waiting for the source at once; more are dropped (default 1024) */
  maxInFlight?: number;
  /** open TCP connections from one address (default 16) and in all (default 256) */
  tcpPerAddress?: number;
  tcpTotal?: number;
  /** a TCP connection with no traffic this long (ms) is closed (default 10000) */
  tcpIdleMs?: number;
  /** test hook: the rate limiter's clock (ms) */
  now?: () => number;
}

/** The defaults of DnsOptions, for the configuration module and the docs. */
export const DNS_DEFAULTS = {
  host: '127.0.0.1',
  port: 8600,
  domain: 'registry.',
  ttl: 5,
  maxRecords: 1000,
  ratePerAddress: 200,
  rateTableSize: 10_000,
  maxInFlight: 1024,
  tcpPerAddress: 16,
  tcpTotal: 256,
  tcpIdleMs: 10_000,
} as const;
