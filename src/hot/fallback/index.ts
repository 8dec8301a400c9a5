// The fallback room's entry: discovery reads from PostgreSQL while the Redis index is away
// (search/ asks it; the discovery protocols may too).
export { PgReads, threadFallback, type FallbackPage, type FallbackReplacements, type FallbackService } from './reads.js';
export { memberKeys } from './statements.js';
