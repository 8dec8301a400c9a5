// The DNS server as the server process runs it (DNS_HOST / DNS_PORT / DNS_DOMAIN / DNS_TTL,
// compose.ts): Debian's real dig against the registry's own index. Production services that
// are not critical, in both name forms, AND over capability labels, `<id>.addr` names in any
// case, registrations, deletions and turns to critical followed, sandboxes never shown,
// the answer from the near cache without Redis, and one server per process.
import t from 'tap';
import { jsonBody } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { freePort } from '../helpers/free-port.js';
import { serveProcess } from '../helpers/server-process.js';
import { waitFor } from '../helpers/wait.js';
import { dig } from './dns/fixture.js';

const s = await serve(t, { env: { DNS_PORT: '0', DNS_DOMAIN: 'disco.test.', DNS_TTL: '7' } });
const P = s.thread.dnsPort()!;

const srv = async (name: string): Promise<string[]> => {
  const r = await dig(P, name, 'SRV');
  return r.answer.filter((a) => a.type === 'SRV').map((a) => a.data).sort();
};

const a = await registerProduction(s, { endpoint: 'http://10.9.0.1:8080', capabilities: ['web', 'api'], ttl: 3600 });
const b = await registerProduction(s, { endpoint: 'https://b.example.com', capabilities: ['web'] });
await registerProduction(s, { endpoint: 'http://[2001:db8::5]:9000/', capabilities: ['api'] });

t.test('one DNS server per process: a server of two uWS threads binds it once', async (t) => {
  t.ok(P > 0, `this thread's server: port ${P}`);
  const port = await freePort();
  const p = await serveProcess(t, { threads: 2, env: { DNS_PORT: String(port), DNS_DOMAIN: 'two.test', SHUTDOWN_GRACE_MS: '1000' } });
  t.ok(p.logs.some((l) => l.includes(`dns:        127.0.0.1:${port} (udp, tcp), zone two.test`)), 'the banner names it');
  const soa = await dig(port, 'two.test', 'SOA');
  t.equal(soa.status, 'NOERROR', 'the one server answers (a second bind of the port would have stopped the process)');
  t.equal(soa.answer[0]?.type, 'SOA');
});

t.test('SRV in both forms, the TTL, the zone, addr targets with their glue', async (t) => {
  const r = await dig(P, 'web.service.disco.test', 'SRV');
  t.equal(r.status, 'NOERROR');
  t.ok(r.flags.includes('aa'));
  t.ok(r.answer.every((x) => x.ttl === 7), 'DNS_TTL');
  t.same(r.answer.map((x) => x.data).sort(), ['1 1 443 b.example.com.', `1 1 8080 ${a.id}.addr.disco.test.`].sort());
  t.same(r.additional.map((x) => `${x.name} ${x.type} ${x.data}`), [`${a.id}.addr.disco.test. A 10.9.0.1`]);
  t.same(await srv('_web._tcp.service.disco.test'), await srv('web.service.disco.test'), 'the RFC 2782 form');
  t.same(await srv('web.api.service.disco.test'), [`1 1 8080 ${a.id}.addr.disco.test.`], 'AND over labels');
  const aaaa = await dig(P, 'api.service.disco.test', 'AAAA');
  t.same(aaaa.answer.map((x) => x.data), ['2001:db8::5']);
  t.equal((await dig(P, 'nothing.service.disco.test', 'SRV')).status, 'NXDOMAIN');
  t.equal((await dig(P, 'web.service.registry', 'SRV')).status, 'REFUSED', 'another zone');
});

t.test('<id>.addr names in any case', async (t) => {
  for (const name of [`${a.id}.addr.disco.test`, `${a.id.toUpperCase()}.ADDR.disco.test`, `${a.id.toLowerCase()}.addr.disco.test`]) {
    const r = await dig(P, name, 'A');
    t.same(r.answer.map((x) => x.data), ['10.9.0.1'], name);
  }
  t.equal((await dig(P, `${b.id}.addr.disco.test`, 'A')).status, 'NXDOMAIN', 'a host name endpoint has no addr name');
});

t.test('registrations, deletions and turns to critical are followed; sandboxes never shown', async (t) => {
  const c = await registerProduction(s, { endpoint: 'http://10.9.0.3:81', capabilities: ['web'] });
  t.ok((await srv('web.service.disco.test')).includes(`1 1 81 ${c.id}.addr.disco.test.`), 'a registration');
  t.equal((await s.admin('DELETE', `/admin/api/services/${c.id}`)).status, 204);
  t.notOk((await srv('web.service.disco.test')).some((x) => x.includes(c.id)), 'a deletion');
  const token = (a as unknown as { heartbeatToken: string }).heartbeatToken;
  const hb = await s.req(`/services/${a.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"status":"critical"}' });
  t.equal(hb.status, 204);
  t.same(await srv('web.service.disco.test'), ['1 1 443 b.example.com.'], 'a critical service is left out');
  t.equal((await dig(P, `${a.id}.addr.disco.test`, 'A')).status, 'NXDOMAIN', 'and its addr name');
  t.equal((await dig(P, 'web.api.service.disco.test', 'SRV')).status, 'NXDOMAIN');
  const sb = await createSandbox(s, 'DNS Box');
  const r = await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'http://10.9.9.9', capability: 'sbdns' }, sb.apiKey));
  t.equal(r.status, 201);
  t.equal((await dig(P, 'sbdns.service.disco.test', 'SRV')).status, 'NXDOMAIN', 'production only');
  await s.req(`/services/${a.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${token}` } });
  t.equal((await srv('web.service.disco.test')).length, 2, 'passing again');
});

t.test('a name whose sets and documents the near cache holds is answered without Redis', async (t) => {
  await srv('api.service.disco.test');
  await waitFor('the near cache holds the api sets', () => s.app.index.near!.setCount > 0);
  // the commands that touch production's index keys, other than the background reads of its
  // marker and version (readiness: EXISTS, the near cache's version check: GET)
  const calls: string[] = [];
  const redis = s.app.redis as unknown as { sendCommand: (c: { name: string; args: unknown[] }) => unknown };
  const send = redis.sendCommand.bind(redis);
  const onIndex = (c: { name: string; args: unknown[] }) => c.name !== 'get' && c.name !== 'exists' && c.args.some((x) => String(x).includes('reg:{production}'));
  redis.sendCommand = (c) => {
    if (onIndex(c)) calls.push(c.name);
    return send(c);
  };
  try {
    // a new version of production drops the kept list: the answer is computed again, from memory
    s.app.cache.invalidate('production');
    t.same(await srv('api.service.disco.test'), await srv('_api._tcp.service.disco.test'));
  } finally {
    redis.sendCommand = send;
  }
  t.same(calls, [], 'no Redis command on the index');
  // (and the probe sees them when there are: a name not held yet)
  redis.sendCommand = (c) => {
    if (onIndex(c)) calls.push(c.name);
    return send(c);
  };
  try {
    await srv('never-asked.service.disco.test');
  } finally {
    redis.sendCommand = send;
  }
  t.ok(calls.length > 0, `a name whose sets are not held asks Redis (${calls.join(', ')})`);
});
