// The SIGKILL reliability tests' set-up (test/pg/reliability-*.test.ts): the built server as
// a child process (serveProcess(), killed at the teardown) on a fresh database and Redis key
// prefix of its own, a PostgreSQL client on that database (the test's view of what
// committed), and a restart on the same database and prefix after a kill.
import pg from 'pg';
import type { Test } from 'tap';
import { outboxDrained, waitFor } from './wait.js';
import { serveProcess, type ServerProcess } from './server-process.js';

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

/** Start the built server (`env` on top of the test defaults), ready; the teardown is on `t`. */
export async function startKillable(t: Test, env: Record<string, string> = {}): Promise<KillableServer> {
  const opts = { env: { REDIS_CLUSTER_NODES: '', LOG_LEVEL: 'warn', ...env }, stop: 'SIGKILL' } as const;
  const first = await serveProcess(t, opts);
  let server = first;
  const client = new pg.Client({ connectionString: first.cfg.databaseUrl });
  await client.connect();
  t.teardown(() => client.end());
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
      server = await serveProcess(t, { ...opts, on: first });
    },
    search,
    async indexSettles<D extends { id: string }>(capability: string, settled: (found: Map<string, D>) => boolean) {
      await waitFor('the index equals PostgreSQL', async () => settled(await search<D>(capability)), 30_000, 250);
      return search<D>(capability);
    },
    async outboxDrained() {
      await outboxDrained(client, 30_000, 250);
    },
  };
}
