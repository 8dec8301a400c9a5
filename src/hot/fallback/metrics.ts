// Fallback metrics: reads answered from PostgreSQL while the index is away, and those the
// bound refused. Registered in the thread's registry (metrics/registry.ts).
import { Counter } from 'prom-client';
import { registers } from '../metrics/registry.js';

const reads = new Counter({
  name: 'registry_fallback_reads_total',
  help: 'Statements of reads answered from PostgreSQL while the index was away, by result: answered, refused (FALLBACK_MAX_QUERIES in flight: 503) or failed (PostgreSQL away or the statement timed out: 503)',
  labelNames: ['result'] as const,
  registers,
});

export function countFallbackRead(result: 'answered' | 'refused' | 'failed'): void {
  reads.labels(result).inc();
}
