// Pages of a search or device query, followed by their `Link: rel="next"` (the server's
// links are canonical: following them never costs a 302), and conditional polling of a
// whole result: every page is asked with the ETag it had, and the answer is "unchanged"
// when every page still matches.
import { UnexpectedResponseError } from './errors.js';
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

export type PollResult<T> =
  /** some page changed (or this is the first poll): `items` is the whole result now */
  | { changed: true; items: T[] }
  /** every page answered 304: `items` is what the previous poll returned */
  | { changed: false; items: T[] };

interface Held<T> extends Page<T> {
  target: string;
}

/**
 * Conditional polling of one query (all its pages). Holds the pages of the last answer with
 * their ETags; each poll asks each page with `If-None-Match`, keeps the pages that answer
 * 304 and re-reads the others. Holds one result: memory grows with the result, not with time.
 */
export class Poller<T> {
  private held: Held<T>[] = [];
  private items: T[] = [];

  constructor(
    private readonly t: Transport,
    private readonly first: string,
    private readonly key: string | undefined,
    private readonly maxPages = DEFAULT_MAX_PAGES,
  ) {}

  /** The ETag of the first page the last poll saw (null before the first poll). */
  get etag(): string | null {
    return this.held[0]?.etag ?? null;
  }

  async poll(o: CallOptions = {}): Promise<PollResult<T>> {
    const fresh: Held<T>[] = [];
    let changed = false;
    let target: string | null = this.first;
    for (let i = 0; target !== null; i++) {
      if (i >= this.maxPages) throw new RangeError(`more than ${this.maxPages} pages (maxPages)`);
      const prev: Held<T> | undefined = this.held[i]?.target === target ? this.held[i] : undefined;
      const ifNoneMatch = prev?.etag ?? undefined;
      const res = await this.t.request('GET', target, { key: this.key, signal: o.signal, ifNoneMatch });
      let page: Held<T>;
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
    if (fresh.length !== this.held.length) changed = true;
    this.held = fresh;
    if (changed) this.items = fresh.flatMap((p) => p.items);
    return { changed, items: this.items } as PollResult<T>;
  }
}
