// The query parameters of the Consul-compatible catalog (contract, "Consul-compatible
// catalog"): `tag` (repeatable, all must match), `passing` (present with any value but
// `false` / `0`), `dc`, and Consul's blocking query, `index` and `wait`. Others (`stale`,
// `consistent`, `cached`, `near`, `filter`, `token`, …) are ignored, as a single-node
// catalog without ACLs can. Pure.
import { parse as parseQs } from 'fast-querystring';
import { undecodable } from '../../search/index.js';

export interface ConsulQuery {
  tags: string[];
  passing: boolean;
  /** `?dc=`, null when absent or empty */
  dc: string | null;
  /** `?index=`: the X-Consul-Index a blocking query waits to see exceeded; null without one */
  index: bigint | null;
  /** `?wait=` in ms (default 5 min, at most 10 min): how long a blocking query may be held */
  waitMs: number;
}

export const WAIT_DEFAULT_MS = 5 * 60_000;
export const WAIT_MAX_MS = 10 * 60_000;

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION = /^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;

/** A duration as Go (and so Consul) writes it (`10s`, `5m`, `1m30s`, `0`), in ms; null when it is none. */
export function durationMs(s: string): number | null {
  if (s === '0') return 0;
  if (!DURATION.test(s)) return null;
  let ms = 0;
  for (const m of s.matchAll(PART)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return Number.isFinite(ms) ? ms : null;
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

export type ConsulQueryResult = { ok: true; q: ConsulQuery } | { ok: false; message: string };

export function consulQuery(raw: string | null): ConsulQueryResult {
  if (raw === null || raw === '') return { ok: true, q: { tags: [], passing: false, dc: null, index: null, waitMs: WAIT_DEFAULT_MS } };
  const bad = undecodable(raw);
  if (bad) return { ok: false, message: bad };
  const p = parseQs(raw) as Record<string, string | string[] | undefined>;
  const own = (name: string) => (Object.hasOwn(p, name) ? p[name] : undefined);
  const tag = own('tag');
  const tags = [...new Set((Array.isArray(tag) ? tag : tag === undefined ? [] : [tag]).filter((t) => t !== ''))];
  const passingRaw = first(own('passing'));
  const passing = passingRaw !== undefined && !/^(false|0)$/i.test(passingRaw);
  const dc = first(own('dc')) || null;
  const indexRaw = first(own('index'));
  let index: bigint | null = null;
  if (indexRaw !== undefined && indexRaw !== '') {
    if (!/^\d{1,20}$/.test(indexRaw) || BigInt(indexRaw) > 0xffffffffffffffffn) return { ok: false, message: 'index must be a whole number (an X-Consul-Index)' };
    index = BigInt(indexRaw);
  }
  const waitRaw = first(own('wait'));
  let waitMs = WAIT_DEFAULT_MS;
  if (waitRaw !== undefined && waitRaw !== '') {
    const ms = durationMs(waitRaw);
    if (ms === null) return { ok: false, message: 'wait must be a duration such as 10s or 5m' };
    waitMs = Math.min(WAIT_MAX_MS, ms);
  }
  return { ok: true, q: { tags, passing, dc, index, waitMs } };
}
