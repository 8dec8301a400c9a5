// The import's COPY statements (bulk.ts): new services, the details of every service a chunk
// writes, and its change events, each table in one COPY in the chunk's transaction; its outbox
// rows; the rows they are made of (BulkRow: a parsed line).
import { CHANGE_LOCK_ID, type ChangeInput, type IndexText } from '../registry/index.js';
import type { ServiceRecord } from '../domain/service.js';
import type { ServiceInput } from '../domain/validation.js';
import { copyInto, CopyRows } from '../pg/copy.js';
import type { Client } from '../pg/pool.js';

export interface BulkRow {
  id: string;
  input: ServiceInput;
  /** candidate ids, ranked; undefined = leave the stored candidates alone */
  replacements?: string[];
  /** a line with `ttl` (input.ttl): the heartbeat token it gets if the service holds none yet */
  leaseToken?: { token: string; hash: Buffer };
}

/** A row the chunk writes: its index text, the lease it leaves, and how it is deprecated. */
export interface Written {
  row: BulkRow;
  text: IndexText;
  lease: Pick<ServiceRecord, 'health' | 'lease'> & { issued: boolean };
  /** a new service deprecated from the start: the transaction's now() as text */
  depNow: string | null;
  /** a stored service this write deprecates (its change event says so) */
  deprecatedNow: boolean;
}

const SERVICE_COLUMNS = [
  'id', 'ns', 'endpoint', 'deprecated', 'deprecated_at', 'locked', 'sunset_date', 'ttl', 'deregister_after',
  'health_status', 'critical_since', 'hb_token_hash', 'idx_doc', 'idx_members', 'idx_hdr',
];

/**
 * New services, seq and version drawn by the columns' defaults. A version drawn before
 * the insert could wait on a concurrent deletion of the same id (whose tombstone then
 * holds a later one) is drawn again for ids with a tombstone, now that the row is ours:
 * the state must outrank its own tombstone. An id committed since the chunk's read fails
 * the COPY (services_pkey): the chunk runs again (bulk.ts).
 */
export async function copyServices(c: Client, ns: string, ws: Written[]): Promise<void> {
  if (!ws.length) return;
  const rows = new CopyRows();
  for (const w of ws) {
    const s = w.row.input;
    const l = w.lease;
    rows.add([
      w.row.id, ns, s.endpoint, s.deprecated, w.depNow, s.locked, s.sunsetDate, l.health?.ttl ?? null, l.lease?.deregisterAfter ?? null,
      l.health?.status ?? 'unknown', l.lease?.criticalSince ?? null, l.lease?.tokenHash ? '\\x' + l.lease.tokenHash : null, w.text.doc, w.text.members, w.text.hdr,
    ]);
  }
  await copyInto(c, 'services', SERVICE_COLUMNS, rows);
  await c.query(
    `UPDATE services s SET version = nextval('service_version_seq')
       FROM service_tombstones t WHERE t.id = ANY($1) AND s.id = t.id`,
    [ws.map((w) => w.row.id)],
  );
}

/** Capabilities, properties and IoT profiles of the services written; `existed`: ids whose old ones go first. */
export async function copyDetails(c: Client, ws: Written[], existed: string[]): Promise<void> {
  if (existed.length) {
    await c.query('DELETE FROM service_capabilities WHERE service_id = ANY($1)', [existed]);
    await c.query('DELETE FROM service_properties WHERE service_id = ANY($1)', [existed]);
    await c.query('DELETE FROM iot_profiles WHERE service_id = ANY($1)', [existed]);
  }
  const caps = new CopyRows();
  const props = new CopyRows();
  const iot = new CopyRows();
  for (const { row: r } of ws) {
    const caps1 = r.input.capabilities;
    for (let i = 0; i < caps1.length; i++) caps.add([r.id, caps1[i]!, i + 1]);
    for (const k in r.input.properties) props.add([r.id, k, r.input.properties[k]!]);
    if (r.input.iot) iot.add([r.id, r.input.iot.deviceClasses, r.input.iot.protocols]);
  }
  await copyInto(c, 'service_capabilities', ['service_id', 'capability', 'ord'], caps);
  await copyInto(c, 'service_properties', ['service_id', 'key', 'value'], props);
  await copyInto(c, 'iot_profiles', ['service_id', 'device_classes', 'protocols'], iot);
}

/**
 * appendChanges() by COPY: the change feed's lock first (registry/events.ts), then the
 * events, ids drawn by the column's default under it. The last statement of the chunk.
 */
export async function copyChanges(c: Client, events: ChangeInput[]): Promise<void> {
  await c.query('SELECT pg_advisory_xact_lock($1)', [CHANGE_LOCK_ID]);
  const rows = new CopyRows();
  for (const e of events) rows.add([e.ns, e.serviceId, e.type, e.data]);
  await copyInto(c, 'change_events', ['ns', 'service_id', 'type', 'data'], rows);
}

/**
 * The chunk's outbox rows: one for every index-only write (a rebuild covers them: service_ids,
 * migration 0017), one each for the rest (a lease already in Redis that changed).
 */
export async function insertOutbox(c: Client, ns: string, indexOnly: string[], others: string[] = []): Promise<void> {
  if (indexOnly.length) await c.query("INSERT INTO outbox (ns, service_id, service_ids, index_only) VALUES ($1, '', $2, true)", [ns, indexOnly]);
  if (others.length) await c.query('INSERT INTO outbox (ns, service_id) SELECT $1, unnest($2::text[])', [ns, others]);
}
