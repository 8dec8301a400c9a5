// No lost or half-written patches and deletions under group commit (issue 22): 16 writers
// PATCH and DELETE services of their own through the built server running as a child
// process, SIGKILL partway, restart. Every acknowledged deletion is gone from PostgreSQL;
// every acknowledged patch is there (or a later one of the same writer, or that service's
// deletion, which was sent after it); every service's details agree with the index text
// stored with its row (one statement wrote both, or neither); and once the outbox drained,
// the index serves exactly PostgreSQL's services with PostgreSQL's state, with no manual step.
import t from 'tap';
import { startKillable } from '../helpers/killable.js';
import type { Svc } from '../helpers/svc.js';
import { ADMIN_KEY } from '../helpers/env.js';

const SERVICES = 240;
const WRITERS = 16;
const KILL_AFTER = 200; // acknowledged writes before the SIGKILL

// a guard against hangs, not a speed assertion (see reliability-lost-writes.test.ts)
t.setTimeout(300_000);

/** what the test reads of a service, served or as its index document holds it */
type Doc = Pick<Svc, 'id' | 'capabilities' | 'properties'>;

t.test('SIGKILL mid-stream of group-committed patches and deletions: acknowledged ones durable, none half-written, the index equal to PostgreSQL', async (t) => {
  const srv = await startKillable(t, { WORKERS: '1' });
  const pgc = srv.pg;
  const call = (method: string, path: string, body?: unknown) =>
    fetch(srv.url + path, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  const made = await call('POST', '/admin/api/services/batch', {
    services: Array.from({ length: SERVICES }, (_, i) => ({ endpoint: `https://pd${i}.kill.example.com/`, capabilities: ['killpd'], properties: { round: '0' } })),
  });
  t.equal(made.status, 201, 'the services to patch and delete are registered');
  const ids = ((await made.json()) as { services: { id: string }[] }).services.map((s) => s.id);

  const ackedRound = new Map<string, number>(); // id -> the last acknowledged patch's round
  const ackedDeleted = new Set<string>();
  const deleteSent = new Set<string>();
  let acks = 0;
  let round = 0;
  let killed = false;
  const writer = async (w: number) => {
    const mine = ids.filter((_, i) => i % WRITERS === w);
    for (let k = 0; !killed; k++) {
      const live = mine.filter((id) => !deleteSent.has(id));
      if (!live.length) return;
      const id = live[k % live.length]!;
      try {
        if (k % 7 === 6) {
          deleteSent.add(id);
          const r = await call('DELETE', `/admin/api/services/${id}`);
          await r.arrayBuffer();
          if (r.status === 204) {
            ackedDeleted.add(id);
            acks++;
          }
        } else {
          const r0 = ++round;
          // details and the row change together: capabilities and properties name the round
          const r = await call('PATCH', `/admin/api/services/${id}`, { capabilities: ['killpd', `r${r0}`], properties: { round: String(r0) } });
          await r.arrayBuffer();
          if (r.status === 200) {
            ackedRound.set(id, r0);
            acks++;
          }
        }
      } catch {
        /* cut off by the kill: not acknowledged */
      }
      if (!killed && acks >= KILL_AFTER) {
        killed = true;
        srv.kill();
      }
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  t.equal(await srv.server.exited, 'SIGKILL', 'the server was killed mid-stream');
  t.ok(acks >= KILL_AFTER, `${ackedRound.size} services patched and ${ackedDeleted.size} deleted, acknowledged, before the kill`);

  await srv.restart();

  const rows = (
    await pgc.query<{ id: string; caps: string[]; props: Record<string, string>; idx_doc: string }>(
      `SELECT id, caps, props, idx_doc FROM service_state WHERE ns = 'production'`,
    )
  ).rows;
  const inPg = new Map(rows.map((r) => [r.id, r]));
  t.same([...ackedDeleted].filter((id) => inPg.has(id)), [], `every acknowledged deletion is gone (${SERVICES - inPg.size} gone in all)`);
  t.same(
    ids.filter((id) => !inPg.has(id) && !deleteSent.has(id)),
    [],
    'nothing is gone that no one deleted',
  );
  t.same(
    [...ackedRound].filter(([id, r]) => inPg.has(id) && Number(inPg.get(id)!.props.round) < r).map(([id]) => id),
    [],
    'every acknowledged patch is there (or a later one)',
  );
  t.same(
    rows
      .filter((r) => {
        const doc = JSON.parse(r.idx_doc) as Doc;
        return JSON.stringify(doc.capabilities) !== JSON.stringify(r.caps) || JSON.stringify(doc.properties) !== JSON.stringify(r.props) || (r.props.round !== '0' && r.caps[1] !== `r${r.props.round}`);
      })
      .map((r) => r.id),
    [],
    'no service half-written: its details agree with each other and with the index text of its row',
  );

  const same = (found: Map<string, Doc>) => found.size === inPg.size && [...inPg].every(([id, r]) => found.get(id)?.properties.round === r.props.round);
  const found = await srv.indexSettles<Doc>('killpd', same);
  t.same([...ackedDeleted].filter((id) => found.has(id)), [], 'the search finds no acknowledged deletion');
  t.ok(same(found), 'and every service of PostgreSQL, in the state PostgreSQL has');
  for (const id of [...ackedDeleted].slice(0, 5)) t.equal((await fetch(`${srv.url}/services/${id}`)).status, 404, `GET of deleted ${id}: 404`);
  await srv.outboxDrained();
  t.pass('the outbox is empty: every committed write reached the index');
});
