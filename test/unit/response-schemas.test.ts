// The response-body schemas that are not registry objects (src/hot/domain/response-schemas.ts),
// compiled as the test harness compiles the served document (ajv, JSON Schema 2020-12, strict
// mode, formats): bodies the server sends pass, bodies a regression would send fail. Every
// body is written out by hand.
import t from 'tap';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import * as R from '../../src/hot/domain/response-schemas.js';

const TIERS = ['free', 'pro'] as const;
const tierIn = { type: 'string', enum: [...TIERS] };
const tierOut = { type: 'string' };

function compiler() {
  const ajv = new Ajv2020({ strict: true, allErrors: false, allowUnionTypes: true });
  addFormats.default(ajv);
  return ajv;
}

const UUID = '0b5f7a4e-4c1e-4f6b-9a57-3c1d2e8f9a10';
const AT = '2026-11-24T10:00:00.000Z';
const perNs = (production: number, sandboxes: number) => ({ production, sandboxes });

t.test('sandboxSummary: the tier schema it is given, the rest fixed', async (t) => {
  const ajv = compiler();
  const check = ajv.compile(R.sandboxSummary(tierIn));
  const ok = { uuid: UUID, name: 'lab', tier: 'pro', rateLimit: 600, location: { lat: 52.5, lon: 13.4 }, createdAt: AT };
  t.ok(check(ok), 'a summary');
  t.ok(check({ ...ok, location: null, serviceCount: 3 }), 'no location; extra fields allowed (the dashboard adds its own)');
  t.notOk(check({ ...ok, tier: 'gold' }), 'a tier the given schema refuses');
  t.ok(ajv.compile(R.sandboxSummary(tierOut))({ ...ok, tier: 'gold' }), '(any string under the output schema)');
  t.notOk(check({ ...ok, rateLimit: -1 }), 'a negative rate limit');
  t.notOk(check({ ...ok, uuid: 'x' }), 'not a uuid');
  t.notOk(check({ ...ok, createdAt: 'yesterday' }), 'not a date-time');
  for (const k of ['uuid', 'name', 'tier', 'rateLimit', 'location', 'createdAt']) {
    const { [k]: _drop, ...rest } = ok as Record<string, unknown>;
    t.notOk(check(rest), `${k} is required`);
  }
});

t.test('stats: every count per namespace, tiers limited to the configured ones', async (t) => {
  const check = compiler().compile(R.stats(TIERS));
  const ok = {
    services: perNs(10, 4),
    deprecated: perNs(1, 0),
    locked: perNs(0, 2),
    iotReady: perNs(3, 1),
    health: { passing: perNs(5, 1), critical: perNs(1, 0), unknown: perNs(4, 3) },
    sandboxesByTier: { free: 2, pro: 0, legacy: 1 },
    sandboxes: 3,
    locatedSandboxes: 1,
    requests: { total: 120, rejected: 7 },
    tiers: { free: 60, pro: 600 },
    defaultTier: 'free',
    generatedAt: AT,
  };
  t.ok(check(ok), 'the statistics');
  t.notOk(check({ ...ok, tiers: { free: 60, gold: 10 } }), 'an unconfigured tier among the tiers');
  t.notOk(check({ ...ok, tiers: { free: 0 } }), 'a tier of 0 requests per minute');
  t.notOk(check({ ...ok, defaultTier: 'gold' }), 'an unconfigured default tier');
  t.notOk(check({ ...ok, services: { production: 1 } }), 'a namespace count missing');
  t.notOk(check({ ...ok, health: { ...ok.health, warning: perNs(0, 0) } }), 'a health status that does not exist');
  t.notOk(check({ ...ok, requests: { total: 1, rejected: -1 } }), 'a negative count');
  t.notOk(check({ ...ok, extra: 1 }), 'an undocumented field');
  t.notOk(check({ ...ok, sandboxesByTier: { free: 1.5 } }), 'a fractional count');
});

t.test('sandboxPage: items are summaries by reference, every paging field computed', async (t) => {
  const ajv = compiler();
  ajv.addSchema(R.sandboxSummary(tierOut), '#/components/schemas/SandboxSummary');
  const check = ajv.compile(R.sandboxPage('#/components/schemas/SandboxSummary', tierIn));
  const item = { uuid: UUID, name: 'lab', tier: 'pro', rateLimit: 600, location: null, createdAt: AT, serviceCount: 2 };
  const ok = { items: [item], tier: null, total: 21, pageSize: 20, page: 1, displayPage: 2, hasPrev: true, hasNext: false, prevPage: 0, nextPage: null };
  t.ok(check(ok), 'the second of two pages');
  t.ok(check({ ...ok, tier: 'pro' }), 'filtered by a configured tier');
  t.notOk(check({ ...ok, tier: 'gold' }), 'not by an unconfigured one');
  t.notOk(check({ ...ok, items: [{ ...item, serviceCount: undefined }] }), 'an item without its service count');
  t.notOk(check({ ...ok, items: [{ ...item, uuid: 'x' }] }), 'an item that is not a summary (the reference is followed)');
  t.notOk(check({ ...ok, prevPage: -1 }), 'prevPage -1 (an empty list past its end leads to page 0)');
  t.notOk(check({ ...ok, displayPage: 0 }), 'displayPage is 1-based');
  t.notOk(check({ ...ok, pageSize: 0 }), 'a page holds at least one');
  t.notOk(check({ ...ok, hasNext: 'no' }), 'hasNext is a boolean');
});

t.test('the fixed response objects', async (t) => {
  const ajv = compiler();
  const poll = ajv.compile(R.poll);
  const pollOk = { uuid: UUID, now: 1764000000000, total: 9, rateLimit: 60, bucketSeconds: 5, tier: 'free', rejected: 1, windowTotal: 4, buckets: [0, 1, 3] };
  t.ok(poll(pollOk), 'a poll');
  t.notOk(poll({ ...pollOk, bucketSeconds: 10 }), 'buckets are 5 seconds');
  t.notOk(poll({ ...pollOk, buckets: [1, -1] }), 'a negative bucket');
  t.notOk(poll({ ...pollOk, extra: true }), 'an undocumented field');

  const counters = ajv.compile(R.dashboardCounters);
  t.ok(counters({ total: 5, rejected: 0, lastMinute: 2 }));
  t.notOk(counters({ total: 5, rejected: 0 }), 'lastMinute is required');

  const admin = ajv.compile(R.adminCounters);
  t.ok(admin({ total: 5, rejected: 1, windowTotal: 2 }));
  t.ok(admin(null), 'null while Redis is unreachable');
  t.notOk(admin({ total: 5, rejected: 1 }), 'windowTotal is required');

  const health = ajv.compile(R.healthCounts);
  t.ok(health({ passing: 1, critical: 0, unknown: 2 }));
  t.notOk(health({ passing: 1, critical: 0 }), 'unknown is required');

  const change = ajv.compile(R.tierChangeRecord);
  t.ok(change({ from: 'free', to: 'pro', by: 'admin', at: AT }));
  t.notOk(change({ from: 'free', to: 'pro', by: 'admin', at: 'now' }), 'at is a date-time');

  const located = ajv.compile(R.locatedSandbox);
  t.ok(located({ uuid: UUID, name: 'lab', tier: 'free', lat: -90, lon: 180 }));
  t.notOk(located({ uuid: UUID, name: 'lab', tier: 'free', lat: 90.5, lon: 0 }), 'a latitude past the pole');
  t.notOk(located({ uuid: UUID, name: 'lab', tier: 'free', lat: 0, lon: -180.5 }), 'a longitude past the antimeridian');

  const csrf = ajv.compile(R.csrfToken);
  t.ok(csrf({ csrfToken: 'abc' }));
  t.notOk(csrf({ csrfToken: '' }), 'an empty token');

  const ready = ajv.compile(R.readiness);
  t.ok(ready({ status: 'ready', postgres: true, redis: true, index: true, shuttingDown: false, reads: 'index', degraded: [] }));
  t.ok(ready({ status: 'degraded', postgres: true, redis: false, index: false, shuttingDown: false, reads: 'postgres', degraded: ['redis'] }));
  t.ok(ready({ status: 'not ready', postgres: false, redis: false, index: false, shuttingDown: false, reads: 'none', degraded: ['redis', 'postgres'] }));
  t.notOk(ready({ status: 'starting', postgres: true, redis: true, index: true, shuttingDown: false, reads: 'index', degraded: [] }), 'only ready, degraded or not ready');
  t.notOk(ready({ status: 'degraded', postgres: true, redis: false, index: false, shuttingDown: false, reads: 'postgres', degraded: ['index'] }), 'a backend by its name');
  t.notOk(ready({ status: 'ready', postgres: true, redis: true, index: true, shuttingDown: false }), 'where reads come from is always said');

  const live = ajv.compile(R.liveness);
  t.ok(live({ status: 'ok' }));
  t.notOk(live({ status: 'ready' }));
});
