// Liveness metrics (src/hot/liveness/, issue 23): heartbeats by result, health transitions,
// how late expiries were committed, leased services. Registered in the thread's registry
// (metrics-registry.ts) beside the other metrics (metrics.ts).
import { Counter, Gauge, Histogram } from 'prom-client';
import { collector, registers } from '../metrics/registry.js';

// a plain count per result, exported by a collector: a heartbeat costs an increment, not
// prom-client's label hashing (heartbeats are the registry's most frequent request)
const heartbeatCounts = { renewed: 0, transition: 0, refused: 0 };
collector('registry_heartbeats_total', 'Heartbeats answered, by result: renewed (nothing durable written), transition (the status changed: a durable write), refused (401)', 'counter', () =>
  Object.entries(heartbeatCounts).map(([result, value]) => ({ labels: { result }, value })),
);
const transitions = new Counter({
  name: 'registry_health_transitions_total',
  help: 'Health status changes committed, by new status and cause (heartbeat, expiry), and services deregistered after staying critical (to="deleted")',
  labelNames: ['to', 'cause'] as const,
  registers,
});
const SWEEP_LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 5, 10, 30];
const sweepLag = new Histogram({
  name: 'registry_lease_expiry_lag_seconds',
  help: "How late the sweeper committed a lease's expiry, from its deadline (contract: every node sees it within ttl + 2 s)",
  buckets: SWEEP_LAG_BUCKETS,
  registers,
});
const leased = new Gauge({
  name: 'registry_leased_services',
  help: 'Services holding a lease in Redis (all shards; every thread reads the same sets)',
  aggregator: 'max',
  registers,
});

export function countHeartbeat(result: 'renewed' | 'transition' | 'refused'): void {
  heartbeatCounts[result]++;
}
export function countTransition(to: 'passing' | 'critical' | 'deleted', cause: 'heartbeat' | 'expiry'): void {
  transitions.labels(to, cause).inc();
}
export function observeExpiryLag(seconds: number): void {
  sweepLag.observe(Math.max(0, seconds));
}
export function setLeasedServices(n: number): void {
  leased.set(n);
}
