// The reindex room's entry: the rebuild of the Redis index from PostgreSQL (at start-up,
// after Redis lost it, over an import's backlog, `registry reindex`) and the migrator's TypeScript steps that keep the
// stored index text in step with today's member rule.
export { dropGeneration, dropStaleBuild, raiseCapabilityTombstones, rebuildIndex, type RebuildResult } from './rebuild.js';
export { normaliseStoredEndpoints } from './endpoints.js';
export { backfillIndexText, ensureIndexText } from './index-text.js';
export { ImportBacklog } from './backlog.js';
