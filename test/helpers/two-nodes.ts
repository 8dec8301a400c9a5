// More than one node of one registry in this process: each on the same database and Redis
// key prefix as the first, each with its own threads' in-process caches.
import type { Test } from 'tap';
import { startTestServer, type StartOptions, type TestServer } from './server.js';

/** result-cache entries that outlive any test */
export const HOUR_CACHE = { RESULT_CACHE_TTL_MS: '3600000' };

/** Another node on `a`'s database and Redis prefix, stopped when `t` ends (`a`'s close drops them). */
export async function anotherNode(t: Test, a: TestServer, opts: Omit<StartOptions, 'databaseUrl' | 'redisKeyPrefix'> = {}): Promise<TestServer> {
  const n = await startTestServer({ ...opts, databaseUrl: a.cfg.databaseUrl, redisKeyPrefix: a.cfg.redisKeyPrefix });
  t.teardown(() => n.stop());
  return n;
}

/** Nodes A and B (`env` applies to both; by default results live an hour, so that only an invalidation message drops one). */
export async function twoNodes(t: Test, env: Record<string, string> = HOUR_CACHE): Promise<{ a: TestServer; b: TestServer }> {
  const a = await startTestServer({ env });
  t.teardown(() => a.close());
  return { a, b: await anotherNode(t, a, { env }) };
}
