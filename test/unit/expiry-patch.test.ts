// What an expiry changes in a stored service (src/hot/domain/expiry-patch.ts), written out by
// hand: the SQL of store/leases.ts expireMany and redis/health-flip-1.lua swap exactly this
// tail of the document and drop exactly these sets. A document whose health is not its last
// field, or a new dimension on health, changes these strings and fails here first.
import t from 'tap';
import { EXPIRY_PATCH } from '../../src/hot/domain/expiry-patch.js';
import { serializeService, type ServiceRecord } from '../../src/hot/domain/service.js';

t.test('the patch: the health tail before and after, the healthy set left, none joined', async (t) => {
  t.strictSame({ ...EXPIRY_PATCH }, {
    oldTail: ',"health":{"status":"passing","ttl":',
    newTail: ',"health":{"status":"critical","ttl":',
    left: ['h'],
    joined: [],
  });
});

t.test('applied to a real document, the patch gives what the general path serialises for the critical state', async (t) => {
  const svc: ServiceRecord = {
    id: 'svc-1', ns: 'production', seq: 7, endpoint: 'https://a.example.com/', capabilities: ['pay', 'ship'],
    properties: { region: 'eu' }, iot: null, deprecated: false, deprecatedAt: null, locked: false, sunsetDate: null,
    replacementSeqs: [], health: { status: 'passing', ttl: 30 }, lease: { tokenHash: 'ab', deregisterAfter: null, criticalSince: null },
  };
  const passing = serializeService(svc);
  const critical = serializeService({ ...svc, health: { status: 'critical', ttl: 30 } });
  t.ok(passing.includes(EXPIRY_PATCH.oldTail), 'the passing document holds the old tail');
  const at = passing.lastIndexOf(EXPIRY_PATCH.oldTail);
  t.equal(passing.slice(0, at) + EXPIRY_PATCH.newTail + passing.slice(at + EXPIRY_PATCH.oldTail.length), critical);
  t.ok(critical.endsWith(',"health":{"status":"critical","ttl":30}}'), 'health is the last field');
});
