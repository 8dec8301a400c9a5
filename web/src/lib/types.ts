// Shapes of the admin API answers the dashboard reads (src/admin/api.ts on the server).
import type { PageFields } from '../../../src/admin/paging.js';

export type { PageFields };
export interface Location {
  lat: number;
  lon: number;
}

export interface SandboxSummary {
  uuid: string;
  name: string;
  tier: string;
  rateLimit: number;
  location: Location | null;
  createdAt: string;
  serviceCount?: number;
}

/** A page of the sandbox list: the paging fields are the server's own (src/admin/paging.ts). */
export interface SandboxPage extends PageFields {
  items: SandboxSummary[];
}

export interface TierChange {
  from: string;
  to: string;
  by: string;
  at: string;
}

/** services per health status (liveness) */
export type HealthCounts = Record<'passing' | 'critical' | 'unknown', number>;

export interface SandboxDetail extends SandboxSummary {
  /** services the sandbox may hold (its tier's), and serviceCount its use */
  serviceQuota: number;
  serviceCount: number;
  health: HealthCounts;
  counters: { total: number; rejected: number; windowTotal: number } | null;
  tierChanges: TierChange[];
}

type PerNamespace = { production: number; sandboxes: number };

export interface Stats {
  services: PerNamespace;
  deprecated: PerNamespace;
  locked: PerNamespace;
  iotReady: PerNamespace;
  health: Record<keyof HealthCounts, PerNamespace>;
  sandboxesByTier: Record<string, number>;
  sandboxes: number;
  locatedSandboxes: number;
  requests: { total: number; rejected: number };
  tiers: Record<string, number>;
  defaultTier: string;
}

export interface LocatedSandbox extends Location {
  uuid: string;
  name: string;
  tier: string;
}

export interface Poll {
  uuid: string;
  now: number;
  total: number;
  rateLimit: number;
  bucketSeconds: number;
  buckets: number[];
  windowTotal: number;
  rejected: number;
  tier: string;
}

/** A marker on the world map */
export interface MapPoint extends Location {
  label: string;
  href?: string;
}
