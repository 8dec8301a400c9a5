// The pure pieces of the discovery room: an endpoint's host and port (endpoint.ts), a target
// group's labels (prometheus/targets.ts), a Consul instance, its tags and the services map
// (consul/model.ts), and the Consul query parameters (consul/query.ts), each with
// fast-check over hostile input where it takes input.
import t from 'tap';
import fc from 'fast-check';
import { listenOf } from '../../src/hot/discovery/endpoint.js';
import { labelKey, tagList, targetGroup, type ServiceDoc } from '../../src/hot/discovery/prometheus/targets.js';
import { instanceOf, matches, servicesMap, tagsOf } from '../../src/hot/discovery/consul/model.js';
import { consulQuery, durationMs, WAIT_DEFAULT_MS, WAIT_MAX_MS } from '../../src/hot/discovery/consul/query.js';
import { discoveryQuery } from '../../src/hot/search/all.js';

const doc = (over: Partial<ServiceDoc> = {}): ServiceDoc => ({
  id: 'Svc1',
  endpoint: 'https://a.example.com/',
  capabilities: ['web'],
  properties: {},
  deprecated: false,
  iot: null,
  health: { status: 'unknown', ttl: null },
  ...over,
});

t.test('listenOf: host, port (the default of the scheme), scheme, path, host:port', async (t) => {
  t.same(listenOf('https://a.example.com/'), { host: 'a.example.com', port: 443, scheme: 'https', path: '/', hostPort: 'a.example.com:443' });
  t.same(listenOf('http://10.0.0.1:8080/m?x'), { host: '10.0.0.1', port: 8080, scheme: 'http', path: '/m', hostPort: '10.0.0.1:8080' });
  t.same(listenOf('http://[2001:db8::1]/'), { host: '2001:db8::1', port: 80, scheme: 'http', path: '/', hostPort: '[2001:db8::1]:80' });
  t.equal(listenOf('ftp://x/'), null);
  t.equal(listenOf('not a url'), null);
  fc.assert(fc.property(fc.string(), (s) => void listenOf(s)));
});

t.test('targetGroup: labels, lists as Prometheus writes tags, property keys as label names', async (t) => {
  t.equal(tagList([]), ',,');
  t.equal(tagList(['a', 'b']), ',a,b,');
  t.equal(labelKey('rack.no-1:x'), 'rack_no_1_x');
  const g = targetGroup(doc({ properties: { 'a.b': '1', a_b: '2', __proto__x: '3' }, iot: { deviceClasses: ['s'], protocols: ['m', 'h'] }, deprecated: true, health: { status: 'critical', ttl: 5 } }), 'ns1')!;
  t.same(g.targets, ['a.example.com:443']);
  t.equal(g.labels.__meta_registry_namespace, 'ns1');
  t.equal(g.labels.__meta_registry_deprecated, 'true');
  t.equal(g.labels.__meta_registry_health, 'critical');
  t.equal(g.labels.__meta_registry_device_classes, ',s,');
  t.equal(g.labels.__meta_registry_protocols, ',m,h,');
  t.equal(g.labels.__meta_registry_property_a_b, '2', 'two keys, one label name: the later in key order wins ("a_b" after "a.b")');
  t.equal(g.labels.__meta_registry_property___proto__x, '3');
  t.ok(JSON.stringify(g).includes('"__meta_registry_property___proto__x":"3"'), 'serialised too');
  t.equal(targetGroup(doc({ endpoint: 'mailto:x' }), 'p'), null);
});

t.test('Consul instances: address, port, tags, the check status', async (t) => {
  const i = instanceOf(doc({ endpoint: 'http://[::1]:9000/', capabilities: ['web', 'api'], properties: { z: '1', a: 'x=y' } }), 7)!;
  t.match(i, { address: '::1', port: 9000, rev: 7, status: 'passing' });
  t.same(i.tags, ['web', 'api', 'a=x=y', 'z=1'], 'capabilities, then key=value in key order');
  t.same(tagsOf(doc({ properties: { 'é': '1', e: '2' } })), ['web', 'e=2', 'é=1'], 'code-point order');
  t.equal(instanceOf(doc({ health: { status: 'critical', ttl: 5 } }), 1)!.status, 'critical');
  t.equal(instanceOf(doc({ health: { status: 'unknown', ttl: null } }), 1)!.status, 'passing', 'unknown reads passing');
  t.ok(matches(i, ['web', 'z=1'], true));
  t.notOk(matches(i, ['web', 'z=2'], false));
  t.same(servicesMap([i, instanceOf(doc({ capabilities: ['web'], properties: { b: '2' } }), 1)!]), { api: ['a=x=y', 'api', 'web', 'z=1'], web: ['a=x=y', 'api', 'b=2', 'web', 'z=1'] });
});

t.test('Consul query parameters', async (t) => {
  t.same(consulQuery(null), { ok: true, q: { tags: [], passing: false, dc: null, index: null, waitMs: WAIT_DEFAULT_MS } });
  t.same(consulQuery('tag=a&tag=b&tag=a&tag=&passing&dc=dc2&index=42&wait=10s'), { ok: true, q: { tags: ['a', 'b'], passing: true, dc: 'dc2', index: 42n, waitMs: 10_000 } });
  for (const [q, p] of [['passing=false', false], ['passing=0', false], ['passing=FALSE', false], ['passing=1', true], ['passing=', true], ['passing=yes', true]] as const) {
    t.equal((consulQuery(q) as { q: { passing: boolean } }).q.passing, p, q);
  }
  t.equal((consulQuery('wait=1h') as { q: { waitMs: number } }).q.waitMs, WAIT_MAX_MS, 'at most 10 min');
  t.same(consulQuery('index=18446744073709551615'), { ok: true, q: { tags: [], passing: false, dc: null, index: 18446744073709551615n, waitMs: WAIT_DEFAULT_MS } });
  for (const bad of ['index=-1', 'index=1.5', 'index=18446744073709551616', 'index=x', 'wait=10', 'wait=s', 'wait=1d', 'tag=%ZZ', 'tag=%C0%AE']) t.equal(consulQuery(bad).ok, false, bad);
  t.equal(durationMs('1m30s'), 90_000);
  t.equal(durationMs('1.5s'), 1500);
  t.equal(durationMs('0'), 0);
  t.equal(durationMs('250ms'), 250);
  fc.assert(fc.property(fc.string(), (s) => void consulQuery(s)));
  fc.assert(fc.property(fc.string(), (s) => void durationMs(s)));
});

t.test('discovery queries: the filters in any order share one canonical form', async (t) => {
  const a = discoveryQuery('capability=b&capability=A&healthy=TRUE&limit=5');
  const b = discoveryQuery('healthy=true&capability=a&capability=b');
  t.ok(a.ok && b.ok);
  if (a.ok && b.ok) {
    t.equal(a.canonical, b.canonical);
    t.same(a.filters.capabilities, ['a', 'b']);
    t.equal(a.filters.healthy, true);
    t.notOk('limit' in a.filters, 'no paging');
  }
  t.same(discoveryQuery(null), { ok: true, filters: discoveryQuery('').ok ? (discoveryQuery('') as { filters: unknown }).filters : null, canonical: '' });
  t.equal(discoveryQuery('capability=a%20b').ok, false);
  fc.assert(fc.property(fc.string(), (s) => void discoveryQuery(s)));
});
