// Request bodies: reading them from uWS (capped, copied) and parsing them as JSON (415 for
// another declared type, 400 for bad JSON, JSON nested deeper than MAX_JSON_DEPTH, bytes
// that are not UTF-8, or a string that is not Unicode).
import { isUtf8 } from 'node:buffer';
import type { HttpResponse } from 'uWebSockets.js';
import { ApiError } from '../domain/errors.js';
import { hasLoneSurrogate } from '../domain/tokens.js';
import type { Req } from './types.js';

/**
 * Collect the body, copying each chunk (uWS reuses their memory), refusing past `max`.
 * `onChunk` (a test hook) hears the size of every chunk copied.
 */
export function readBody(res: HttpResponse, max: number, onDone: (body: Buffer | null) => void, onChunk?: (bytes: number) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  res.onData((ab, isLast) => {
    if (over) return;
    size += ab.byteLength;
    if (size > max) {
      over = true;
      onDone(null);
      return;
    }
    onChunk?.(ab.byteLength);
    chunks.push(Buffer.from(ab.slice(0)));
    if (isLast) onDone(Buffer.concat(chunks, size));
  });
}

/**
 * readBody() behind a check still under way (a credential: RouteOptions.guard). Nothing more
 * is read from the socket until `gate` settles (res.pause()): only what uWS had read with the
 * request's head reaches `onData` meanwhile (one read of the socket, kept, never parsed).
 * Passed: reading resumes and `onDone` gets the body as readBody() gives it. Refused:
 * `onRefused` answers, and the rest of the body is never read (the answer closes the
 * connection). `gone`: the client left (nothing may touch `res` then).
 */
export function readBodyAfter(res: HttpResponse, max: number, gate: Promise<void>, onDone: (body: Buffer | null) => void, onRefused: (err: unknown) => void, gone: () => boolean, onChunk?: (bytes: number) => void): void {
  let passed = false;
  let read: { body: Buffer | null } | null = null; // the body, once read (null: over `max`)
  readBody(res, max, (body) => (passed ? onDone(body) : (read = { body })), onChunk);
  res.pause();
  gate.then(
    () => {
      if (gone()) return;
      passed = true;
      // resumed even when the body is all here: a paused socket reads no next request
      res.resume();
      if (read) onDone(read.body);
    },
    (err: unknown) => {
      if (!gone()) onRefused(err);
    },
  );
}

/** Default nesting limit when a Req carries none (config.ts: MAX_JSON_DEPTH). */
export const DEFAULT_JSON_DEPTH = 32;

/**
 * Deepest nesting of arrays and objects in a JSON text, found without parsing it: one pass
 * over the bytes counting '[' and '{' outside strings, stopping as soon as `limit` is passed.
 * Bounded by the body size, no recursion. (Brackets of invalid JSON count too: a body that is
 * not JSON fails later anyway, and counting more never lets a deep one through.)
 */
export function jsonDepthExceeds(text: Buffer, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next byte is escaped, whatever it is
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Parse a JSON body; 415 for a declared non-JSON type, 400 for bad JSON, bytes that are not
 * UTF-8, or nesting deeper than the limit (checked before JSON.parse, so nothing after it
 * recurses deeper).
 */
export function parseJson(req: Req, body: Buffer | null): unknown {
  if (req.contentType && !/^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(req.contentType)) {
    throw new ApiError('BODY_NOT_JSON_TYPE');
  }
  if (!body || body.length === 0) throw new ApiError('BODY_MISSING');
  const limit = req.maxJsonDepth ?? DEFAULT_JSON_DEPTH;
  if (jsonDepthExceeds(body, limit)) {
    throw new ApiError('BODY_TOO_DEEP', [limit]);
  }
  // toString('utf8') would turn every invalid sequence into U+FFFD and the service would be
  // stored other than sent: refused instead (one pass, native)
  if (!isUtf8(body)) throw new ApiError('BODY_NOT_UTF8');
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    throw new ApiError('BODY_NOT_JSON');
  }
  // An escaped lone surrogate ("\ud800") is valid JSON but not Unicode: PostgreSQL's UTF-8
  // would store it as U+FFFD, silently other than what was sent. Refused instead.
  if (!wellFormed(v)) throw new ApiError('BODY_BAD_UNICODE');
  return v;
}

/** Every string in a parsed JSON value (object keys included) is well-formed UTF-16. */
function wellFormed(v: unknown): boolean {
  if (typeof v === 'string') return !hasLoneSurrogate(v);
  if (Array.isArray(v)) return v.every(wellFormed);
  if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) if (hasLoneSurrogate(k) || !wellFormed(x)) return false;
  }
  return true;
}
