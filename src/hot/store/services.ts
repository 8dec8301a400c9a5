// Service writes and reads against PostgreSQL. Each write runs in one transaction that
// also inserts an outbox row; the caller acknowledges only after COMMIT returned.
import { randomBase62 } from '../domain/tokens.js';
import { appendChanges, deletedData, type ChangeInput, type ChangeType } from '../changes/events.js';
import { ApiError } from '../domain/errors.js';
import { serializeService, type ServiceRecord } from '../domain/service.js';
import type { ServiceChange, ServiceInput } from '../domain/validation.js';
import { query, withTx, type Client, type Pool } from './pool.js';

/** opaque, URL-safe service id: 16 base62 chars (~95 random bits) */
export function newServiceId(): string {
  return randomBase62(16);
}

export interface WriteResult {
  id: string;
  ns: string;
  rev: number;
}

async function outbox(c: Client, ns: string, id: string): Promise<number> {
  const r = await c.query<{ id: string }>('INSERT INTO outbox (ns, service_id) VALUES ($1, $2) RETURNING id', [ns, id]);
  return Number(r.rows[0]!.id);
}

/** The change event of a write, with the service as it stands inside the transaction. */
async function changeOf(c: Client, ns: string, id: string, type: ChangeType): Promise<ChangeInput> {
  const r = await c.query<Row>(SELECT_STATE + ' WHERE s.id = $1', [id]);
  return { ns, serviceId: id, type, data: r.rows[0] ? serializeService(toRecord(r.rows[0])) : deletedData(id) };
}

async function writeDetails(c: Client, id: string, s: Partial<ServiceInput>): Promise<void> {
  if (s.capabilities) {
    await c.query('DELETE FROM service_capabilities WHERE service_id = $1', [id]);
    await c.query(
      'INSERT INTO service_capabilities (service_id, capability, ord) SELECT $1, c, o FROM unnest($2::text[]) WITH ORDINALITY AS t(c, o)',
      [id, s.capabilities],
    );
  }
  if (s.properties) {
    await c.query('DELETE FROM service_properties WHERE service_id = $1', [id]);
    const keys = Object.keys(s.properties);
    if (keys.length) {
      await c.query('INSERT INTO service_properties (service_id, key, value) SELECT $1, k, v FROM unnest($2::text[], $3::text[]) AS t(k, v)', [
        id,
        keys,
        keys.map((k) => s.properties![k]),
      ]);
    }
  }
  if (s.iot !== undefined) {
    if (s.iot === null) await c.query('DELETE FROM iot_profiles WHERE service_id = $1', [id]);
    else {
      await c.query(
        `INSERT INTO iot_profiles (service_id, device_classes, protocols) VALUES ($1, $2, $3)
         ON CONFLICT (service_id) DO UPDATE SET device_classes = EXCLUDED.device_classes, protocols = EXCLUDED.protocols`,
        [id, s.iot.deviceClasses, s.iot.protocols],
      );
    }
  }
}

export async function createService(pool: Pool, ns: string, s: ServiceInput, id = newServiceId()): Promise<WriteResult> {
  return withTx(pool, async (c) => {
    await c.query(
      `INSERT INTO services (id, ns, endpoint, deprecated, deprecated_at, locked, sunset_date)
       VALUES ($1, $2, $3, $4, CASE WHEN $4 THEN now() END, $5, $6)`,
      [id, ns, s.endpoint, s.deprecated, s.locked, s.sunsetDate],
    );
    await writeDetails(c, id, s);
    const rev = await outbox(c, ns, id);
    await appendChanges(c, [await changeOf(c, ns, id, 'service.created')]); // last: see changes/events.ts
    return { id, ns, rev };
  });
}

/** Lock the row and check it is in `ns`; a service of another namespace is "not found". */
async function lockService(c: Client, ns: string, id: string): Promise<{ locked: boolean; deprecated: boolean }> {
  const r = await c.query<{ locked: boolean; deprecated: boolean }>('SELECT locked, deprecated FROM services WHERE id = $1 AND ns = $2 FOR UPDATE', [id, ns]);
  if (!r.rows[0]) throw new ApiError('NOT_FOUND', 'no such service');
  return r.rows[0];
}

export async function patchService(pool: Pool, ns: string, id: string, ch: ServiceChange): Promise<WriteResult> {
  return withTx(pool, async (c) => {
    // `locked` is a flag published to clients (with deprecated and sunset_date), not a
    // write lock: the contract lets PATCH change locked, properties and iot together
    // (see docs/decisions.md)
    const cur = await lockService(c, ns, id);
    await c.query(
      `UPDATE services SET
         endpoint = COALESCE($2, endpoint),
         deprecated_at = CASE WHEN $3::boolean IS NULL THEN deprecated_at
                              WHEN $3 AND NOT deprecated THEN now()
                              WHEN $3 THEN deprecated_at ELSE NULL END,
         deprecated = COALESCE($3, deprecated),
         locked = COALESCE($4, locked),
         sunset_date = CASE WHEN $5 THEN $6::date ELSE sunset_date END,
         updated_at = now()
       WHERE id = $1`,
      [id, ch.endpoint ?? null, ch.deprecated ?? null, ch.locked ?? null, ch.sunsetDate !== undefined, ch.sunsetDate ?? null],
    );
    await writeDetails(c, id, ch);
    const rev = await outbox(c, ns, id);
    // a patch that turns deprecation on is the event fleets care most about: its own type
    const type: ChangeType = ch.deprecated === true && !cur.deprecated ? 'service.deprecated' : 'service.updated';
    await appendChanges(c, [await changeOf(c, ns, id, type)]);
    return { id, ns, rev };
  });
}

/** Returns the outbox entries to apply: the deleted service and every service listing it. */
export async function deleteService(pool: Pool, ns: string, id: string): Promise<WriteResult[]> {
  return withTx(pool, async (c) => {
    await lockService(c, ns, id);
    // services that list it as a candidate change their replacements: re-index them too
    const by = await c.query<{ service_id: string }>('SELECT service_id FROM replacements WHERE candidate_id = $1', [id]);
    await c.query('DELETE FROM services WHERE id = $1', [id]);
    const out: WriteResult[] = [{ id, ns, rev: await outbox(c, ns, id) }];
    for (const r of by.rows) out.push({ id: r.service_id, ns, rev: await outbox(c, ns, r.service_id) });
    // the listing services' objects do not show candidates, so only the deletion is an event
    await appendChanges(c, [{ ns, serviceId: id, type: 'service.deleted', data: deletedData(id) }]);
    return out;
  });
}

export async function addReplacement(pool: Pool, ns: string, id: string, candidateId: string): Promise<WriteResult> {
  return withTx(pool, async (c) => {
    await lockService(c, ns, id);
    if (candidateId === id) throw new ApiError('VALIDATION_FAILED', 'a service cannot replace itself');
    const cand = await c.query('SELECT 1 FROM services WHERE id = $1 AND ns = $2', [candidateId, ns]);
    if (!cand.rowCount) throw new ApiError('VALIDATION_FAILED', 'serviceId does not name a service in this namespace');
    const ins = await c.query(
      `INSERT INTO replacements (service_id, candidate_id, rank)
       SELECT $1, $2, COALESCE(MAX(rank), 0) + 1 FROM replacements WHERE service_id = $1
       ON CONFLICT DO NOTHING`,
      [id, candidateId],
    );
    if (!ins.rowCount) throw new ApiError('CONFLICT', 'that service is already a replacement candidate');
    const rev = await outbox(c, ns, id);
    await appendChanges(c, [await changeOf(c, ns, id, 'service.updated')]);
    return { id, ns, rev };
  });
}

interface Row {
  id: string;
  ns: string;
  seq: string;
  endpoint: string;
  deprecated: boolean;
  dep_at: string | null;
  locked: boolean;
  sunset: string | null;
  caps: string[] | null;
  props: Record<string, string> | null;
  dcs: string[] | null;
  protos: string[] | null;
  repl: string[] | null;
}

const SELECT_STATE = `
  SELECT s.id, s.ns, s.seq, s.endpoint, s.deprecated, floor(extract(epoch FROM s.deprecated_at))::bigint AS dep_at,
         s.locked, to_char(s.sunset_date, 'YYYY-MM-DD') AS sunset,
         (SELECT array_agg(capability ORDER BY ord) FROM service_capabilities WHERE service_id = s.id) AS caps,
         (SELECT json_object_agg(key, value) FROM service_properties WHERE service_id = s.id) AS props,
         i.device_classes AS dcs, i.protocols AS protos,
         (SELECT array_agg(c.seq ORDER BY r.rank) FROM replacements r JOIN services c ON c.id = r.candidate_id
           WHERE r.service_id = s.id) AS repl
    FROM services s LEFT JOIN iot_profiles i ON i.service_id = s.id`;

function toRecord(r: Row): ServiceRecord {
  return {
    id: r.id,
    ns: r.ns,
    seq: Number(r.seq),
    endpoint: r.endpoint,
    capabilities: r.caps ?? [],
    properties: r.props ?? {},
    iot: r.dcs && r.protos ? { deviceClasses: r.dcs, protocols: r.protos } : null,
    deprecated: r.deprecated,
    deprecatedAt: r.dep_at === null ? null : Number(r.dep_at),
    locked: r.locked,
    sunsetDate: r.sunset,
    replacementSeqs: (r.repl ?? []).map(Number),
  };
}

export async function loadServices(pool: Pool, ids: string[]): Promise<Map<string, ServiceRecord>> {
  const r = await query<Row>(pool, SELECT_STATE + ' WHERE s.id = ANY($1)', [ids]);
  return new Map(r.rows.map((row) => [row.id, toRecord(row)]));
}

export async function loadService(pool: Pool, ns: string, id: string): Promise<ServiceRecord | null> {
  const r = await query<Row>(pool, SELECT_STATE + ' WHERE s.id = $1 AND s.ns = $2', [id, ns]);
  return r.rows[0] ? toRecord(r.rows[0]) : null;
}

/** Services matching `where` (SQL over alias s, e.g. "WHERE s.id = ANY($1)"): bulk import and export. */
export async function loadStatesWhere(c: Client | Pool, where: string, params: unknown[]): Promise<ServiceRecord[]> {
  const r = await c.query<Row>(SELECT_STATE + ' ' + where, params);
  return r.rows.map(toRecord);
}

/** Page through every service in seq order (rebuild). */
export async function loadServicePage(c: Client | Pool, afterSeq: number, n: number): Promise<ServiceRecord[]> {
  const r = await c.query<Row>(SELECT_STATE + ' WHERE s.seq > $1 ORDER BY s.seq LIMIT $2', [afterSeq, n]);
  return r.rows.map(toRecord);
}

/** Replacement candidates of a service, ranked (read path of the sandbox routes). */
export async function loadReplacements(pool: Pool, ns: string, id: string): Promise<ServiceRecord[] | null> {
  const own = await query(pool, 'SELECT 1 FROM services WHERE id = $1 AND ns = $2', [id, ns]);
  if (!own.rowCount) return null;
  const r = await query<Row>(pool, SELECT_STATE + ' JOIN replacements rp ON rp.candidate_id = s.id WHERE rp.service_id = $1 ORDER BY rp.rank', [id]);
  return r.rows.map(toRecord);
}
