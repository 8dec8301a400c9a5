// `registry import` and `registry export`: production services as JSON Lines, streamed both
// ways (a batch in memory at a time). Import upserts batches of BATCH rows, each one
// transaction (writes/bulk.ts: COPY for new services), sets replacement candidates once
// every line is in, then rebuilds the Redis index once: far faster than applying 100,000
// single writes.
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { PRODUCTION } from '../../hot/domain/keys.js';
import type { Pool } from '../../hot/pg/pool.js';
import { bulkReplacements, bulkUpsert, exportPage, mergePending, type BulkRow } from '../../hot/writes/index.js';
import { exportLine, LineError, parseLine } from './jsonl.js';

export const BATCH = 2000;
/** chunks sent before the CLI waits for the oldest (PostgreSQL backends working at once):
 * with the GIN keys going to the pending list (migration 0015), two left the cores idle part
 * of the time; with them inserted one by one, three contended for the trees' pages
 * (docs/decisions/import.md) */
export const IN_FLIGHT = 3;

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation) */
const chunkRefused = (err: unknown) => /^2[23]/.test((err as { code?: string }).code ?? '');

export interface ImportSummary {
  lines: number;
  created: number;
  updated: number;
  unchanged: number;
  rejected: number;
  replacementsChanged: number;
  /** outbox rows written that a rebuild covers (writes/bulk.ts; reindex/covered.ts) */
  indexOnly: number;
  /** heartbeat tokens of the leases the import started (lines with `ttl`): shown once */
  tokens: { id: string; heartbeatToken: string }[];
}

export interface ImportOptions {
  batch?: number;
  /** one message per rejected line (to stderr) */
  warn?: (msg: string) => void;
  /** lines read so far */
  progress?: (lines: number) => void;
}

export async function importServices(pool: Pool, input: Readable, o: ImportOptions = {}): Promise<ImportSummary> {
  const size = o.batch ?? BATCH;
  const warn = o.warn ?? (() => undefined);
  const sum: ImportSummary = { lines: 0, created: 0, updated: 0, unchanged: 0, rejected: 0, replacementsChanged: 0, indexOnly: 0, tokens: [] };
  const lists = new Map<string, string[]>();
  let batch: BulkRow[] = [];
  let lineOf = new Map<string, number>();
  // Batches in flight (IN_FLIGHT): PostgreSQL works on some while the next is parsed and
  // sent. A batch that names an id of a batch in flight waits for it, so the later line still
  // wins.
  const inflight: { done: Promise<void>; ids: Map<string, number> }[] = [];
  const flush = async () => {
    if (!batch.length) return;
    const rows = batch;
    const lines = lineOf;
    batch = [];
    lineOf = new Map();
    for (const f of inflight) if (rows.some((r) => f.ids.has(r.id))) await f.done;
    const done = bulkUpsert(pool, PRODUCTION, rows).then(
      (r) => {
        sum.created += r.created;
        sum.updated += r.updated;
        sum.unchanged += r.unchanged;
        sum.indexOnly += r.indexOnly;
        sum.tokens.push(...r.tokens);
        for (const f of r.refused) {
          sum.rejected++;
          lists.delete(f.id);
          warn(`line ${lines.get(f.id) ?? '?'}: ${f.id}: ${f.reason}`);
        }
        // a service this import created holds no candidates: an empty list changes nothing
        for (const id of r.createdIds) if (lists.get(id)?.length === 0) lists.delete(id);
      },
      (err: unknown) => {
        // a row the database refuses (a data or constraint error validation let through)
        // fails its whole chunk, which wrote nothing: its lines are reported and counted
        // as rejected, and the import goes on. Anything else (the connection) ends it.
        if (!chunkRefused(err)) throw err;
        const at = [...lines.values()];
        sum.rejected += rows.length;
        for (const r of rows) lists.delete(r.id);
        warn(`lines ${Math.min(...at)}-${Math.max(...at)}: not written (${rows.length} services, one transaction): ${(err as Error).message}`);
      },
    );
    done.catch(() => undefined); // handled: it is awaited (and rethrows) below or at the next flush
    inflight.push({ done, ids: lines });
    while (inflight.length >= IN_FLIGHT) await inflight.shift()!.done; // errors surface in order
  };
  const rl = createInterface({ input, crlfDelay: Infinity });
  for await (const line of rl) {
    sum.lines++;
    let row: BulkRow | null;
    try {
      row = parseLine(line);
    } catch (e) {
      if (!(e instanceof LineError)) throw e;
      sum.rejected++;
      warn(`line ${sum.lines}: ${e.message}`);
      continue;
    }
    if (!row) continue;
    if (row.replacements) lists.set(row.id, row.replacements);
    lineOf.set(row.id, sum.lines);
    batch.push(row);
    if (batch.length >= size) {
      await flush();
      o.progress?.(sum.lines);
    }
  }
  await flush();
  while (inflight.length) await inflight.shift()!.done;
  o.progress?.(sum.lines);
  // candidates may name services further down the file: set them once all are in
  const ids = [...lists.keys()];
  for (let i = 0; i < ids.length; i += size) {
    const part = new Map(ids.slice(i, i + size).map((id) => [id, lists.get(id)!]));
    const r = await bulkReplacements(pool, PRODUCTION, part);
    sum.replacementsChanged += r.changed;
    sum.indexOnly += r.changed; // every replacement list's row is index-only
    for (const d of r.dropped) warn(`${d.id}: replacement candidate ${d.candidate} is not a production service; left out`);
  }
  if (sum.created + sum.updated) await mergePending(pool);
  return sum;
}

async function writeAll(out: Writable, chunk: string): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

/**
 * Every production service, in registration order, from one consistent snapshot
 * (REPEATABLE READ): a file that reflects one moment even while writes go on.
 */
export async function exportServices(pool: Pool, out: Writable, progress?: (n: number) => void): Promise<number> {
  const c = await pool.connect();
  let n = 0;
  try {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    let after = 0;
    for (;;) {
      const page = await exportPage(c, PRODUCTION, after, BATCH);
      if (!page.length) break;
      await writeAll(out, page.map((p) => exportLine(p.s, p.replacements)).join(''));
      after = page[page.length - 1]!.s.seq;
      n += page.length;
      progress?.(n);
    }
    await c.query('COMMIT');
  } finally {
    c.release();
  }
  return n;
}

