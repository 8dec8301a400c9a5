// The answer side of uWebSockets.js (models: uWS examples AsyncFunction.mjs and JsonPost.js):
// a Reply writes a response once, inside cork(), and only if the client is still there; it
// knows whether the client went away (onAbort hooks cancel work done for it) and answers
// errors with the contract's body. Requests and routing are route.ts's.
import type { HttpResponse } from 'uWebSockets.js';
import { ApiError, ERRORS, errorBody, errorMessage, REGISTRY, STATUS_TEXT, type ErrorArg, type ErrorCode, type ErrorKey } from '../domain/errors.js';
import { outageError } from '../domain/outage.js';
import type { Headers } from './types.js';

export const JSON_TYPE = 'application/json; charset=utf-8';

/** status lines as bytes, by status: uWS reads a Uint8Array in place (a string is converted per call) */
const STATUS_LINES: Uint8Array[] = [];

function statusLine(status: number): Uint8Array | string {
  const known = STATUS_LINES[status];
  if (known) return known;
  const text = STATUS_TEXT[status];
  if (text === undefined) return String(status);
  return (STATUS_LINES[status] = new TextEncoder().encode(text));
}

export class Reply {
  aborted = false;
  done = false;
  /** status sent (0 when the client went away first), for metrics and access logs */
  status = 0;
  /** close the connection after the response (shutdown drain) */
  closeAfter = false;
  /** a HEAD request: send the headers (and Content-Length) of the GET answer, no body */
  head = false;
  /**
   * Who answers this request later, after its handler returned (a held request: held/): told
   * when the client goes away. A field and an object's method rather than an onAbort closure:
   * a holder of many requests keeps nothing per request but what it stores itself.
   */
  holder: { clientLeft(): void } | null = null;
  /** called exactly once: after the response was written, or when the client aborted */
  constructor(
    readonly res: HttpResponse,
    private readonly onEnd: (reply: Reply) => void = () => undefined,
  ) {
    res.onAborted(() => {
      this.aborted = true;
      this.holder?.clientLeft();
      if (this.abortHooks) for (const f of this.abortHooks) f();
      if (!this.done) {
        this.done = true;
        this.onEnd(this);
      }
    });
  }

  private abortHooks: (() => void)[] | null = null;

  /**
   * Call `f` when the client goes away (at once if it has): cancels work done on its behalf.
   * Plain callbacks, not an AbortController and its event listeners on every search (a
   * visible share of a cold page).
   */
  onAbort(f: () => void): void {
    if (this.aborted) return f();
    (this.abortHooks ??= []).push(f);
  }

  send(status: number, headers: Headers, body: string | Uint8Array = '', close = false): void {
    if (this.aborted || this.done) return;
    this.done = true;
    this.status = status;
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status));
      for (const [k, v] of headers) this.res.writeHeader(k, v);
      // 204 and 304 have no content, and no Content-Length either (RFC 9110 §8.6: a server
      // MUST NOT send one with a 204, nor a 304's unless it is the 200's length); uWS's end()
      // writes "Content-Length: 0" with whatever it ends. (Closing the connection after one,
      // the shutdown drain, takes end(): this build's endWithoutBody writes nothing and closes
      // when given closeConnection without a length.)
      const closing = close || this.closeAfter;
      if ((status === 204 || status === 304) && !closing) this.res.endWithoutBody();
      // a body after a HEAD answer would be read as the start of the next response. (This
      // uWS build writes nothing at all for endWithoutBody(n), so the length goes in by hand.)
      else if (this.head) {
        this.res.writeHeader('Content-Length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength));
        this.res.endWithoutBody();
      } else this.res.end(body, closing);
    });
    this.onEnd(this);
  }

  json(status: number, body: string, headers: Headers = []): void {
    this.send(status, [['Content-Type', JSON_TYPE], ...headers], body);
  }

  /** The registry's error `key` (its template filled by `args`): no ApiError (an object and a stack-trace guard) per answer. */
  error(key: ErrorKey, args: readonly ErrorArg[] = [], headers: Headers = [], close = false): void {
    this.errorAnswer(REGISTRY[key].code, errorMessage(key, args), headers, close);
  }

  /** A thrown ApiError as the contract's error body, with its headers. */
  fail(e: ApiError): void {
    this.errorAnswer(e.code, e.message, Object.entries(e.headers));
  }

  private errorAnswer(code: ErrorCode, message: string, headers: Headers, close = false): void {
    // no-store unless the caller chose a Cache-Control (never two of them)
    const cc: Headers = headers.some(([k]) => k.toLowerCase() === 'cache-control') ? [] : [['Cache-Control', 'no-store']];
    this.send(ERRORS[code], [['Content-Type', JSON_TYPE], ...cc, ...headers], errorBody(code, message), close);
  }

  /**
   * Start a streamed response (Server-Sent Events): status, headers and a first chunk now,
   * more through write(), and finish() at the end. The route's onDone runs at finish() or
   * when the client leaves. Returns false when the client is already gone.
   */
  begin(status: number, headers: Headers, first: string): boolean {
    if (this.aborted || this.done) return false;
    if (this.head) {
      // HEAD of a stream: its headers and nothing more. No Content-Length: a GET of it has
      // none (its length is unknown), and a HEAD answer never has a body anyway.
      this.done = true;
      this.status = status;
      this.res.cork(() => {
        this.res.writeStatus(statusLine(status));
        for (const [k, v] of headers) this.res.writeHeader(k, v);
        this.res.endWithoutBody();
      });
      this.onEnd(this);
      return false;
    }
    this.status = status;
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status));
      for (const [k, v] of headers) this.res.writeHeader(k, v);
      this.res.write(first);
    });
    return true;
  }

  /** One chunk of a begun stream; false under backpressure (wait for res.onWritable) or when gone. */
  write(chunk: string): boolean {
    if (this.aborted || this.done) return false;
    let ok = false;
    this.res.cork(() => {
      ok = this.res.write(chunk);
    });
    return ok;
  }

  /** End a begun stream. */
  finish(): void {
    if (this.aborted || this.done) return;
    this.done = true;
    this.res.cork(() => this.res.end());
    this.onEnd(this);
  }
}

export function sendError(reply: Reply, err: unknown, onError: (err: unknown) => void): void {
  // an unreachable PostgreSQL or Redis is a 503 with Retry-After wherever it surfaces
  const e = err instanceof ApiError ? err : outageError(err);
  if (e) {
    reply.fail(e);
  } else {
    onError(err);
    reply.error('INTERNAL');
  }
}
