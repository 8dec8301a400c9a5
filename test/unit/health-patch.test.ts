// What a lease's status change patches in the stored index text (src/hot/domain/
// health-patch.ts; liveness/store.ts setHealth, migration 0009), written out by hand, and its
// guard: the health-dependent member lines must be the last ones, or appending them on the
// way back to passing would not give indexText()'s text.
import t from 'tap';
import { HEALTH_PATCH, deriveHealthPatch } from '../../src/hot/liveness/health-patch.js';
import { memberSuffixes } from '../../src/hot/domain/keys.js';
import type { ServiceRecord } from '../../src/hot/domain/service.js';
import { serviceRecord } from '../helpers/records.js';

t.test('the patch: both tails, and the healthy set', async (t) => {
  t.strictSame({ ...HEALTH_PATCH }, { passing: ',"health":{"status":"passing","ttl":', critical: ',"health":{"status":"critical","ttl":', sets: ['h'] });
});

t.test('the healthy set comes last in a passing service\'s members, and nowhere in a critical one\'s', async (t) => {
  const svc = serviceRecord({
    id: 'x', seq: 1, endpoint: 'https://a.example.com/', capabilities: ['a'], properties: { k: 'v' },
    iot: { deviceClasses: ['d'], protocols: ['p'] }, health: { status: 'passing', ttl: 9 }, lease: { tokenHash: '', deregisterAfter: null, criticalSince: null },
  });
  const passing = memberSuffixes(svc);
  const critical = memberSuffixes({ ...svc, health: { status: 'critical', ttl: 9 } });
  t.strictSame(passing, [...critical, ...HEALTH_PATCH.sets]);
});

t.test('deriveHealthPatch refuses a member rule with the healthy set before others', async (t) => {
  const patch = { oldTail: 'p', newTail: 'c', left: ['h'], joined: [] };
  const last = (s: ServiceRecord) => (s.health!.status === 'passing' ? ['all', 'c:x', 'h'] : ['all', 'c:x']);
  t.strictSame(deriveHealthPatch(patch, last), { passing: 'p', critical: 'c', sets: ['h'] }, 'last: accepted');
  const first = (s: ServiceRecord) => (s.health!.status === 'passing' ? ['all', 'h', 'c:x'] : ['all', 'c:x']);
  t.throws(() => deriveHealthPatch(patch, first), { message: "health-patch: the sets that depend on health are no longer the last member lines; liveness/store.ts setHealth cannot append them" });
  // compared with the critical state itself, not any state that is not passing: a rule that
  // files unknown services apart must still be accepted
  const apart = (s: ServiceRecord) => (s.health!.status === 'passing' ? ['all', 'h'] : s.health!.status === 'critical' ? ['all'] : ['all', 'u']);
  t.strictSame(deriveHealthPatch(patch, apart), { passing: 'p', critical: 'c', sets: ['h'] }, 'the critical member lines are what the passing ones extend');
});
