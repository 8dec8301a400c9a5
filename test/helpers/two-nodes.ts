// Two nodes of one registry in this process: A and B on the same database and Redis key
// prefix, each its own threads' in-process caches (`env` applies to both; by default their
// results live an hour, so that only an invalidation message drops one).
import type { Test } from 'tap';
import { startTestServer, type TestServer } from './server.js';

/** result-cache entries that outlive any test */
export const HOUR_CACHE = { RESULT_CACHE_TTL_MS: '3600000' };

export async function twoNodes(t: Test, env: Record<string, string> = HOUR_CACHE): Promise<{ a: TestServer; b: TestServer }> {
  const a = await startTestServer({ env });
  t.teardown(() => a.close());
  const b = await startTestServer({ env, databaseUrl: a.cfg.databaseUrl, redisKeyPrefix: a.cfg.redisKeyPrefix });
  t.teardown(() => b.stop()); // A's close drops the shared database and prefix
  return { a, b };
}
