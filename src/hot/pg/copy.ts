// COPY ... FROM STDIN for bulk loads (the command-line import): rows encoded in COPY's text
// format and streamed in one message stream. COPY inserts many rows per heap page and WAL
// record where an INSERT writes one of each per row (PostgreSQL's multi-insert path),
// and nothing is parsed as SQL or bound as a parameter array.
import pgCopy from 'pg-copy-streams';
import type { Client } from './pool.js';

/** A COPY text-format field: null, a boolean, a number, a string or a text[] (string[]). */
export type CopyValue = string | number | boolean | null | readonly string[];

const SPECIAL = /[\\\t\n\r]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** a string as one COPY text field: backslash, tab, newline and carriage return escaped */
export function copyText(s: string): string {
  return SPECIAL.test(s) ? s.replace(/[\\\t\n\r]/g, (ch) => ESCAPES[ch]!) : s;
}

/** a text[] literal ({"a","b"}: every element quoted, its quotes and backslashes escaped) */
export function arrayLiteral(xs: readonly string[]): string {
  return '{' + xs.map((x) => '"' + x.replace(/["\\]/g, '\\$&') + '"').join(',') + '}';
}

function field(v: CopyValue): string {
  if (v === null) return '\\N';
  if (typeof v === 'string') return copyText(v);
  if (typeof v === 'boolean') return v ? 't' : 'f';
  if (typeof v === 'number') return String(v);
  return copyText(arrayLiteral(v));
}

/** One row of COPY text: fields separated by tabs, ended by a newline. */
export function copyLine(values: readonly CopyValue[]): string {
  let s = field(values[0]!);
  for (let i = 1; i < values.length; i++) s += '\t' + field(values[i]!);
  return s + '\n';
}

/**
 * Load `rows` (copyLine() rows, concatenated) into `table`'s `columns` with one COPY in the
 * client's transaction. Column defaults (sequences) fill what is not listed; row triggers
 * and constraints apply as for an INSERT. Resolves with the number of rows copied.
 */
export function copyInto(c: Client, table: string, columns: readonly string[], rows: string): Promise<number> {
  if (!rows) return Promise.resolve(0);
  const stream = c.query(pgCopy.from(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
  return new Promise<number>((resolve, reject) => {
    stream.on('error', reject);
    stream.on('finish', () => resolve(stream.rowCount));
    // one write of the whole payload, one CopyData message. ASCII (byte length = length)
    // is encoded as Latin-1, the same bytes: Node 20's UTF-8 encoder is many times slower
    stream.end(Buffer.byteLength(rows) === rows.length ? Buffer.from(rows, 'latin1') : rows);
  });
}
