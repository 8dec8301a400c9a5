// The bench data set, as pure functions: a seeded PRNG drives every choice, so the same
// spec always yields the same services (ids excepted: they come from the production id
// generator, random like in production, and always 16 characters, so response sizes are
// the same on every generation). No I/O here; load.ts writes these rows to PostgreSQL.
import { prng } from '../src/admin/seed.js';

export interface DatasetSpec {
  /** 'full', 'quick', or 'n<production>' for a named size (--services N) */
  name: string;
  seed: number;
  production: number;
  capabilities: number;
  /** exponent of the Zipf-like capability popularity: P(rank k) ∝ 1 / k^s */
  zipfS: number;
  sandboxes: number;
  servicesPerSandbox: number;
  /** share of services with an IoT profile */
  iotShare: number;
  /** every n-th sandbox is `enterprise` (sandbox 0 included), every 10th `pro` */
  enterpriseEvery: number;
  /** replacement candidates of the deprecated service */
  replacements: number;
}

/** Issue 5: 100,000 production services over 2,000 capabilities, 1,000 sandboxes × 100. */
export const FULL: DatasetSpec = {
  name: 'full',
  seed: 20_250_505,
  production: 100_000,
  capabilities: 2_000,
  zipfS: 1,
  sandboxes: 1_000,
  servicesPerSandbox: 100,
  iotShare: 0.2,
  enterpriseEvery: 100,
  replacements: 5,
};

/** `--quick`: ten times smaller (the per-sandbox size stays 100, there are 10× fewer sandboxes). */
export const QUICK: DatasetSpec = {
  ...FULL,
  name: 'quick',
  production: 10_000,
  capabilities: 200,
  sandboxes: 100,
};

/**
 * `--services N`: N production services of the same shape (2,000 capabilities, the same
 * properties and IoT share), and N / 100 sandboxes holding 100,000 services between them
 * (at least 10 each): 1,000,000 → 10,000 sandboxes × 10. N = 100,000 is FULL itself.
 */
export function sizedSpec(n: number): DatasetSpec {
  if (n === FULL.production) return FULL;
  const sandboxes = Math.max(1, Math.floor(n / 100));
  return { ...FULL, name: `n${n}`, production: n, sandboxes, servicesPerSandbox: Math.max(10, Math.floor(100_000 / sandboxes)) };
}

export const PROPERTY_KEYS: readonly { key: string; values: readonly string[] }[] = [
  { key: 'region', values: ['eu-west', 'eu-central', 'eu-north', 'us-east', 'us-west', 'us-central', 'ap-south', 'ap-northeast', 'ap-southeast', 'sa-east', 'af-south', 'me-central'] },
  { key: 'tier', values: ['gold', 'silver', 'bronze', 'free'] },
  { key: 'owner', values: range(400, (i) => `team-${i + 1}`) },
  { key: 'version', values: range(30, (i) => `v${i + 1}`) },
  { key: 'datacenter', values: range(60, (i) => `dc-${i + 1}`) },
  { key: 'sla', values: ['99', '99.5', '99.9', '99.95', '99.99'] },
  { key: 'lang', values: ['en', 'de', 'fr', 'es', 'pt', 'ja', 'zh', 'ko', 'hi', 'ar'] },
  { key: 'env', values: ['prod', 'staging', 'canary'] },
];
export const PROPERTIES_PER_SERVICE = 5;
export const DEVICE_CLASSES = ['sensor', 'actuator', 'gateway', 'camera', 'thermostat', 'meter', 'tracker', 'lock', 'light', 'plug', 'hub', 'wearable'];
export const PROTOCOLS = ['mqtt', 'coap', 'http', 'lwm2m', 'zigbee', 'ble', 'lora', 'thread'];
/** how many capabilities a service has: uniform in 1..MAX_CAPS (mean 3) */
export const MAX_CAPS = 5;

function range<T>(n: number, f: (i: number) => T): T[] {
  return Array.from({ length: n }, (_, i) => f(i));
}

/** Capability of popularity rank k (0-based): the names sort in rank order, which helps reading. */
export function capabilityName(rank: number): string {
  return 'cap.' + String(rank + 1).padStart(4, '0');
}

/** Sampler of ranks 0..n-1 with P(k) ∝ 1/(k+1)^s, by binary search in the cumulative table. */
export function zipf(n: number, s: number, r: () => number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 0; k < n; k++) cdf[k] = sum += 1 / Math.pow(k + 1, s);
  for (let k = 0; k < n; k++) cdf[k] = cdf[k]! / sum;
  return () => {
    const u = r();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

export interface GenService {
  endpoint: string;
  capabilities: string[];
  /** [key, value] pairs, keys distinct */
  properties: [string, string][];
  iot: { deviceClasses: string[]; protocols: string[] } | null;
}

function sample<T>(r: () => number, xs: readonly T[], n: number): T[] {
  const c = [...xs];
  const out: T[] = [];
  while (out.length < n && c.length) out.push(c.splice(Math.floor(r() * c.length), 1)[0]!);
  return out;
}

/** A generator of services; call it once per service, in order (the PRNG stream is shared). */
export function serviceGenerator(spec: DatasetSpec): (label: string) => GenService {
  const r = prng(spec.seed);
  const cap = zipf(spec.capabilities, spec.zipfS, r);
  return (label) => {
    const nCaps = 1 + Math.floor(r() * MAX_CAPS);
    const caps = new Set<string>();
    while (caps.size < nCaps) caps.add(capabilityName(cap()));
    const props = sample(r, PROPERTY_KEYS, PROPERTIES_PER_SERVICE).map((p): [string, string] => [p.key, p.values[Math.floor(r() * p.values.length)]!]);
    const region = props.find(([k]) => k === 'region')?.[1] ?? 'global';
    const iot = r() < spec.iotShare ? { deviceClasses: sample(r, DEVICE_CLASSES, 1 + Math.floor(r() * 2)), protocols: sample(r, PROTOCOLS, 1 + Math.floor(r() * 3)) } : null;
    return {
      endpoint: `https://${label}.${region}.bench.example.net/v${1 + Math.floor(r() * 3)}`,
      capabilities: [...caps],
      properties: props,
      iot,
    };
  };
}

export function sandboxTier(spec: DatasetSpec, i: number): string {
  if (i % spec.enterpriseEvery === 0) return 'enterprise';
  return i % 10 === 0 ? 'pro' : 'free';
}

/** Location of sandbox i (every other one has none), from its own PRNG stream. */
export function sandboxLocation(spec: DatasetSpec, i: number): { lat: number; lon: number } | null {
  if (i % 2 === 1) return null;
  const r = prng(spec.seed ^ (i * 2_654_435_761));
  return { lat: Math.round((r() * 140 - 70) * 1e4) / 1e4, lon: Math.round((r() * 360 - 180) * 1e4) / 1e4 };
}
