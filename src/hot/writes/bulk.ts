// Bulk writes for the command-line import: a batch of services upserted by id in one
// transaction of a handful of multi-row statements (unnest arrays), with outbox rows and
// change events in the same transaction, as every single write has. Upserts never cross
// namespaces: an id that belongs to another namespace is refused, not overwritten. A row
// identical to what is stored is skipped entirely (no write, no outbox row, no event), so
// re-importing a file changes nothing.
import { appendChanges, bumpVersions, bumpVersionsWithText, type ChangeInput, indexText, loadStatesWhere, sandboxesOf } from '../registry/index.js';
import { serializeService, type ServiceRecord } from '../domain/service.js';
import type { ServiceInput } from '../domain/validation.js';
import { retrying, withTx, type Client, type Pool } from '../pg/pool.js';

export interface BulkRow {
  id: string;
  input: ServiceInput;
  /** candidate ids, ranked; undefined = leave the stored candidates alone */
  replacements?: string[];
  /** a line with `ttl` (input.ttl): the heartbeat token it gets if the service holds none yet */
  leaseToken?: { token: string; hash: Buffer };
}

export interface BulkResult {
  created: number;
  updated: number;
  unchanged: number;
  /** ids refused, with the reason */
  refused: { id: string; reason: string }[];
  /** outbox ids written (so that the caller can drop them once a rebuild covered them) */
  outbox: number[];
  /** heartbeat tokens issued (leases started by the import): shown once, to the caller */
  tokens: { id: string; heartbeatToken: string }[];
}

type Lease = Pick<ServiceRecord, 'health' | 'lease'>;

/**
 * The lease a row leaves: a line with `ttl` sets ttl and deregisterAfter, keeps a stored
 * lease's status, critical time and token (a new lease: passing, the line's token); a line
 * without leaves the stored lease (or none) as it is.
 */
function leaseAfter(row: BulkRow, before: ServiceRecord | undefined): Lease & { issued: boolean } {
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

export function recordOf(ns: string, id: string, s: ServiceInput): ServiceRecord {
  return { id, ns, seq: 0, endpoint: s.endpoint, capabilities: s.capabilities, properties: s.properties, iot: s.iot, deprecated: s.deprecated, deprecatedAt: null, locked: s.locked, sunsetDate: s.sunsetDate, replacementSeqs: [] };
}

export function bulkUpsert(pool: Pool, ns: string, rows: BulkRow[]): Promise<BulkResult> {
  // the last line wins when a batch names an id twice (one statement cannot update a row twice)
  const byId = new Map<string, BulkRow>();
  for (const r of rows) byId.set(r.id, r);
  return retrying(() => withTx(pool, (c) => upsertIn(c, ns, [...byId.values()])));
}

async function upsertIn(c: Client, ns: string, rows: BulkRow[]): Promise<BulkResult> {
  const out: BulkResult = { created: 0, updated: 0, unchanged: 0, refused: [], outbox: [], tokens: [] };
  // the sandbox row whose count the new rows change (migration 0010) first: every writer
  // locks sandboxes before services (write-functions.ts)
  await c.query('SELECT 1 FROM sandboxes WHERE uuid = ANY($1::uuid[]) FOR NO KEY UPDATE', [sandboxesOf([ns])]);
  // locked (in id order) as they are read: the lease status kept below is the one written
  // lock in id order, then read in a new snapshot (service_state is a view FOR UPDATE cannot lock through)
  await c.query('SELECT id FROM services WHERE id = ANY($1) ORDER BY id FOR UPDATE', [rows.map((r) => r.id)]);
  const existing = new Map((await loadStatesWhere(c, 'WHERE s.id = ANY($1)', [rows.map((r) => r.id)])).map((s) => [s.id, s]));
  const write: { row: BulkRow; doc: string; before: ServiceRecord | undefined; lease: Lease & { issued: boolean } }[] = [];
  for (const row of rows) {
    const before = existing.get(row.id);
    if (before && before.ns !== ns) {
      out.refused.push({ id: row.id, reason: 'the id belongs to another namespace' });
      continue;
    }
    const lease = leaseAfter(row, before);
    const doc = serializeService({ ...recordOf(ns, row.id, row.input), health: lease.health });
    // deregisterAfter is not in the document: compared apart
    if (before && serializeService(before) === doc && (before.lease?.deregisterAfter ?? null) === (lease.lease?.deregisterAfter ?? null)) out.unchanged++;
    else write.push({ row, doc, before, lease });
  }
  const events: ChangeInput[] = [];
  if (write.length) {
    const ids = write.map((w) => w.row.id);
    const ins = write.map((w) => w.row.input);
    const up = await c.query<{ id: string; dep_at: string | null }>(
      `INSERT INTO services (id, ns, endpoint, deprecated, deprecated_at, locked, sunset_date, ttl, deregister_after, health_status, critical_since, hb_token_hash)
       SELECT t.id, $1, t.ep, t.dep, CASE WHEN t.dep THEN now() END, t.lck, t.sun::date, t.ttl, t.dereg, t.hs, t.crit, decode(t.tok, 'hex')
         FROM unnest($2::text[], $3::text[], $4::boolean[], $5::boolean[], $6::text[], $7::integer[], $8::integer[], $9::text[], $10::bigint[], $11::text[])
           AS t(id, ep, dep, lck, sun, ttl, dereg, hs, crit, tok)
       ON CONFLICT (id) DO UPDATE SET
         endpoint = EXCLUDED.endpoint,
         deprecated_at = CASE WHEN EXCLUDED.deprecated THEN COALESCE(services.deprecated_at, now()) END,
         deprecated = EXCLUDED.deprecated,
         locked = EXCLUDED.locked,
         sunset_date = EXCLUDED.sunset_date,
         ttl = EXCLUDED.ttl,
         deregister_after = EXCLUDED.deregister_after,
         health_status = EXCLUDED.health_status,
         critical_since = EXCLUDED.critical_since,
         hb_token_hash = EXCLUDED.hb_token_hash,
         updated_at = now()
       WHERE services.ns = EXCLUDED.ns
       RETURNING id, floor(extract(epoch FROM deprecated_at))::bigint AS dep_at`,
      [
        ns,
        ids,
        ins.map((s) => s.endpoint),
        ins.map((s) => s.deprecated),
        ins.map((s) => s.locked),
        ins.map((s) => s.sunsetDate),
        write.map((w) => w.lease.health?.ttl ?? null),
        write.map((w) => w.lease.lease?.deregisterAfter ?? null),
        write.map((w) => w.lease.health?.status ?? 'unknown'),
        write.map((w) => w.lease.lease?.criticalSince ?? null),
        write.map((w) => w.lease.lease?.tokenHash || null),
      ],
    );
    // an id taken in another namespace since the read above is not returned: refuse it
    const done = new Map(up.rows.map((r) => [r.id, r.dep_at === null ? null : Number(r.dep_at)]));
    const kept = write.filter((w) => {
      if (done.has(w.row.id)) return true;
      out.refused.push({ id: w.row.id, reason: 'the id belongs to another namespace' });
      return false;
    });
    await writeDetails(c, kept.map((w) => w.row), kept.filter((w) => w.before).map((w) => w.row.id));
    // the upsert holds these rows' locks now: draw their versions (an insert's default was
    // drawn before it could wait for a concurrent delete of the same id, so draw again), and
    // store the index text of the state written: the input's, with the deprecation time
    // the upsert kept or set (the candidates, not part of it, are left alone)
    await bumpVersionsWithText(
      c,
      kept.map((w) => ({ id: w.row.id, text: indexText({ ...recordOf(ns, w.row.id, w.row.input), deprecatedAt: done.get(w.row.id) ?? null, ...w.lease }) })),
    );
    const ob = await c.query<{ id: string; service_id: string }>('INSERT INTO outbox (ns, service_id) SELECT $1, unnest($2::text[]) RETURNING id, service_id', [ns, kept.map((w) => w.row.id)]);
    // a lease that was already in Redis and changed here (ttl, deregisterAfter) is not
    // covered by the rebuild (it seeds only services that have no lease record): its outbox
    // row stays for the projector's sweeper, which applies the lease like any write's
    const inRedis = new Set(kept.filter((w) => !!w.before?.lease && w.row.input.ttl != null).map((w) => w.row.id));
    out.outbox.push(...ob.rows.filter((r) => !inRedis.has(r.service_id)).map((r) => Number(r.id)));
    for (const w of kept) if (w.lease.issued) out.tokens.push({ id: w.row.id, heartbeatToken: w.row.leaseToken!.token });
    for (const w of kept) {
      const dep = w.row.input.deprecated && !!w.before && !w.before.deprecated;
      events.push({ ns, serviceId: w.row.id, type: !w.before ? 'service.created' : dep ? 'service.deprecated' : 'service.updated', data: w.doc });
      if (w.before) out.updated++;
      else out.created++;
    }
  }
  await appendChanges(c, events); // last statement: see registry/events.ts
  return out;
}

/** `existed`: ids whose old details must go first (a new service has none: no DELETE). */
async function writeDetails(c: Client, rows: BulkRow[], existed: string[]): Promise<void> {
  if (!rows.length) return;
  if (existed.length) {
    await c.query('DELETE FROM service_capabilities WHERE service_id = ANY($1)', [existed]);
    await c.query('DELETE FROM service_properties WHERE service_id = ANY($1)', [existed]);
    await c.query('DELETE FROM iot_profiles WHERE service_id = ANY($1)', [existed]);
  }
  const cap: [string[], string[], number[]] = [[], [], []];
  const prop: [string[], string[], string[]] = [[], [], []];
  const iot: { sid: string; dc: string[]; pr: string[] }[] = [];
  for (const r of rows) {
    r.input.capabilities.forEach((x, i) => {
      cap[0].push(r.id);
      cap[1].push(x);
      cap[2].push(i + 1);
    });
    for (const [k, v] of Object.entries(r.input.properties)) {
      prop[0].push(r.id);
      prop[1].push(k);
      prop[2].push(v);
    }
    if (r.input.iot) iot.push({ sid: r.id, dc: r.input.iot.deviceClasses, pr: r.input.iot.protocols });
  }
  await c.query('INSERT INTO service_capabilities (service_id, capability, ord) SELECT * FROM unnest($1::text[], $2::text[], $3::smallint[])', cap);
  if (prop[0].length) await c.query('INSERT INTO service_properties (service_id, key, value) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])', prop);
  if (iot.length) {
    // variable-length arrays per row do not fit unnest: one JSON document instead
    await c.query(
      `INSERT INTO iot_profiles (service_id, device_classes, protocols)
       SELECT x.sid, ARRAY(SELECT json_array_elements_text(x.dc)), ARRAY(SELECT json_array_elements_text(x.pr))
         FROM json_to_recordset($1::json) AS x(sid text, dc json, pr json)`,
      [JSON.stringify(iot)],
    );
  }
}

/**
 * Set the ranked replacement candidates of services of `ns` (import's second pass, once
 * every line is in). Candidates that are not services of `ns` are dropped and reported.
 * Lists equal to the stored ones are left alone.
 */
export async function bulkReplacements(pool: Pool, ns: string, lists: Map<string, string[]>): Promise<{ changed: number; dropped: { id: string; candidate: string }[]; outbox: number[] }> {
  const ids = [...lists.keys()];
  return retrying(() =>
    withTx(pool, async (c) => {
      // the listing services' rows are locked (in id order: no deadlock between two imports)
      // before their lists are read, and their versions drawn under that lock
      const own = await c.query<{ id: string }>('SELECT id FROM services WHERE id = ANY($1) AND ns = $2 ORDER BY id FOR UPDATE', [ids, ns]);
      const mine = new Set(own.rows.map((r) => r.id));
      const allCands = [...new Set([...lists.values()].flat())];
      const candRows = await c.query<{ id: string }>('SELECT id FROM services WHERE id = ANY($1) AND ns = $2', [allCands, ns]);
      const cands = new Set(candRows.rows.map((r) => r.id));
      const cur = await c.query<{ service_id: string; list: string[] }>(
        'SELECT service_id, array_agg(candidate_id ORDER BY rank) AS list FROM replacements WHERE service_id = ANY($1) GROUP BY service_id',
        [ids],
      );
      const stored = new Map(cur.rows.map((r) => [r.service_id, r.list.join(',')]));
      const dropped: { id: string; candidate: string }[] = [];
      const change: [string, string[]][] = [];
      for (const [id, list] of lists) {
        if (!mine.has(id)) continue;
        const want = [...new Set(list)].filter((cand) => {
          const ok = cands.has(cand) && cand !== id;
          if (!ok) dropped.push({ id, candidate: cand });
          return ok;
        });
        if ((stored.get(id) ?? '') !== want.join(',')) change.push([id, want]);
      }
      if (!change.length) return { changed: 0, dropped, outbox: [] };
      const sids = change.map(([id]) => id);
      await c.query('DELETE FROM replacements WHERE service_id = ANY($1)', [sids]);
      const flat: [string[], string[], number[]] = [[], [], []];
      for (const [id, want] of change) {
        want.forEach((cand, i) => {
          flat[0].push(id);
          flat[1].push(cand);
          flat[2].push(i + 1);
        });
      }
      if (flat[0].length) await c.query('INSERT INTO replacements (service_id, candidate_id, rank) SELECT * FROM unnest($1::text[], $2::text[], $3::int[])', flat);
      await bumpVersions(c, sids);
      const ob = await c.query<{ id: string }>('INSERT INTO outbox (ns, service_id) SELECT $1, unnest($2::text[]) RETURNING id', [ns, sids]);
      const states = await loadStatesWhere(c, 'WHERE s.id = ANY($1)', [sids]);
      await appendChanges(c, states.map((s) => ({ ns, serviceId: s.id, type: 'service.updated' as const, data: serializeService(s) })));
      return { changed: change.length, dropped, outbox: ob.rows.map((r) => Number(r.id)) };
    }),
  );
}

/** Drop outbox rows that a completed index rebuild has covered. */
export async function dropOutbox(pool: Pool, ids: number[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 10_000) await pool.query('DELETE FROM outbox WHERE id = ANY($1)', [ids.slice(i, i + 10_000)]);
}

/** Production (or any namespace's) services in seq order, with their candidate ids: export. */
export async function exportPage(c: Client | Pool, ns: string, afterSeq: number, n: number): Promise<{ s: ServiceRecord; replacements: string[] }[]> {
  const page = await loadStatesWhere(c, 'WHERE s.ns = $1 AND s.seq > $2 ORDER BY s.seq LIMIT $3', [ns, afterSeq, n]);
  if (!page.length) return [];
  const r = await c.query<{ service_id: string; list: string[] }>(
    'SELECT service_id, array_agg(candidate_id ORDER BY rank) AS list FROM replacements WHERE service_id = ANY($1) GROUP BY service_id',
    [page.map((s) => s.id)],
  );
  const lists = new Map(r.rows.map((x) => [x.service_id, x.list]));
  return page.map((s) => ({ s, replacements: lists.get(s.id) ?? [] }));
}
