// The PostgreSQL pool and the transaction helper. Errors that mean "PostgreSQL cannot be
// reached" become 503 with Retry-After, never a 500 or a hang.
import pg from 'pg';
import { ApiError } from '../domain/errors.js';

export type Pool = pg.Pool;
export type Client = pg.PoolClient;

export function createPool(databaseUrl: string, max = 10): Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    connectionTimeoutMillis: 3000, // a down database answers 503 fast instead of hanging
    idleTimeoutMillis: 30_000,
    statement_timeout: 15_000,
    application_name: 'service-registry',
  });
  pool.on('error', () => {
    /* idle client lost; the next checkout reconnects */
  });
  return pool;
}

const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', '57P01', '57P02', '57P03', '53300']);

export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (e?.code && UNAVAILABLE_CODES.has(e.code)) return true;
  return /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED/i.test(e?.message ?? '');
}

function mapError(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  if (isUnavailable(err)) return new ApiError('UNAVAILABLE', 'the database is unavailable; try again shortly', { 'Retry-After': '5' });
  return err;
}

export async function withTx<T>(pool: Pool, fn: (c: Client) => Promise<T>): Promise<T> {
  let client: Client;
  try {
    client = await pool.connect();
  } catch (err) {
    throw mapError(err);
  }
  try {
    await client.query('BEGIN');
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw mapError(err);
  } finally {
    client.release();
  }
}

export async function query<R extends pg.QueryResultRow>(pool: Pool, text: string, params: unknown[] = []): Promise<pg.QueryResult<R>> {
  try {
    return await pool.query<R>(text, params);
  } catch (err) {
    throw mapError(err);
  }
}
