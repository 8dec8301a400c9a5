// The PostgreSQL pool and the transaction helper. Errors that mean "PostgreSQL cannot be
// reached" become 503 with Retry-After, never a 500 or a hang.
import pg from 'pg';
import { ApiError } from '../domain/errors.js';
import { isPgUnavailable, outageError } from '../domain/outage.js';

export type Pool = pg.Pool;
export type Client = pg.PoolClient;

export interface PoolTimeouts {
  /** server side: PostgreSQL cancels a statement running longer (0: none) */
  statementMs: number;
  /** client side: give up waiting for an answer (0: never) — for when none can come at all,
   * as in a network partition that leaves the socket open */
  queryMs: number;
}

/** Serving threads: a request never waits long on a sick database; it gets 503 instead. */
export const SERVING_TIMEOUTS: PoolTimeouts = { statementMs: 5_000, queryMs: 6_000 };
/** Operator tasks (migrate, seed, bench data): long statements are expected. */
export const BATCH_TIMEOUTS: PoolTimeouts = { statementMs: 15_000, queryMs: 0 };

/**
 * The GIN pending list a session lets grow before its insert merges it into the index
 * (migration 0015): the smallest PostgreSQL allows, so that the write that merges pays for
 * a few hundred services' keys, not a few MB; `registry import` raises it in its own
 * transactions (writes/bulk.ts).
 */
const PENDING_LIST = '-c gin_pending_list_limit=64kB';

/** `settings`: more of the connections' settings, `name=value` each (the fallback's: fallback/reads.ts) */
export function createPool(databaseUrl: string, max = 10, t: PoolTimeouts = BATCH_TIMEOUTS, settings: string[] = []): Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    connectionTimeoutMillis: 3000, // a down database answers 503 fast instead of hanging
    idleTimeoutMillis: 30_000,
    ...(t.statementMs ? { statement_timeout: t.statementMs } : {}),
    ...(t.queryMs ? { query_timeout: t.queryMs } : {}),
    keepAlive: true,
    application_name: 'service-registry',
    options: [PENDING_LIST, ...settings.map((x) => '-c ' + x)].join(' '),
  });
  pool.on('error', () => {
    /* idle client lost; the next checkout reconnects */
  });
  return pool;
}

function mapError(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  return outageError(err) ?? err;
}

export async function withTx<T>(pool: Pool, fn: (c: Client) => Promise<T>): Promise<T> {
  let client: Client;
  try {
    client = await pool.connect();
  } catch (err) {
    throw mapError(err);
  }
  // a connection that failed mid-transaction (or whose ROLLBACK failed) is destroyed, not
  // returned to the pool where the next request would inherit its broken state
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    // a lost connection rolls back on the server by itself; waiting for a ROLLBACK there
    // would only double the time the caller waits for its 503
    if (isPgUnavailable(err)) broken = err as Error;
    else await client.query('ROLLBACK').catch((e: Error) => (broken = e));
    throw mapError(err);
  } finally {
    client.release(broken);
  }
}

/** `text` may name the statement ({name, text}): prepared once per connection, then only bound. */
export async function query<R extends pg.QueryResultRow>(pool: Pool, text: string | { name: string; text: string }, params: unknown[] = []): Promise<pg.QueryResult<R>> {
  try {
    return await pool.query<R>(typeof text === 'string' ? { text, values: params } : { ...text, values: params });
  } catch (err) {
    throw mapError(err);
  }
}

/**
 * Retry a transaction that lost a deadlock or serialization race with a concurrent writer
 * (writes that lock several services' rows can meet in opposite orders; PostgreSQL aborts
 * one of them, which then runs again). `again`: other errors the caller knows to be such a
 * race (a bulk insert meeting a row committed after it looked).
 */
export async function retrying<T>(f: () => Promise<T>, again: (err: unknown) => boolean = () => false): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await f();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (i >= 3 || (code !== '40P01' && code !== '40001' && !again(err))) throw err;
    }
  }
}
