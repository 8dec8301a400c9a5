// Failures of the write path's index update are seen (issue 15): when Redis refuses the
// apply script, the write is still acknowledged (PostgreSQL committed it), a log line names
// the service and its revision, registry_projector_failures_total moves, and the sweeper
// applies the write once Redis accepts it again. Redis really refuses: a key of the wrong
// type sits where the script keeps its revisions.
import t from 'tap';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { parseProm, sample } from '../helpers/metrics-util.js';
import { registerProduction, serve } from '../helpers/server.js';

t.test('a refused apply script is logged, counted and swept', async (t) => {
  const lines: string[] = [];
  const s = await serve(t, { env: { OUTBOX_SWEEP_MS: '600000', LOG_LEVEL: 'warn' }, logStream: { write: (l: string) => void lines.push(l) } });
  const failures = async () => {
    const p = parseProm(await (await s.metrics()).text());
    return (p.get('registry_projector_failures_total') ?? []).reduce((a: number, x: { value: number }) => a + x.value, 0);
  };
  const svc = await registerProduction(s, { endpoint: 'https://seen.example.com/', capabilities: ['seen'] });
  const before = await failures();
  const gen = (await s.app.index.refreshGen())!;
  // a key apply-service reads for an indexed service and get-service does not
  const brokenKey = s.app.keys.base(PRODUCTION, gen) + 'repl';
  const saved = await s.app.redis.dumpBuffer(brokenKey);
  await s.app.redis.del(brokenKey);
  await s.app.redis.set(brokenKey, 'not a hash'); // HGET on it: WRONGTYPE, the script fails
  const r = await s.admin('PATCH', `/admin/api/services/${svc.id}`, { endpoint: 'https://seen.example.com/v2' });
  t.equal(r.status, 200, 'the write is acknowledged: PostgreSQL committed it');
  t.ok((await failures()) > before, 'registry_projector_failures_total moved');
  const line = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'index update failed; the outbox sweeper will retry');
  t.ok(line, 'a log line says so');
  t.match(line, { level: 40, serviceIds: [svc.id] }, 'naming the service');
  t.type((line as { revisions?: unknown } | undefined)?.revisions, Array, 'and its revision');
  t.equal((await s.app.index.getService(PRODUCTION, svc.id))?.doc.includes('/v2'), false, 'the index does not have the write yet');
  await s.app.redis.del(brokenKey);
  if (saved) await s.app.redis.restore(brokenKey, 0, saved);
  await s.app.projector.sweep(0);
  t.equal((await s.app.index.getService(PRODUCTION, svc.id))?.doc.includes('/v2'), true, 'the sweeper applied it');
  t.equal(sample(parseProm(await (await s.metrics()).text()), 'registry_outbox_lag', {}) ?? 0, 0, 'no outbox lag left');
});
