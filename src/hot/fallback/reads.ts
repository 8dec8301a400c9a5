// The fallback source: discovery reads answered from PostgreSQL while the Redis index cannot
// answer them (Redis unreachable, the index missing or being rebuilt). It returns what the
// index returns — the stored documents of a page in seq order with its cursor, one service's
// document and header data, a replacement list's body and ETag — from the same stored text
// the index is built from, so a page joined from it has the index's bytes and ETag
// (search/ joins and tags it as it does Redis's). Bounded: its own pool of a fixed number of
// connections, a statement timeout, and a gate that refuses (503) rather than queues.
import { createHash } from 'node:crypto';
import type { DimensionFilters } from '../domain/dimensions.js';
import { ApiError } from '../domain/errors.js';
import { outageError } from '../domain/outage.js';
import type { Config } from '../config.js';
import { createPool, type Client, type Pool } from '../pg/pool.js';
import { Gate, type GateStats } from './gate.js';
import { countFallbackRead } from './metrics.js';
import type { CatalogRead } from '../redis/replies.js';
import { CATALOG_ALL, CATALOG_SETS, memberKeys, PAGE_ALL, PAGE_SETS, PAGE_SETS_FEW, REPLACEMENTS, SERVICE } from './statements.js';

/** One page of a search, as the index's search returns it. */
export interface FallbackPage {
  seqs: string[];
  /** the stored documents, in seq order */
  docs: Buffer[];
  more: boolean;
  /** seq to continue after, "" when none */
  last: string;
}

/** One service, as the index's get-service returns it. */
export interface FallbackService {
  seq: string;
  doc: string;
  /** deprecation header data ("" when not deprecated) */
  hdr: string;
}

/** A replacement list as the shared cache's entry holds it (replacements-1.lua). */
export interface FallbackReplacements {
  body: string;
  /** `"<sha1 hex of the body>"`, as replacements-1.lua tags it */
  etag: string;
  hdr: string;
}

/** How a page of sets is read (page()). */
export interface PageBounds {
  /** matches read through the GIN index for a key the planner has no statistics of; more: the planner's plan */
  few: number;
  /** how long the keys the planner has statistics of are kept, ms */
  statsMs: number;
}

export const PAGE_BOUNDS: PageBounds = { few: 1000, statsMs: 60_000 };

/**
 * The fallback pool's connections: one process a statement, so that FALLBACK_PG_CONNECTIONS
 * bounds PostgreSQL's processes, not only its connections (parallel workers' start-up also
 * cost a walk more than they saved).
 */
export const FALLBACK_SETTINGS = ['max_parallel_workers_per_gather=0'];

/** The planner settings of the statement that reads a rare key's matches: the GIN index alone. */
const GIN_ONLY = 'BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off';

/** The keys the planner has statistics of (ANALYZE's most common elements of the GIN index's expression). */
const COMMON_KEYS = `
  SELECT unnest(most_common_elems::text::text[]) FROM pg_stats
   WHERE schemaname = current_schema() AND tablename = 'services_member_keys'`;

export class PgReads {
  private readonly gate: Gate;

  constructor(
    /** the fallback's own pool: its size is the bound on connections (compose.ts) */
    private readonly pool: Pool,
    /** queries in flight per thread, running or waiting for a connection; more are refused */
    maxQueries: number,
    private readonly bounds: PageBounds = PAGE_BOUNDS,
  ) {
    this.gate = new Gate(maxQueries);
  }

  /** commonKeys(): the keys, when they were read (ms), the read in flight */
  private common: { keys: Set<string>; at: number; reading: Promise<void> | null } = { keys: new Set(), at: -Infinity, reading: null };

  get stats(): GateStats {
    return this.gate.stats;
  }

  /**
   * Rows of one statement inside the bound, as arrays of text. PostgreSQL away (or the
   * statement timed out) → the outage's 503; the gate full → FALLBACK_BUSY.
   */
  private async rows(text: string, values: unknown[]): Promise<string[][]> {
    return (await this.bounded(() => this.pool.query<string[]>({ text, values, rowMode: 'array' }))).rows;
  }

  /** `f` inside the bound: PostgreSQL away or a statement timed out → the outage's 503; the gate full → FALLBACK_BUSY. */
  private async bounded<T>(f: () => Promise<T>): Promise<T> {
    try {
      const r = await this.gate.run(f);
      countFallbackRead('answered');
      return r;
    } catch (err) {
      if (err instanceof ApiError) {
        countFallbackRead('refused');
        throw err;
      }
      countFallbackRead('failed');
      throw outageError(err) ?? err;
    }
  }

  /** `f` in a transaction on a connection of its own (committed: it only reads). */
  private async inTx<T>(f: (c: Client) => Promise<T>): Promise<T> {
    const c = await this.pool.connect();
    let broken: Error | undefined;
    try {
      const out = await f(c);
      await c.query('COMMIT');
      return out;
    } catch (err) {
      broken = err as Error; // a connection left mid-transaction is not given back
      throw err;
    } finally {
      c.release(broken);
    }
  }

  /** One page of a search of `ns`: the services after seq `after` ("" first) holding every set `f` names. */
  async page(ns: string, f: DimensionFilters, after: string, limit: number): Promise<FallbackPage> {
    const keys = memberKeys(ns, f);
    const from = after === '' ? -1 : Number(after);
    const rows = keys.length ? await this.setsPage(ns, keys, from, limit + 1) : await this.rows(PAGE_ALL, [ns, from, limit + 1]);
    const more = rows.length > limit;
    if (more) rows.length = limit;
    return {
      seqs: rows.map((r) => r[0]!),
      docs: rows.map((r) => Buffer.from(r[1]!)),
      more,
      last: rows.length ? rows[rows.length - 1]![0]! : '',
    };
  }

  /**
   * Up to `n` rows of the services after seq `from` holding every key (page()). The planner
   * estimates a key outside its most common elements at 0.5 % (PostgreSQL's default for
   * `@>`) and, for a page, walks services_ns_seq: every row of the namespace for a key no
   * service has. Such a key's matches are read through the GIN index alone, when they are
   * fewer than `bounds.few`; keys it has statistics of, and more matches, get its plan.
   */
  private async setsPage(ns: string, keys: string[], from: number, n: number): Promise<string[][]> {
    const common = await this.commonKeys();
    if (!keys.every((k) => common.has(k))) {
      const few = await this.bounded(() =>
        this.inTx(async (c) => {
          await c.query(GIN_ONLY);
          return (await c.query<string[]>({ text: PAGE_SETS_FEW, values: [ns, from, keys, this.bounds.few, n], rowMode: 'array' })).rows;
        }),
      );
      if (Number(few[0]![1]) < this.bounds.few) return few.slice(1);
    }
    return this.rows(PAGE_SETS, [ns, from, n, keys]);
  }

  /**
   * The keys the planner has statistics of, read again after `bounds.statsMs`; a failed read
   * (the gate full, PostgreSQL away) keeps the last and is tried again after a second.
   */
  private async commonKeys(): Promise<Set<string>> {
    const c = this.common;
    if (performance.now() - c.at > this.bounds.statsMs) {
      c.reading ??= this.rows(COMMON_KEYS, [])
        .then(
          (r) => {
            c.keys = new Set(r.map((x) => x[0]!));
            c.at = performance.now();
          },
          () => void (c.at = performance.now() - this.bounds.statsMs + Math.min(1000, this.bounds.statsMs)),
        )
        .finally(() => (c.reading = null));
      await c.reading;
    }
    return c.keys;
  }

  /** One service of `ns`, or null. */
  async service(ns: string, id: string): Promise<FallbackService | null> {
    const r = (await this.rows(SERVICE, [ns, id]))[0];
    return r ? { seq: r[0]!, doc: r[1]!, hdr: r[2]! } : null;
  }

  /** The replacement list of a service of `ns` (body, ETag, its header data), or null. */
  async replacements(ns: string, id: string): Promise<FallbackReplacements | null> {
    const r = (await this.rows(REPLACEMENTS, [ns, id]))[0];
    if (!r) return null;
    const body = '[' + r[1]! + ']';
    return { body, etag: '"' + createHash('sha1').update(body).digest('hex') + '"', hdr: r[0]! };
  }

  /**
   * The Consul catalog's read, as catalog-1.lua gives it from the index: the members of
   * `capability` in `ns` (null: every service of it) in seq order with their revisions
   * (services.version), and the capability tombstones at the revisions a rebuild writes;
   * `{ tooMany }` when more than `max` are members.
   */
  async catalog(ns: string, capability: string | null, max: number): Promise<CatalogRead | { tooMany: string }> {
    const keys = capability === null ? [] : memberKeys(ns, { capabilities: [capability] });
    const rows = await this.rows(keys.length ? CATALOG_SETS : CATALOG_ALL, keys.length ? [ns, capability, max + 1, keys] : [ns, capability ?? '', max + 1]);
    const members = rows.filter((r) => r[0] === 'm').sort((a, b) => Number(a[1]) - Number(b[1]));
    if (members.length > max) return { tooMany: `more than ${max}` };
    const tombs = rows.filter((r) => r[0] === 't').map((r) => ({ capability: r[1]!, id: r[2]!, rev: r[3]! }));
    return { docs: members.map((r) => r[2]!), revs: members.map((r) => r[3]!), tombs };
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

/**
 * A serving thread's fallback, or null (FALLBACK_PG_CONNECTIONS=0): a pool of its own (so that
 * fallback reads never take the connections writes need) holding the thread's even share of
 * the process's connections, and its share of the statements in flight; at least one of each.
 */
export function threadFallback(cfg: Config): PgReads | null {
  if (cfg.fallbackConnections === 0) return null;
  const share = (n: number) => Math.max(1, Math.floor(n / Math.max(1, cfg.uwsThreads)));
  const pool = createPool(cfg.databaseUrl, share(cfg.fallbackConnections), { statementMs: cfg.fallbackStatementMs, queryMs: cfg.fallbackStatementMs + 1000 }, FALLBACK_SETTINGS);
  return new PgReads(pool, share(cfg.fallbackMaxQueries));
}
