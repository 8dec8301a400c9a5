// Demo data for `make run`: a few hundred production services over a spread of
// capabilities, properties and IoT profiles, a deprecated service with ranked replacements,
// and a handful of located sandboxes for the dashboard. Deterministic (seeded PRNG) and
// idempotent: it does nothing when production already has services.
import type { Pool } from '../hot/pg/pool.js';
import { addReplacement } from '../hot/registry/index.js';
import { createService, patchService } from '../hot/writes/index.js';
import { hashKey, insertSandbox, newSandboxKey } from '../hot/sandboxes/index.js';
import type { ServiceInput } from '../hot/domain/validation.js';
import { PRODUCTION } from '../hot/domain/keys.js';

export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CAPS = ['payments', 'billing', 'invoicing', 'geo.lookup', 'geocoding', 'translation', 'ocr', 'speech-to-text', 'email', 'sms', 'push', 'auth', 'search', 'storage', 'image.resize', 'video.transcode', 'weather', 'telemetry', 'firmware-update', 'device-registry'];
const REGIONS = ['eu-west', 'eu-central', 'us-east', 'us-west', 'ap-south', 'ap-northeast'];
const TIERS_P = ['gold', 'silver', 'bronze'];
const DEVICE_CLASSES = ['sensor', 'actuator', 'gateway', 'camera', 'thermostat', 'meter', 'tracker'];
const PROTOCOLS = ['mqtt', 'coap', 'http', 'lwm2m', 'zigbee', 'ble'];
const CITIES: [string, number, number][] = [
  ['Berlin', 52.52, 13.405], ['Lagos', 6.524, 3.379], ['Sao Paulo', -23.55, -46.633], ['Tokyo', 35.676, 139.65], ['Sydney', -33.868, 151.209],
  ['Toronto', 43.653, -79.383], ['Mumbai', 19.076, 72.877], ['Nairobi', -1.292, 36.821], ['Reykjavik', 64.147, -21.942], ['Santiago', -33.448, -70.669],
  ['Seoul', 37.566, 126.978], ['Cairo', 30.044, 31.236],
];

function pick<T>(r: () => number, xs: T[]): T {
  return xs[Math.floor(r() * xs.length)]!;
}

function sample<T>(r: () => number, xs: T[], n: number): T[] {
  const c = [...xs];
  const out: T[] = [];
  while (out.length < n && c.length) out.push(c.splice(Math.floor(r() * c.length), 1)[0]!);
  return out;
}

export function demoService(r: () => number, i: number): ServiceInput {
  // Zipf-like: low-index capabilities are much more common
  const nCaps = 1 + Math.floor(r() * 3);
  const caps = new Set<string>();
  while (caps.size < nCaps) caps.add(CAPS[Math.floor(CAPS.length * Math.pow(r(), 2))]!);
  const iot = r() < 0.3 ? { deviceClasses: sample(r, DEVICE_CLASSES, 1 + Math.floor(r() * 2)), protocols: sample(r, PROTOCOLS, 1 + Math.floor(r() * 2)) } : null;
  return {
    endpoint: `https://svc-${i}.${pick(r, REGIONS)}.example.net/v${1 + Math.floor(r() * 3)}`,
    capabilities: [...caps],
    properties: { region: pick(r, REGIONS), tier: pick(r, TIERS_P), owner: `team-${1 + Math.floor(r() * 12)}` },
    iot,
    deprecated: false,
    locked: false,
    sunsetDate: null,
  };
}

export interface SeedResult {
  services: number;
  sandboxes: number;
  deprecatedId: string | null;
  skipped: boolean;
}

export async function seedDemo(pool: Pool, defaultTier: string, count = 300): Promise<SeedResult> {
  const existing = await pool.query<{ n: string }>('SELECT count(*) AS n FROM services WHERE ns = $1', [PRODUCTION]);
  if (Number(existing.rows[0]!.n) > 0) return { services: 0, sandboxes: 0, deprecatedId: null, skipped: true };
  const r = prng(42);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await createService(pool, PRODUCTION, demoService(r, i))).id);
  // a deprecated, locked service with a sunset date and three ranked replacements
  const old = await createService(pool, PRODUCTION, {
    endpoint: 'https://legacy-payments.example.net/v1',
    capabilities: ['payments', 'billing'],
    properties: { region: 'eu-west', tier: 'gold', owner: 'team-1' },
    iot: null,
    deprecated: false,
    locked: false,
    sunsetDate: null,
  });
  for (const cand of ids.slice(0, 3)) await addReplacement(pool, PRODUCTION, old.id, cand);
  await patchService(pool, PRODUCTION, old.id, { deprecated: true, locked: true, sunsetDate: '2027-06-30' });
  const tiers = [defaultTier, defaultTier, 'pro', defaultTier, 'enterprise', 'pro'];
  let sandboxes = 0;
  for (const [i, [name, lat, lon]] of CITIES.entries()) {
    const { key, prefix } = newSandboxKey(`${name} demo`);
    await insertSandbox(pool, `${name} demo`, prefix, hashKey(key), tiers[i % tiers.length]!, { lat, lon });
    sandboxes++;
  }
  return { services: count + 1, sandboxes, deprecatedId: old.id, skipped: false };
}
