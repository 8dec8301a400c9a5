// Service state reads against PostgreSQL (the index's view of a service: service_state,
// migration 0008), the index text stored with it, and the version draw of multi-statement
// writes (bulk.ts, leases.ts). One-round-trip writes: writes.ts, patches.ts,
// write-functions.ts.
import { randomBase62 } from '../domain/tokens.js';
import { documentMembers } from '../domain/dimensions.js';
import { headerData, serviceObject, type HealthStatus, type ServiceRecord } from '../domain/service.js';
import { query, type Client, type Pool } from '../pg/pool.js';

/** opaque, URL-safe service id: 16 base62 chars (~95 random bits) */
export function newServiceId(): string {
  return randomBase62(16);
}

/** A committed write: the service, and the outbox row that asks for its index update. */
export interface WriteResult {
  id: string;
  ns: string;
  /** outbox row id (not a revision: the revision is read with the state, see Projector) */
  row: number;
}

/**
 * Draw new versions for services whose document or index sets this transaction changes.
 * Call it only while holding their row locks: a writer that locks a row after this one
 * committed draws later, so versions of one service grow in commit order (the revision
 * rule of redis/README.md).
 */
export async function bumpVersions(c: Client, ids: string[]): Promise<void> {
  if (ids.length) await c.query("UPDATE services SET version = nextval('service_version_seq') WHERE id = ANY($1)", [ids]);
}

/**
 * The strings the write path sends to Redis for a state (domain/service.ts: serializeService
 * and headerData, domain/keys.ts: memberSuffixes joined by "\n"), stored with that state in services.idx_doc,
 * idx_members and idx_hdr so that a rebuild reads them instead of building them (migration
 * 0004). The members' order carries no meaning (they name sets).
 */
export interface IndexText {
  doc: string;
  members: string;
  hdr: string;
}

export function indexText(s: ServiceRecord): IndexText {
  // serializeService() and memberSuffixes() over one service object
  const o = serviceObject(s);
  return { doc: JSON.stringify(o), members: documentMembers(o).join('\n'), hdr: headerData(s) };
}

/**
 * bumpVersions() for services whose state this transaction wrote, storing each one's index
 * text (indexText() of the state as committed) in the same row update.
 */
export async function bumpVersionsWithText(c: Client, rows: { id: string; text: IndexText }[]): Promise<void> {
  if (!rows.length) return;
  await c.query(
    `UPDATE services s SET version = nextval('service_version_seq'), idx_doc = t.d, idx_members = t.m, idx_hdr = t.h
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS t(id, d, m, h) WHERE s.id = t.id`,
    [rows.map((r) => r.id), rows.map((r) => r.text.doc), rows.map((r) => r.text.members), rows.map((r) => r.text.hdr)],
  );
}

/** A service_state row (migration 0008): pg's text for bigints, or JSON's numbers. */
export interface StateRow {
  id: string;
  ns: string;
  seq: string | number;
  endpoint: string;
  deprecated: boolean;
  dep_at: string | number | null;
  locked: boolean;
  sunset: string | null;
  caps: string[] | null;
  props: Record<string, string> | null;
  dcs: string[] | null;
  protos: string[] | null;
  repl: (string | number)[] | null;
  version: string | number;
  ttl: number | null;
  dereg: number | null;
  hs: HealthStatus;
  crit: string | number | null;
  tok: string | null;
}

// the view of migration 0008: the server-side write functions return the same rows
const SELECT_STATE = `
  SELECT s.id, s.ns, s.seq, s.version, s.endpoint, s.deprecated, s.dep_at, s.locked, s.sunset, s.caps, s.props,
         s.dcs, s.protos, s.repl, s.ttl, s.dereg, s.hs, s.crit, s.tok
    FROM service_state s`;

/** A service_state row as a record (also the write functions' JSON rows: write-functions.ts). */
export function stateRecord(r: StateRow): ServiceRecord {
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
    version: Number(r.version),
    ...(r.ttl === null
      ? {}
      : { health: { status: r.hs, ttl: r.ttl }, lease: { tokenHash: r.tok ?? '', deregisterAfter: r.dereg, criticalSince: r.crit === null ? null : Number(r.crit) } }),
  };
}

/** What a sync applies to the index for one id: the state, or its deletion, and the revision of that. */
export interface IndexState {
  ns: string;
  version: number;
  /** null: deleted (the version is its tombstone's) */
  record: ServiceRecord | null;
}

/**
 * The committed state of each id with the version it was committed at, or its tombstone
 * when it is gone — one statement, so one snapshot: the revision always describes exactly
 * the state it comes with. An id with neither is absent from the map.
 */
export async function loadIndexStates(pool: Pool, ids: string[]): Promise<Map<string, IndexState>> {
  const r = await query<StateRow & { tomb: string | null }>(
    pool,
    `WITH live AS (${SELECT_STATE} WHERE s.id = ANY($1))
     SELECT *, NULL::bigint AS tomb FROM live
     UNION ALL
     SELECT t.id, t.ns, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, t.version
       FROM service_tombstones t WHERE t.id = ANY($1) AND NOT EXISTS (SELECT 1 FROM live WHERE live.id = t.id)`,
    [ids],
  );
  const out = new Map<string, IndexState>();
  for (const row of r.rows) {
    out.set(row.id, row.tomb === null ? { ns: row.ns, version: Number(row.version), record: stateRecord(row) } : { ns: row.ns, version: Number(row.tomb), record: null });
  }
  return out;
}

export async function loadService(pool: Pool, ns: string, id: string): Promise<ServiceRecord | null> {
  // named: the first of a patch's two round trips (patches.ts)
  const r = await query<StateRow>(pool, { name: 'load-service', text: SELECT_STATE + ' WHERE s.id = $1 AND s.ns = $2' }, [id, ns]);
  return r.rows[0] ? stateRecord(r.rows[0]) : null;
}

/** Services matching `where` (SQL over alias s, e.g. "WHERE s.id = ANY($1)"): bulk import and export. */
export async function loadStatesWhere(c: Client | Pool, where: string, params: unknown[]): Promise<ServiceRecord[]> {
  const r = await c.query<StateRow>(SELECT_STATE + ' ' + where, params);
  return r.rows.map(stateRecord);
}

/** Replacement candidates of a service, ranked (read path of the sandbox routes). */
export async function loadReplacements(pool: Pool, ns: string, id: string): Promise<ServiceRecord[] | null> {
  const own = await query(pool, 'SELECT 1 FROM services WHERE id = $1 AND ns = $2', [id, ns]);
  if (!own.rowCount) return null;
  const r = await query<StateRow>(pool, SELECT_STATE + ' JOIN replacements rp ON rp.candidate_id = s.id WHERE rp.service_id = $1 ORDER BY rp.rank', [id]);
  return r.rows.map(stateRecord);
}
