// The search room's entry: what other rooms use of it.
export { type Caches, invalidateCaches, InvalidationListener } from './invalidation.js';
export { type FilterSets, type Replacements } from './live-index.js';
export { NearVersionCheck } from './near/check.js';
export { NearCache } from './near/near-cache.js';
export { NearWarmer } from './near/warm.js';
export { warmSource } from './warm-source.js';
export { ResultCache, stringBytes } from './result-cache.js';
export { Index } from './searches.js';
export { all, allNow, type AllMatches, countHeld, DISCOVERY_SPEC, discoveryQuery, type DiscoveryQuery } from './all.js';
export { type CachedResult } from './result-cache.js';
export { undecodable } from './canonical.js';
export { either, type Fallback } from './fallback.js';
export { type SearchContext } from './answer.js';
export { registerPublic, registerSandboxReads } from './routes.js';
export { sampleSearch } from './metrics.js';
