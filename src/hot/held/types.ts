// What the held/ room and the routes that hold requests say to each other: an answer (what a
// held request is woken with), a watch (the port a route implements: what its answer reads,
// and how to compute it again), and the records of held requests and of the answers they
// wait on (intrusive lists: the links are fields, nothing is allocated per link).
import type { Headers } from '../http/types.js';
import type { Reply } from '../http/reply.js';
import type { Timed } from './wheel.js';

/** A route's answer, computed without a client. */
export interface Answer {
  /** 200, or an error (404: the service is gone) */
  status: number;
  body: Buffer | string;
  /** the answer's ETag; null for an error */
  etag: string | null;
  /** headers that belong to this answer (Link, Deprecation, …), after the request's own and ETag */
  headers: Headers;
  /** a single read: its service's seq now (the deltas that name it wake it) */
  seq?: number;
}

/**
 * What one answer reads, and how to compute it again (a port: the route that holds the
 * request implements it, once per answer, never per request). A write's or an expiry page's
 * delta (redis/delta.ts) that may change it has it computed again, once, however many wait.
 */
export interface Watch {
  /** its namespace */
  readonly ns: string;
  /**
   * a search: the set suffixes it intersects (domain/dimensions.ts filterSuffixes). A write
   * changes it only if the service was, or is now, in every one of them.
   */
  readonly sets?: readonly string[];
  /** a single read: its service's seq (a write or expiry of that seq changes it) */
  readonly seq?: number;
  /**
   * a blocking query (Consul's `?index=N&wait=D`): its validator is a number (X-Consul-Index)
   * and a request waits for one greater than its own; the end of its wait (and the drain)
   * answers it with the answer as it stands (200) rather than 304, and no Preference-Applied
   */
  readonly blocking?: boolean;
  /** the answer now (a throw or a rejection: tried again later; the requests stay held) */
  compute(): Answer | Promise<Answer>;
}

/** One answer and the requests held on it, grouped by key (namespace + route + canonical query, or + id). */
export class Group {
  /** the requests held on it (a list through Waiter.prev/next) */
  head: Waiter | null = null;
  size = 0;
  /** its computation is under way; `again`: a change arrived meanwhile */
  running = false;
  again = false;
  /** taken out of the index (no one waits any more, or the drain) */
  gone = false;

  constructor(
    /** who holds its requests (told when a client leaves) */
    readonly owner: Holder,
    readonly key: string,
    readonly watch: Watch,
    /** the answer's ETag and own headers as last seen (what a 304 at the end of a wait carries) */
    public etag: string | null,
    public headers: Headers,
    /** a single read's service seq as last seen */
    public seq: number | undefined,
  ) {}

  /** a blocking query's answer as it stands (what the end of a wait answers); null otherwise */
  last: Answer | null = null;
}

/** Told when a held request's client left (Reply.holder). */
export interface Holder {
  left(w: Waiter): void;
}

/** One held request: its reply, what it holds, its deadline on the wheel, its share slot. */
export class Waiter implements Timed {
  prev: Waiter | null = null;
  next: Waiter | null = null;
  tick = 0;
  wprev: Timed | null = null;
  wnext: Timed | null = null;

  constructor(
    readonly reply: Reply,
    readonly group: Group,
    /** the ETag the client holds (it matched the answer when the request came); a blocking query's: its index */
    readonly etag: string,
    /** the request's own headers (Cache-Control, Vary, rate headers) */
    readonly common: Headers,
    /** the wait applied, seconds (Preference-Applied) */
    readonly wait: number,
    /** its slot in the process's shares (AddressShares.take) */
    readonly share: number,
  ) {}

  /** the client went away (Reply.holder) */
  clientLeft(): void {
    this.group.owner.left(this);
  }
}
