// RESP2 for the heartbeat call's own connection (script-line.ts): commands written as
// arrays of bulk strings, replies read from a byte stream in order, a reply cut across TCP
// reads kept until its end comes. Replies read as ioredis reads them (integers as numbers,
// strings as strings, nil as null, error replies as values named ReplyError).

/** An error reply of Redis (its name as ioredis's, so domain/outage.ts classifies it alike). */
export class LineReplyError extends Error {
  override name = 'ReplyError';
}

/** Nothing more to parse until more bytes come. */
const INCOMPLETE = Symbol('incomplete');

/** The most a reply may nest (our scripts return flat arrays; a bound, not a limit in use). */
const MAX_DEPTH = 8;

/**
 * RESP2 replies from a byte stream, in order: integers as numbers, bulk and simple strings
 * as strings (null for a null bulk or array), arrays as arrays, errors as LineReplyError
 * values. Bytes of an unfinished reply are kept for the next chunk.
 */
export class RespReader {
  private rest: Buffer | null = null;
  private pos = 0;

  /** Feed a chunk; `out` gets each complete reply. Throws on bytes that are not RESP. */
  feed(chunk: Buffer, out: (v: unknown) => void): void {
    const b = this.rest ? Buffer.concat([this.rest, chunk]) : chunk;
    this.rest = null;
    let start = 0;
    while (start < b.length) {
      this.pos = start;
      const v = this.value(b, 0);
      if (v === INCOMPLETE) {
        this.rest = b.subarray(start);
        return;
      }
      start = this.pos;
      out(v);
    }
  }

  /** The line from pos to its CRLF (pos moves past it), or INCOMPLETE. */
  private line(b: Buffer): string | typeof INCOMPLETE {
    const from = this.pos;
    const cr = b.indexOf(13, from);
    if (cr < 0 || cr + 1 >= b.length) return INCOMPLETE;
    if (b[cr + 1] !== 10) throw new Error('Redis line: a CR without LF');
    this.pos = cr + 2;
    return b.toString('utf8', from, cr);
  }

  /** An integer line (a length or an integer reply). */
  private int(b: Buffer): number | typeof INCOMPLETE {
    // the common replies are small integers: read their digits without making a string
    const from = this.pos;
    let i = from;
    let neg = false;
    if (b[i] === 45) {
      neg = true;
      i++;
    }
    let n = 0;
    const first = i;
    for (; i < b.length; i++) {
      const c = b[i]!;
      if (c < 48 || c > 57) break;
      n = n * 10 + (c - 48);
    }
    if (i + 1 >= b.length) return INCOMPLETE;
    if (i === first || b[i] !== 13 || b[i + 1] !== 10 || i - first > 15) {
      this.pos = from;
      const s = this.line(b);
      if (s === INCOMPLETE) return INCOMPLETE;
      throw new Error(`Redis line: not an integer: ${JSON.stringify(s.slice(0, 40))}`);
    }
    this.pos = i + 2;
    return neg ? -n : n;
  }

  private value(b: Buffer, depth: number): unknown {
    if (this.pos >= b.length) return INCOMPLETE;
    if (depth > MAX_DEPTH) throw new Error('Redis line: a reply nested too deep');
    const type = b[this.pos++];
    switch (type) {
      case 58: // ':' integer
        return this.int(b);
      case 43: // '+' simple string
        return this.line(b);
      case 45: {
        // '-' error
        const s = this.line(b);
        return s === INCOMPLETE ? s : new LineReplyError(s);
      }
      case 36: {
        // '$' bulk string
        const n = this.int(b);
        if (n === INCOMPLETE) return n;
        if (n < 0) return null;
        const end = this.pos + n;
        if (end + 2 > b.length) return INCOMPLETE;
        if (b[end] !== 13 || b[end + 1] !== 10) throw new Error('Redis line: a bulk string without its CRLF');
        this.pos = end + 2;
        return b.toString('utf8', end - n, end);
      }
      case 42: {
        // '*' array
        const n = this.int(b);
        if (n === INCOMPLETE) return n;
        if (n < 0) return null;
        const a: unknown[] = new Array<unknown>(n);
        for (let i = 0; i < n; i++) {
          const v = this.value(b, depth + 1);
          if (v === INCOMPLETE) return v;
          a[i] = v;
        }
        return a;
      }
      default:
        throw new Error(`Redis line: unknown reply type ${String(type)}`);
    }
  }
}

/** RESP bulk strings of `args`, one after another (a command's body, without its array header). */
export function bulkStrings(args: readonly (string | number)[]): string {
  let s = '';
  for (const a of args) {
    const v = typeof a === 'string' ? a : String(a);
    s += '$' + Buffer.byteLength(v) + '\r\n' + v + '\r\n';
  }
  return s;
}

/** A command as RESP: an array of bulk strings. */
export function encodeCommand(args: readonly (string | number)[]): string {
  return '*' + args.length + '\r\n' + bulkStrings(args);
}
