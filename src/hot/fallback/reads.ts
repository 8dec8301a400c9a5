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
import { createPool, type Pool } from '../pg/pool.js';
import { Gate, type GateStats } from './gate.js';
import { countFallbackRead } from './metrics.js';
import type { CatalogRead } from '../redis/replies.js';
import { CATALOG_ALL, CATALOG_SETS, memberKeys, PAGE_ALL, PAGE_SETS, PAGE_SETS_FEW, PAGE_SETS_WITHIN, REPLACEMENTS, SERVICE } from './statements.js';

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

/** How a page of sets is read (page()): seqs walked first, then matches read through the GIN index. */
export interface PageBounds {
  /** seqs past the cursor the first statement walks at most */
  walk: number;
  /** matches past those the GIN index is read for; more: the planner's walk, as before */
  few: number;
}

export const PAGE_BOUNDS: PageBounds = { walk: 4096, few: 1000 };

/** the planner settings of fewMembers(): the GIN index or nothing (and one process a statement) */
const GIN_ONLY = 'BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; SET LOCAL max_parallel_workers_per_gather = 0';

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

  get stats(): GateStats {
    return this.gate.stats;
  }

  /**
   * Rows of one statement inside the bound, as arrays of text. PostgreSQL away (or the
   * statement timed out) → the outage's 503; the gate full → FALLBACK_BUSY.
   */
  private async rows(text: string, values: unknown[], ginOnly = false): Promise<string[][]> {
    try {
      const r = await this.gate.run(() => (ginOnly ? this.ginOnly(text, values) : this.pool.query<string[]>({ text, values, rowMode: 'array' })));
      countFallbackRead('answered');
      return r.rows;
    } catch (err) {
      if (err instanceof ApiError) {
        countFallbackRead('refused');
        throw err;
      }
      countFallbackRead('failed');
      throw outageError(err) ?? err;
    }
  }

  /** One statement in a transaction of its own whose planner reads only through bitmaps (GIN_ONLY). */
  private async ginOnly(text: string, values: unknown[]): Promise<{ rows: string[][] }> {
    const c = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await c.query(GIN_ONLY);
      const r = await c.query<string[]>({ text, values, rowMode: 'array' });
      await c.query('COMMIT');
      return r;
    } catch (err) {
      broken = err as Error; // a connection left mid-transaction is not given back
      throw err;
    } finally {
      c.release(broken);
    }
  }

  /**
   * One page of a search of `ns`: the services after seq `after` ("" first) holding every set
   * `f` names. A walk of the next `bounds.walk` seqs first; when that finds few and the
   * namespace goes on, the matches past it through the GIN index when they are fewer than
   * `bounds.few` (a key no service has, a rare one); else the planner's walk. The planner
   * alone walked the whole namespace for keys it had no statistics of.
   */
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

  /** Up to `n` rows of the services after seq `from` holding every key (page()). */
  private async setsPage(ns: string, keys: string[], from: number, n: number): Promise<string[][]> {
    const past = from + this.bounds.walk;
    const walked = await this.rows(PAGE_SETS_WITHIN, [ns, from, n, keys, past]);
    const goesOn = walked.length > 0 && walked[walked.length - 1]![0] === '';
    if (goesOn) walked.pop();
    if (walked.length >= n || !goesOn) return walked;
    // a sparse walk: the matches past it may be few enough to read through the GIN index (a
    // denser one goes on walking: the index would give every match past it, not the next ones)
    if (walked.length * 8 < n) {
      const few = await this.rows(PAGE_SETS_FEW, [ns, past, keys, this.bounds.few, n - walked.length], true);
      if (Number(few[0]![1]) < this.bounds.few) return walked.concat(few.slice(1));
    }
    return walked.concat(await this.rows(PAGE_SETS, [ns, past, n - walked.length, keys]));
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
  const pool = createPool(cfg.databaseUrl, share(cfg.fallbackConnections), { statementMs: cfg.fallbackStatementMs, queryMs: cfg.fallbackStatementMs + 1000 });
  return new PgReads(pool, share(cfg.fallbackMaxQueries));
}
