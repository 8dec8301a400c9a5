// Change-feed metrics: open streams. Registered in the thread's registry (metrics/registry.ts).
import { Gauge } from 'prom-client';
import { registers } from '../metrics/registry.js';

const streams = new Gauge({
  name: 'registry_change_streams',
  help: 'Open GET /services/changes streams',
  aggregator: 'sum',
  registers,
});

export function changeStreams(delta: number): void {
  streams.inc(delta);
}
