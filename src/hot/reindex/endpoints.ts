// Migration 0007's code: rewrite every stored `endpoint` to its WHATWG URL serialisation
// (domain/endpoint.ts), as a write would. A changed row gets a new version, its index text
// (services.idx_doc holds the serialised document, which carries the endpoint: a rebuild
// from stale text would serve the old bytes), an outbox row (the projector brings Redis up to
// date when the server starts) and a service.updated change event.
// It touches only columns that exist at 0007 (id, ns, endpoint, version, idx_doc) and edits
// the stored document's bytes in place instead of reading the state through today's
// SELECT_STATE: a later migration that changes what a state is made of cannot break it.
import { appendChanges, bumpVersions } from '../registry/index.js';
import { normaliseEndpoint } from '../domain/endpoint.js';
import type { Client } from '../pg/pool.js';

/**
 * What a stored endpoint becomes: its serialisation; with any user info removed (the
 * contract refuses it: it would be published to every anonymous searcher); or null when
 * no acceptable endpoint can be made of it (not an http(s) URL, too long once normalised),
 * in which case the row is left as it is and reported (see
 * docs/decisions/endpoint-normalisation.md).
 */
export function storedEndpointFix(endpoint: string): string | null {
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch {
    return null;
  }
  u.username = '';
  u.password = '';
  const r = normaliseEndpoint(u.href);
  return r.ok ? r.href : null;
}

const BATCH = 1000;

/**
 * The stored document with its endpoint replaced. serializeService() writes `id` then
 * `endpoint` first, so the field is found by its exact prefix; null if the bytes are not
 * that shape.
 */
export function docWithEndpoint(doc: string, id: string, from: string, to: string): string | null {
  const head = `{"id":${JSON.stringify(id)},"endpoint":`;
  const old = head + JSON.stringify(from);
  if (!doc.startsWith(old) || doc[old.length] !== ',') return null;
  return head + JSON.stringify(to) + doc.slice(old.length);
}

export interface EndpointMigration {
  changed: number;
  /** ids of rows left as they were (no acceptable endpoint can be made of theirs) */
  unfixable: string[];
}

/** Inside the migrator's transaction: normalise every row's endpoint, batch by batch. */
export async function normaliseStoredEndpoints(c: Client, log: (msg: string) => void = () => undefined): Promise<EndpointMigration> {
  const out: EndpointMigration = { changed: 0, unfixable: [] };
  let after = '';
  for (;;) {
    const r = await c.query<{ id: string; ns: string; endpoint: string; idx_doc: string | null }>(
      'SELECT id, ns, endpoint, idx_doc FROM services WHERE id > $1 ORDER BY id LIMIT $2 FOR UPDATE',
      [after, BATCH],
    );
    if (!r.rows.length) break;
    after = r.rows[r.rows.length - 1]!.id;
    for (const row of r.rows) {
      const fixed = storedEndpointFix(row.endpoint);
      if (fixed === null) {
        out.unfixable.push(row.id);
        continue;
      }
      if (fixed === row.endpoint) continue;
      const doc = row.idx_doc === null ? null : docWithEndpoint(row.idx_doc, row.id, row.endpoint, fixed);
      // a document whose bytes are not what serializeService wrote: drop the stored text
      // (all three columns, as the constraint of 0004 wants), ensureIndexText() fills it
      // (migrator.ts)
      await c.query(
        `UPDATE services SET endpoint = $2, updated_at = now(), idx_doc = $3,
           idx_members = CASE WHEN $3::text IS NULL THEN NULL ELSE idx_members END,
           idx_hdr = CASE WHEN $3::text IS NULL THEN NULL ELSE idx_hdr END
         WHERE id = $1`,
        [row.id, fixed, doc],
      );
      await bumpVersions(c, [row.id]);
      await c.query('INSERT INTO outbox (ns, service_id) VALUES ($1, $2)', [row.ns, row.id]);
      // without stored text (a row not written since 0004) there is no document to publish
      if (doc !== null) await appendChanges(c, [{ ns: row.ns, serviceId: row.id, type: 'service.updated', data: doc }]);
      out.changed++;
    }
  }
  log(`endpoints normalised: ${out.changed} changed, ${out.unfixable.length} left as they were (not an acceptable http(s) URL): ${out.unfixable.slice(0, 20).join(', ')}`);
  return out;
}
