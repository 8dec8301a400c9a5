// PostgreSQL's time per statement (pg_stat_statements) in one database: the writes bench's
// table of the statements behind its w row (bench/writes.ts).
import type pg from 'pg';

export interface Statement {
  query: string;
  calls: number;
  total: number;
  mean: number;
  rows: number;
}

/** The bench database's statements since the last reset, by total execution time (the first 70 characters of each). */
export async function topStatements(admin: pg.Client, db: string): Promise<Statement[]> {
  const r = await admin.query<{ q: string; calls: string; total: number; mean: number; rows: string }>(
    `SELECT regexp_replace(left(query, 70), '\\s+', ' ', 'g') AS q, calls, total_exec_time AS total, mean_exec_time AS mean, rows
       FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1 ORDER BY total_exec_time DESC LIMIT 8`,
    [db],
  );
  return r.rows.map((x) => ({ query: x.q.replace(/\|/g, '\\|'), calls: Number(x.calls), total: x.total, mean: x.mean, rows: Number(x.rows) }));
}
