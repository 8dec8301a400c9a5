// The bench scenarios. Every query string is canonical (contract: otherwise the server
// answers 302 and the bench would measure redirects); run.ts checks each answers 200
// before it is loaded.
import { prng } from '../src/admin/seed.js';
import type { BenchData } from './generate.js';

export interface Scenario {
  id: string;
  title: string;
  /** what the row tells, for bench/README.md */
  measures: string;
  path: string;
  headers?: Record<string, string>;
  /** the answer the row measures when it is not 200 (304: polling; 429: an over-limit key) */
  expect?: number;
  /** a poller: run.ts sends the ETag of the first answer back in If-None-Match (expect 304) */
  conditional?: boolean;
  /** a key of a fresh free-tier sandbox, pushed over its limit before the row (run.ts) */
  overLimitKey?: boolean;
  /**
   * When set, every request carries a different `after` cursor (a seq in 1..cursorMax), so
   * no result cache can answer it and each request does the index work.
   */
  cursorMax?: number;
}

/** The warm anonymous search: the main scenario, and the bytes the ceiling serves. */
export const MAIN = 'a1';
/** The light search of scenario h, and the heavy intersection it runs beside (both uncached). */
export const LIGHT = 'a2';
export const HEAVY = 'c2';

/** The same request with a different cursor each time (see Scenario.cursorMax). */
export function uncached(s: Scenario, cursorMax: number, id: string, title: string): Scenario {
  return { ...s, id, title, cursorMax, measures: s.measures + '; a different `after` cursor on every request, so every request computes' };
}

/** Path generator of a scenario: fixed, or a seeded stream of cursors (canonical: `after` sorts first). */
export function paths(s: Scenario, seed = 1): () => string {
  if (!s.cursorMax) return () => s.path;
  const r = prng(seed);
  const max = s.cursorMax;
  const [p, q] = s.path.split('?') as [string, string];
  return () => `${p}?after=${1 + Math.floor(r() * max)}&${q}`;
}

export function scenarios(d: BenchData): Scenario[] {
  const f = d.facts;
  const size = (q: string) => f.sizes[q] ?? 0;
  const heavyQ = `capability=${f.heavyCapabilities.join('&capability=')}&iotReady=true`;
  const heavy: Scenario = {
    id: 'c',
    title: 'search: 3 capabilities + iotReady',
    measures: `large intersection: the three most popular capabilities (${f.heavyCapabilities.map((c) => size(`capability=${c}`)).join(', ')} services) ∩ IoT (${size('iotReady=true')}) = ${size(heavyQ)}`,
    path: `/services?${heavyQ}`,
  };
  return [
    {
      id: 'a1',
      title: 'search: popular capability',
      measures: `anonymous GET /services by the most popular capability (${size(`capability=${f.popularCapability}`)} matches; a page of 100)`,
      path: `/services?capability=${f.popularCapability}`,
    },
    {
      id: 'a2',
      title: 'search: mid-popularity capability',
      measures: `anonymous search by a capability of rank ${Number(f.midCapability.slice(4))} (${size(`capability=${f.midCapability}`)} matches)`,
      path: `/services?capability=${f.midCapability}`,
    },
    {
      id: 'b',
      title: 'search: capability + property',
      measures: `two-set intersection ${f.popularCapability} ∩ ${f.property} (${size(`capability=${f.popularCapability}&property=${f.property}`)} matches)`,
      path: `/services?capability=${f.popularCapability}&property=${f.property}`,
    },
    heavy,
    uncached(heavy, d.spec.production, 'c2', 'search: 3 caps + iotReady, uncached'),
    // the cold path of issue 13: nothing repeats, the near cache answers from memory
    uncached(
      { id: 'k1', title: '', path: `/services?capability=${f.popularCapability}`, measures: `cold single set: the most popular capability (${size(`capability=${f.popularCapability}`)} matches)` },
      d.spec.production,
      'k1',
      'cold: one set, random cursor',
    ),
    uncached(
      { id: 'k2', title: '', path: `/services?capability=${f.popularCapability}&property=${f.property}`, measures: `cold two-set intersection ${f.popularCapability} ∩ ${f.property}` },
      d.spec.production,
      'k2',
      'cold: two sets, random cursor',
    ),
    {
      id: 'o',
      title: 'over-limit sandbox key (429)',
      measures: 'GET /services with the key of a free sandbox already over its 60 a minute: every answer a 429 (Retry-After, RateLimit fields, error body), refused locally',
      path: `/services?capability=${f.popularCapability}`,
      expect: 429,
      overLimitKey: true,
    },
    {
      id: 'p',
      title: 'poller: If-None-Match matches (304)',
      measures: `GET /devices by deviceClass ${f.deviceClass} with the ETag of its last answer: every answer a 304 from the cached page`,
      path: `/devices?deviceClass=${f.deviceClass}`,
      expect: 304,
      conditional: true,
    },
    {
      id: 'd',
      title: 'devices: deviceClass',
      measures: `GET /devices by deviceClass ${f.deviceClass} (${size(`deviceClass=${f.deviceClass}`)} services; bindings expanded per request)`,
      path: `/devices?deviceClass=${f.deviceClass}`,
    },
    {
      id: 'e',
      title: 'replacements (deprecated service)',
      measures: `GET /services/{id}/replacements of the deprecated service (${d.spec.replacements} candidates; shared-cache path, X-Cache HIT)`,
      path: `/services/${d.stored.deprecatedId}/replacements`,
    },
    {
      id: 'f',
      title: 'sandbox-key search (enterprise)',
      measures: `GET /services with Authorization: Bearer <enterprise sandbox key>: key resolution + rate-limit counting + search of the sandbox (capability ${d.sandbox.capability}, ${d.sandbox.matches} matches)`,
      path: `/services?capability=${d.sandbox.capability}`,
      headers: { authorization: `Bearer ${d.sandbox.key}` },
    },
  ];
}
