// Every Redis key the server builds (domain/keys.ts), spelled out as redis/README.md's key
// schema table gives them: index keys carry the hash tag {ns} and the generation, sandbox
// and rate keys the tag {uuid}, lease keys the tag {shard}.
import t from 'tap';
import { MEMBER_RULE } from '../../src/hot/domain/dimensions.js';
import { filterSuffixes, INDEX_FORMAT, Keys, LEASE_SHARDS, memberSuffixes, PRODUCTION } from '../../src/hot/domain/keys.js';
import { serviceRecord } from '../helpers/records.js';

const k = new Keys('t1:');

t.test('constants', async (t) => {
  t.equal(PRODUCTION, 'production');
  t.equal(INDEX_FORMAT, 5);
  t.equal(LEASE_SHARDS, 16);
  t.match(MEMBER_RULE, /^[0-9a-f]{8}$/, 'the member rule fingerprint: 8 hex digits');
});

t.test('index keys: {ns} hash tag and generation', async (t) => {
  t.equal(k.prefix, 't1:');
  t.equal(k.gen(), 't1:reg:gen');
  t.equal(k.building(), 't1:reg:building');
  t.equal(k.rebuildLock(), 't1:reg:rebuild-lock');
  t.equal(k.base('production', '4'), 't1:reg:{production}:4:');
  t.equal(k.ver('sb-9', '4'), `t1:reg:{sb-9}:4:ver:5.${MEMBER_RULE}`, 'format 5 and the member rule in the marker name');
  t.equal(k.verAt('t1:reg:{x}:2:'), `t1:reg:{x}:2:ver:5.${MEMBER_RULE}`);
  t.equal(k.docs('production', '4'), 't1:reg:{production}:4:docs');
  t.equal(k.all('production', '4'), 't1:reg:{production}:4:all');
  t.equal(k.set('production', '4', 'c:print'), 't1:reg:{production}:4:c:print');
  t.equal(k.genPattern('4'), 't1:reg:{*}:4:*');
});

t.test('sandbox, rate and throttle keys', async (t) => {
  t.equal(k.sandbox('u-1'), 't1:sb:{u-1}');
  t.equal(k.sandboxKey('abcdef'), 't1:sbkey:abcdef');
  t.equal(k.rateWindow('u-1'), 't1:rl:{u-1}:w');
  t.equal(k.rateHistory('u-1'), 't1:rl:{u-1}:h');
  t.equal(k.rateTotals('u-1'), 't1:rl:{u-1}:t');
  t.equal(k.loginFailures('203.0.113.9', 29000000), 't1:throttle:login:203.0.113.9:29000000');
  t.equal(k.createThrottle('::1', 7), 't1:throttle:create:::1:7');
  t.equal(k.adminSession('s1'), 't1:admin:sess:s1');
});

t.test('liveness keys: one slot per shard', async (t) => {
  t.equal(k.leases(0), 't1:lv:{0}:l');
  t.equal(k.deadlines(15), 't1:lv:{15}:d');
  t.equal(k.sweepLock(3), 't1:lv:{3}:lock');
  t.equal(k.invalidationChannel(), 't1:reg:changes');
});

t.test('no prefix', async (t) => {
  const p = new Keys('');
  t.equal(p.gen(), 'reg:gen');
  t.equal(p.sandbox('u'), 'sb:{u}');
});

t.test('memberSuffixes: the sets a service record is in', async (t) => {
  const base = serviceRecord({ id: 'a', seq: 1, properties: { region: 'eu:west' } });
  t.same(memberSuffixes(base).sort(), ['all', 'c:print', 'c:scan', 'h', 'p:region:eu:west'], 'no lease: healthy (unknown)');
  t.same(
    memberSuffixes({ ...base, capabilities: ['x'], properties: {}, iot: { deviceClasses: ['sensor'], protocols: ['mqtt', 'coap'] }, health: { status: 'critical', ttl: 10 } }).sort(),
    ['all', 'c:x', 'd:sensor', 'iot', 'r:coap', 'r:mqtt'],
    'critical: not in h; an IoT profile: iot and its classes and protocols',
  );
  t.same(filterSuffixes({ capabilities: ['print'] }), ['c:print'], 'filterSuffixes is re-exported');
});
