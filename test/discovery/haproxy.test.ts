// A real HAProxy (Debian's) whose `server-template … resolvers` fills a backend from the
// registry's SRV records (DNS_PORT, the server's own DNS server): it routes requests to every
// registered backend (little HTTP servers this test starts, listed by IP literal, so the SRV
// targets are `<id>.addr` names with their addresses as glue), and stops routing to one that
// is deleted or turns critical.
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'node:http';
import { freePort } from '../helpers/free-port.js';
import { registerProduction, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir, startBackend, startTool, toolPath, type Backend } from './tools.js';

const s = await serve(t, { env: { DNS_PORT: '0', DNS_TTL: '1' } });
const dnsPort = s.thread.dnsPort()!;
const backends: Backend[] = [];
for (const name of ['one', 'two', 'three']) backends.push(await startBackend(name));
t.teardown(() => Promise.all(backends.map((b) => b.close())));
const [one, two, three] = backends as [Backend, Backend, Backend];

const reg = async (b: Backend, ttl?: number) =>
  (await registerProduction(s, { endpoint: `http://127.0.0.1:${b.port}/`, capabilities: ['shop'], ...(ttl ? { ttl } : {}) })) as { id: string; heartbeatToken?: string };
const r1 = await reg(one);
const r2 = await reg(two, 3600); // a lease that cannot lapse during the test: it turns critical by heartbeat

const dir = await scratchDir(t.teardown.bind(t), 'haproxy');
const fePort = await freePort();
// short holds: a record that left the answers leaves the backend within a second or two
const config = `global
  maxconn 100
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
resolvers registry
  nameserver reg 127.0.0.1:${dnsPort}
  accepted_payload_size 4096
  resolve_retries 2
  timeout resolve 250ms
  timeout retry 250ms
  hold valid 250ms
  hold obsolete 250ms
  hold nx 250ms
  hold other 250ms
  hold refused 250ms
  hold timeout 250ms
frontend shop
  bind 127.0.0.1:${fePort}
  default_backend shop
backend shop
  balance roundrobin
  server-template shop 8 _shop._tcp.service.registry resolvers registry resolve-prefer ipv4 init-addr none
`;
await writeFile(join(dir, 'haproxy.cfg'), config);
const haproxy = startTool(await toolPath('haproxy'), ['-f', join(dir, 'haproxy.cfg'), '-db']);
t.teardown(() => haproxy.stop());

/** One request through HAProxy (a connection of its own): the backend's name, or its status. */
const through = () =>
  new Promise<string>((resolve) => {
    const r = request({ host: '127.0.0.1', port: fePort, path: '/', agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(res.statusCode === 200 ? body : `status ${res.statusCode}`));
    });
    r.on('error', (e) => resolve(`error ${e.message}`));
    r.end();
  });

/** The backends `n` requests in a row reached. */
const reached = async (n: number): Promise<string[]> => {
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) seen.add(await through());
  return [...seen].sort();
};

const settles = (what: string, want: string[]) =>
  waitFor(what, async () => JSON.stringify(await reached(12)) === JSON.stringify(want), 60_000, 200).catch((e: Error) => {
    throw new Error(`${e.message}\nhaproxy said:\n${haproxy.output()}`);
  });

t.test('HAProxy fills its backend from the SRV records and routes to every registered backend', async (t) => {
  await settles('both backends reached', ['one', 'two']);
  t.same(await reached(12), ['one', 'two']);
  await reg(three);
  await settles('the third one reached', ['one', 'three', 'two']);
  t.same(await reached(12), ['one', 'three', 'two'], 'a registration is followed');
});

t.test('HAProxy stops routing to a backend that is deleted or turns critical', async (t) => {
  t.equal((await s.admin('DELETE', `/admin/api/services/${r1.id}`)).status, 204);
  await settles('the deleted one dropped', ['three', 'two']);
  t.same(await reached(12), ['three', 'two'], 'a deletion');
  const hb = await s.req(`/services/${r2.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${r2.heartbeatToken}`, 'content-type': 'application/json' }, body: '{"status":"critical"}' });
  t.equal(hb.status, 204);
  await settles('the critical one dropped', ['three']);
  t.same(await reached(12), ['three'], 'a turn to critical');
  t.equal(one.hits.size > 0 && two.hits.size > 0, true, 'both had been reached before');
});
