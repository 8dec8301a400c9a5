// Discovery metrics: the DNS server's answers by response code and transport, its refusals
// (rate-limited, dropped) and the Prometheus SD and Consul answers by outcome. Plain counts
// exported by collectors (metrics/registry.ts): a DNS answer costs an increment, not
// prom-client's label hashing. Registered in the thread's registry; the DNS server runs on
// one thread per process, whose counts the scrape merges with the others'.
import { collector } from '../metrics/registry.js';
import type { DnsDropReason, DnsMetrics, DnsRcode, DnsTransport } from './dns/dns.js';

const answers = new Map<string, number>();
const limited = { slip: 0, drop: 0 };
const drops = new Map<DnsDropReason, number>();
const sd = { listed: 0, not_modified: 0, too_many: 0 };
const consul = new Map<string, number>();

collector('registry_dns_answers_total', 'DNS answers sent, by response code and transport (udp, tcp)', 'counter', () =>
  [...answers].map(([k, value]) => {
    const [rcode, transport] = k.split('/');
    return { labels: { rcode: rcode!, transport: transport! }, value };
  }),
);
collector('registry_dns_rate_limited_total', 'UDP queries over DNS_RATE_PER_ADDRESS: answered empty with TC (slip) or not at all (drop)', 'counter', () =>
  Object.entries(limited).map(([action, value]) => ({ labels: { action }, value })),
);
collector('registry_dns_dropped_total', 'DNS packets or connections refused without an answer, by reason (malformed, busy, tcp-limit, send-error)', 'counter', () =>
  [...drops].map(([reason, value]) => ({ labels: { reason }, value })),
);
collector('registry_prometheus_sd_answers_total', 'GET /discovery/prometheus answers, by outcome (listed, not_modified, too_many)', 'counter', () =>
  Object.entries(sd).map(([outcome, value]) => ({ labels: { outcome }, value })),
);
collector('registry_consul_answers_total', 'Consul-compatible catalog answers (/v1/…), by route', 'counter', () =>
  [...consul].map(([route, value]) => ({ labels: { route }, value })),
);

const bump = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);

/** The DNS server's counters (discovery/dns types.ts DnsMetrics), backed by the collectors above. */
export const dnsMetrics: DnsMetrics = {
  answered: (rcode: DnsRcode, transport: DnsTransport) => bump(answers, `${rcode}/${transport}`),
  rateLimited: (action: 'slip' | 'drop') => limited[action]++,
  dropped: (reason: DnsDropReason) => bump(drops, reason),
};

export function countSdAnswer(outcome: keyof typeof sd): void {
  sd[outcome]++;
}

export function countConsulAnswer(route: string): void {
  bump(consul, route);
}
