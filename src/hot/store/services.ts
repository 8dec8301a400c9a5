// Service writes and reads against PostgreSQL. Each write runs in one transaction that
// also inserts an outbox row; the caller acknowledges only after COMMIT returned.
import { randomBase62 } from '../domain/tokens.js';
import { appendChanges, deletedData, type ChangeInput, type ChangeType } from '../changes/events.js';
import { ApiError } from '../domain/errors.js';
import { memberSuffixes } from '../domain/keys.js';
import { headerData, serializeService, type HealthStatus, type ServiceRecord } from '../domain/service.js';
import { query, retrying, withTx, type Client, type Pool } from './pool.js';

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

async function outbox(c: Client, ns: string, id: string): Promise<number> {
  const r = await c.query<{ id: string }>('INSERT INTO outbox (ns, service_id) VALUES ($1, $2) RETURNING id', [ns, id]);
  return Number(r.rows[0]!.id);
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

/** The change event of a write, with the service as it stands inside the transaction. */
async function changeOf(c: Client, ns: string, id: string, type: ChangeType): Promise<ChangeInput> {
  const r = await c.query<Row>(SELECT_STATE + ' WHERE s.id = $1', [id]);
  return { ns, serviceId: id, type, data: r.rows[0] ? serializeService(toRecord(r.rows[0])) : deletedData(id) };
}

/**
 * The strings the write path sends to Redis for a state (projector.ts: serializeService,
 * memberSuffixes joined by "\n", headerData), stored with that state in services.idx_doc,
 * idx_members and idx_hdr so that a rebuild reads them instead of building them (migration
 * 0004). The members' order carries no meaning (they name sets).
 */
export interface IndexText {
  doc: string;
  members: string;
  hdr: string;
}

export function indexText(s: ServiceRecord): IndexText {
  return { doc: serializeService(s), members: memberSuffixes(s).join('\n'), hdr: headerData(s) };
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

/** Lock the row and check it is in `ns`; a service of another namespace is "not found". */
async function lockService(c: Client, ns: string, id: string): Promise<{ locked: boolean; deprecated: boolean }> {
  const r = await c.query<{ locked: boolean; deprecated: boolean }>('SELECT locked, deprecated FROM services WHERE id = $1 AND ns = $2 FOR UPDATE', [id, ns]);
  if (!r.rows[0]) throw new ApiError('SERVICE_NOT_FOUND');
  return r.rows[0];
}

/**
 * Returns the outbox entries to apply: the deleted service and every service listing it.
 * Those listing services' documents change (their candidate list loses it), so their rows
 * are locked and their versions drawn like any other write of theirs; the deletion itself
 * leaves a tombstone version, so that no older state of the id can come back in Redis.
 */
export function deleteService(pool: Pool, ns: string, id: string): Promise<WriteResult[]> {
  // rows are locked in id order; a listing service that appears between the read and the
  // lock is locked afterwards, out of order, and a deadlock that this may cause is retried
  return retrying(() =>
    withTx(pool, async (c) => {
      const listersOf = async () => (await c.query<{ service_id: string }>('SELECT service_id FROM replacements WHERE candidate_id = $1', [id])).rows.map((r) => r.service_id);
      const first = await listersOf();
      const locked = await c.query<{ id: string; ns: string }>('SELECT id, ns FROM services WHERE id = $1 OR id = ANY($2) ORDER BY id FOR UPDATE', [id, first]);
      if (!locked.rows.some((r) => r.id === id && r.ns === ns)) throw new ApiError('SERVICE_NOT_FOUND');
      // with the candidate's row locked no new listing can be inserted (its foreign key
      // check waits for this transaction): this list is final
      const listers = await listersOf();
      const late = listers.filter((x) => !first.includes(x));
      if (late.length) await c.query('SELECT id FROM services WHERE id = ANY($1) ORDER BY id FOR UPDATE', [late]);
      await c.query(
        `INSERT INTO service_tombstones (id, ns, version) VALUES ($1, $2, nextval('service_version_seq'))
         ON CONFLICT (id) DO UPDATE SET ns = EXCLUDED.ns, version = EXCLUDED.version`,
        [id, ns],
      );
      await c.query('DELETE FROM services WHERE id = $1', [id]);
      await bumpVersions(c, listers);
      const out: WriteResult[] = [{ id, ns, row: await outbox(c, ns, id) }];
      for (const l of listers) out.push({ id: l, ns, row: await outbox(c, ns, l) });
      // the listing services' objects do not show candidates, so only the deletion is an event
      await appendChanges(c, [{ ns, serviceId: id, type: 'service.deleted', data: deletedData(id) }]);
      return out;
    }),
  );
}

export async function addReplacement(pool: Pool, ns: string, id: string, candidateId: string): Promise<WriteResult> {
  return withTx(pool, async (c) => {
    await lockService(c, ns, id);
    if (candidateId === id) throw new ApiError('SELF_REPLACEMENT');
    const cand = await c.query('SELECT 1 FROM services WHERE id = $1 AND ns = $2', [candidateId, ns]);
    if (!cand.rowCount) throw new ApiError('CANDIDATE_NOT_FOUND');
    const ins = await c
      .query(
        `INSERT INTO replacements (service_id, candidate_id, rank)
         SELECT $1, $2, COALESCE(MAX(rank), 0) + 1 FROM replacements WHERE service_id = $1
         ON CONFLICT DO NOTHING`,
        [id, candidateId],
      )
      .catch((err: unknown) => {
        // the candidate was deleted after the check above (its foreign key check waited for
        // that delete): it is no longer a service of this namespace
        if ((err as { code?: string }).code === '23503') throw new ApiError('CANDIDATE_NOT_FOUND');
        throw err;
      });
    if (!ins.rowCount) throw new ApiError('CANDIDATE_EXISTS');
    // the candidates are not in the document, members or header: the stored index text stays
    await bumpVersions(c, [id]);
    const row = await outbox(c, ns, id);
    await appendChanges(c, [await changeOf(c, ns, id, 'service.updated')]);
    return { id, ns, row };
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
  version: string;
  ttl: number | null;
  dereg: number | null;
  hs: HealthStatus;
  crit: string | null;
  tok: string | null;
}

const SELECT_STATE = `
  SELECT s.id, s.ns, s.seq, s.version, s.endpoint, s.deprecated, floor(extract(epoch FROM s.deprecated_at))::bigint AS dep_at,
         s.locked, to_char(s.sunset_date, 'YYYY-MM-DD') AS sunset,
         (SELECT array_agg(capability ORDER BY ord) FROM service_capabilities WHERE service_id = s.id) AS caps,
         (SELECT json_object_agg(key, value) FROM service_properties WHERE service_id = s.id) AS props,
         i.device_classes AS dcs, i.protocols AS protos,
         (SELECT array_agg(c.seq ORDER BY r.rank) FROM replacements r JOIN services c ON c.id = r.candidate_id
           WHERE r.service_id = s.id) AS repl,
         s.ttl, s.deregister_after AS dereg, s.health_status AS hs, s.critical_since AS crit, encode(s.hb_token_hash, 'hex') AS tok
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
  const r = await query<Row & { tomb: string | null }>(
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
    out.set(row.id, row.tomb === null ? { ns: row.ns, version: Number(row.version), record: toRecord(row) } : { ns: row.ns, version: Number(row.tomb), record: null });
  }
  return out;
}

export async function loadService(pool: Pool, ns: string, id: string): Promise<ServiceRecord | null> {
  // named: the first of a patch's two round trips (writes.ts)
  const r = await query<Row>(pool, { name: 'load-service', text: SELECT_STATE + ' WHERE s.id = $1 AND s.ns = $2' }, [id, ns]);
  return r.rows[0] ? toRecord(r.rows[0]) : null;
}

/** Services matching `where` (SQL over alias s, e.g. "WHERE s.id = ANY($1)"): bulk import and export. */
export async function loadStatesWhere(c: Client | Pool, where: string, params: unknown[]): Promise<ServiceRecord[]> {
  const r = await c.query<Row>(SELECT_STATE + ' ' + where, params);
  return r.rows.map(toRecord);
}

/**
 * One service of a rebuild page, already in index-page.lua's terms (its ARGV, plus ns):
 * [id, ns, version, seq, doc, members, hdr, repl]. doc, members and hdr are the index text
 * the write stored with the state (indexText()); repl, the candidate seqs joined by ",", is
 * aggregated per page. The rebuilding process only passes strings on.
 * test/pg/rebuild-bytes.test.ts holds them byte-identical to the write path's.
 */
export type IndexPageRow = [id: string, ns: string, version: string, seq: string, doc: string, members: string, hdr: string, repl: string];

// Every row has its index text: every write stores it, and the migrator fills the rows
// written without it (before migration 0004, or straight into the tables) and recomputes it
// when the member rule changed (index-text.ts). A row found without it all the same (written
// by hand since) gets it from indexText() over its state, read at this page's version.
const INDEX_PAGE = `
WITH s AS MATERIALIZED (
  SELECT id, ns, seq, version, endpoint, deprecated, deprecated_at, locked, sunset_date, idx_doc, idx_members, idx_hdr, ttl, health_status
    FROM services WHERE seq > $1 ORDER BY seq LIMIT $2),
bare AS (
  -- the page's rows without stored index text: only theirs have their details read
  SELECT ARRAY(SELECT id FROM s WHERE idx_doc IS NULL OR idx_members IS NULL OR idx_hdr IS NULL) AS ids),
c AS (
  -- one ordered aggregate (a sort per service): the document's array and the members both come from it
  SELECT service_id, array_agg(capability ORDER BY ord) AS a
    FROM service_capabilities WHERE service_id = ANY((SELECT ids FROM bare)::text[]) GROUP BY service_id),
p AS (
  SELECT service_id,
         '{' || string_agg('"' || key || '":' || to_json(value)::text, ','
                 ORDER BY CASE WHEN key < ':' AND key ~ '^(0|[1-9][0-9]{0,9})$' AND key::bigint <= 4294967294 THEN key::bigint END,
                          key COLLATE "C") || '}' AS j,
         string_agg(E'\np:' || key || ':' || value, '') AS m
    FROM service_properties WHERE service_id = ANY((SELECT ids FROM bare)::text[]) GROUP BY service_id),
i AS (
  SELECT service_id, device_classes, protocols FROM iot_profiles WHERE service_id = ANY((SELECT ids FROM bare)::text[])),
r AS (
  SELECT x.service_id, string_agg(c.seq::text, ',' ORDER BY x.rank) AS l
    FROM replacements x JOIN services c ON c.id = x.candidate_id
   WHERE x.service_id = ANY(ARRAY(SELECT id FROM s)) GROUP BY x.service_id)
SELECT s.id, s.ns, s.version::text, s.seq::text,
       coalesce(s.idx_doc, '{"id":' || to_json(s.id)::text || ',"endpoint":' || to_json(s.endpoint)::text
         || ',"capabilities":' || coalesce('["' || array_to_string(c.a, '","') || '"]', '[]') || ',"properties":' || coalesce(p.j, '{}')
         || ',"deprecated":' || s.deprecated::text || ',"locked":' || s.locked::text
         || ',"sunset_date":' || coalesce('"' || to_char(s.sunset_date, 'YYYY-MM-DD') || '"', 'null')
         || CASE WHEN i.service_id IS NULL THEN ',"iotReady":false,"iot":null'
            ELSE ',"iotReady":true,"iot":{"deviceClasses":' || array_to_json(i.device_classes)::text
                 || ',"protocols":' || array_to_json(i.protocols)::text || '}' END
         || ',"health":{"status":"' || s.health_status || '","ttl":' || coalesce(s.ttl::text, 'null') || '}}'),
       coalesce(s.idx_members, 'all' || CASE WHEN s.health_status = 'critical' THEN '' ELSE E'\nh' END || coalesce(E'\nc:' || array_to_string(c.a, E'\nc:'), '') || coalesce(p.m, '')
         || CASE WHEN i.service_id IS NULL THEN ''
            ELSE E'\niot\nd:' || array_to_string(i.device_classes, E'\nd:')
                 || E'\nr:' || array_to_string(i.protocols, E'\nr:') END),
       coalesce(s.idx_hdr, CASE WHEN s.deprecated OR s.sunset_date IS NOT NULL THEN
         CASE WHEN s.deprecated THEN coalesce(floor(extract(epoch FROM s.deprecated_at))::bigint, 0)::text ELSE '' END
         || '|' || coalesce(to_char(s.sunset_date, 'Dy, DD Mon YYYY') || ' 00:00:00 GMT', '')
       ELSE '' END),
       coalesce(r.l, '')
  FROM s LEFT JOIN c ON c.service_id = s.id LEFT JOIN p ON p.service_id = s.id
         LEFT JOIN i ON i.service_id = s.id LEFT JOIN r ON r.service_id = s.id
 ORDER BY s.seq`;

/**
 * Page through every service in seq order (rebuild), as index-page.lua's arguments: one
 * statement per page, rows as arrays of text (no row objects, no Date or array parsing).
 * Cut the rebuilding process's CPU from ~61 to ~13 µs per service at 300,000 services
 * (docs/decisions.md, "Rebuild pages serialised by PostgreSQL").
 */
export async function loadIndexPage(pool: Client | Pool, afterSeq: number, n: number): Promise<IndexPageRow[]> {
  // named: prepared once per connection, not parsed and planned for every page
  const r = await pool.query<(string | null)[]>({ name: 'rebuild-index-page', text: INDEX_PAGE, values: [afterSeq, n], rowMode: 'array' });
  const rows = r.rows;
  const bare = rows.filter((x) => x[4] === null || x[5] === null || x[6] === null);
  if (bare.length) {
    // read with the version: a row written since this page was read is read again
    const states = await loadStatesWhere(pool, 'WHERE s.id = ANY($1)', [bare.map((x) => x[0])]);
    const byId = new Map(states.map((st) => [st.id, st]));
    for (const x of bare) {
      const st = byId.get(x[0]!);
      if (!st) continue; // deleted since: its tombstone is indexed
      const t = indexText(st);
      x[2] = String(st.version);
      x[4] = t.doc;
      x[5] = t.members;
      x[6] = t.hdr;
    }
  }
  return rows.filter((x) => x[4] !== null) as IndexPageRow[];
}

/** Page through the tombstones of deleted services in id order (rebuild). */
export async function loadTombstonePage(c: Client | Pool, afterId: string, n: number): Promise<{ id: string; ns: string; version: number }[]> {
  const r = await c.query<{ id: string; ns: string; version: string }>('SELECT id, ns, version FROM service_tombstones WHERE id > $1 ORDER BY id LIMIT $2', [afterId, n]);
  return r.rows.map((x) => ({ id: x.id, ns: x.ns, version: Number(x.version) }));
}

/** Replacement candidates of a service, ranked (read path of the sandbox routes). */
export async function loadReplacements(pool: Pool, ns: string, id: string): Promise<ServiceRecord[] | null> {
  const own = await query(pool, 'SELECT 1 FROM services WHERE id = $1 AND ns = $2', [id, ns]);
  if (!own.rowCount) return null;
  const r = await query<Row>(pool, SELECT_STATE + ' JOIN replacements rp ON rp.candidate_id = s.id WHERE rp.service_id = $1 ORDER BY rp.rank', [id]);
  return r.rows.map(toRecord);
}

/**
 * Store the index text (indexText()) of rows that have none — written before migration 0004,
 * or straight into the tables — or, with `all`, of every row (the member rule changed:
 * index-text.ts), in seq order, a page of `n` per statement pair. A row is written only while
 * it is still at the version its state was read at (a write meanwhile stored its own text).
 * Returns the rows written.
 */
export async function backfillIndexText(pool: Client | Pool, n = 2000, progress: (seen: number, filled: number) => void = () => undefined, all = false): Promise<number> {
  let after = 0;
  let seen = 0;
  let filled = 0;
  for (;;) {
    const page = await loadStatesWhere(pool, `WHERE s.seq > $1 ${all ? '' : 'AND s.idx_doc IS NULL'} ORDER BY s.seq LIMIT $2`, [after, n]);
    if (!page.length) return filled;
    after = page[page.length - 1]!.seq;
    seen += page.length;
    const texts = page.map(indexText);
    const r = await pool.query(
      `UPDATE services s SET idx_doc = t.d, idx_members = t.m, idx_hdr = t.h
         FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[]) AS t(id, v, d, m, h)
        WHERE s.id = t.id AND s.version = t.v`,
      [page.map((x) => x.id), page.map((x) => x.version), texts.map((x) => x.doc), texts.map((x) => x.members), texts.map((x) => x.hdr)],
    );
    filled += r.rowCount ?? 0;
    progress(seen, filled);
  }
}
