// Discovery stays anonymous in the logs (contract, "Logs keep discovery anonymous", and
// "Discovery for other tools": the same anonymity as /services): with ACCESS_LOG on and the
// client address coming from a trusted proxy, no log line of /discovery/prometheus or /v1/
// carries the client's address, user agent or a credential.
import t from 'tap';
import { serve } from '../helpers/server.js';
import { LogCapture } from '../helpers/log-capture.js';

t.test('no client address, user agent or credential in the discovery routes\' log lines', async (t) => {
  const cap = new LogCapture();
  const s = await serve(t, { env: { ACCESS_LOG: 'true', LOG_LEVEL: 'info', TRUSTED_PROXIES: '127.0.0.1' }, logStream: cap });
  const headers = { 'x-forwarded-for': '203.0.113.77', 'user-agent': 'agent-7f3a', authorization: 'Bearer secret-looking-key-91c2', 'x-consul-token': 'consul-token-5e8d' };
  const paths = ['/discovery/prometheus?capability=x', '/v1/agent/self', '/v1/catalog/services', '/v1/health/service/x?passing', '/v1/catalog/service/x', '/v1/kv/x'];
  for (const p of paths) await s.req(p, { headers });
  // the control: a route that logs the address does log it here
  await s.req('/services?capability=x', { headers: { 'x-forwarded-for': '203.0.113.77' } });
  const lines = cap.lines();
  const ours = lines.filter((l) => l.msg === 'request' && paths.some((p) => String(l.path).startsWith(p.split('?')[0]!)));
  t.equal(ours.length, paths.length, 'one access line per discovery request');
  for (const l of ours) t.notOk('remote' in l, `${String(l.path)}: no address`);
  const text = ours.map((l) => JSON.stringify(l)).join('\n');
  for (const secret of ['203.0.113.77', 'agent-7f3a', 'secret-looking-key-91c2', 'consul-token-5e8d']) t.notOk(text.includes(secret), `no ${secret}`);
  t.ok(lines.some((l) => l.path === '/services' && l.remote === '203.0.113.77'), 'the control logs the address');
});
