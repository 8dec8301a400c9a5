// Readiness metrics: where reads are answered from, and how often that changed. Registered in
// the thread's registry (metrics/registry.ts).
import { Counter, Gauge } from 'prom-client';
import { registers } from '../metrics/registry.js';
import type { ReadSource } from './state.js';

const SOURCES: readonly ReadSource[] = ['index', 'postgres', 'none'];

const source = new Gauge({
  name: 'registry_read_source',
  help: 'Serving threads answering discovery reads from each source: index (Redis), postgres (the fallback, while the index is away) or none (503: neither can answer, or draining)',
  labelNames: ['source'] as const,
  aggregator: 'sum',
  registers,
});

const changes = new Counter({
  name: 'registry_read_source_changes_total',
  help: 'Changes of where a serving thread answers discovery reads from, by the source it turned to',
  labelNames: ['to'] as const,
  registers,
});

/** A thread's read source now; `changed`: a transition (counted), not the first report. */
export function reportReadSource(now: ReadSource, changed: boolean): void {
  for (const s of SOURCES) source.labels(s).set(s === now ? 1 : 0);
  if (changed) changes.labels(now).inc();
}
