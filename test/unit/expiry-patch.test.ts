// What an expiry changes in a stored service (src/hot/liveness/expiry-patch.ts), written out by
// hand: the SQL of liveness/store.ts expireMany and redis/health-flip-1.lua swap exactly this
// tail of the document and drop exactly these sets. A document whose health is not its last
// field, or a new dimension on health, changes these strings and fails here first.
import t from 'tap';
import { EXPIRY_PATCH, derivePatch } from '../../src/hot/liveness/expiry-patch.js';
import { serializeService, type ServiceRecord } from '../../src/hot/domain/service.js';
import { serviceRecord } from '../helpers/records.js';

t.test('the patch: the health tail before and after, the healthy set left, none joined', async (t) => {
  t.strictSame({ ...EXPIRY_PATCH }, {
    oldTail: ',"health":{"status":"passing","ttl":',
    newTail: ',"health":{"status":"critical","ttl":',
    left: ['h'],
    joined: [],
  });
});

t.test('applied to a real document, the patch gives what the general path serialises for the critical state', async (t) => {
  const svc = serviceRecord({
    id: 'svc-1', endpoint: 'https://a.example.com/', capabilities: ['pay', 'ship'], properties: { region: 'eu' },
    health: { status: 'passing', ttl: 30 }, lease: { tokenHash: 'ab', deregisterAfter: null, criticalSince: null },
  });
  const passing = serializeService(svc);
  const critical = serializeService({ ...svc, health: { status: 'critical', ttl: 30 } });
  t.ok(passing.includes(EXPIRY_PATCH.oldTail), 'the passing document holds the old tail');
  const at = passing.lastIndexOf(EXPIRY_PATCH.oldTail);
  t.equal(passing.slice(0, at) + EXPIRY_PATCH.newTail + passing.slice(at + EXPIRY_PATCH.oldTail.length), critical);
  t.ok(critical.endsWith(',"health":{"status":"critical","ttl":30}}'), 'health is the last field');
});

// the guards, reached with a serialiser and a member rule of the test's own
const doc = (s: ServiceRecord) => `{"id":"x","health":{"status":"${s.health!.status}","ttl":${s.health!.ttl}}}`;
const noSets = () => [];

t.test('derivePatch: the tail is cut from the last health field up to the ttl', async (t) => {
  t.strictSame(derivePatch(doc, noSets), { oldTail: ',"health":{"status":"passing","ttl":', newTail: ',"health":{"status":"critical","ttl":', left: [], joined: [] });
  // health at the very start of the text is still found (position 0 is a position)
  const atStart = (s: ServiceRecord) => `,"health":{"status":"${s.health!.status}","ttl":5}}`;
  t.strictSame(derivePatch(atStart, noSets).newTail, ',"health":{"status":"critical","ttl":');
});

t.test('derivePatch refuses a document whose health is not its last field', async (t) => {
  const noHealth = () => '{"id":"x","ttl":5}}';
  t.throws(() => derivePatch(noHealth, noSets), { message: 'expiry-patch: the health field is no longer the last of the document' }, 'no health field at all');
  const healthFirst = (s: ServiceRecord) => `{"health":{"status":"${s.health!.status}","ttl":5},"id":"x"}`;
  t.throws(() => derivePatch(healthFirst, noSets), { message: 'expiry-patch: the health field is no longer the last of the document' }, 'health first');
  const healthMiddle = (s: ServiceRecord) => `{"id":"x","health":{"status":"${s.health!.status}","ttl":5},"z":1}`;
  t.throws(() => derivePatch(healthMiddle, noSets), { message: 'expiry-patch: the health field is no longer the last of the document' }, 'health found, but not last');
});

t.test('derivePatch: the sets a critical service leaves, and a refusal when it would join any', async (t) => {
  const healthy = (s: ServiceRecord) => (s.health!.status === 'passing' ? ['c:pay', 'h'] : ['c:pay']);
  t.strictSame(derivePatch(doc, healthy).left, ['h'], 'only the set that depends on health');
  const joins = (s: ServiceRecord) => (s.health!.status === 'critical' ? ['c:pay', 'sick', 'dead'] : ['c:pay', 'h']);
  t.throws(() => derivePatch(doc, joins), { message: 'expiry-patch: a critical service joins sets (sick, dead); liveness/store.ts expireMany cannot add them' });
});
