// Held-request metrics: how many are held, and how each ended. Registered in the thread's
// registry (metrics/registry.ts).
import { Counter, Gauge } from 'prom-client';
import { registers } from '../metrics/registry.js';

const held = new Gauge({
  name: 'registry_held_requests',
  help: 'Requests held until their answer changes (If-None-Match + Prefer: wait)',
  aggregator: 'sum',
  registers,
});

const ended = new Counter({
  name: 'registry_held_requests_total',
  help: 'Held requests by how they ended: changed (200 with the new answer), expired (304 at the end of the wait), drained (304 at shutdown), left (the client went away), refused (429: a share was full)',
  labelNames: ['outcome'],
  aggregator: 'sum',
  registers,
});

export type HeldOutcome = 'changed' | 'expired' | 'drained' | 'left' | 'refused';

export function countHeld(delta: number): void {
  held.inc(delta);
}

export function countHeldEnd(outcome: HeldOutcome, n = 1): void {
  ended.inc({ outcome }, n);
}
