// Registrations at PostgreSQL speed (issue 22): any number of new services, of any
// namespaces, committed by ONE statement — one round trip, prepared once per connection.
// The statement inserts the services with their index text, their capabilities,
// properties and IoT profiles, one outbox row each and their change events (under the
// change feed's advisory lock, changes/events.ts), and returns what the index needs that
// only PostgreSQL draws: seq, version, outbox row. Everything else of the state is known
// before the write (a new service has no candidates), so the caller applies Redis from
// this and answers from it: nothing is read back (projector.ts, applyCommitted()).
// A single statement outside BEGIN/COMMIT is its own transaction: all rows or none.
// Patches (patchService, below) likewise: one read and one statement.
import { CHANGE_LOCK_ID, type ChangeType } from '../changes/events.js';
import { ApiError } from '../domain/errors.js';
import type { HealthStatus, ServiceRecord } from '../domain/service.js';
import type { ServiceChange, ServiceInput } from '../domain/validation.js';
import { query, type Pool } from './pool.js';
import { indexText, loadService, newServiceId, type IndexState, type IndexText } from './services.js';

/** One registration to commit: its namespace, its body and (import, tests) a chosen id. */
export interface NewService {
  ns: string;
  input: ServiceInput;
  id?: string;
  /** sha256 of the heartbeat token issued with a lease (input.ttl set) */
  tokenHash?: Buffer | null;
}

/** A committed registration: its outbox row and the state (with its revision) to index. */
export interface Committed {
  row: number;
  id: string;
  state: IndexState & { record: ServiceRecord };
  /** serializeService(record): the response body, the change event's data and idx_doc */
  doc: string;
  hdr: string;
  /** the state's index text (doc and hdr included): what Redis is sent, not made again */
  text: IndexText;
  /** a new service (registration): nothing of it can be in Redis yet, no lease to remove */
  created?: true;
}

// (column types spelled out: a prepared statement is planned once for every batch size)
const CREATE_SERVICES = `
WITH t AS MATERIALIZED (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::bigint[], $6::boolean[], $7::date[], $8::text[], $9::text[], $10::text[],
                       $21::integer[], $22::integer[], $23::text[])
    WITH ORDINALITY AS t(id, ns, endpoint, dep, dep_at, locked, sunset, doc, mem, hdr, ttl, dereg, tok, i)),
svc AS (
  -- the lease (migration 0006): a ttl makes it passing, with its token's hash
  INSERT INTO services (id, ns, endpoint, deprecated, deprecated_at, locked, sunset_date, idx_doc, idx_members, idx_hdr, ttl, deregister_after, health_status, hb_token_hash)
  SELECT id, ns, endpoint, dep, to_timestamp(dep_at), locked, sunset, doc, mem, hdr, ttl, dereg,
         CASE WHEN ttl IS NULL THEN 'unknown' ELSE 'passing' END, CASE WHEN ttl IS NULL THEN NULL ELSE decode(tok, 'hex') END FROM t ORDER BY i
  RETURNING id, seq, version),
caps AS (
  INSERT INTO service_capabilities (service_id, capability, ord)
  SELECT * FROM unnest($11::text[], $12::text[], $13::smallint[])),
props AS (
  INSERT INTO service_properties (service_id, key, value)
  SELECT * FROM unnest($14::text[], $15::text[], $16::text[])),
iot AS (
  INSERT INTO iot_profiles (service_id, device_classes, protocols)
  SELECT sid, string_to_array(d, ','), string_to_array(p, ',') FROM unnest($17::text[], $18::text[], $19::text[]) AS x(sid, d, p)),
ob AS (
  INSERT INTO outbox (ns, service_id) SELECT ns, id FROM t ORDER BY i RETURNING id, service_id),
ev AS (
  -- the lock is taken in the FROM item, before nextval draws any id (changes/events.ts)
  INSERT INTO change_events (id, ns, service_id, type, data)
  SELECT nextval('change_events_id_seq'), t.ns, t.id, 'service.created', t.doc
    FROM (SELECT pg_advisory_xact_lock($20)) l, t ORDER BY t.i)
SELECT svc.id, svc.seq::text, svc.version::text, ob.id::text AS row FROM svc JOIN ob ON ob.service_id = svc.id`;

/**
 * The capability and property rows of a multi-row statement, as column arrays (unnest):
 * `caps(id, list)` adds a service's capabilities in their order (1-based), `props(id, map)`
 * its properties. Registrations and patches send them the same way.
 */
function detailRows() {
  const capSid: string[] = [];
  const caps: string[] = [];
  const capOrd: number[] = [];
  const propSid: string[] = [];
  const propKey: string[] = [];
  const propVal: string[] = [];
  return {
    capSid, caps, capOrd, propSid, propKey, propVal,
    addCaps(id: string, list: readonly string[]): void {
      list.forEach((c, i) => {
        capSid.push(id);
        caps.push(c);
        capOrd.push(i + 1);
      });
    },
    addProps(id: string, map: Readonly<Record<string, string>>): void {
      for (const k of Object.keys(map)) {
        propSid.push(id);
        propKey.push(k);
        propVal.push(map[k]!);
      }
    },
  };
}

/**
 * Commit new services in one statement: all of them or none. Returns them in input order.
 * A deprecated registration's deprecation time is this process's clock (seconds), so that
 * its header is known before the write.
 */
export async function createServices(pool: Pool, items: NewService[], nowSec = Math.floor(Date.now() / 1000)): Promise<Committed[]> {
  const ids: string[] = [];
  const nss: string[] = [];
  const eps: string[] = [];
  const deps: boolean[] = [];
  const depAts: (number | null)[] = [];
  const lockeds: boolean[] = [];
  const suns: (string | null)[] = [];
  const docs: string[] = [];
  const mems: string[] = [];
  const hdrs: string[] = [];
  const d = detailRows();
  const iotSid: string[] = [];
  const iotDc: string[] = [];
  const iotPr: string[] = [];
  const recs: ServiceRecord[] = [];
  const ttls: (number | null)[] = [];
  const deregs: (number | null)[] = [];
  const toks: string[] = [];
  const texts: IndexText[] = [];
  for (const it of items) {
    const s = it.input;
    const id = it.id ?? newServiceId();
    const rec: ServiceRecord = {
      id,
      ns: it.ns,
      seq: 0,
      endpoint: s.endpoint,
      capabilities: s.capabilities,
      properties: s.properties,
      iot: s.iot,
      deprecated: s.deprecated,
      deprecatedAt: s.deprecated ? nowSec : null,
      locked: s.locked,
      sunsetDate: s.sunsetDate,
      replacementSeqs: [],
      ...(s.ttl != null ? { health: { status: 'passing' as const, ttl: s.ttl }, lease: { tokenHash: it.tokenHash?.toString('hex') ?? '', deregisterAfter: s.deregisterAfter ?? null, criticalSince: null } } : {}),
    };
    const text = indexText(rec);
    texts.push(text);
    recs.push(rec);
    ttls.push(s.ttl ?? null);
    deregs.push(s.deregisterAfter ?? null);
    toks.push(it.tokenHash?.toString('hex') ?? '');
    ids.push(id);
    nss.push(it.ns);
    eps.push(s.endpoint);
    deps.push(s.deprecated);
    depAts.push(rec.deprecatedAt);
    lockeds.push(s.locked);
    suns.push(s.sunsetDate);
    docs.push(text.doc);
    mems.push(text.members);
    hdrs.push(text.hdr);
    d.addCaps(id, s.capabilities);
    d.addProps(id, s.properties);
    if (s.iot) {
      // tokens are [a-z0-9._-]: a comma never occurs in one
      iotSid.push(id);
      iotDc.push(s.iot.deviceClasses.join(','));
      iotPr.push(s.iot.protocols.join(','));
    }
  }
  const r = await query<{ id: string; seq: string; version: string; row: string }>(
    pool,
    { name: 'create-services', text: CREATE_SERVICES },
    [ids, nss, eps, deps, depAts, lockeds, suns, docs, mems, hdrs, d.capSid, d.caps, d.capOrd, d.propSid, d.propKey, d.propVal, iotSid, iotDc, iotPr, CHANGE_LOCK_ID, ttls, deregs, toks],
  );
  const byId = new Map(r.rows.map((x) => [x.id, x]));
  return recs.map((rec, i) => {
    const x = byId.get(rec.id)!;
    rec.seq = Number(x.seq);
    rec.version = Number(x.version);
    return { row: Number(x.row), id: rec.id, state: { ns: rec.ns, version: rec.version, record: rec }, doc: docs[i]!, hdr: hdrs[i]!, text: texts[i]!, created: true };
  });
}

/** One registration (its own statement): the entry point for callers that do not batch. */
export async function createService(pool: Pool, ns: string, s: ServiceInput, id = newServiceId()): Promise<Committed> {
  return (await createServices(pool, [{ ns, input: s, id }]))[0]!;
}

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
