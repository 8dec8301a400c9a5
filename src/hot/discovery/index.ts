// The discovery room's entry (contract, "Discovery for other tools"): the routes of
// Prometheus's HTTP service discovery (prometheus/) and of the Consul-compatible catalog
// (consul/), and the DNS server (dns/) over the index, which the composition root builds and
// starts on one serving thread per process.
import type { TemplatedApp } from 'uWebSockets.js';
import type { Config } from '../config.js';
import type { RouteOptions } from '../http/route.js';
import type { Index } from '../search/index.js';
import type { DiscoveryContext } from './context.js';
import { registerConsul } from './consul/routes.js';
import { DnsServer } from './dns/dns.js';
import { IndexDnsSource } from './dns/source.js';
import { dnsMetrics } from './metrics.js';
import { registerPrometheus } from './prometheus/routes.js';

export { type DiscoveryContext } from './context.js';
export { DnsServer } from './dns/dns.js';

/** GET /discovery/prometheus and the /v1/ routes. */
export function registerDiscovery(uws: TemplatedApp, app: DiscoveryContext, o: RouteOptions): void {
  registerPrometheus(uws, app, o);
  registerConsul(uws, app, o);
}

/**
 * The DNS server of the DNS_* settings over `index` (production, not critical), or null with
 * DNS_PORT=off. `results`: the result cache whose production version every applied write
 * bumps (the source keeps a name's list until then). Constructing opens nothing: start().
 */
export function createDnsServer(cfg: Config, index: Index, results: { version(ns: string): number }): DnsServer | null {
  if (cfg.dnsPort === null) return null;
  return new DnsServer({
    source: new IndexDnsSource(index, results, { max: cfg.discoveryMaxTargets, ttlMs: cfg.resultCacheTtlMs }),
    host: cfg.dnsHost,
    port: cfg.dnsPort,
    domain: cfg.dnsDomain,
    ttl: cfg.dnsTtl,
    maxRecords: cfg.dnsMaxRecords,
    ratePerAddress: cfg.dnsRatePerAddress,
    metrics: dnsMetrics,
  });
}
