// Bulk writes for the command-line import: a chunk of services upserted by id in one
// transaction, with outbox rows and change events in the same transaction, as every single
// write has. The rows are locked and read once by id; new services then go in by COPY
// (services, their details, change events: bulk-copy.ts), changed ones by one set-based
// UPDATE. Upserts never cross namespaces: an id that belongs to another namespace is
// refused, not overwritten. A row identical to what is stored is skipped entirely (no write,
// no outbox row, no event), so re-importing a file changes nothing.
import { appendChanges, type ChangeInput, indexText, type IndexText, loadStatesWhere, sandboxesOf } from '../registry/index.js';
import { serializeService, type ServiceRecord } from '../domain/service.js';
import type { ServiceInput } from '../domain/validation.js';
import { retrying, withTx, type Client, type Pool } from '../pg/pool.js';
import { type BulkRow, copyChanges, copyDetails, copyServices, insertOutbox, type Written } from './bulk-copy.js';

export type { BulkRow };

export interface BulkResult {
  created: number;
  updated: number;
  unchanged: number;
  /** the ids of the services created */
  createdIds: string[];
  /** ids refused, with the reason */
  refused: { id: string; reason: string }[];
  /** outbox rows written that a rebuild covers (index-only: all but those of a lease already in Redis) */
  indexOnly: number;
  /** heartbeat tokens issued (leases started by the import): shown once, to the caller */
  tokens: { id: string; heartbeatToken: string }[];
}

type Lease = Pick<ServiceRecord, 'health' | 'lease'>;

/** What the chunk's read of a stored row gives: enough to compare and to keep its lease. */
interface Stored extends Lease {
  ns: string;
  deprecated: boolean;
  deprecatedAt: number | null;
  /** serializeService() of its state (services.idx_doc) */
  doc: string;
}

interface StoredRow {
  id: string;
  ns: string;
  deprecated: boolean;
  dep_at: string | null;
  ttl: number | null;
  dereg: number | null;
  hs: 'unknown' | 'passing' | 'critical';
  crit: string | null;
  tok: string | null;
  idx_doc: string | null;
}

/**
 * The lease a row leaves: a line with `ttl` sets ttl and deregisterAfter, keeps a stored
 * lease's status, critical time and token (a new lease: passing, the line's token); a line
 * without leaves the stored lease (or none) as it is.
 */
function leaseAfter(row: BulkRow, before: Lease | undefined): Lease & { issued: boolean } {
  const kept = before?.health && before.health.ttl !== null && before.lease?.tokenHash ? before : undefined;
  if (row.input.ttl == null || !row.leaseToken) return { health: before?.health, lease: before?.lease, issued: false };
  const status = kept ? kept.health!.status : 'passing';
  return {
    health: { status, ttl: row.input.ttl },
    lease: {
      tokenHash: kept ? kept.lease!.tokenHash : row.leaseToken.hash.toString('hex'),
      deregisterAfter: row.input.deregisterAfter ?? null,
      criticalSince: status === 'critical' ? kept!.lease!.criticalSince : null,
    },
    issued: !kept,
  };
}

/** The record of a parsed line; `state`: its deprecation time and lease, when it has them. */
export function recordOf(ns: string, id: string, s: ServiceInput, state: Pick<ServiceRecord, 'deprecatedAt' | 'health' | 'lease'> = { deprecatedAt: null }): ServiceRecord {
  return {
    id, ns, seq: 0, endpoint: s.endpoint, capabilities: s.capabilities, properties: s.properties, iot: s.iot, deprecated: s.deprecated,
    deprecatedAt: state.deprecatedAt, locked: s.locked, sunsetDate: s.sunsetDate, replacementSeqs: [], health: state.health, lease: state.lease,
  };
}

/** a COPY of services that met an id committed after the chunk read it: the chunk runs again */
const raceLost = (err: unknown) => (err as { code?: string; constraint?: string }).code === '23505' && (err as { constraint?: string }).constraint === 'services_pkey';

/** the GIN pending list an import's transaction lets grow: larger lists stalled the other
 * chunks while one merged (docs/decisions/import.md) */
const IMPORT_PENDING_LIST = '4MB';

/**
 * Merge the fallback reads' GIN pending list into the index now, so that the first write or
 * read after an import does not pay for what the import left there. Only the index's owner
 * may: anyone else leaves it to autovacuum and the next write that outgrows its limit.
 */
export async function mergePending(pool: Pool): Promise<void> {
  try {
    await pool.query(`SELECT gin_clean_pending_list('services_member_keys'::regclass)`);
  } catch (err) {
    if ((err as { code?: string }).code !== '42501') throw err;
  }
}

export function bulkUpsert(pool: Pool, ns: string, rows: BulkRow[]): Promise<BulkResult> {
  // the last line wins when a chunk names an id twice (one statement cannot write a row twice)
  const byId = new Map<string, BulkRow>();
  for (const r of rows) byId.set(r.id, r);
  return retrying(() => withTx(pool, (c) => upsertIn(c, ns, [...byId.values()])), raceLost);
}

/** Lock the chunk's stored rows (in id order) and read them in the same statement. */
async function lockStored(c: Client, ids: string[]): Promise<Map<string, Stored>> {
  const r = await c.query<StoredRow>(
    `SELECT id, ns, deprecated, floor(extract(epoch FROM deprecated_at))::bigint AS dep_at, ttl, deregister_after AS dereg,
            health_status AS hs, critical_since AS crit, encode(hb_token_hash, 'hex') AS tok, idx_doc
       FROM services WHERE id = ANY($1) ORDER BY id FOR UPDATE`,
    [ids],
  );
  const out = new Map<string, Stored>();
  // a row without stored index text (written by hand since the migrator filled them): its document from its state
  const bare = r.rows.filter((x) => x.idx_doc === null).map((x) => x.id);
  const docs = new Map(bare.length ? (await loadStatesWhere(c, 'WHERE s.id = ANY($1)', [bare])).map((s) => [s.id, serializeService(s)]) : []);
  for (const x of r.rows) {
    const lease: Lease =
      x.ttl === null ? {} : { health: { status: x.hs, ttl: x.ttl }, lease: { tokenHash: x.tok ?? '', deregisterAfter: x.dereg, criticalSince: x.crit === null ? null : Number(x.crit) } };
    out.set(x.id, { ns: x.ns, deprecated: x.deprecated, deprecatedAt: x.dep_at === null ? null : Number(x.dep_at), doc: x.idx_doc ?? docs.get(x.id) ?? '', ...lease });
  }
  return out;
}

async function upsertIn(c: Client, ns: string, rows: BulkRow[]): Promise<BulkResult> {
  const out: BulkResult = { created: 0, updated: 0, unchanged: 0, createdIds: [], refused: [], indexOnly: 0, tokens: [] };
  // the chunk's keys go to the GIN pending list, merged a few MB at a time rather than the
  // pools' 64 kB (migration 0015); mergePending() merges what the import leaves
  await c.query(`SET LOCAL gin_pending_list_limit = '${IMPORT_PENDING_LIST}'`);
  // the sandbox row whose count the new rows change (migration 0010) first: every writer
  // locks sandboxes before services (write-functions.ts)
  const sbs = sandboxesOf([ns]);
  if (sbs.length) await c.query('SELECT 1 FROM sandboxes WHERE uuid = ANY($1::uuid[]) ORDER BY uuid FOR NO KEY UPDATE', [sbs]);
  const stored = await lockStored(c, rows.map((r) => r.id));
  // the transaction's now(), as the deprecation time of services deprecated here (read only when one is)
  let now: { ts: string; sec: number } | undefined;
  const nowOf = async (): Promise<{ ts: string; sec: number }> => {
    if (!now) {
      const r = await c.query<{ ts: string; sec: string }>('SELECT now()::text AS ts, floor(extract(epoch FROM now()))::bigint AS sec');
      now = { ts: r.rows[0]!.ts, sec: Number(r.rows[0]!.sec) };
    }
    return now;
  };
  const created: Written[] = [];
  const updated: Written[] = [];
  for (const row of rows) {
    const before = stored.get(row.id);
    if (before && before.ns !== ns) {
      out.refused.push({ id: row.id, reason: 'the id belongs to another namespace' });
      continue;
    }
    const lease = leaseAfter(row, before);
    // a deprecation keeps its first time (the UPDATE below keeps the stored column alike)
    const depAt = row.input.deprecated ? (before?.deprecatedAt ?? (await nowOf()).sec) : null;
    const text: IndexText = indexText(recordOf(ns, row.id, row.input, { deprecatedAt: depAt, health: lease.health, lease: lease.lease }));
    // deregisterAfter is not in the document: compared apart
    if (before && before.doc === text.doc && (before.lease?.deregisterAfter ?? null) === (lease.lease?.deregisterAfter ?? null)) {
      out.unchanged++;
      continue;
    }
    (before ? updated : created).push({ row, text, lease, depNow: row.input.deprecated && !before ? (await nowOf()).ts : null, deprecatedNow: row.input.deprecated && !!before && !before.deprecated });
  }
  const written = [...updated, ...created];
  if (!written.length) return out;
  if (updated.length) await updateStored(c, ns, updated);
  await copyServices(c, ns, created);
  await copyDetails(c, written, updated.map((w) => w.row.id));
  // a lease that was already in Redis and changed here (ttl, deregisterAfter) is not
  // covered by the rebuild (it seeds only services that have no lease record): its outbox
  // row is not index-only, and stays for the projector's sweeper, which applies the lease
  // like any write's (migration 0014; reindex/covered.ts)
  const inRedis = new Set(updated.filter((w) => !!stored.get(w.row.id)!.lease && w.row.input.ttl != null).map((w) => w.row.id));
  const indexOnly = written.filter((w) => !inRedis.has(w.row.id)).map((w) => w.row.id);
  await insertOutbox(c, ns, indexOnly, [...inRedis]);
  out.indexOnly = indexOnly.length;
  for (const w of written) if (w.lease.issued) out.tokens.push({ id: w.row.id, heartbeatToken: w.row.leaseToken!.token });
  out.updated = updated.length;
  out.created = created.length;
  out.createdIds = created.map((w) => w.row.id);
  const events: ChangeInput[] = written.map((w) => ({ ns, serviceId: w.row.id, type: !stored.has(w.row.id) ? 'service.created' : w.deprecatedNow ? 'service.deprecated' : 'service.updated', data: w.text.doc }));
  // last statement: see registry/events.ts (a few events go as one INSERT, many by COPY)
  if (events.length > 50) await copyChanges(c, events);
  else await appendChanges(c, events);
  return out;
}

/**
 * The changed services that were there, in one statement, under the locks taken: a new
 * version drawn for each, its index text stored with it. The deprecation time is kept when
 * there is one, as the index text above assumed.
 */
async function updateStored(c: Client, ns: string, ws: Written[]): Promise<void> {
  const ins = ws.map((w) => w.row.input);
  await c.query(
    `UPDATE services s SET
       endpoint = t.ep, deprecated = t.dep, deprecated_at = CASE WHEN t.dep THEN COALESCE(s.deprecated_at, now()) END,
       locked = t.lck, sunset_date = t.sun::date, ttl = t.ttl, deregister_after = t.dereg, health_status = t.hs,
       critical_since = t.crit, hb_token_hash = decode(t.tok, 'hex'), updated_at = now(),
       version = nextval('service_version_seq'), idx_doc = t.d, idx_members = t.m, idx_hdr = t.h
       FROM unnest($2::text[], $3::text[], $4::boolean[], $5::boolean[], $6::text[], $7::integer[], $8::integer[], $9::text[], $10::bigint[], $11::text[], $12::text[], $13::text[], $14::text[])
         AS t(id, ep, dep, lck, sun, ttl, dereg, hs, crit, tok, d, m, h)
      WHERE s.id = t.id AND s.ns = $1`,
    [
      ns,
      ws.map((w) => w.row.id),
      ins.map((s) => s.endpoint),
      ins.map((s) => s.deprecated),
      ins.map((s) => s.locked),
      ins.map((s) => s.sunsetDate),
      ws.map((w) => w.lease.health?.ttl ?? null),
      ws.map((w) => w.lease.lease?.deregisterAfter ?? null),
      ws.map((w) => w.lease.health?.status ?? 'unknown'),
      ws.map((w) => w.lease.lease?.criticalSince ?? null),
      ws.map((w) => w.lease.lease?.tokenHash || null),
      ws.map((w) => w.text.doc),
      ws.map((w) => w.text.members),
      ws.map((w) => w.text.hdr),
    ],
  );
}

export { bulkReplacements, exportPage } from './bulk-lists.js';
