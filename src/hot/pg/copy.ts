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

/**
 * The rows of one COPY, encoded (UTF-8) into one growing buffer as they are added, field by
 * field. One string of a chunk's rows cost ~3x more: V8 flattens a concatenation of thousands
 * of rows and allocates the large string and its Buffer fresh each time; a string per row
 * still allocated its concatenation and flattened copy (bench/README.md, "Import and export").
 */
export class CopyRows {
  private buf = Buffer.allocUnsafe(1 << 16);
  private end = 0;
  count = 0;

  add(values: readonly CopyValue[]): void {
    for (let i = 0; i < values.length; i++) {
      const f = field(values[i]!);
      // a UTF-16 code unit takes at most 3 bytes of UTF-8; then the tab or newline
      if (this.end + f.length * 3 + 1 > this.buf.length) this.grow(f.length * 3 + 1);
      this.end += this.buf.write(f, this.end);
      this.buf[this.end++] = i === values.length - 1 ? 0x0a : 0x09;
    }
    this.count++;
  }

  private grow(need: number): void {
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.end + need));
    this.buf.copy(grown, 0, 0, this.end);
    this.buf = grown;
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.end);
  }
}

/**
 * Load `rows` into `table`'s `columns` with one COPY in the client's transaction. Column
 * defaults (sequences) fill what is not listed; row triggers and constraints apply as for an
 * INSERT. Resolves with the number of rows copied.
 */
export function copyInto(c: Client, table: string, columns: readonly string[], rows: CopyRows): Promise<number> {
  if (!rows.count) return Promise.resolve(0);
  const stream = c.query(pgCopy.from(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
  return new Promise<number>((resolve, reject) => {
    stream.on('error', reject);
    stream.on('finish', () => resolve(stream.rowCount));
    // one write of the whole payload, one CopyData message
    stream.end(rows.bytes());
  });
}
