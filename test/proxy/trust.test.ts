// Who may name the client's address (issue 41): `make run` + `make proxy` as shipped, a
// server of two threads (dist/src/hot/main.js) with nginx on its proxy sockets. The proxy's
// X-Forwarded-For is believed, so two clients behind it have allowances of their own; a client
// that connects to the server's port itself, from loopback, names any address it likes in
// vain: the sandbox-creation and the admin-login throttles count it at its own address, and
// it cannot lock the real admin's address out.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { http, socketDir, startProxy } from '../helpers/proxy.js';
import { serveProcess } from '../helpers/server-process.js';
import { ADMIN_KEY } from '../helpers/env.js';
import { freshMinute } from '../helpers/wait.js';

const LOGIN_FAILURES = 3;
const dir = socketDir(t.teardown.bind(t));
const srv = await serveProcess(t, { env: { WORKERS: '2', PROXY_SOCKET_DIR: dir, SANDBOX_CREATE_PER_MINUTE: '1', LOGIN_FAILURES_PER_MINUTE: String(LOGIN_FAILURES) } });
// the banner names two threads (checked here, not with serveProcess's `threads`: no passing
// assertion at the top level before the subtests, tap would end the file's test there)
if (!/listening on .*\(2 uWS threads\)/.test(srv.logs.join('\n'))) t.fail('2 uWS threads');
const proxy = await startProxy(srv.port, { PROXY_SOCKET_DIR: dir, PROXY_ADMIN_ALLOW: '127.0.0.0/8' });
t.teardown(() => proxy.close());
const P = proxy.port;
const S = srv.port;

const json = { 'content-type': 'application/json' };
const create = (port: number, from: string, headers: Record<string, string> = {}) => http(port, '/sandboxes', { method: 'POST', from, headers: { ...json, ...headers }, body: '{"name":"trust"}' });
const login = (port: number, from: string, apiKey: string, headers: Record<string, string> = {}) =>
  http(port, '/admin/session', { method: 'POST', from, headers: { ...json, ...headers }, body: JSON.stringify({ apiKey }) });

t.test('make run and make proxy meet on the same sockets, and make run trusts no TCP address', async (t) => {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const dry = execFileSync('make', ['-n', '-C', root, 'run', 'proxy'], { encoding: 'utf8', env: { ...process.env, PROXY_SOCKET_DIR: undefined, TRUSTED_PROXIES: undefined } });
  const dirs = [...dry.matchAll(/PROXY_SOCKET_DIR="\$\{PROXY_SOCKET_DIR-([^}]+)\}"/g)].map((m) => m[1]);
  t.equal(dirs.length, 2, 'both set PROXY_SOCKET_DIR');
  t.equal(dirs[0], dirs[1], 'to the same directory');
  t.notMatch(dry, /TRUSTED_PROXIES/, 'make run sets no TRUSTED_PROXIES');
});

t.test('sandbox creation: clients behind the proxy have their own allowance; a direct client is its own address', async (t) => {
  await freshMinute(8000); // the throttles count per minute: a sequence well inside one
  // SANDBOX_CREATE_PER_MINUTE=1 per client address
  t.equal((await create(P, '127.0.0.3')).status, 201, '127.0.0.3 through the proxy');
  t.equal((await create(P, '127.0.0.3')).status, 429, 'its second one');
  t.equal((await create(P, '127.0.0.4')).status, 201, '127.0.0.4 through the same proxy: its own allowance');
  t.equal((await create(P, '127.0.0.4', { 'x-forwarded-for': '10.9.9.9' })).status, 429, 'a header sent through the proxy changes nothing');
  // straight to the server's port, from the address the proxy used to connect from
  t.equal((await create(S, '127.0.0.1', { 'x-forwarded-for': '127.0.0.5' })).status, 201, 'direct from 127.0.0.1');
  const again = await create(S, '127.0.0.1', { 'x-forwarded-for': '127.0.0.6', 'x-real-ip': '127.0.0.6' });
  t.equal(again.status, 429, 'another name, the same real address: 429');
  t.equal(JSON.parse(again.body).error.code, 'RATE_LIMITED');
  t.equal((await create(P, '127.0.0.5')).status, 201, 'the address it named was not used up');
});

t.test("admin login: a direct client cannot spend the real admin's failures", async (t) => {
  await freshMinute(8000); // the throttles count per minute: a sequence well inside one
  for (let i = 0; i <= LOGIN_FAILURES; i++) {
    const r = await login(S, '127.0.0.1', 'wrong-key-0123456789', { 'x-forwarded-for': '127.0.0.9' });
    t.equal(r.status, i < LOGIN_FAILURES ? 401 : 429, `direct wrong key ${i + 1} "from" 127.0.0.9: counted at 127.0.0.1`);
  }
  const admin = await login(P, '127.0.0.9', ADMIN_KEY);
  t.equal(admin.status, 200, '127.0.0.9 through the proxy still logs in');
  // and the proxy's address is the one counted: 127.0.0.10's failures are its own
  for (let i = 0; i <= LOGIN_FAILURES; i++) t.equal((await login(P, '127.0.0.10', 'wrong-key-0123456789')).status, i < LOGIN_FAILURES ? 401 : 429, `127.0.0.10 through the proxy, wrong key ${i + 1}`);
  t.equal((await login(P, '127.0.0.11', ADMIN_KEY)).status, 200, 'while 127.0.0.11 through the same proxy logs in');
});

t.test('requests spread over both threads\' sockets answer', async (t) => {
  const answers = await Promise.all(Array.from({ length: 20 }, () => http(P, '/livez')));
  t.same(answers.map((a) => a.status), new Array(20).fill(200));
});
