// What an expiry changes in a service's stored index text (issue 23, mass expiry): the
// document's health and the sets that depend on health, nothing else. Derived here, once,
// from serializeService() and memberSuffixes() (the table of dimensions), so that the two
// set-based copies of the change — the expiry's SQL (liveness/store.ts expireMany) and
// redis/health-flip-1.lua — apply exactly what the general path would have written; a
// dimension added on health that this patch cannot express fails at load, not in the index.
import { memberSuffixes } from '../domain/keys.js';
import { serializeService, type HealthStatus, type ServiceRecord } from '../domain/service.js';

// Stryker disable all: only the sample's health reaches the patch (withStatus replaces it);
// its other values could be any valid record's (the unit test applies the patch to another)
const SAMPLE: ServiceRecord = {
  id: 'expiry-sample',
  ns: 'production',
  seq: 1,
  endpoint: 'https://expiry.example.com/',
  capabilities: ['x'],
  properties: { k: 'v' },
  iot: { deviceClasses: ['d'], protocols: ['p'] },
  deprecated: false,
  deprecatedAt: null,
  locked: false,
  sunsetDate: null,
  replacementSeqs: [],
  health: { status: 'passing', ttl: 5 },
  lease: { tokenHash: '', deregisterAfter: null, criticalSince: null },
};
// Stryker restore all

const withStatus = (status: HealthStatus): ServiceRecord => ({ ...SAMPLE, health: { status, ttl: 5 } });

export interface ExpiryPatch {
  /** a passing document ends with this, then its ttl and `}}` */
  oldTail: string;
  /** … and its critical state with this */
  newTail: string;
  /** set suffixes a service leaves when it turns critical (`h`, healthy=true) */
  left: string[];
  /** set suffixes it joins (none today) */
  joined: string[];
}

/**
 * The patch, from a serialiser and a member rule (the real ones by default; tests hand in
 * others to reach the guards): the document's health up to its ttl (health must be its last
 * field), the sets a critical service leaves, and none it may join.
 */
export function derivePatch(
  serialize: (s: ServiceRecord) => string = serializeService,
  members: (s: ServiceRecord) => string[] = memberSuffixes,
): ExpiryPatch {
  const tail = (status: HealthStatus): string => {
    const doc = serialize(withStatus(status));
    const at = doc.lastIndexOf(',"health":');
    if (at < 0 || !doc.endsWith('5}}')) throw new Error('expiry-patch: the health field is no longer the last of the document');
    return doc.slice(at, -3);
  };
  const before = members(withStatus('passing'));
  const after = members(withStatus('critical'));
  const left = before.filter((m) => !after.includes(m));
  const joined = after.filter((m) => !before.includes(m));
  // the SQL copy removes lines of the stored member text: a set joined would need its place
  if (joined.length) throw new Error(`expiry-patch: a critical service joins sets (${joined.join(', ')}); liveness/store.ts expireMany cannot add them`);
  return { oldTail: tail('passing'), newTail: tail('critical'), left, joined };
}

export const EXPIRY_PATCH: Readonly<ExpiryPatch> = derivePatch();
