// Registry metrics: index updates of committed writes that failed, and the outbox's lag.
// Registered in the thread's registry (metrics/registry.ts).
import { Counter, Gauge } from 'prom-client';
import { registers } from '../metrics/registry.js';
import { countBackendError, type Sampler } from '../metrics/metrics.js';

const projectorFailures = new Counter({
  name: 'registry_projector_failures_total',
  help: 'Index updates of committed writes that failed (left to the outbox sweeper), by stage: write (right after the commit), sweep, invalidate (a cache invalidation not published or subscribed), missing (an outbox row with nothing to apply)',
  labelNames: ['stage'] as const,
  registers,
});
const outboxLag = new Gauge({
  name: 'registry_outbox_lag',
  help: 'Committed writes not yet applied to the Redis index (those of the outbox rows)',
  // every thread reads the same PostgreSQL table: summing would multiply it
  aggregator: 'max',
  registers,
});

/** Writes not yet applied (Projector.lag), read before each registry read. */
export function sampleOutbox(lag: () => Promise<number>): Sampler {
  return async () => {
    try {
      outboxLag.set(await lag());
    } catch {
      countBackendError('postgres', 'query');
    }
  };
}

export function countProjectorFailure(stage: 'write' | 'sweep' | 'invalidate' | 'missing'): void {
  projectorFailures.labels(stage).inc();
}
