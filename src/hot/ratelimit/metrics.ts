// Rate-limit metrics: where each sandbox request's decision came from, and the 429s by tier.
// Registered in the thread's registry (metrics/registry.ts).
import { Counter } from 'prom-client';
import { collector, registers } from '../metrics/registry.js';
import type { Sampler } from '../metrics/metrics.js';

type RateStats = { asked: number; batched: number; refusedLocally?: number };

/** the thread's decisions at the last sample */
let snapshot: RateStats | null = null;

/** The rate limiter's decisions (SandboxAuth.stats), copied before each registry read. */
export function sampleRateLimit(read: () => RateStats): Sampler {
  return () => {
    snapshot = { ...read() };
  };
}

collector('registry_rate_limit_checks_total', 'Sandbox requests counted against their limit, by where the decision came from: redis (the rate-limit script), lease (a batch this thread holds) or local (refused while this thread knows the sandbox is over its limit)', 'counter', () => {
  const s = snapshot;
  if (!s) return [];
  return [
    { labels: { source: 'redis' }, value: s.asked },
    { labels: { source: 'lease' }, value: s.batched },
    { labels: { source: 'local' }, value: s.refusedLocally ?? 0 },
  ];
});

const rateLimited = new Counter({
  name: 'registry_rate_limit_rejections_total',
  help: 'Sandbox requests refused with 429, by tier',
  labelNames: ['tier'] as const,
  registers,
});

export function countRateLimited(tier: string): void {
  rateLimited.labels(tier).inc();
}
