// What the near cache's warmer (near/warm.ts) reads: production's namespace of the live
// generation, through the index's own loaders (the set of every service as a search with no
// filter loads it; documents as a cold page fetches them).
import { filterSuffixes, PRODUCTION } from '../domain/keys.js';
import type { Index } from './searches.js';
import { nearSets } from './pipeline/sets.js';
import type { WarmSource } from './near/warm.js';

export function warmSource(index: Index): WarmSource {
  const near = index.near!;
  return {
    base() {
      const gen = index.gen;
      if (!gen || !near.usable || !index.serving()) return null;
      const base = index.keys.base(PRODUCTION, gen);
      return near.fresh(base) ? base : null;
    },
    async all(base) {
      const sets = await nearSets(near, base, filterSuffixes({}), index.nearLoader(index.keys.verAt(base), base));
      return sets?.[0] ?? null;
    },
    fetch(base, seqs) {
      return index.documentsOf(index.keys.docsAt(base), seqs);
    },
  };
}
