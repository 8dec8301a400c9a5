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
import { CATALOG_ALL, CATALOG_SETS, memberKeys, PAGE_ALL, PAGE_SETS, REPLACEMENTS, SERVICE } from './statements.js';

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

export class PgReads {
  private readonly gate: Gate;

  constructor(
    /** the fallback's own pool: its size is the bound on connections (compose.ts) */
    private readonly pool: Pool,
    /** queries in flight per thread, running or waiting for a connection; more are refused */
    maxQueries: number,
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
  private async rows(text: string, values: unknown[]): Promise<string[][]> {
    try {
      const r = await this.gate.run(() => this.pool.query<string[]>({ text, values, rowMode: 'array' }));
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

  /** One page of a search of `ns`: the services after seq `after` ("" first) holding every set `f` names. */
  async page(ns: string, f: DimensionFilters, after: string, limit: number): Promise<FallbackPage> {
    const keys = memberKeys(ns, f);
    const from = after === '' ? -1 : Number(after);
    const rows = await this.rows(keys.length ? PAGE_SETS : PAGE_ALL, keys.length ? [ns, from, limit + 1, keys] : [ns, from, limit + 1]);
    const more = rows.length > limit;
    if (more) rows.length = limit;
    return {
      seqs: rows.map((r) => r[0]!),
      docs: rows.map((r) => Buffer.from(r[1]!)),
      more,
      last: rows.length ? rows[rows.length - 1]![0]! : '',
    };
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
