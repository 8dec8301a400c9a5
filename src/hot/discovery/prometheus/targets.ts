// A service as a Prometheus HTTP SD target group (contract, "Prometheus HTTP service
// discovery"): its `<host>:<port>` and the `__meta_registry_*` labels relabelling rules can
// read. Pure: a stored document in, a target group out.
import { listenOf } from '../endpoint.js';

/** The parts of a stored service document (domain/service.ts serviceObject) the labels read. */
export interface ServiceDoc {
  id: string;
  endpoint: string;
  capabilities: string[];
  properties: Record<string, string>;
  deprecated: boolean;
  iot: { deviceClasses: string[]; protocols: string[] } | null;
  health: { status: string; ttl: number | null };
}

export interface TargetGroup {
  targets: string[];
  labels: Record<string, string>;
}

const META = '__meta_registry_';

/** A list as Prometheus writes tags: comma-wrapped (`,a,b,`; `,,` when empty). */
export function tagList(xs: readonly string[]): string {
  return ',' + xs.join(',') + ',';
}

/** A property key as a label name's tail: every character outside `[a-zA-Z0-9_]` becomes `_`. */
export function labelKey(key: string): string {
  return key.replace(/[^a-zA-Z0-9_]/g, '_');
}

/**
 * The target group of one service of namespace `ns`, or null when its endpoint names no
 * host and port (never stored). Two property keys that read the same as label names (`a.b`,
 * `a-b`): the later one in key order wins.
 */
export function targetGroup(doc: ServiceDoc, ns: string): TargetGroup | null {
  const at = listenOf(doc.endpoint);
  if (!at) return null;
  // no prototype: a property key may be "__proto__"
  const labels = Object.create(null) as Record<string, string>;
  labels[META + 'service_id'] = doc.id;
  labels[META + 'namespace'] = ns;
  labels[META + 'endpoint'] = doc.endpoint;
  labels[META + 'scheme'] = at.scheme;
  labels[META + 'path'] = at.path;
  labels[META + 'health'] = doc.health.status;
  labels[META + 'deprecated'] = doc.deprecated ? 'true' : 'false';
  labels[META + 'capabilities'] = tagList(doc.capabilities);
  labels[META + 'device_classes'] = tagList(doc.iot?.deviceClasses ?? []);
  labels[META + 'protocols'] = tagList(doc.iot?.protocols ?? []);
  for (const k of Object.keys(doc.properties).sort()) labels[META + 'property_' + labelKey(k)] = doc.properties[k]!;
  return { targets: [at.hostPort], labels };
}
