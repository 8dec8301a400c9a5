// Registrations at PostgreSQL speed (issue 22): any number of new services, of any
// namespaces, committed by ONE statement — one round trip, prepared once per connection.
// The statement inserts the services with their index text, their capabilities,
// properties and IoT profiles, one outbox row each and their change events (under the
// change feed's advisory lock, registry/events.ts), and returns what the index needs that
// only PostgreSQL draws: seq, version, outbox row. Everything else of the state is known
// before the write (a new service has no candidates), so the caller applies Redis from
// this and answers from it: nothing is read back (projector.ts, applyCommitted()).
// A single statement outside BEGIN/COMMIT is its own transaction: all rows or none.
// Patches (patches.ts) likewise: one read and one statement, with the same detail rows.
import { CHANGE_LOCK_ID, type IndexState, indexText, type IndexText, newServiceId } from '../registry/index.js';
import type { ServiceRecord } from '../domain/service.js';
import type { ServiceInput } from '../domain/validation.js';
import { query, type Pool } from '../pg/pool.js';

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
  -- the lock is taken in the FROM item, before nextval draws any id (registry/events.ts)
  INSERT INTO change_events (id, ns, service_id, type, data)
  SELECT nextval('change_events_id_seq'), t.ns, t.id, 'service.created', t.doc
    FROM (SELECT pg_advisory_xact_lock($20)) l, t ORDER BY t.i)
SELECT svc.id, svc.seq::text, svc.version::text, ob.id::text AS row FROM svc JOIN ob ON ob.service_id = svc.id`;

/**
 * The capability and property rows of a multi-row statement, as column arrays (unnest):
 * `caps(id, list)` adds a service's capabilities in their order (1-based), `props(id, map)`
 * its properties. Registrations and patches send them the same way.
 */
export function detailRows() {
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
