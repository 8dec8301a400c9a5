// A registry service as Consul's catalog and health API describe an instance (contract,
// "Consul-compatible catalog"): a Consul *service* is a capability, its instances the
// services that have it. Pure: a stored document and its revision in, Consul's JSON out.
import { compareCodePoints } from '../../domain/tokens.js';
import { listenOf } from '../endpoint.js';
import type { ServiceDoc } from '../prometheus/targets.js';

/** The node every instance is on: one registry, no agents. */
export const NODE = 'registry';

/** What an instance is made of: its document, its revision, where it listens. */
export interface Instance {
  doc: ServiceDoc;
  /** the revision of its state (services.version): its CreateIndex and ModifyIndex */
  rev: number;
  address: string;
  port: number;
  tags: string[];
  /** `passing` or `critical` (`unknown`, a service without a lease, reads `passing`) */
  status: 'passing' | 'critical';
}

/** Its capabilities, then `key=value` for each property, in key order. */
export function tagsOf(doc: ServiceDoc): string[] {
  return [...doc.capabilities, ...Object.keys(doc.properties).sort(compareCodePoints).map((k) => `${k}=${doc.properties[k]}`)];
}

/** An instance of a stored document, or null when its endpoint names no host (never stored). */
export function instanceOf(doc: ServiceDoc, rev: number): Instance | null {
  const at = listenOf(doc.endpoint);
  if (!at) return null;
  return { doc, rev, address: at.host, port: at.port, tags: tagsOf(doc), status: doc.health.status === 'critical' ? 'critical' : 'passing' };
}

/** `?tag=` (all must match) and `?passing`. */
export function matches(i: Instance, tags: readonly string[], passing: boolean): boolean {
  return (!passing || i.status === 'passing') && tags.every((t) => i.tags.includes(t));
}

/** Properties as an object with no prototype (a key may be "__proto__"). */
function meta(doc: ServiceDoc): Record<string, string> {
  return Object.assign(Object.create(null) as Record<string, string>, doc.properties);
}

/** GET /v1/catalog/service/{capability}: one catalog entry. */
export function catalogEntry(i: Instance, capability: string, dc: string): Record<string, unknown> {
  return {
    ID: i.doc.id,
    Node: NODE,
    Address: i.address,
    Datacenter: dc,
    ServiceID: i.doc.id,
    ServiceName: capability,
    ServiceTags: i.tags,
    ServiceAddress: i.address,
    ServicePort: i.port,
    ServiceMeta: meta(i.doc),
    CreateIndex: i.rev,
    ModifyIndex: i.rev,
  };
}

/** GET /v1/health/service/{capability}: the node, the service and its one check (the lease). */
export function healthEntry(i: Instance, capability: string, dc: string): Record<string, unknown> {
  return {
    Node: { Node: NODE, Address: i.address, Datacenter: dc },
    Service: { ID: i.doc.id, Service: capability, Tags: i.tags, Address: i.address, Port: i.port, Meta: meta(i.doc) },
    Checks: [{ Node: NODE, CheckID: `service:${i.doc.id}`, Name: 'lease', Status: i.status, ServiceID: i.doc.id, ServiceName: capability }],
  };
}

/** GET /v1/catalog/services: every capability with the tags of its instances, de-duplicated and sorted. */
export function servicesMap(instances: readonly Instance[]): Record<string, string[]> {
  const tags = new Map<string, Set<string>>();
  for (const i of instances) {
    for (const c of i.doc.capabilities) {
      let s = tags.get(c);
      if (!s) tags.set(c, (s = new Set()));
      for (const t of i.tags) s.add(t);
    }
  }
  const out = Object.create(null) as Record<string, string[]>;
  for (const c of [...tags.keys()].sort(compareCodePoints)) out[c] = [...tags.get(c)!].sort(compareCodePoints);
  return out;
}
