// One request to the registry: the key in `Authorization: Bearer`, JSON bodies, and 429s
// waited out as the server asks (Retry-After), within a bound and cancellable. Runtime code
// of the client uses nothing but fetch, AbortSignal, TextEncoder and timers, so it runs in
// Node (>= 20) and in browsers alike.
import { ApiError, UnexpectedResponseError } from './errors.js';
import type { ErrorCode } from './types.js';

export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportOptions {
  /** the registry's base URL, e.g. `https://registry.example.com` (a path prefix is kept) */
  baseUrl: string;
  /** fetch to use (default: the global one); tests pass one that records requests */
  fetch?: Fetch;
  /** how many times one call waits out a 429 before it throws (default 3) */
  maxRetries?: number;
  /** longest Retry-After one wait honours, ms (default 30,000): a longer one throws at once */
  maxRetryWaitMs?: number;
  /** the wait (default: a timer); rejects with the signal's reason when it aborts */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** the clock Retry-After dates are read against (default Date.now) */
  now?: () => number;
}

export interface CallOptions {
  /** cancels the request and any wait for a 429 */
  signal?: AbortSignal;
}

export interface RequestOptions extends CallOptions {
  /** a sandbox key, the admin key or a heartbeat token; none for public calls */
  key?: string;
  body?: unknown;
  ifNoneMatch?: string;
  /** `Prefer` (RFC 7240), e.g. `wait=60`: with a matching `ifNoneMatch`, the server holds the request until the answer changes */
  prefer?: string;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

export function timerSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Retry-After (delay-seconds or an HTTP-date) in ms from `now`, or null when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** The error a non-2xx answer stands for. Reads (and so releases) the body. */
export async function errorOf(res: Response, now: number): Promise<Error> {
  const text = await res.text().catch(() => '');
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: below
  }
  const e = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (e && typeof e.code === 'string' && typeof e.message === 'string') {
    return new ApiError(res.status, e.code as ErrorCode, e.message, retryAfterMs(res.headers.get('retry-after'), now));
  }
  return new UnexpectedResponseError(res.status, `HTTP ${res.status} without the registry's error body: ${text.slice(0, 200)}`);
}

export class Transport {
  readonly baseUrl: string;
  private readonly fetch: Fetch;
  private readonly maxRetries: number;
  private readonly maxRetryWaitMs: number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly now: () => number;

  constructor(o: TransportOptions) {
    this.baseUrl = o.baseUrl.replace(/\/+$/, '');
    this.fetch = o.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.maxRetries = o.maxRetries ?? 3;
    this.maxRetryWaitMs = o.maxRetryWaitMs ?? 30_000;
    this.sleep = o.sleep ?? timerSleep;
    this.now = o.now ?? Date.now;
  }

  /** An absolute URL for a path (`/services?...`) or a link target the server sent. */
  url(target: string): string {
    return /^https?:\/\//i.test(target) ? target : this.baseUrl + target;
  }

  /**
   * Sends the request; waits out 429s (nothing was written: the contract refuses before any
   * write) up to maxRetries times, each wait at most maxRetryWaitMs. Returns 2xx and 304
   * responses as they are; throws ApiError / UnexpectedResponseError for anything else.
   */
  async request(method: string, target: string, o: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (o.key !== undefined) headers.authorization = `Bearer ${o.key}`;
    if (o.ifNoneMatch !== undefined) headers['if-none-match'] = o.ifNoneMatch;
    if (o.prefer !== undefined) headers.prefer = o.prefer;
    let body: string | undefined;
    if (o.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(o.body);
    }
    const url = this.url(target);
    for (let attempt = 0; ; attempt++) {
      o.signal?.throwIfAborted();
      const res = await this.fetch(url, { method, headers, body, signal: o.signal });
      if ((res.status >= 200 && res.status < 300) || res.status === 304) return res;
      const err = await errorOf(res, this.now());
      if (res.status !== 429 || attempt >= this.maxRetries) throw err;
      // a 429 without a readable Retry-After (the contract always sends one) waits a second
      const wait = err instanceof ApiError && err.retryAfterMs !== null ? err.retryAfterMs : 1000;
      if (wait > this.maxRetryWaitMs) throw err;
      await this.sleep(wait, o.signal);
    }
  }

  /** Wait `ms` (the transport's sleep: a timer unless the options gave another); rejects when `signal` aborts. */
  pause(ms: number, signal?: AbortSignal): Promise<void> {
    return this.sleep(ms, signal);
  }

  async json<T>(method: string, target: string, o: RequestOptions = {}): Promise<T> {
    const res = await this.request(method, target, o);
    if (res.status === 204 || res.status === 304) {
      throw new UnexpectedResponseError(res.status, `${method} ${target}: ${res.status} where a JSON body was expected`);
    }
    return (await res.json()) as T;
  }
}
