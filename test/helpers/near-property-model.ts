// The model of test/pg/near-property.test.ts: the queries (Query) and which services
// (the state a write leaves: Modelled) a query matches with its canonical path, and the
// random schedules of operations the property runs on two nodes (fast-check arbitraries).
import fc from 'fast-check';
import type { Svc } from './svc.js';

export type Query = { caps: string[]; zone?: string; iotReady?: boolean; deviceClass?: string; healthy?: boolean };

const CAPS = ['a', 'b', 'c'];
const ZONES = ['z1', 'z2'];

/** the fields of a service (served, or read from PostgreSQL's rows) the model decides by */
export type Modelled = Pick<Svc, 'id' | 'capabilities' | 'properties' | 'deprecated' | 'iot' | 'health'>;

export function matches(s: Modelled, q: Query, run: string): boolean {
  if (!q.caps.every((c) => s.capabilities.includes(run + c))) return false;
  if (q.zone && s.properties.zone !== q.zone) return false;
  if (q.iotReady && !s.iot) return false;
  if (q.deviceClass && !s.iot?.deviceClasses.includes(q.deviceClass)) return false;
  if (q.healthy && s.health?.status === 'critical') return false;
  return true;
}

/** The canonical query string (parameters sorted by name, then value). */
export function path(q: Query, run: string): string {
  const p: string[] = [];
  for (const c of [...q.caps].sort()) p.push(`capability=${run}${c}`);
  if (q.deviceClass) p.push(`deviceClass=${q.deviceClass}`);
  if (q.healthy) p.push('healthy=true');
  if (q.iotReady) p.push('iotReady=true');
  p.push('limit=1000');
  if (q.zone) p.push(`property=zone:${q.zone}`);
  return '/services?' + p.join('&');
}

const capsArb = fc.subarray(CAPS, { minLength: 1 });
const iotArb: fc.Arbitrary<Svc['iot']> = fc.option(fc.record({ deviceClasses: fc.constantFrom(['meter'], ['meter', 'cam'], ['cam']).map((a) => [...a]), protocols: fc.constant(['mqtt']).map((a) => [...a]) }), { nil: null });
const nodeArb = fc.integer({ min: 0, max: 1 });
const queryArb: fc.Arbitrary<Query> = fc.record(
  { caps: fc.subarray(CAPS, { minLength: 1, maxLength: 2 }), zone: fc.constantFrom(...ZONES), iotReady: fc.boolean(), deviceClass: fc.constant('meter'), healthy: fc.boolean() },
  { requiredKeys: ['caps'] },
);
export type Op =
  | { kind: 'register'; node: number; caps: string[]; zone: string; iot: Svc['iot']; leased: boolean }
  | { kind: 'heartbeat'; node: number; pick: number; status: 'passing' | 'critical' }
  | { kind: 'expire' }
  | { kind: 'patch'; node: number; pick: number; caps?: string[]; zone?: string; iot?: Svc['iot'] | undefined }
  | { kind: 'deprecate'; node: number; pick: number }
  | { kind: 'delete'; node: number; pick: number }
  | { kind: 'reindex' }
  | { kind: 'search'; node: number; q: Query };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('register' as const), node: nodeArb, caps: capsArb, zone: fc.constantFrom(...ZONES), iot: iotArb, leased: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('heartbeat' as const), node: nodeArb, pick: fc.nat(), status: fc.constantFrom('passing' as const, 'critical' as const) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'expire' as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('patch' as const), node: nodeArb, pick: fc.nat(), caps: capsArb, zone: fc.constantFrom(...ZONES), iot: iotArb }, { requiredKeys: ['kind', 'node', 'pick'] }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deprecate' as const), node: nodeArb, pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), node: nodeArb, pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reindex' as const }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('search' as const), node: nodeArb, q: queryArb }) },
);
/** Ops in small batches that run concurrently: the interleavings. */
export const scheduleArb = fc.array(fc.array(opArb, { minLength: 1, maxLength: 3 }), { minLength: 4, maxLength: 10 });
