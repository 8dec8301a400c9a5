// The whole list of a search, for the discovery protocols that take no pages (Prometheus HTTP
// SD, the Consul catalog, DNS): every service of a namespace matching the filters, as stored
// documents in seq order, bounded. From the index page by page, or from PostgreSQL in one
// statement while the index is away (search/fallback.ts): the same documents either way.
import type { FilterSets } from './live-index.js';
import type { Index } from './searches.js';
import { either } from './fallback.js';

/** index pages of this many while gathering a whole list */
const PAGE = 1000;

/**
 * Every service of `ns` holding every set `f` names, in seq order, up to `max`; `more` when
 * there are others (the caller answers its "too many" then, e.g. 422 TOO_MANY_TARGETS).
 */
export function matching(index: Index, ns: string, f: FilterSets, max: number, signal?: AbortSignal): Promise<{ docs: string[]; more: boolean }> {
  return either(
    index.fallback,
    async () => {
      const docs: string[] = [];
      let after = '';
      for (;;) {
        const p = await index.search(ns, f, after, Math.min(PAGE, max + 1 - docs.length), signal);
        docs.push(...p.docs);
        if (docs.length > max) return { docs: docs.slice(0, max), more: true };
        if (!p.more || !p.last) return { docs, more: false };
        after = p.last;
      }
    },
    (pg) => pg.matching(ns, f, max),
  );
}
