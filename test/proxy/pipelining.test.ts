// Pipelined requests (issue 41). uWebSockets.js 20.30 closes a connection when a request
// arrives on it while the answer to the one before is still pending (an asynchronous
// handler: a search, a write): straight to the server, pipelining loses the pending answers.
// Through the shipped proxy every pipelined request is answered, in order: nginx reads the
// client's requests one at a time and passes each on its own turn.
import t from 'tap';
import { registerProduction, serve } from '../helpers/server.js';
import { socketDir, startProxy } from '../helpers/proxy.js';
import { collect, rawSocket } from '../helpers/raw-socket.js';

const sockets = socketDir(t.teardown.bind(t));
const s = await serve(t, { env: { PROXY_SOCKET_DIR: sockets, SANDBOX_CREATE_PER_MINUTE: '1000' } });
const proxy = await startProxy(s.server.port, { PROXY_SOCKET_DIR: sockets });
t.teardown(() => proxy.close());
const svc = await registerProduction(s, { endpoint: 'https://pipe.example.com', capability: 'pipe' });

const body = '{"name":"pipelined"}';
/** [request, the status it must get]: asynchronous handlers mostly, a body among them */
const REQUESTS: [string, number][] = [
  ['GET /services?capability=pipe HTTP/1.1\r\nHost: x\r\n\r\n', 200],
  [`GET /services/${svc.id} HTTP/1.1\r\nHost: x\r\n\r\n`, 200],
  [`POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`, 201],
  ['GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n', 200],
  ['GET /nope HTTP/1.1\r\nHost: x\r\n\r\n', 404],
  ['GET /services?capability=other HTTP/1.1\r\nHost: x\r\n\r\n', 200],
  ['GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 200],
];

/** Send every request in one write; the statuses of the answers, in order, and whether it closed. */
async function pipeline(port: number): Promise<{ statuses: number[]; closed: boolean }> {
  const sock = await rawSocket(port);
  t.teardown(() => sock.destroy());
  sock.write(REQUESTS.map(([r]) => r).join(''));
  const got = await collect(sock, 15_000);
  return { statuses: [...got.data.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1])), closed: got.closed };
}

t.test('through the proxy: every pipelined request answered, in order', async (t) => {
  for (let round = 0; round < 3; round++) {
    const r = await pipeline(proxy.port);
    t.same(r.statuses, REQUESTS.map(([, status]) => status), `round ${round}: all ${REQUESTS.length}`);
    t.ok(r.closed, 'closed after the last (Connection: close)');
  }
});

t.test('straight to the server: what is answered is in order and right; what is not, the server closed', async (t) => {
  const r = await pipeline(s.server.port);
  const want = REQUESTS.map(([, status]) => status);
  t.same(r.statuses, want.slice(0, r.statuses.length), `answers ${JSON.stringify(r.statuses)} are the first ones, in order`);
  t.ok(r.closed, 'the connection is closed, not left hanging');
  t.equal((await s.req('/readyz')).status, 200, 'the server is fine');
});
