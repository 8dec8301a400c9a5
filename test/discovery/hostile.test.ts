// Hostile requests to the discovery routes (GET /discovery/prometheus, /v1/…): their own
// query parameters in near-miss forms (filters in any order, Consul's tag, passing, dc, index
// and wait), capability names of every shape, X-Consul-Token and Authorization values, other
// methods and other /v1/ paths, sent as raw bytes. No 5xx (503 with Retry-After excepted),
// every 4xx with the contract's error body, every answer as /openapi.json says, the Consul
// headers on every answer of /v1/ a handler gives, and the server ready afterwards.
import t from 'tap';
import { ambiguousPath } from '../../src/hot/domain/raw-path.js';
import fc from 'fast-check';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { METHODS, check, headerValue, segment } from '../helpers/hostile-requests.js';
import { rawClient } from '../helpers/raw-client.js';

const s = await serve(t, { env: { TIERS: 'free=1000000', DISCOVERY_MAX_TARGETS: '3' } });
const sb = await createSandbox(s, 'Hostile Discovery');
for (const [i, caps] of [['web'], ['web', 'api'], ['db']].entries()) {
  await registerProduction(s, { endpoint: i === 1 ? 'http://[::1]:8080/x' : `https://h${i}.example.com`, capabilities: caps, properties: { zone: `z${i}`, 'a.b': 'c d' }, ttl: 30 });
}
for (let i = 0; i < 2; i++) await registerProduction(s, { endpoint: `https://m${i}.example.com`, capabilities: ['many'] });

// bytes a query can carry, as the wire has them (raw-client sends them as given)
const wire = (s: string) => Buffer.from(s.replace(/[\s#]/g, (c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')), 'utf8');
const TRICKS = ['%', '%ZZ', '%00', '%C0%AE', '%ED%A0%80', '%FF', '+', '%20', 'é', '\u{1F600}', '', '=', '&', '__proto__', 'constructor'];
const name = fc.oneof(fc.constantFrom('capability', 'property', 'deviceClass', 'protocol', 'iotReady', 'healthy', 'limit', 'after', 'tag', 'passing', 'dc', 'index', 'wait', 'token', 'stale', 'filter'), fc.string({ maxLength: 6 }));
const value = fc.oneof(
  fc.constantFrom(...TRICKS, 'web', 'WEB', 'api', 'db', 'many', 'zone:z1', 'zone=z1', 'a.b=c d', 'true', 'false', '0', '1', 'dc1', 'DC1', 'x'.repeat(70), '18446744073709551615', '18446744073709551616', '-1', '1.5', '10s', '5m', '1h', '0', '999999h', '1ms', '1.5s', '10', 's', '1m30s'),
  fc.string({ maxLength: 10 }),
);
const query = fc.oneof(fc.constant(null), fc.array(fc.tuple(name, value), { maxLength: 6 }).map((ps) => wire(ps.map(([n, v]) => `${n}=${v}`).join('&'))));
const PATHS = ['/discovery/prometheus', '/v1/agent/self', '/v1/catalog/datacenters', '/v1/catalog/services', '/v1/catalog/service/:name', '/v1/health/service/:name', '/v1/kv/:name', '/v1/catalog/nodes', '/v1/:name', '/discovery/:name'];

t.test('no request to a discovery route gets a 5xx; errors have the error body; Consul answers their headers', async (t) => {
  const c = rawClient(t, s.server.port);
  const statuses = new Map<number, number>();
  const request = fc.record({
    path: fc.constantFrom(...PATHS),
    method: fc.oneof({ weight: 5, arbitrary: fc.constant('GET') }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
    name: segment(['web', 'WEB', 'api', 'db', 'many', 'nothing', 'a.b', '%77eb']),
    query,
    authorization: headerValue([`Bearer ${sb.apiKey}`, 'Bearer nope_sb_' + 'A'.repeat(38), 'Bearer', 'Basic x']),
    token: headerValue([sb.apiKey, 'anything', sb.apiKey.toUpperCase()]),
    ifNoneMatch: headerValue(['*', '"x"', 'W/"x"']),
  });
  await fc.assert(
    fc.asyncProperty(request, async (q) => {
      const path = Buffer.concat(q.path.split(/(:name)/).map((p) => (p === ':name' ? q.name : Buffer.from(p))));
      // a blocking query (?index=) is held for its wait, rightly (a name no service can have
      // included): 5 min by default. One second here, ahead of the generated parameters (the
      // first wait is the one that counts), so that no answer comes after the client's 15 s
      const blocking = q.query !== null && /(^|&)index=/.test(q.query.toString('latin1'));
      const query = blocking ? Buffer.concat([Buffer.from('wait=1s&'), q.query!]) : q.query;
      const lines = ['Host: x', `Authorization: ${q.authorization}`, `X-Consul-Token: ${q.token}`, `If-None-Match: ${q.ifNoneMatch}`];
      const head = Buffer.concat([Buffer.from(`${q.method} `), path, query === null ? Buffer.alloc(0) : Buffer.concat([Buffer.from('?'), query]), Buffer.from(' HTTP/1.1\r\n' + lines.join('\r\n') + '\r\n\r\n', 'latin1')]);
      const r = await c.request(head, Buffer.alloc(0), q.method === 'HEAD');
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      const what = `${q.method} ${head.toString('latin1').split(' ')[1]!.slice(0, 120)}`;
      check(r, what);
      // (414 and an ambiguous path are refused before any route, as on every path: not Consul's)
      if (path.toString('latin1').startsWith('/v1/') && r.status !== 414 && !ambiguousPath(path.toString('latin1')) && r.headers['x-consul-knownleader'] !== 'true') throw new Error(`${what}: ${r.status} without X-Consul-KnownLeader`);
    }),
    { numRuns: 600 },
  );
  t.ok([200, 400, 404, 405, 422].every((x) => (statuses.get(x) ?? 0) > 0), `a mix of answers: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.equal((await s.req('/readyz')).status, 200, 'ready afterwards');
});
