// Pages of a search or device query, followed by their `Link: rel="next"` (the server's
// links are canonical: following them never costs a 302), and conditional polling of a
// whole result: every page is asked with the ETag it had, and the answer is "unchanged"
// when every page still matches. A poll may wait for a change (`Prefer: wait`, the server
// holds the requests), and watch() loops such polls, backing off on 429 and 503.
import { ApiError, UnexpectedResponseError } from './errors.js';
import { nextLink } from './query.js';
import type { CallOptions, Transport } from './transport.js';

export interface Page<T> {
  items: T[];
  /** the page's ETag (null when the server sent none) */
  etag: string | null;
  /** the next page's target (path and canonical query), null on the last page */
  next: string | null;
}

export interface PageOptions extends CallOptions {
  /** stop after this many pages (default 10,000): a bound on what one call may fetch */
  maxPages?: number;
}

export const DEFAULT_MAX_PAGES = 10_000;

async function readPage<T>(res: Response): Promise<Page<T>> {
  return { items: (await res.json()) as T[], etag: res.headers.get('etag'), next: nextLink(res.headers.get('link')) };
}

/** Every page from `first` on, in order. */
export async function* pages<T>(t: Transport, first: string, key: string | undefined, o: PageOptions = {}): AsyncGenerator<Page<T>> {
  const max = o.maxPages ?? DEFAULT_MAX_PAGES;
  let target: string | null = first;
  for (let n = 0; target !== null; n++) {
    if (n >= max) throw new RangeError(`more than ${max} pages (maxPages)`);
    const res = await t.request('GET', target, { key, signal: o.signal });
    if (res.status !== 200) throw new UnexpectedResponseError(res.status, `GET ${target}: ${res.status} where a page was expected`);
    const page: Page<T> = await readPage<T>(res);
    yield page;
    target = page.next;
  }
}

export interface PollOptions extends CallOptions {
  /**
   * Wait for a change, at most this many seconds (`Prefer: wait=N`; the server caps it at its
   * WAIT_MAX_SECONDS): every page is held by the server until one changes, then the result is
   * read again. The first poll, with no result held yet, never waits.
   */
  wait?: number;
}

export interface WatchOptions extends CallOptions {
  /** each held poll's wait, seconds (default 60) */
  wait?: number;
  /** longest back-off after a refusal (429) or an outage (503), ms (default 60,000) */
  maxBackoffMs?: number;
}

export type PollResult<T> =
  /** some page changed (or this is the first poll): `items` is the whole result now */
  | { changed: true; items: T[] }
  /** every page answered 304: `items` is what the previous poll returned */
  | { changed: false; items: T[] };

interface KeptPage<T> extends Page<T> {
  target: string;
}

/**
 * Conditional polling of one query (all its pages). Holds the pages of the last answer with
 * their ETags; each poll asks each page with `If-None-Match`, keeps the pages that answer
 * 304 and re-reads the others. Holds one result: memory grows with the result, not with time.
 */
export class Poller<T> {
  /** the pages of the last answer, with their ETags */
  private kept: KeptPage<T>[] = [];
  private items: T[] = [];

  constructor(
    private readonly t: Transport,
    private readonly first: string,
    private readonly key: string | undefined,
    private readonly maxPages = DEFAULT_MAX_PAGES,
  ) {}

  /** The ETag of the first page the last poll saw (null before the first poll). */
  get etag(): string | null {
    return this.kept[0]?.etag ?? null;
  }

  private serverHolds = false;

  /** Whether the server held the last poll that asked it to wait (false: it answered at once: it does not hold requests). */
  get heldByServer(): boolean {
    return this.serverHolds;
  }

  async poll(o: PollOptions = {}): Promise<PollResult<T>> {
    if (o.wait !== undefined && o.wait >= 1 && this.kept.length) {
      if (!(await this.changed(Math.floor(o.wait), o.signal))) return { changed: false, items: this.items };
    }
    return this.pollNow(o.signal);
  }

  /**
   * The result, each time it changes: the first poll's at once, then after every held poll
   * that found a change. A 429 or 503 (after the transport's own retries) waits its
   * Retry-After, at least a back-off that doubles from 1 s up to `maxBackoffMs`, and polls
   * again; any other error ends the loop by throwing; the signal ends it quietly.
   */
  async *watch(o: WatchOptions = {}): AsyncGenerator<T[]> {
    const wait = o.wait ?? 60;
    const most = o.maxBackoffMs ?? 60_000;
    let backoff = 0;
    let first = true;
    while (!o.signal?.aborted) {
      let r: PollResult<T>;
      try {
        r = await this.poll({ wait, signal: o.signal });
        backoff = 0;
      } catch (err) {
        if (o.signal?.aborted) return;
        if (!(err instanceof ApiError) || (err.status !== 429 && err.status !== 503)) throw err;
        backoff = Math.min(most, Math.max(1000, backoff * 2));
        if (!(await this.pause(Math.max(err.retryAfterMs ?? 0, backoff), o.signal))) return;
        continue;
      }
      if (r.changed || first) yield r.items;
      first = false;
      // a server that does not hold requests answers at once: not a reason to spin
      if (!r.changed && !this.serverHolds && !(await this.pause(wait * 1000, o.signal))) return;
    }
  }

  /** false when the signal aborted the pause */
  private async pause(ms: number, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.t.pause(ms, signal);
      return true;
    } catch (err) {
      if (signal?.aborted) return false;
      throw err;
    }
  }

  /**
   * Every page held by the server until one changes: true at the first page that answers
   * anything but 304 (the others are cancelled), false when every wait ended unchanged.
   */
  private async changed(wait: number, signal?: AbortSignal): Promise<boolean> {
    const ac = new AbortController();
    const stop = () => ac.abort(signal?.reason);
    signal?.addEventListener('abort', stop, { once: true });
    let held = true;
    try {
      const one = async (p: KeptPage<T>): Promise<boolean> => {
        if (p.etag === null) return true;
        const res = await this.t.request('GET', p.target, { key: this.key, signal: ac.signal, ifNoneMatch: p.etag, prefer: `wait=${wait}` });
        await res.body?.cancel();
        if (res.status !== 304) {
          ac.abort(); // a page changed: the others need not wait
          return true;
        }
        held &&= res.headers.has('preference-applied');
        return false;
      };
      const answers = await Promise.allSettled(this.kept.map(one));
      if (signal?.aborted) throw signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
      const changed = answers.some((a) => a.status === 'fulfilled' && a.value);
      // a failure is thrown unless another page already said the result changed
      const failed = answers.find((a): a is PromiseRejectedResult => a.status === 'rejected');
      if (!changed && failed) throw failed.reason;
      this.serverHolds = held;
      return changed;
    } finally {
      signal?.removeEventListener('abort', stop);
    }
  }

  private async pollNow(signal?: AbortSignal): Promise<PollResult<T>> {
    const fresh: KeptPage<T>[] = [];
    let changed = false;
    let target: string | null = this.first;
    for (let i = 0; target !== null; i++) {
      if (i >= this.maxPages) throw new RangeError(`more than ${this.maxPages} pages (maxPages)`);
      const prev: KeptPage<T> | undefined = this.kept[i]?.target === target ? this.kept[i] : undefined;
      const ifNoneMatch = prev?.etag ?? undefined;
      const res = await this.t.request('GET', target, { key: this.key, signal, ifNoneMatch });
      let page: KeptPage<T>;
      if (res.status === 304 && prev) {
        page = prev;
      } else if (res.status === 200) {
        page = { target, ...(await readPage<T>(res)) };
        changed = true;
      } else {
        throw new UnexpectedResponseError(res.status, `GET ${target}: ${res.status} where a page or 304 was expected`);
      }
      fresh.push(page);
      target = page.next;
    }
    if (fresh.length !== this.kept.length) changed = true;
    this.kept = fresh;
    if (changed) this.items = fresh.flatMap((p) => p.items);
    return { changed, items: this.items } as PollResult<T>;
  }
}
