// What a lease's status change (passing <-> critical: liveness/store.ts setHealth, migration
// 0009) changes in a service's stored index text: the expiry's patch (expiry-patch.ts) both
// ways. Turning critical drops the health-dependent member lines wherever they stand;
// turning passing again appends them, which gives indexText()'s exact text only while they
// are the last lines of a passing service's members — checked here at load over a record
// that fills every dimension, so a dimension added after them fails at start, not in the
// stored text.
import { EXPIRY_PATCH, type ExpiryPatch } from './expiry-patch.js';
import { memberSuffixes } from '../domain/keys.js';
import type { HealthStatus, ServiceRecord } from '../domain/service.js';

export interface HealthPatch {
  /** a passing document's tail from its health field on, without the ttl and `}}` */
  passing: string;
  /** … a critical one's */
  critical: string;
  /** member lines a passing service has and a critical one has not, in their order (the last ones) */
  sets: string[];
}

// Stryker disable all: any record with every dimension filled would do
const FULL: ServiceRecord = {
  id: 'health-sample',
  ns: 'production',
  seq: 1,
  endpoint: 'https://health.example.com/',
  capabilities: ['x', 'y'],
  properties: { k: 'v', l: 'w' },
  iot: { deviceClasses: ['d'], protocols: ['p'] },
  deprecated: true,
  deprecatedAt: 1,
  locked: true,
  sunsetDate: '2030-01-01',
  replacementSeqs: [2],
  health: { status: 'passing', ttl: 5 },
  lease: { tokenHash: '', deregisterAfter: null, criticalSince: null },
};
// Stryker restore all

/** The patch, from the expiry's and a member rule (the real ones by default; tests hand in others). */
export function deriveHealthPatch(p: Readonly<ExpiryPatch> = EXPIRY_PATCH, members: (s: ServiceRecord) => string[] = memberSuffixes): HealthPatch {
  const of = (status: HealthStatus) => members({ ...FULL, health: { status, ttl: 5 } });
  const passing = of('passing');
  const critical = of('critical');
  if (passing.join('\n') !== [...critical, ...p.left].join('\n')) {
    throw new Error('health-patch: the sets that depend on health are no longer the last member lines; liveness/store.ts setHealth cannot append them');
  }
  return { passing: p.oldTail, critical: p.newTail, sets: [...p.left] };
}

export const HEALTH_PATCH: Readonly<HealthPatch> = deriveHealthPatch();
