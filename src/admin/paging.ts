// The admin sandbox list's query (`tier`, `page`) and its paging fields, computed on the
// server so the dashboard never does page arithmetic of its own. No I/O.
import { parse as parseQs } from 'fast-querystring';
import { ApiError } from '../hot/domain/errors.js';

export interface ListQuery {
  /** null = every tier */
  tier: string | null;
  /** 0-based */
  page: number;
}

/** Largest page number accepted; OFFSET beyond this is nonsense, not a request to honour. */
export const MAX_PAGE = 1_000_000;

function one(v: unknown, name: string): string | undefined {
  if (v === undefined) return undefined;
  if (Array.isArray(v)) throw new ApiError('QUERY_PARAM_REPEATED', [name]);
  return String(v);
}

/** `tier=` and `page=` may be empty (the dashboard's "all tiers", first page). */
export function parseListQuery(qs: string | null, tiers: Record<string, number>): ListQuery {
  let q: Record<string, unknown>;
  try {
    q = parseQs(qs ?? '') as Record<string, unknown>;
  } catch {
    throw new ApiError('QUERY_UNDECODABLE');
  }
  const tierRaw = one(q.tier, 'tier') ?? '';
  const pageRaw = one(q.page, 'page') ?? '';
  if (tierRaw !== '' && !Object.hasOwn(tiers, tierRaw)) {
    throw new ApiError('QUERY_UNKNOWN_TIER', [tierRaw.slice(0, 40), Object.keys(tiers).join(', ')]);
  }
  if (pageRaw !== '' && !/^\d{1,7}$/.test(pageRaw)) throw new ApiError('QUERY_PAGE_NOT_NUMBER');
  const page = pageRaw === '' ? 0 : Number(pageRaw);
  if (page > MAX_PAGE) throw new ApiError('QUERY_PAGE_TOO_LARGE', [MAX_PAGE]);
  return { tier: tierRaw === '' ? null : tierRaw, page };
}

export interface PageFields {
  total: number;
  pageSize: number;
  page: number;
  displayPage: number;
  hasPrev: boolean;
  hasNext: boolean;
  prevPage: number | null;
  nextPage: number | null;
}

/**
 * Paging fields for `page` of `total` items. A page past the end is answered (empty) and
 * its previous page is the last page that has items, so "previous" always leads back.
 */
export function pageFields(total: number, pageSize: number, page: number): PageFields {
  const lastPage = Math.max(0, Math.ceil(total / pageSize) - 1);
  const hasPrev = page > 0;
  const hasNext = page < lastPage;
  return {
    total,
    pageSize,
    page,
    displayPage: page + 1,
    hasPrev,
    hasNext,
    prevPage: hasPrev ? Math.min(page - 1, lastPage) : null,
    nextPage: hasNext ? page + 1 : null,
  };
}
