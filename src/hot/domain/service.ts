// The service record and its serialised form. Documents are serialised once, at write
// time, with a fixed field order, and served as stored bytes afterwards.
import type { IotProfile } from './validation.js';

export interface ServiceRecord {
  id: string;
  ns: string;
  seq: number;
  endpoint: string;
  capabilities: string[];
  properties: Record<string, string>;
  iot: IotProfile | null;
  deprecated: boolean;
  /** unix seconds when it was deprecated, null when not deprecated */
  deprecatedAt: number | null;
  locked: boolean;
  sunsetDate: string | null;
  /** candidate seqs, ranked as registered */
  replacementSeqs: number[];
  /** services.version this state was read at: its index revision (absent when not read from PostgreSQL) */
  version?: number;
  /** the lease's status and ttl (contract "Liveness"); absent: no lease (unknown) */
  health?: Health;
  /** what the lease sweeper needs beyond `health` (absent: no lease) */
  lease?: LeaseTerms;
}

export type HealthStatus = 'unknown' | 'passing' | 'critical';
export interface Health {
  status: HealthStatus;
  /** seconds, null without a lease */
  ttl: number | null;
}
export interface LeaseTerms {
  /** sha256 of the heartbeat token, hex ("" when none was issued) */
  tokenHash: string;
  deregisterAfter: number | null;
  /** ms (the node clock that saw the expiry) since when it is critical, null otherwise */
  criticalSince: number | null;
}

const NO_LEASE: Health = { status: 'unknown', ttl: null };

export function serviceObject(s: ServiceRecord): Record<string, unknown> {
  // no prototype: a key may be "__proto__" (a valid token), which assignment to a plain
  // object would take for the prototype and drop from the document
  const props = Object.create(null) as Record<string, string>;
  for (const k of sortedKeys(s.properties)) props[k] = s.properties[k]!;
  return {
    id: s.id,
    endpoint: s.endpoint,
    capabilities: s.capabilities,
    properties: props,
    deprecated: s.deprecated,
    locked: s.locked,
    sunset_date: s.sunsetDate,
    iotReady: s.iot !== null,
    iot: s.iot ? { deviceClasses: s.iot.deviceClasses, protocols: s.iot.protocols } : null,
    // last: migration 0006 appended it to the stored text of older rows
    health: s.health ? { status: s.health.status, ttl: s.health.ttl } : NO_LEASE,
  };
}

/**
 * `Object.keys(o).sort()`: a service's few keys by insertion, already sorted ones as they are.
 * Array.prototype.sort allocates its work state on every call, which every document written
 * paid (an import, once a service).
 */
function sortedKeys(o: Record<string, string>): string[] {
  const keys = Object.keys(o);
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i]!;
    let j = i - 1;
    if (keys[j]! <= k) continue;
    while (j >= 0 && keys[j]! > k) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = k;
  }
  return keys;
}

export function serializeService(s: ServiceRecord): string {
  return JSON.stringify(serviceObject(s));
}

/** "<deprecatedAtSec>|<Sunset HTTP-date>", "" when neither header applies. */
export function headerData(s: ServiceRecord): string {
  const dep = s.deprecated ? String(s.deprecatedAt ?? 0) : '';
  const sun = s.sunsetDate ? new Date(s.sunsetDate + 'T00:00:00Z').toUTCString() : '';
  return dep || sun ? dep + '|' + sun : '';
}

/**
 * Response headers about one service: Deprecation (RFC 9745), Sunset (RFC 8594), and the
 * successor-version Link to its replacements.
 */
export function deprecationHeaders(hdr: string, replacementsPath: string): [string, string][] {
  if (!hdr) return [];
  const i = hdr.indexOf('|');
  const dep = hdr.slice(0, i);
  const sun = hdr.slice(i + 1);
  const out: [string, string][] = [];
  if (dep) {
    out.push(['Deprecation', '@' + dep]);
    out.push(['Link', `<${replacementsPath}>; rel="successor-version"`]);
  }
  if (sun) out.push(['Sunset', sun]);
  return out;
}
