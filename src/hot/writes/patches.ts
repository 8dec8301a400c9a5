// Patches at PostgreSQL speed (issue 22): any number of services changed by ONE statement
// (patchServices), each only if it is still at the version its state was read at; a patch
// of one service (patchService) is two round trips: read the state, then that statement,
// again while a concurrent write got in between. Registrations, the committed-write type and
// the detail rows both send: writes.ts.
import { CHANGE_LOCK_ID, type ChangeType, indexText, type IndexText, loadService } from '../registry/index.js';
import { ApiError } from '../domain/errors.js';
import type { HealthStatus, ServiceRecord } from '../domain/service.js';
import type { ServiceChange } from '../domain/validation.js';
import { query, type Pool } from '../pg/pool.js';
import { detailRows, type Committed } from './register.js';

// Patches in one statement (any number of services, each at most once): a row is updated
// only if it is still at the version its state was read at (else nothing happens for it and
// its caller reads again), details replaced by delete-the-others plus upsert (disjoint rows:
// one statement may not touch a row twice), the outbox rows and the change events (under the
// feed's lock) with them. The version is drawn by the UPDATE, which holds the row lock: the
// revision rule of redis/README.md. A batch's patches share it (group commit:
// group-commit.ts); RETURNING of an UPDATE … FROM may name the FROM list's columns, so each
// updated row carries its patch's flags on to the detail statements.
const PATCH_SERVICES = `
WITH t AS MATERIALIZED (
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::boolean[], $5::bigint[], $6::boolean[], $7::date[], $8::text[], $9::text[], $10::text[],
                       $11::boolean[], $12::boolean[], $13::boolean[], $14::text[], $15::text[], $16::text[],
                       $17::integer[], $18::integer[], $19::text[], $20::bigint[], $21::text[])
    WITH ORDINALITY AS t(id, ver, endpoint, dep, dep_at, locked, sunset, doc, mem, hdr, capch, propch, iotch, dcs, protos, type, ttl, dereg, hs, crit, tok, i)),
u AS (
  UPDATE services s SET endpoint = t.endpoint, deprecated = t.dep,
         deprecated_at = CASE WHEN t.dep_at IS NOT DISTINCT FROM floor(extract(epoch FROM s.deprecated_at))::bigint THEN s.deprecated_at ELSE to_timestamp(t.dep_at) END,
         locked = t.locked, sunset_date = t.sunset, updated_at = now(), version = nextval('service_version_seq'),
         idx_doc = t.doc, idx_members = t.mem, idx_hdr = t.hdr,
         ttl = t.ttl, deregister_after = t.dereg, health_status = t.hs, critical_since = t.crit, hb_token_hash = decode(NULLIF(t.tok, ''), 'hex')
    FROM t WHERE s.id = t.id AND s.version = t.ver
  RETURNING s.id, s.ns, s.seq, s.version, t.i, t.capch, t.propch, t.iotch, t.dcs, t.protos, t.type, t.doc),
nc AS (SELECT * FROM unnest($22::text[], $23::text[], $24::smallint[]) AS x(sid, cap, ord)),
cd AS (
  DELETE FROM service_capabilities c USING u WHERE u.capch AND c.service_id = u.id
     AND NOT EXISTS (SELECT 1 FROM nc WHERE nc.sid = c.service_id AND nc.cap = c.capability)),
ci AS (
  INSERT INTO service_capabilities (service_id, capability, ord)
  SELECT nc.sid, nc.cap, nc.ord FROM nc JOIN u ON u.id = nc.sid WHERE u.capch
  ON CONFLICT (service_id, capability) DO UPDATE SET ord = EXCLUDED.ord),
np AS (SELECT * FROM unnest($25::text[], $26::text[], $27::text[]) AS x(sid, k, v)),
pd AS (
  DELETE FROM service_properties p USING u WHERE u.propch AND p.service_id = u.id
     AND NOT EXISTS (SELECT 1 FROM np WHERE np.sid = p.service_id AND np.k = p.key)),
pi AS (
  INSERT INTO service_properties (service_id, key, value)
  SELECT np.sid, np.k, np.v FROM np JOIN u ON u.id = np.sid WHERE u.propch
  ON CONFLICT (service_id, key) DO UPDATE SET value = EXCLUDED.value),
idel AS (
  DELETE FROM iot_profiles i USING u WHERE u.iotch AND u.dcs IS NULL AND i.service_id = u.id),
iup AS (
  -- tokens are [a-z0-9._-]: a comma never occurs in one
  INSERT INTO iot_profiles (service_id, device_classes, protocols)
  SELECT u.id, string_to_array(u.dcs, ','), string_to_array(u.protos, ',') FROM u WHERE u.iotch AND u.dcs IS NOT NULL
  ON CONFLICT (service_id) DO UPDATE SET device_classes = EXCLUDED.device_classes, protocols = EXCLUDED.protocols),
ob AS (
  INSERT INTO outbox (ns, service_id) SELECT ns, id FROM u ORDER BY i RETURNING id, service_id),
ev AS (
  INSERT INTO change_events (id, ns, service_id, type, data)
  SELECT nextval('change_events_id_seq'), u.ns, u.id, u.type, u.doc FROM (SELECT pg_advisory_xact_lock($28)) l, u ORDER BY u.i)
SELECT u.id, u.seq::text, u.version::text, ob.id::text AS row FROM u JOIN ob ON ob.service_id = u.id`;

/** A patch made against the state read at `version`, ready to commit (preparePatch()). */
export interface PreparedPatch {
  id: string;
  ns: string;
  /** the version the state was read at: the row is updated only while it is still that */
  version: number;
  rec: ServiceRecord;
  text: IndexText;
  type: ChangeType;
  capsChanged: boolean;
  propsChanged: boolean;
  iotChanged: boolean;
  status: HealthStatus;
  tok: string;
  /** a heartbeat token was issued with it (a lease started on a service without a token) */
  issued: boolean;
}

/** The new state of `cur` after the change `ch` (the lease: "ttl": null drops it, a ttl starts one or changes it). */
export function preparePatch(cur: ServiceRecord, ch: ServiceChange, nowSec: number, tokenHash: Buffer | null): PreparedPatch {
  const ttl = ch.ttl !== undefined ? ch.ttl : (cur.health?.ttl ?? null);
  const dereg = ch.deregisterAfter !== undefined ? ch.deregisterAfter : (cur.lease?.deregisterAfter ?? null);
  const status: HealthStatus = ttl === null ? 'unknown' : cur.health && cur.health.status !== 'unknown' ? cur.health.status : 'passing';
  const oldTok = ttl === null ? '' : (cur.lease?.tokenHash ?? '');
  // a lease started on a service without a token issues `tokenHash`'s
  const issued = ttl !== null && !oldTok && !!tokenHash;
  const tok = issued ? tokenHash!.toString('hex') : oldTok;
  const crit = status === 'critical' ? (cur.lease?.criticalSince ?? null) : null;
  const lease = ttl === null ? {} : { health: { status, ttl }, lease: { tokenHash: tok, deregisterAfter: dereg, criticalSince: crit } };
  const deprecated = ch.deprecated ?? cur.deprecated;
  const rec: ServiceRecord = {
    ...cur,
    endpoint: ch.endpoint ?? cur.endpoint,
    capabilities: ch.capabilities ?? cur.capabilities,
    properties: ch.properties ?? cur.properties,
    iot: ch.iot !== undefined ? ch.iot : cur.iot,
    deprecated,
    // turning deprecation on stamps it now; off clears it; otherwise it stays
    deprecatedAt: !deprecated ? null : cur.deprecated ? cur.deprecatedAt : nowSec,
    locked: ch.locked ?? cur.locked,
    sunsetDate: ch.sunsetDate !== undefined ? ch.sunsetDate : cur.sunsetDate,
    health: undefined,
    lease: undefined,
    ...lease,
  };
  // no lease: no keys at all (as a state read from PostgreSQL has none)
  if (ttl === null) {
    delete rec.health;
    delete rec.lease;
  }
  return {
    id: cur.id,
    ns: cur.ns,
    version: cur.version!,
    rec,
    text: indexText(rec),
    // a patch that turns deprecation on is the event fleets care most about: its own type
    type: deprecated && !cur.deprecated ? 'service.deprecated' : 'service.updated',
    capsChanged: ch.capabilities !== undefined,
    propsChanged: ch.properties !== undefined,
    iotChanged: ch.iot !== undefined,
    status,
    tok,
    issued,
  };
}

/** A committed patch: as a registration's, and whether it issued a heartbeat token. */
export type CommittedPatch = Committed & { issued: boolean };

/**
 * Commit prepared patches of distinct services in one statement. Per patch, in order: the
 * committed write, or null when its service is no longer at the version it was read at
 * (another write committed since, or it was deleted): read it again.
 */
export async function patchServices(pool: Pool, items: PreparedPatch[]): Promise<(CommittedPatch | null)[]> {
  const d = detailRows();
  for (const p of items) {
    if (p.capsChanged) d.addCaps(p.id, p.rec.capabilities);
    if (p.propsChanged) d.addProps(p.id, p.rec.properties);
  }
  const col = <T>(f: (p: PreparedPatch) => T): T[] => items.map(f);
  const r = await query<{ id: string; seq: string; version: string; row: string }>(pool, { name: 'patch-services', text: PATCH_SERVICES }, [
    col((p) => p.id),
    col((p) => p.version),
    col((p) => p.rec.endpoint),
    col((p) => p.rec.deprecated),
    col((p) => p.rec.deprecatedAt),
    col((p) => p.rec.locked),
    col((p) => p.rec.sunsetDate),
    col((p) => p.text.doc),
    col((p) => p.text.members),
    col((p) => p.text.hdr),
    col((p) => p.capsChanged),
    col((p) => p.propsChanged),
    col((p) => p.iotChanged),
    col((p) => (p.rec.iot ? p.rec.iot.deviceClasses.join(',') : null)),
    col((p) => (p.rec.iot ? p.rec.iot.protocols.join(',') : null)),
    col((p) => p.type),
    col((p) => p.rec.health?.ttl ?? null),
    col((p) => p.rec.lease?.deregisterAfter ?? null),
    col((p) => p.status),
    col((p) => p.rec.lease?.criticalSince ?? null),
    col((p) => p.tok),
    d.capSid,
    d.caps,
    d.capOrd,
    d.propSid,
    d.propKey,
    d.propVal,
    CHANGE_LOCK_ID,
  ]);
  const byId = new Map(r.rows.map((x) => [x.id, x]));
  return items.map((p) => {
    const x = byId.get(p.id);
    if (!x) return null;
    const rec: ServiceRecord = { ...p.rec, version: Number(x.version) };
    return { row: Number(x.row), id: p.id, state: { ns: p.ns, version: rec.version!, record: rec }, doc: p.text.doc, hdr: p.text.hdr, text: p.text, issued: p.issued };
  });
}

/**
 * Change a service: two round trips (read the state with its version; one statement that
 * writes the new state only if the version is still that one), again while a concurrent
 * write got in between. 404 (ApiError) for a service not in `ns`. `commit`: how the
 * statement runs (the routes: with other patches, GroupCommitter.patch; default: alone).
 */
export async function patchService(
  pool: Pool,
  ns: string,
  id: string,
  ch: ServiceChange,
  nowSec = Math.floor(Date.now() / 1000),
  tokenHash: Buffer | null = null,
  commit: (p: PreparedPatch) => Promise<CommittedPatch | null> = async (p) => (await patchServices(pool, [p]))[0]!,
): Promise<CommittedPatch> {
  for (;;) {
    const cur = await loadService(pool, ns, id);
    if (!cur) throw new ApiError('SERVICE_NOT_FOUND');
    const c = await commit(preparePatch(cur, ch, nowSec, tokenHash));
    if (c) return c;
    // another write committed since the read: read it and apply this change to it
  }
}
