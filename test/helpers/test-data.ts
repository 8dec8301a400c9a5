// The stores past the server: a client on the suite's Redis, services seeded into PostgreSQL
// in a few statements, and a server's Redis keys dropped after it.
import pg from 'pg';
import { Redis } from 'ioredis';
import type { Test } from 'tap';
import { loadConfig } from '../../src/hot/config.js';
import { createRedis, type RedisClient } from '../../src/hot/redis/client.js';
import { createPool } from '../../src/hot/pg/pool.js';
import { backfillIndexText } from '../../src/hot/reindex/index.js';

/** A client on the suite's Redis (REDIS_URL, or a cluster's nodes; `env` on top), closed when `t` ends. */
export function suiteRedis(t: Test, env: Record<string, string | undefined> = {}): RedisClient {
  const redis = createRedis(loadConfig({ ...process.env, ...env }));
  t.teardown(() => redis.disconnect());
  return redis;
}

/**
 * Insert `n` services of namespace `ns` straight into PostgreSQL, in a few statements (fast
 * enough for tens of thousands; no outbox rows: the index learns them from a rebuild).
 * Service `<idPrefix><g>` (g = 1..n, zero-padded) has capabilities `cap<g % 7>` and
 * `seeded`, and the property `zone:z<g % 3>`.
 */
export async function seedServices(databaseUrl: string, n: number, ns = 'production', idPrefix = 'seed'): Promise<void> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const id = `$2::text || lpad(g::text, 8, '0')`;
    const each = (cols: string, select: string) => `INSERT INTO ${cols} SELECT ${select} FROM generate_series(1, $1::int) g`;
    await c.query('BEGIN');
    await c.query(each('services (id, ns, endpoint)', `${id}, $3::text, 'https://' || ${id} || '.example.com/'`), [n, idPrefix, ns]);
    await c.query(each('service_capabilities (service_id, capability, ord)', `${id}, 'cap' || (g % 7), 1`), [n, idPrefix]);
    await c.query(each('service_capabilities (service_id, capability, ord)', `${id}, 'seeded', 2`), [n, idPrefix]);
    await c.query(each('service_properties (service_id, key, value)', `${id}, 'zone', 'z' || (g % 3)`), [n, idPrefix]);
    await c.query('COMMIT');
  } finally {
    await c.end();
  }
}

/**
 * Store the index text of rows seeded by hand (seedServices()) as the migrator or a backfill
 * stores it: what the fallback reads (a rebuild of rows without it: test/redis/rebuild-bulk.test.ts).
 */
export async function storeIndexText(databaseUrl: string): Promise<void> {
  const pool = createPool(databaseUrl, 1);
  try {
    await backfillIndexText(pool);
  } finally {
    await pool.end();
  }
}

/** Delete every key under `prefix` through `r`, a standalone Redis or a Cluster. */
export async function dropPrefix(r: RedisClient, prefix: string): Promise<void> {
  // in a Redis Cluster SCAN sees one node, and a multi-key UNLINK must stay in one slot:
  // scan every primary, unlink key by key (auto-pipelined)
  const nodes = 'nodes' in r && typeof r.nodes === 'function' ? r.nodes('master') : [r];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', prefix + '*', 'COUNT', 1000);
      cursor = next;
      await Promise.all(keys.map((k) => node.unlink(k)));
    } while (cursor !== '0');
  }
}

/** Delete every key under `prefix` in the standalone Redis at `url` (a benchmark's leftovers). */
export async function dropRedisPrefix(url: string, prefix: string): Promise<void> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  r.on('error', () => undefined);
  try {
    await r.connect();
    await dropPrefix(r, prefix);
  } finally {
    r.disconnect();
  }
}
