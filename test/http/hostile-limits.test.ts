// Hostile clients on raw sockets: bodies over MAX_BODY_BYTES get 413 without being
// buffered (a declared Content-Length at once, before a byte of the body; a chunked body
// as soon as it grows past the limit); over-long URLs get 414; oversized or too many
// headers are refused by uWS; clients that vanish mid-request crash nothing; slow clients
// (headers or body trickled, "slowloris") are cut off by uWS's idle timeout (~10 s).
import t, { type Test } from 'tap';
import { type Socket } from 'node:net';
import { createSandbox, registerProduction, type TestServer, serve } from '../helpers/server.js';
import { sleep } from '../helpers/wait.js';
import { collect, rawSocket } from '../helpers/raw-socket.js';
import type { Leased } from '../helpers/svc.js';
import { ADMIN_KEY } from '../helpers/env.js';

const MAX = 4096; // MAX_BODY_BYTES of this server

function head(method: string, path: string, headers: Record<string, string | number>): string {
  return `${method} ${path} HTTP/1.1\r\nHost: x\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
}

function statusOf(data: string): number {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(data);
  return m ? Number(m[1]) : 0;
}

/** Resolves when the server closes the socket (or the time is up: false). */
function closedWithin(s: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (s.destroyed) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    s.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function alive(t: Test, s: TestServer, what: string): Promise<void> {
  t.equal((await s.req('/livez')).status, 200, `${what}: the server still answers`);
  t.equal((await s.req('/services?capability=limits')).status, 200, `${what}: ... searches too`);
}

t.test('limits', async (t) => {
  const s = await serve(t, { env: { MAX_BODY_BYTES: String(MAX) } });
  const port = s.server.port;
  const sb = await createSandbox(s, 'Limits');
  await registerProduction(s, { endpoint: 'https://l.example.com', capability: 'limits' });
  const bodyRoutes: [string, string, string][] = [
    ['POST', '/admin/api/services', ADMIN_KEY],
    ['POST', `/sandbox/${sb.uuid}/services`, sb.apiKey],
    ['POST', '/sandboxes', ''],
  ];

  await t.test('a declared Content-Length over the limit: 413 before a byte of the body', async (t) => {
    for (const [method, path, key] of bodyRoutes) {
      const c = await rawSocket(port);
      c.write(head(method, path, { 'Content-Type': 'application/json', 'Content-Length': 50_000_000, ...(key ? { Authorization: `Bearer ${key}` } : {}) }));
      const r = await collect(c, 3000);
      t.equal(statusOf(r.data), 413, `${path}: 413 with no body sent`);
      t.match(r.data, /"code":"PAYLOAD_TOO_LARGE"/);
      t.ok(r.closed || (await closedWithin(c, 2000)), `${path}: the connection is closed, the rest is never read`);
      c.destroy();
    }
  });

  await t.test('a chunked body growing past the limit: 413 as soon as it does', async (t) => {
    for (const [method, path, key] of bodyRoutes) {
      const c = await rawSocket(port);
      let answer = '';
      c.on('data', (d) => (answer += d.toString('latin1')));
      c.on('error', () => undefined);
      c.write(head(method, path, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', ...(key ? { Authorization: `Bearer ${key}` } : {}) }));
      const chunk = 'x'.repeat(1024);
      let sent = 0;
      while (!answer && !c.destroyed && sent < 4_000_000) {
        c.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
        sent += chunk.length;
        await sleep(2);
      }
      await closedWithin(c, 2000);
      t.equal(statusOf(answer), 413, `${path}: 413`);
      t.ok(sent < 100 * MAX, `${path}: refused after ${sent} bytes, not after the 4 MB the client meant to send`);
      c.destroy();
    }
  });

  await t.test('a body within the limit is still accepted, chunked or not', async (t) => {
    const json = JSON.stringify({ endpoint: 'https://chunked.example.com', capability: 'chunked' });
    const c = await rawSocket(port);
    c.write(head('POST', '/admin/api/services', { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', Authorization: `Bearer ${ADMIN_KEY}` }));
    c.write(`${(json.length - 10).toString(16)}\r\n${json.slice(0, -10)}\r\n`);
    c.write(`a\r\n${json.slice(-10)}\r\n0\r\n\r\n`);
    t.equal(statusOf((await collect(c, 500)).data), 201);
    c.destroy();
  });

  await t.test('a heartbeat (a bearer-only route) reads a chunked body; with neither length nor chunks, none', async (t) => {
    const svc = (await registerProduction(s, { endpoint: 'https://hb-chunked.example.com', capability: 'limits', ttl: 60 })) as Leased;
    const path = `/services/${svc.id}/heartbeat`;
    const auth = { Authorization: `Bearer ${svc.heartbeatToken}` };
    const status = async () => ((await (await s.req(`/services/${svc.id}`)).json()) as { health: { status: string } }).health.status;
    const body = JSON.stringify({ status: 'critical' });
    const c = await rawSocket(port);
    c.write(head('PUT', path, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', ...auth }));
    c.write(`${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    t.equal(statusOf((await collect(c, 1000)).data), 204, 'a chunked {"status":"critical"}: 204');
    c.destroy();
    t.equal(await status(), 'critical', 'the chunked body was read');
    const d = await rawSocket(port);
    d.write(head('PUT', path, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked', ...auth }));
    d.write(`${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    const r = await collect(d, 1000);
    t.equal(statusOf(r.data), 415, 'a chunked body of another Content-Type: 415 (the type is read when a body comes)');
    d.destroy();
    const e = await rawSocket(port);
    e.write(head('PUT', path, auth));
    t.equal(statusOf((await collect(e, 1000)).data), 204, 'neither Content-Length nor Transfer-Encoding: no body, 204');
    e.destroy();
    t.equal(await status(), 'passing', 'a heartbeat without a body reports passing');
  });

  await t.test('over-long URLs: 414; far too long: refused', async (t) => {
    const c = await rawSocket(port);
    c.write(head('GET', '/services?capability=' + 'a'.repeat(9000), {}));
    const r = await collect(c, 3000);
    t.equal(statusOf(r.data), 414);
    t.match(r.data, /"code":"URI_TOO_LONG"/);
    c.destroy();
    const d = await rawSocket(port);
    d.on('error', () => undefined);
    d.write(head('GET', '/services?capability=' + 'a'.repeat(300_000), {}));
    const r2 = await collect(d, 3000);
    t.ok(statusOf(r2.data) === 414 || (statusOf(r2.data) === 0 && r2.closed), `300 kB: ${statusOf(r2.data) || 'connection closed'}`);
    d.destroy();
  });

  await t.test('oversized headers: refused, never served', async (t) => {
    const c = await rawSocket(port);
    c.on('error', () => undefined);
    // split across packets, as a real client's large header would be
    c.write('GET /services HTTP/1.1\r\nHost: x\r\nX-Big: ');
    await sleep(50);
    c.write('a'.repeat(64 * 1024));
    await sleep(50);
    c.write('\r\n\r\n');
    const r = await collect(c, 1000);
    t.notOk(statusOf(r.data) >= 200 && statusOf(r.data) < 300, `64 kB header: ${statusOf(r.data) || 'connection closed'}`);
    t.ok(r.closed || (await closedWithin(c, 2000)), 'the connection is closed');
    c.destroy();
    await alive(t, s, 'oversized headers');
  });

  await t.test('clients that vanish mid-request crash nothing', async (t) => {
    const json = JSON.stringify({ endpoint: 'https://gone.example.com', capability: 'gone' });
    const gone: Promise<void>[] = [];
    for (let i = 0; i < 30; i++) {
      gone.push(
        (async () => {
          const c = await rawSocket(port);
          c.on('error', () => undefined);
          switch (i % 5) {
            case 0: // half a body
              c.write(head('POST', '/admin/api/services', { 'Content-Type': 'application/json', 'Content-Length': 1000, Authorization: `Bearer ${ADMIN_KEY}` }) + json.slice(0, 20));
              break;
            case 1: // half the headers
              c.write('GET /services?capability=limits HTTP/1.1\r\nHost: x\r\nAuthoriz');
              break;
            case 2: // a whole search, gone before the answer
              c.write(head('GET', '/services?capability=limits', {}));
              break;
            case 3: // a whole write, gone while the server awaits PostgreSQL
              c.write(head('POST', '/admin/api/services', { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(json), Authorization: `Bearer ${ADMIN_KEY}` }) + json);
              break;
            case 4: // a keyed sandbox write, gone while it is being rate-limited and written
              c.write(head('POST', `/sandbox/${sb.uuid}/services`, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(json), Authorization: `Bearer ${sb.apiKey}` }) + json);
              break;
          }
          await sleep(i % 3);
          c.destroy();
        })(),
      );
    }
    await Promise.all(gone);
    await sleep(300);
    await alive(t, s, 'after 30 vanished clients');
    t.equal(s.server.inflight(), 0, 'every abandoned request was accounted for');
  });

  await t.test('slow clients are cut off (uWS idle timeout, ~10 s)', async (t) => {
    const trickle = async (what: string, first: string, rest: string) => {
      const c = await rawSocket(port);
      c.on('error', () => undefined);
      c.write(first);
      let answer = '';
      c.on('data', (d) => (answer += d.toString('latin1')));
      const closed = closedWithin(c, 25_000);
      // one byte every 400 ms: the whole request would take far longer than the timeout
      for (const ch of rest) {
        if (c.destroyed) break;
        c.write(ch);
        await sleep(400);
      }
      const cut = await closed;
      t.ok(cut, `${what}: the server closed the connection`);
      t.notOk(statusOf(answer) >= 200 && statusOf(answer) < 300, `${what}: and served nothing`);
      c.destroy();
    };
    const body = JSON.stringify({ endpoint: 'https://slow.example.com', capability: 'slow' }).padEnd(200, ' ');
    const manyHeaders = 'GET /services HTTP/1.1\r\nHost: x\r\n' + Array.from({ length: 120 }, (_, i) => `X-H${i}: a\r\n`).join('') + '\r\n';
    await Promise.all([
      trickle('headers trickled', 'GET /services?capability=limits HTTP/1.1\r\n', 'Host: x\r\nX-Slow: ' + 'a'.repeat(60) + '\r\n\r\n'),
      trickle('body trickled', head('POST', '/admin/api/services', { 'Content-Type': 'application/json', 'Content-Length': body.length, Authorization: `Bearer ${ADMIN_KEY}` }), body),
      trickle('too many headers', manyHeaders, ''),
    ]);
    await alive(t, s, 'slow clients');
  });
});
