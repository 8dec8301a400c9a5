// The shipped proxy under one hostile address (issue 20): 200 slow-body and 100 idle
// sockets and a pile of change-feed streams from 127.0.0.2 leave 127.0.0.3 served; the
// hostile address's excess gets nginx's 429 with Retry-After and the API's error body.
// Counts stay modest (a few hundred sockets) and every socket is closed at the end.
import t from 'tap';
import { connect, type Socket } from 'node:net';
import { request } from 'node:http';
import { serve } from '../helpers/server.js';
import { http, socketDir, startProxy } from '../helpers/proxy.js';
import { waitFor } from '../helpers/wait.js';

const PER_ADDRESS = 64;
// modest, so that even a machine whose open-files hard limit is 1,024 (nginx: 512
// connections a worker) holds them all with room for the upstream side
const SLOW = 200;
const IDLE = 100;
const FEED_PER_ADDRESS = 4;
const socketsDir = socketDir(t.teardown.bind(t));
const s = await serve(t, { env: { PROXY_SOCKET_DIR: socketsDir, CHANGE_STREAMS_PER_ADDRESS: '100' } });
const proxy = await startProxy(s.server.port, { PROXY_SOCKET_DIR: socketsDir, PROXY_CONN_PER_ADDRESS: String(PER_ADDRESS), PROXY_STREAMS_PER_ADDRESS: String(FEED_PER_ADDRESS) });
t.teardown(() => proxy.close());
const P = proxy.port;

const sockets: Socket[] = [];
t.teardown(() => sockets.forEach((x) => x.destroy()));

/** A socket from `from` that sends `head` and then nothing; resolves once connected, with what it will have received. */
function stall(from: string, head: string): Promise<{ got: () => string }> {
  return new Promise((resolve, reject) => {
    const sock = connect({ port: P, host: '127.0.0.1', localAddress: from });
    sockets.push(sock);
    let got = '';
    sock.on('data', (d) => (got += d.toString('latin1')));
    sock.on('error', () => undefined); // reset by nginx when refused or timed out: expected
    sock.once('connect', () => {
      if (head) sock.write(head);
      resolve({ got: () => got });
    });
    sock.once('error', reject);
  });
}

/** A change-feed stream from `from`: its status (a 200 stays open until the end of the file). */
function feed(from: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port: P, path: '/services/changes', localAddress: from, agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      resolve(res.statusCode ?? 0);
      if (res.statusCode !== 200) res.resume();
    });
    r.on('socket', (sock) => sockets.push(sock));
    r.on('error', reject);
    r.end();
  });
}

t.test('one address holding hundreds of slow and idle sockets leaves another served', async (t) => {
  const slowBody = 'POST /sandboxes HTTP/1.1\r\nHost: registry\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{';
  const slow: { got: () => string }[] = [];
  for (let i = 0; i < SLOW; i++) slow.push(await stall('127.0.0.2', slowBody));
  const idle: { got: () => string }[] = [];
  for (let i = 0; i < IDLE; i++) idle.push(await stall('127.0.0.2', ''));
  const streams = await Promise.all(Array.from({ length: 20 }, () => feed('127.0.0.4')));

  // the excess of 127.0.0.2's slow bodies is refused at once, with the API's body
  const refused = () => slow.filter((x) => x.got().startsWith('HTTP/1.1 429')).length;
  t.ok(await waitFor('the slow bodies refused', () => refused() >= SLOW - PER_ADDRESS, 5000, 20).then(() => true, () => false), `the slow bodies beyond ${PER_ADDRESS} are refused: ${refused()} of ${SLOW}`);
  const one = slow.map((x) => x.got()).find((g) => g.startsWith('HTTP/1.1 429'))!;
  t.match(one, /\r\nRetry-After: \d+\r\n/i, 'with Retry-After');
  t.match(one, /\r\nContent-Type: application\/json/i, 'JSON');
  t.match(one, /\{"error":\{"code":"RATE_LIMITED","message":"[^"]+"\}\}/, 'the contract error body');
  t.equal(streams.filter((x) => x === 200).length, FEED_PER_ADDRESS, `${FEED_PER_ADDRESS} change-feed streams for 127.0.0.4`);
  t.equal(streams.filter((x) => x === 429).length, 20 - FEED_PER_ADDRESS, 'the others 429');

  // meanwhile, another address is served as usual, and so is a second request of the first
  for (let i = 0; i < 20; i++) {
    const r = await http(P, `/services?capability=c${i}`, { from: '127.0.0.3' });
    t.equal(r.status, 200, `127.0.0.3's search ${i} is answered`);
  }
  const mine = await http(P, '/services?capability=x', { from: '127.0.0.2' });
  t.equal(mine.status, 429, "127.0.0.2's own request waits for its slow ones");
  t.equal(JSON.parse(mine.body).error.code, 'RATE_LIMITED');
  const stream = await feed('127.0.0.3');
  t.equal(stream, 200, '127.0.0.3 still opens a change stream');
});
