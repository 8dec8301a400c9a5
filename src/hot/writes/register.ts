// Registrations at PostgreSQL speed (issue 22): any number of new services, of any
// namespaces, committed by ONE statement — one round trip, prepared once per connection.
// The statement inserts the services with their index text, their capabilities,
// properties and IoT profiles, one outbox row each and their change events (under the
// change feed's advisory lock, registry/events.ts), and returns what the index needs that
// only PostgreSQL draws: seq, version, outbox row. Everything else of the state is known
// before the write (a new service has no candidates), so the caller applies Redis from
// this and answers from it: nothing is read back (projector.ts, applyCommitted()).
// A single statement outside BEGIN/COMMIT is its own transaction: all rows or none.
// A sandbox's registrations stay within its tier's quota in the same statement (issue 41):
// those it has no room for are left out and reported, their neighbours commit.
// Patches (patches.ts) likewise: one read and one statement, with the same detail rows.
import { ApiError } from '../domain/errors.js';
import type { ServiceRecord } from '../domain/service.js';
import type { ServiceInput } from '../domain/validation.js';
import { query, type Pool } from '../pg/pool.js';
import { CHANGE_LOCK_ID, indexText, newServiceId, sandboxesOf, type IndexState, type IndexText } from '../registry/index.js';

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
// With `quota` (any registration in a sandbox: migration 0010), the sandboxes of the batch
// are locked first (uuid order) and their counts read as committed by whoever held the lock
// before (READ COMMITTED re-reads a row it waited for); `k` keeps the registrations their
// sandbox has room for — each in turn, or a whole sandbox's or none ($27, a batch request) —
// and only those are written (the count itself: the trigger of migration 0010, at the end of
// the statement, under the lock). A namespace without a sandbox row has no quota. The rows
// of `q` come back too: the quota and the count before, for the refusal's message.
function createText(quota: boolean): string {
  const k = quota ? 'k' : 't';
  const ok = quota ? ' WHERE ok' : '';
  const mine = (col: string) => (quota ? ` WHERE ${col} IN (SELECT id FROM k WHERE ok)` : '');
  return `
WITH t AS MATERIALIZED (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::bigint[], $6::boolean[], $7::date[], $8::text[], $9::text[], $10::text[],
                       $21::integer[], $22::integer[], $23::text[])
    WITH ORDINALITY AS t(id, ns, endpoint, dep, dep_at, locked, sunset, doc, mem, hdr, ttl, dereg, tok, i)),${
  quota
    ? `
q AS MATERIALIZED (
  SELECT b.uuid::text AS ns, b.service_count AS used, coalesce(($26::integer[])[array_position($25::text[], b.tier)], 0) AS quota
    FROM sandboxes b WHERE b.uuid = ANY($24::uuid[]) ORDER BY b.uuid FOR NO KEY UPDATE),
k AS MATERIALIZED (
  SELECT t.*, q.ns IS NULL OR
         (CASE WHEN $27::boolean THEN count(*) OVER (PARTITION BY t.ns) ELSE row_number() OVER (PARTITION BY t.ns ORDER BY t.i) END) <= q.quota - q.used AS ok
    FROM t LEFT JOIN q ON q.ns = t.ns),`
    : ''
}
svc AS (
  -- the lease (migration 0006): a ttl makes it passing, with its token's hash
  INSERT INTO services (id, ns, endpoint, deprecated, deprecated_at, locked, sunset_date, idx_doc, idx_members, idx_hdr, ttl, deregister_after, health_status, hb_token_hash)
  SELECT id, ns, endpoint, dep, to_timestamp(dep_at), locked, sunset, doc, mem, hdr, ttl, dereg,
         CASE WHEN ttl IS NULL THEN 'unknown' ELSE 'passing' END, CASE WHEN ttl IS NULL THEN NULL ELSE decode(tok, 'hex') END FROM ${k}${ok} ORDER BY i
  RETURNING id, seq, version),
caps AS (
  INSERT INTO service_capabilities (service_id, capability, ord)
  SELECT * FROM unnest($11::text[], $12::text[], $13::smallint[]) AS x(sid, c, o)${mine('x.sid')}),
props AS (
  INSERT INTO service_properties (service_id, key, value)
  SELECT * FROM unnest($14::text[], $15::text[], $16::text[]) AS x(sid, k, v)${mine('x.sid')}),
iot AS (
  INSERT INTO iot_profiles (service_id, device_classes, protocols)
  SELECT sid, string_to_array(d, ','), string_to_array(p, ',') FROM unnest($17::text[], $18::text[], $19::text[]) AS x(sid, d, p)${mine('x.sid')}),
ob AS (
  INSERT INTO outbox (ns, service_id) SELECT ns, id FROM ${k}${ok} ORDER BY i RETURNING id, service_id),
ev AS (
  -- the lock is taken in the FROM item, before nextval draws any id (registry/events.ts)
  INSERT INTO change_events (id, ns, service_id, type, data)
  SELECT nextval('change_events_id_seq'), ${k}.ns, ${k}.id, 'service.created', ${k}.doc
    FROM (SELECT pg_advisory_xact_lock($20)) l, ${k}${ok} ORDER BY ${k}.i)
SELECT svc.id, svc.seq::text, svc.version::text, ob.id::text AS row, NULL::integer AS quota, NULL::integer AS used FROM svc JOIN ob ON ob.service_id = svc.id${
    quota ? '\nUNION ALL SELECT q.ns, NULL, NULL, NULL, q.quota, q.used FROM q' : ''
  }`;
}
const CREATE_SERVICES = createText(false);
const CREATE_SERVICES_QUOTA = createText(true);

/** Services per sandbox by tier (TIER_MAX_SERVICES); `all`: a sandbox's registrations of the call pass together or not at all. */
export interface Quota {
  tiers: Readonly<Record<string, number>>;
  all: boolean;
}

/** A registration its sandbox had no room for: nothing of it was written. */
export interface QuotaRefusal {
  refused: {
    /** the sandbox's quota when the statement ran */
    quota: number;
    /** its services before the statement */
    used: number;
    /** its registrations in the statement, and how many of them were written */
    asked: number;
    written: number;
  };
}

/** a refusal of the quota, or a registration written */
export type Created = Committed | QuotaRefusal;

export function isRefusal(c: Created): c is QuotaRefusal {
  return 'refused' in c;
}

/**
 * The 409 of a refusal: a batch request (every registration of its sandbox refused, `all`)
 * names its size; a registration committed with others names the count it met.
 */
export function quotaError({ refused: r }: QuotaRefusal, batch = false): ApiError {
  return batch ? new ApiError('BATCH_QUOTA_EXCEEDED', [r.quota, r.used, r.asked]) : new ApiError('QUOTA_EXCEEDED', [r.quota, r.used + r.written]);
}

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
 * No quota: callers of production and of the store itself (seed, import, tests); the
 * sandbox routes go through commitServices().
 */
export async function createServices(pool: Pool, items: NewService[], nowSec = Math.floor(Date.now() / 1000)): Promise<Committed[]> {
  return (await commitServices(pool, items, null, nowSec)) as Committed[];
}

/**
 * Commit new services in one statement, each sandbox's within its tier's quota: per item
 * in input order, the registration written or its refusal (nothing of it written). A
 * deprecated registration's deprecation time is this process's clock (seconds), so that
 * its header is known before the write.
 */
export async function commitServices(pool: Pool, items: NewService[], quota: Quota | null, nowSec = Math.floor(Date.now() / 1000)): Promise<Created[]> {
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
  const params: unknown[] = [ids, nss, eps, deps, depAts, lockeds, suns, docs, mems, hdrs, d.capSid, d.caps, d.capOrd, d.propSid, d.propKey, d.propVal, iotSid, iotDc, iotPr, CHANGE_LOCK_ID, ttls, deregs, toks];
  const boxes = quota ? sandboxesOf(nss) : [];
  if (quota && boxes.length) params.push(boxes, Object.keys(quota.tiers), Object.values(quota.tiers), quota.all);
  const r = await query<{ id: string; seq: string | null; version: string; row: string; quota: number | null; used: number | null }>(
    pool,
    boxes.length ? { name: 'create-services-quota', text: CREATE_SERVICES_QUOTA } : { name: 'create-services', text: CREATE_SERVICES },
    params,
  );
  const byId = new Map(r.rows.filter((x) => x.seq !== null).map((x) => [x.id, x]));
  const quotas = new Map(r.rows.filter((x) => x.seq === null).map((x) => [x.id, { quota: x.quota!, used: x.used! }]));
  const asked = new Map<string, number>();
  const written = new Map<string, number>();
  for (const rec of recs) {
    asked.set(rec.ns, (asked.get(rec.ns) ?? 0) + 1);
    if (byId.has(rec.id)) written.set(rec.ns, (written.get(rec.ns) ?? 0) + 1);
  }
  return recs.map((rec, i): Created => {
    const x = byId.get(rec.id);
    if (!x) {
      // only a quota leaves a registration out of the statement
      const q = quotas.get(rec.ns);
      if (!q) throw new Error(`registration ${rec.id} neither written nor refused`);
      return { refused: { quota: q.quota, used: q.used, asked: asked.get(rec.ns)!, written: written.get(rec.ns) ?? 0 } };
    }
    rec.seq = Number(x.seq);
    rec.version = Number(x.version);
    return { row: Number(x.row), id: rec.id, state: { ns: rec.ns, version: rec.version, record: rec }, doc: docs[i]!, hdr: hdrs[i]!, text: texts[i]!, created: true };
  });
}

/** One registration (its own statement): the entry point for callers that do not batch. */
export async function createService(pool: Pool, ns: string, s: ServiceInput, id = newServiceId()): Promise<Committed> {
  return (await createServices(pool, [{ ns, input: s, id }]))[0]!;
}
