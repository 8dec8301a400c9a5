// The serving thread's Prometheus registry (prom-client): a module instance is per thread, so
// each uWS thread has its own; metrics-threads.ts merges them at scrape time. collector()
// registers a metric whose values are read at scrape time from plain accumulators (no
// prom-client labelled children on the hot path: docs/decisions/metrics-and-logs.md).
import { Registry } from 'prom-client';

export const registry = new Registry();
/** the `registers` option of every prom-client metric of the thread */
export const registers = [registry];

export type Exported = { labels: Record<string, string | number>; value: number; metricName?: string };

export function collector(name: string, help: string, type: 'counter' | 'histogram', values: () => Exported[]): void {
  const m = {
    name,
    help,
    type,
    aggregator: 'sum' as const,
    get: async () => ({ name, help, type, aggregator: 'sum' as const, values: values() }),
  };
  registry.registerMetric(m as unknown as Parameters<Registry['registerMetric']>[0]);
}
