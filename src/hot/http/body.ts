// Request bodies: reading them from uWS (capped, copied) and parsing them as JSON (415 for
// another declared type, 400 for bad JSON or a string that is not Unicode).
import type { HttpResponse } from 'uWebSockets.js';
import { ApiError } from '../domain/errors.js';
import { hasLoneSurrogate } from '../domain/tokens.js';
import type { Req } from './types.js';

/** Collect the body, copying each chunk (uWS reuses their memory), refusing past `max`. */
export function readBody(res: HttpResponse, max: number, onDone: (body: Buffer | null) => void): void {
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
    chunks.push(Buffer.from(ab.slice(0)));
    if (isLast) onDone(Buffer.concat(chunks, size));
  });
}

/** Parse a JSON body; 415 for a declared non-JSON type, 400 for bad JSON. */
export function parseJson(req: Req, body: Buffer | null): unknown {
  if (req.contentType && !/^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(req.contentType)) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json');
  }
  if (!body || body.length === 0) throw new ApiError('BAD_JSON', 'the request needs a JSON body');
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    throw new ApiError('BAD_JSON', 'the body is not valid JSON');
  }
  // An escaped lone surrogate ("\ud800") is valid JSON but not Unicode: PostgreSQL's UTF-8
  // would store it as U+FFFD, silently other than what was sent. Refused instead.
  if (!wellFormed(v)) throw new ApiError('BAD_JSON', 'the body holds a string that is not valid Unicode (an unpaired surrogate escape)');
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
