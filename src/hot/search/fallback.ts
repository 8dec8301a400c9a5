// When a read goes to PostgreSQL instead of the index (the fallback room answers it): while
// readiness says the index is away (Redis unreachable, no live generation, a rebuild), and
// when Redis fails to answer or finds the namespace not indexed (emptied since the last
// readiness round). docs/decisions/fallback-reads.md.
import type { PgReads } from '../fallback/index.js';
import { ApiError } from '../domain/errors.js';
import { isRedisUnavailable } from '../domain/outage.js';

/** The fallback source and when to take it without asking Redis first. */
export interface Fallback {
  reads: PgReads;
  /** the index is known to be away now (compose.ts: from the readiness state) */
  away(): boolean;
  /**
   * The Consul catalog's side (discovery/consul/catalog.ts): `pending` while the index has
   * not caught up with an answer PostgreSQL gave in its stead (readiness/watcher.ts) and
   * PostgreSQL answers: the catalog then stays on it; `served` before each such answer.
   */
  catalog?: { pending(): boolean; served(): void };
}

/** An error that means the index cannot answer now (not a failure of the question): PostgreSQL may. */
export function indexCannotAnswer(err: unknown): boolean {
  return (err instanceof ApiError && err.key === 'INDEX_REBUILDING') || isRedisUnavailable(err);
}

/**
 * The index's answer, or PostgreSQL's when the index cannot give one. Without a fallback
 * (FALLBACK_PG_CONNECTIONS=0) the index's error stands (503). Any other error of the index (a
 * bug, a full pool queue) stays its own.
 */
export async function either<T>(f: Fallback | null, fromIndex: () => Promise<T>, fromPg: (reads: PgReads) => Promise<T>): Promise<T> {
  if (!f) return fromIndex();
  if (f.away()) return fromPg(f.reads);
  try {
    return await fromIndex();
  } catch (err) {
    if (!indexCannotAnswer(err)) throw err;
    return fromPg(f.reads);
  }
}
