// Migration 0007 (reindex/endpoints.ts): stored endpoints become their WHATWG serialisation as
// a write would make them: new version, index text whose document carries the new endpoint
// (the rebuild serves those bytes), an outbox row, a service.updated event. Rows are written
// at schema 0004 through the store directly (no validation: that is how old rows look).
import t from 'tap';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { serializeService } from '../../src/hot/domain/service.js';
import { migrate } from '../../src/hot/migrate.js';
import { loadIndexPage } from '../../src/hot/registry/index-pages.js';
import { loadIndexStates } from '../../src/hot/registry/state.js';
import { createService } from '../../src/hot/writes/register.js';
import { freshPool } from '../helpers/database.js';

const input = (endpoint: string) => ({ endpoint, capabilities: ['a'], properties: {}, iot: null, deprecated: false, locked: false, sunsetDate: null });

t.test('0007 normalises stored endpoints and their index text', async (t) => {
  const { pool } = await freshPool(t, 2, 6);
  const rows: Record<string, { from: string; want: string }> = {};
  const cases: [string, string][] = [
    ['HTTPS://Example.COM:443/a', 'https://example.com/a'],
    ['http://ꇓD', 'http://xn--d-7o1e/'],
    ['http://user:secret@h.example:80/x', 'http://h.example/x'],
    ['https://already.example/', 'https://already.example/'],
    ['ftp://left.example/', 'ftp://left.example/'],
    ['HTTP://NoText.example', 'http://notext.example/'],
  ];
  for (const [from, want] of cases) {
    const w = await createService(pool, PRODUCTION, input(from));
    rows[w.id] = { from, want };
  }
  const noText = Object.keys(rows).find((id) => rows[id]!.from.includes('NoText'))!;
  // a row written before 0004: no stored index text
  await pool.query('UPDATE services SET idx_doc = NULL, idx_members = NULL, idx_hdr = NULL WHERE id = $1', [noText]);
  const before = new Map((await pool.query<{ id: string; version: string }>('SELECT id, version FROM services')).rows.map((r) => [r.id, r.version]));
  await pool.query('DELETE FROM outbox');
  const maxEvent = (await pool.query<{ m: string | null }>('SELECT max(id)::text AS m FROM change_events')).rows[0]!.m ?? '0';

  const logged: string[] = [];
  // 0007 first (later migrations follow it)
  t.same((await migrate(pool, (m) => logged.push(m)))[0], '0007_endpoint_whatwg.sql');
  t.match(logged.join('\n'), /4 changed, 1 left as they were/);

  const ids = Object.keys(rows);
  const states = await loadIndexStates(pool, ids);
  const stored = new Map((await pool.query<{ id: string; endpoint: string; version: string; idx_doc: string | null; idx_members: string | null; idx_hdr: string | null }>('SELECT * FROM services')).rows.map((r) => [r.id, r]));
  const outbox = new Set((await pool.query<{ service_id: string }>('SELECT service_id FROM outbox')).rows.map((r) => r.service_id));
  const events = (await pool.query<{ service_id: string; type: string; data: string }>('SELECT service_id, type, data FROM change_events WHERE id > $1 ORDER BY id', [maxEvent])).rows;
  for (const id of ids) {
    const { from, want } = rows[id]!;
    const row = stored.get(id)!;
    t.equal(row.endpoint, want, `${from} -> ${want}`);
    const changed = from !== want;
    t.equal(row.version !== before.get(id), changed, `${from}: version drawn again exactly when changed`);
    t.equal(outbox.has(id), changed, `${from}: outbox row exactly when changed`);
    const ev = events.filter((e) => e.service_id === id);
    // every row's text is the write path's; a row that had none got it from
    // ensureIndexText() (which runs after the migrations), with the new endpoint
    t.equal(row.idx_doc, serializeService(states.get(id)!.record!), `${from}: stored document is the write path's document`);
    if (id === noText) {
      t.equal(ev.length, 0, 'no change event: the migration had no document to publish for it');
    } else {
      t.equal(JSON.parse(row.idx_doc!).endpoint, want, `${from}: the stored document carries the new endpoint`);
      t.same(ev.map((e) => [e.type, e.data]), changed ? [['service.updated', row.idx_doc]] : [], `${from}: change events`);
    }
    // what a rebuild of the index would load for it
    const seq = (await pool.query<{ seq: string }>('SELECT seq FROM services WHERE id = $1', [id])).rows[0]!.seq;
    const [page] = await loadIndexPage(pool, Number(seq) - 1, 1);
    t.equal(JSON.parse(page![4]).endpoint, want, `${from}: the rebuild's document`);
  }
  t.same(await migrate(pool), [], 'applied once');
});
