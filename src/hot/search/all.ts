// Every match of a query, at most `max` of them: what the discovery protocols list where
// /services pages (discovery/: Prometheus HTTP SD, DNS). The query takes the filters of
// /services in any order (no canonical redirect, no paging); the matches come from the same
// page pipeline: the near cache synchronously when it holds every set and document
// (allNow), else pages of the pipeline joined (all). One body and one set of digests for one
// answer, whichever path gave it.
import { canonicalize, SEARCH_SPEC, toFilters, type QuerySpec } from './canonical.js';
import type { FilterSets } from './live-index.js';
import { heldSets } from './pipeline/sets.js';
import { intersectDense } from './pipeline/intersect.js';
import type { Index } from './searches.js';
import { DIGEST_BYTES } from '../domain/digest.js';
import { filterSuffixes } from '../domain/keys.js';

/** The filters of /services without its paging (`limit`, `after`). */
export const DISCOVERY_SPEC: QuerySpec = Object.fromEntries(Object.entries(SEARCH_SPEC).filter(([, kind]) => kind !== 'limit' && kind !== 'cursor'));

export type DiscoveryQuery = { ok: true; filters: FilterSets; canonical: string } | { ok: false; message: string };

/**
 * A discovery query in any order: its filters and its canonical form (the cache key, shared
 * by every order of the same filters), or why it is invalid (the search's own messages).
 * Parameters other than the filters are dropped, as on /services.
 */
export function discoveryQuery(raw: string | null): DiscoveryQuery {
  const c = canonicalize('', raw, DISCOVERY_SPEC);
  if (c.kind === 'error') return { ok: false, message: c.message };
  let canonical = '';
  let params = c.kind === 'ok' ? c.params : new Map<string, string[]>();
  if (c.kind === 'redirect' && c.location.startsWith('?')) {
    // the canonical form of any order is canonical: parsed again, it is 'ok'
    canonical = c.location.slice(1);
    const again = canonicalize('', canonical, DISCOVERY_SPEC);
    if (again.kind !== 'ok') return { ok: false, message: 'the query string does not decode' };
    params = again.params;
  } else if (c.kind === 'ok') canonical = c.canonical;
  const f = toFilters(params, DISCOVERY_SPEC);
  if (!f.ok) return { ok: false, message: f.message };
  const { limit: _limit, after: _after, ...filters } = f.filters;
  return { ok: true, filters, canonical };
}

export interface AllMatches {
  /** the documents joined into one JSON array, in seq order (a buffer of its own) */
  body: Buffer;
  /** their digests, 16 bytes each, in the same order (domain/digest.ts pageEtag) */
  digests: Uint8Array;
  /** documents in `body` */
  count: number;
  /** more than `max` match: `body` holds the first `max` */
  more: boolean;
}

/** Documents per page of all()'s loop: the search's largest page (search.lua unpacks a page at once). */
const PAGE = 1000;

/** Every match from this thread's near cache, now, or null when it does not hold them all. */
export function allNow(index: Index, ns: string, f: FilterSets, max: number): AllMatches | null {
  const p = index.nearBodyNow(ns, f, '', max);
  if (!p) return null;
  // copied: both are views of the near cache's scratch memory
  return { body: Buffer.from(p.body), digests: Uint8Array.from(p.digests), count: p.digests.length / DIGEST_BYTES, more: p.more };
}

/** Every match, from wherever the search pipeline finds them (allNow first). */
export async function all(index: Index, ns: string, f: FilterSets, max: number, signal?: AbortSignal): Promise<AllMatches> {
  const now = allNow(index, ns, f, max);
  if (now) return now;
  const bodies: Buffer[] = [];
  const digests: Uint8Array[] = [];
  let count = 0;
  let more = false;
  for (let after = ''; ; ) {
    const page = await index.searchBody(ns, f, after, Math.min(PAGE, max - count), signal);
    const n = page.digests.length / DIGEST_BYTES;
    if (n) bodies.push(page.body.subarray(1, page.body.length - 1));
    digests.push(page.digests);
    count += n;
    if (!page.more || !page.last) break;
    if (count >= max) {
      more = true;
      break;
    }
    after = page.last;
  }
  const comma = Buffer.from(',');
  const parts: Buffer[] = [Buffer.from('[')];
  bodies.forEach((b, i) => parts.push(...(i ? [comma, b] : [b])));
  parts.push(Buffer.from(']'));
  const d = new Uint8Array(count * DIGEST_BYTES);
  let at = 0;
  for (const x of digests) {
    d.set(x, at);
    at += x.length;
  }
  return { body: Buffer.concat(parts), digests: d, count, more };
}

/**
 * How many services match, when this thread's near cache holds every set of the query now
 * (after all() went through it, it usually does); null otherwise. The message of a list that
 * is too long names it.
 */
export function countHeld(index: Index, ns: string, f: FilterSets): number | null {
  const near = index.near;
  const gen = index.gen;
  if (!near?.usable || !gen || !index.serving()) return null;
  const base = index.keys.base(ns, gen);
  if (!near.fresh(base)) return null;
  const sets = heldSets(near, base, filterSuffixes(f));
  return sets ? intersectDense(sets, -1, Number.MAX_SAFE_INTEGER).hits.length : null;
}
