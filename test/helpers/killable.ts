// The SIGKILL reliability tests' set-up (test/pg/reliability-*.test.ts): the built server as
// a child process on a fresh database and Redis key prefix of its own, a PostgreSQL client
// on that database (the test's view of what committed), a restart on the same database and
// prefix after a kill, and the teardown (kill, close, drop the database and the keys).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';
import { loadConfig } from '../../src/hot/config.js';
import { ADMIN_KEY, freshDatabase } from './server.js';
import { waitFor } from './wait.js';
import { dropRedisPrefix } from './test-data.js';
import { spawnServer, type ServerProcess } from './server-process.js';

export interface KillableServer {
  /** the running process: a new one after restart() */
  readonly server: ServerProcess;
  /** its base URL (a restarted server listens on a port of its own) */
  readonly url: string;
  /** a client on the server's database */
  readonly pg: pg.Client;
  /** SIGKILL: no drain, no goodbye */
  kill(): void;
  /** start again on the same database and prefix; resolves once /readyz answers 200 */
  restart(): Promise<void>;
  /** what a search of `capability` finds, every page of it, by id */
  search<D extends { id: string }>(capability: string): Promise<Map<string, D>>;
  /**
   * waits until what a search of `capability` finds passes `settled` (the index caught up
   * with PostgreSQL), then searches once more and returns that
   */
  indexSettles<D extends { id: string }>(capability: string, settled: (found: Map<string, D>) => boolean): Promise<Map<string, D>>;
  /** waits until the outbox is empty: every committed write reached the index */
  outboxDrained(): Promise<void>;
}

/**
 * Start the built server (`env` on top of the test defaults: `prefix` names its Redis key
 * prefix, followed by random hex) and wait until it is ready; the teardown is on `t`.
 */
export async function startKillable(t: Test, prefix: string, env: Record<string, string> = {}): Promise<KillableServer> {
  const db = await freshDatabase();
  const fullEnv = {
    DATABASE_URL: db.url,
    REDIS_KEY_PREFIX: prefix + randomBytes(4).toString('hex') + ':',
    REDIS_CLUSTER_NODES: '',
    ADMIN_API_KEY: ADMIN_KEY,
    LOG_LEVEL: 'warn',
    ...env,
  };
  let server = await spawnServer(fullEnv);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  t.teardown(async () => {
    server.signal('SIGKILL');
    await server.exited;
    await client.end();
    await db.drop();
    await dropRedisPrefix(loadConfig().redisUrl, fullEnv.REDIS_KEY_PREFIX);
  });
  const ready = (what: string) => waitFor(what, async () => (await fetch(server.url + '/readyz')).status === 200, 30_000);
  await ready('ready');
  const search = async <D extends { id: string }>(capability: string): Promise<Map<string, D>> => {
    const found = new Map<string, D>();
    let path: string | null = `/services?capability=${capability}&limit=1000`;
    while (path) {
      const r: Response = await fetch(server.url + path);
      if (r.status !== 200) throw new Error(`search: ${r.status}`);
      for (const s of (await r.json()) as D[]) found.set(s.id, s);
      path = /<([^>]+)>; rel="next"/.exec(r.headers.get('link') ?? '')?.[1] ?? null;
    }
    return found;
  };
  return {
    get server() {
      return server;
    },
    get url() {
      return server.url;
    },
    pg: client,
    kill: () => server.signal('SIGKILL'),
    async restart() {
      server = await spawnServer(fullEnv);
      await ready('ready after the restart');
    },
    search,
    async indexSettles<D extends { id: string }>(capability: string, settled: (found: Map<string, D>) => boolean) {
      await waitFor('the index equals PostgreSQL', async () => settled(await search<D>(capability)), 30_000, 250);
      return search<D>(capability);
    },
    async outboxDrained() {
      await waitFor('the outbox drains', async () => (await client.query<{ n: string }>('SELECT count(*) AS n FROM outbox')).rows[0]!.n === '0', 30_000, 250);
    },
  };
}
