// The proxy's Unix sockets (PROXY_SOCKET_DIR, issue 41): X-Forwarded-For / X-Real-IP are
// believed on them and nowhere else, so a client that connects to the port, from loopback
// or not, is counted at its own address whatever it claims; the directory must keep others
// out (the server refuses to start otherwise); a server of several threads has a socket
// per thread and clears those a previous run left. (Through nginx: test/proxy/trust.test.ts.)
import t from 'tap';
import { chmodSync, chownSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { createServer as netServer } from 'node:net';
import { join } from 'node:path';
import { serve } from '../helpers/server.js';
import { socketDir } from '../helpers/proxy.js';
import { serveProcess } from '../helpers/server-process.js';

interface Via {
  socketPath?: string;
  port?: number;
  from?: string;
}

/** POST /sandboxes over a socket or TCP with these headers: the status. */
function create(via: Via, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = '{"name":"via"}';
    const r = request(
      { socketPath: via.socketPath, host: '127.0.0.1', port: via.port, localAddress: via.from, path: '/sandboxes', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': String(body.length), ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    r.on('error', reject);
    r.end(body);
  });
}

function get(socketPath: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const r = request({ socketPath, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    r.on('error', reject);
    r.end();
  });
}

t.test('X-Forwarded-For is believed on the proxy socket only', async (t) => {
  const dir = socketDir(t.teardown.bind(t));
  const s = await serve(t, { env: { PROXY_SOCKET_DIR: dir, SANDBOX_CREATE_PER_MINUTE: '1' } });
  const sock = { socketPath: join(dir, 'registry-0.sock') };
  t.ok(statSync(sock.socketPath).isSocket(), 'thread 0 listens on registry-0.sock');
  t.equal(statSync(dir).mode & 0o777, 0o700, 'in a directory only its owner may enter');
  // SANDBOX_CREATE_PER_MINUTE=1 per client address
  t.equal(await create(sock, { 'x-forwarded-for': '198.51.100.1' }), 201, 'socket: 198.51.100.1');
  t.equal(await create(sock, { 'x-forwarded-for': '198.51.100.2' }), 201, 'socket: 198.51.100.2 has an allowance of its own');
  t.equal(await create(sock, { 'x-forwarded-for': '203.0.113.5, 198.51.100.1' }), 429, 'socket: the right-most hop, 198.51.100.1 again');
  t.equal(await create(sock, { 'x-real-ip': '198.51.100.3' }), 201, 'socket: X-Real-IP without X-Forwarded-For');
  // straight to the port: its own address, whatever it names (no TRUSTED_PROXIES: loopback is a client like any)
  const tcp = { port: s.server.port, from: '127.0.0.7' };
  t.equal(await create(tcp, { 'x-forwarded-for': '198.51.100.4' }), 201, 'TCP from 127.0.0.7');
  t.equal(await create(tcp, { 'x-forwarded-for': '198.51.100.5' }), 429, 'TCP: another X-Forwarded-For is still 127.0.0.7');
  t.equal(await create(tcp, { 'x-real-ip': '198.51.100.6' }), 429, 'TCP: and so is X-Real-IP');
  t.equal(await create({ port: s.server.port, from: '127.0.0.1' }, { 'x-forwarded-for': '127.0.0.7' }), 201, 'TCP from 127.0.0.1: its own allowance, not the one it names');
  // on the socket without a header: the proxy itself, one address
  t.equal(await create(sock), 201);
  t.equal(await create(sock), 429, 'no header on the socket: one shared address');
  // another local user cannot reach the socket at all (the directory is the server user's)
  if (process.getuid?.() === 0) {
    const probe = `require('net').connect(${JSON.stringify(sock.socketPath)}).on('connect', () => { console.log('connected'); process.exit(0) }).on('error', (e) => { console.log(e.code); process.exit(0) })`;
    const out = spawnSync(process.execPath, ['-e', probe], { uid: 65534, gid: 65534, encoding: 'utf8', cwd: '/' });
    t.equal(out.stdout.trim(), 'EACCES', "uid 65534 connecting to the socket: permission denied");
  }
});

t.test('a socket directory other users may enter, or owned by another, stops the start', async (t) => {
  const parent = socketDir(t.teardown.bind(t));
  const open = join(parent, 'open');
  mkdirSync(open, { mode: 0o700 });
  chmodSync(open, 0o755);
  await t.rejects(serveProcess(t, { env: { PROXY_SOCKET_DIR: open } }), /exited \(2\)[\s\S]*configuration error: PROXY_SOCKET_DIR \S+ has mode 755: other users could connect as the proxy/);
  t.notOk(existsSync(join(open, 'registry-0.sock')), 'no socket made there');
  if (process.getuid?.() === 0) {
    const theirs = join(parent, 'theirs');
    mkdirSync(theirs, { mode: 0o700 });
    chownSync(theirs, 65534, 65534);
    await t.rejects(serveProcess(t, { env: { PROXY_SOCKET_DIR: theirs } }), /configuration error: PROXY_SOCKET_DIR \S+ belongs to uid 65534/);
  }
  // (a test thread checks as it listens, too)
  const made = join(parent, 'new', 'run');
  await serve(t, { env: { PROXY_SOCKET_DIR: made } });
  t.equal(statSync(made).mode & 0o777, 0o700, 'a missing directory is made, 0700');
  t.equal((await get(join(made, 'registry-0.sock'), '/livez')).status, 200);
});

t.test('several threads: a socket each, a previous run\'s extra sockets removed', async (t) => {
  const dir = socketDir(t.teardown.bind(t));
  // a socket a previous run with more threads left behind
  const stale = netServer();
  await new Promise<void>((r) => stale.listen(join(dir, 'registry-7.sock'), r));
  t.teardown(() => stale.close());
  const srv = await serveProcess(t, { threads: 2, env: { PROXY_SOCKET_DIR: dir } });
  t.match(srv.logs.join('\n'), new RegExp(`proxy: +${dir}/registry-\\*\\.sock`), 'the banner names the sockets');
  t.notOk(existsSync(join(dir, 'registry-7.sock')), 'the stale socket is gone');
  for (const i of [0, 1]) {
    const r = await get(join(dir, `registry-${i}.sock`), '/livez');
    t.equal(r.status, 200, `thread ${i}'s socket answers`);
  }
});
